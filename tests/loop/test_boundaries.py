"""Layering rules the architecture depends on."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "jupyter_agent"


def test_loop_imports_nothing_from_jupyter_frontends_or_anthropic():
    code = (
        "import sys, jupyter_agent.agent, jupyter_agent.loop.query, jupyter_agent.loop.run\n"
        "import jupyter_agent.conversation\n"
        "from jupyter_agent import query, Conversation\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'IPython', 'ipywidgets', 'comm', 'ipykernel', 'anthropic'})\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_only_the_model_package_imports_anthropic():
    importers = []
    for path in PACKAGE.rglob("*.py"):
        if re.search(r"^\s*(import anthropic|from anthropic)", path.read_text(), re.M):
            importers.append(path.relative_to(PACKAGE).parts[0])
    assert importers and set(importers) == {"model"}, importers
