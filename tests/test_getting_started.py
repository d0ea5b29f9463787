"""docs/getting-started.md, run as a newcomer would: every ``bash`` block in a shell and
every ``python`` block in a real kernel, in the page's order, in an empty folder that holds
the clone (as ``jupyter-agent``) and nothing else, with no API key.

The ``pip install`` goes into an environment of its own: a venv whose site-packages adds
.venv's (so pip fetches nothing the project's own install already has) and which gets its
own copy of jupyter-agent from the clone; the kernel and ``jupyter agent`` are that
environment's. Any block that fails (a shell status other than 0, an error output in the
kernel) fails the test, naming the block.

docs/providers.md's cells that point a kernel at a local server are run here too, against
the fake API answering as such a server does.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import nbformat
import pytest

from tests.programs import SYSTEM_DIRS, installed, system_program

pytestmark = [pytest.mark.server, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "getting-started.md"
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.S | re.M)


def blocks(page: Path = PAGE) -> list[tuple[str, str]]:
    """The page's fenced blocks, (language, text), in order."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(page.read_text(encoding="utf-8"))]


def overlay_env(folder: Path) -> Path:
    """A venv in ``folder`` whose site-packages also holds .venv's (a .pth line), with ``pip``
    and ``jupyter`` commands that are its own Python's: what the page's ``pip install`` and
    ``jupyter agent`` find first on PATH."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    base = sysconfig.get_paths()["purelib"]
    Path(site, "_jupyter_agent_base.pth").write_text(f"import site; site.addsitedir({base!r})\n")
    for command, module in (("pip", "pip"), ("jupyter", "jupyter")):
        script = folder / "bin" / command
        script.write_text(f'#!/bin/sh\nexec "{python}" -m {module} "$@"\n')
        script.chmod(0o755)
    return python


def kernelspec(python: Path, data_dir: Path) -> None:
    """The overlay's Python as the ``python3`` kernel, in a Jupyter data folder of the test's."""
    spec = data_dir / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3", "language": "python"}))


def test_the_page_has_shell_and_python_blocks_and_nothing_unrun():
    languages = [language for language, _ in blocks()]
    assert "bash" in languages and "python" in languages
    assert set(languages) <= {"bash", "python"}, "a block this test would not run: " + ", ".join(languages)


def test_every_block_of_getting_started_runs(tmp_path, jupyter_dirs):
    from nbclient import NotebookClient

    work = tmp_path / "work"
    work.mkdir()
    (work / "jupyter-agent").symlink_to(ROOT)
    python = overlay_env(tmp_path / "env")
    data_dir = Path(os.environ["JUPYTER_DATA_DIR"])
    kernelspec(python, data_dir)
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("ANTHROPIC_", "JUPYTER_AGENT_", "VIRTUAL_ENV", "PYTHON"))}
    # the overlay's commands first; `jupyter SUB` finds the other jupyter-* programs in .venv
    env["PATH"] = os.pathsep.join([str(python.parent), str(Path(installed("jupyter")).parent), *SYSTEM_DIRS])
    env["HOME"] = str(tmp_path / "home")

    nb = nbformat.v4.new_notebook()
    client = NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(work)}})
    shown: list[str] = []
    with client.setup_kernel(env=env):  # the kernel's too: no key, the overlay first on PATH
        for number, (language, text) in enumerate(blocks(), 1):
            if language == "bash":
                bash = system_program("bash") or "/bin/bash"
                proc = subprocess.run([bash, "-euo", "pipefail", "-c", text], cwd=work, env=env,
                                      capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=240)
                assert proc.returncode == 0, f"block {number} ({text!r}) failed:\n{proc.stdout}\n{proc.stderr}"
                shown.append(proc.stdout + proc.stderr)
                continue
            cell = nbformat.v4.new_code_cell(text)
            nb.cells.append(cell)
            client.execute_cell(cell, len(nb.cells) - 1)
            errors = [o for o in cell.outputs if o.output_type == "error"]
            assert not errors, f"block {number} ({text!r}) raised: {errors[0]['ename']}: {errors[0]['evalue']}"
            shown.append(_text(cell.outputs))
    everything = "\n".join(shown)
    # the install put jupyter-agent into the page's own environment, from the clone
    installed_at = subprocess.run([str(python), "-c", "import jupyter_agent; print(jupyter_agent.__file__)"],
                                  capture_output=True, text=True, env=env, cwd=work).stdout
    assert str(tmp_path / "env") in installed_at
    # the cell's and the terminal's runs said they were replays (the Python one has it as a
    # Notice event, which the page does not print), and all three did what the page says
    assert everything.count("Offline replay — your prompt is not used; this replays demo_read_edit.json") == 2
    assert "model_error" not in everything and "Traceback" not in everything, everything
    assert everything.count("notes.txt now says `value = 2`") >= 3, everything
    assert "completed after 3 turns" in everything


def _text(outputs: list) -> str:
    parts = []
    for output in outputs:
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type in ("execute_result", "display_data"):
            parts.append(output.data.get("text/markdown", "") + output.data.get("text/plain", ""))
    return "\n".join(parts)


def section_blocks(page: Path, heading: str) -> list[tuple[str, str]]:
    """The fenced blocks of one section of ``page``: from ``heading`` to the next heading."""
    text = page.read_text(encoding="utf-8")
    start = text.index(heading)
    end = re.compile(r"^#{1,6} ", re.M).search(text, start + len(heading))
    part = text[start:end.start() if end else len(text)]
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(part)]


def test_the_local_server_cells_of_the_providers_page_reach_that_server(jupyter_dirs, tmp_path):
    """docs/providers.md's notebook set-up for Ollama, run in a real kernel with the fake API
    answering as a local server does (no caching fields, no count_tokens) at the address the
    cell names: the next %%agent cell's request goes there, for that model."""
    from nbclient import NotebookClient

    from jupyter_agent.testing import FakeMessagesAPI, response, text

    cells = [code for language, code in section_blocks(ROOT / "docs" / "providers.md",
                                                         "### Ollama, llama.cpp and vLLM") if language == "python"]
    assert len(cells) == 2 and "http://localhost:11434" in cells[0]
    with FakeMessagesAPI([response(text("Hello from the local model."))], ollama_like=True) as api:
        nb = nbformat.v4.new_notebook(cells=[
            *(nbformat.v4.new_code_cell(code.replace("http://localhost:11434", api.base_url)) for code in cells),
            nbformat.v4.new_code_cell("%%agent\nSay hello."),
        ])
        env = {key: value for key, value in os.environ.items() if not key.startswith(("ANTHROPIC_", "JUPYTER_AGENT_"))}
        client = NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
        with client.setup_kernel(env=env):
            for index, cell in enumerate(nb.cells):
                client.execute_cell(cell, index)
                assert not [o for o in cell.outputs if o.output_type == "error"], cell.outputs
        sent = [r for r in api.requests if r.path.startswith("/v1/messages")]
    assert sent and {r.body["model"] for r in sent} == {"qwen3:8b"}
    assert "Hello from the local model." in _text(nb.cells[-1].outputs)
    assert "ollama" not in "".join(_text(cell.outputs) for cell in nb.cells)  # the key is never shown
