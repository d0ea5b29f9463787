"""The documentation: the site built from docs/ (Sphinx, MyST, the PyData theme) with
warnings as errors, so a broken link or reference, a page in no table of contents or a
reference page whose code moved fails here; and the README, short, with its Quick start
and links that lead somewhere."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


@pytest.mark.timeout(300)  # ~4 s on a quiet machine
def test_the_site_builds_with_no_warning(tmp_path):
    out = tmp_path / "html"
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-E", "-W", "--keep-going", "-n", "-q", "-b", "html",
                           str(ROOT / "docs"), str(out), "-d", str(tmp_path / "doctrees")],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # every Markdown page of docs/ is a page of the site (a new one left out of the toctree
    # is already a warning), and the generated reference holds what the code says
    for page in (ROOT / "docs").glob("*.md"):
        assert (out / page.with_suffix(".html").name).is_file(), page.name
    cli = (out / "reference" / "cli.html").read_text(encoding="utf-8")
    assert "--permission-mode" in cli
    for command in subcommands():  # a new sub-command gets its section in docs/reference/cli.md
        assert f"usage: jupyter agent {command}" in cli, command
    magics = (out / "reference" / "magics.html").read_text(encoding="utf-8")
    assert "usage: %%agent" in magics and "usage: %agent" in magics
    config = (out / "reference" / "config.html").read_text(encoding="utf-8")
    assert "AgentConfig.max_budget_usd" in config
    api = (out / "reference" / "api.html").read_text(encoding="utf-8")
    assert 'id="jupyter_agent.query"' in api and 'id="jupyter_agent.Conversation.send"' in api


def subcommands() -> list[str]:
    """The sub-commands of ``jupyter agent``, from its parser."""
    import argparse

    from jupyter_agent.cli import build_parser

    return [name for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction)
            for name in action.choices]


def test_every_document_at_the_top_of_the_repository_is_in_the_site():
    """SECURITY.md, BENCHMARKS.md, EVALS.md, ...: each is included by a page of docs/ (the README
    is the site's own summary)."""
    pages = "\n".join(page.read_text(encoding="utf-8") for page in (ROOT / "docs").rglob("*.md"))
    left_out = [doc.name for doc in ROOT.glob("*.md")
                if doc.name != "README.md" and f"{{include}} ../{doc.name}" not in pages]
    assert not left_out, f"include these in a page of docs/ (as docs/security.md does): {left_out}"


def test_the_readme_is_short_and_keeps_its_quick_start():
    text = README.read_text(encoding="utf-8")
    assert len(text.encode()) < 12_000
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert "./dev demo" in quick and "./dev test" in quick


def test_every_link_of_the_readme_leads_to_a_file_of_the_repository():
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [link.split("#")[0] for link in links if not link.startswith(("http://", "https://", "#"))]
    assert local, "the README links into docs/"
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, missing
    # the anchors of its own headings
    headings = {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-")
                for h in re.findall(r"^#+ (.+)$", text, re.M)}
    assert {link[1:] for link in links if link.startswith("#")} <= headings


#: Names the architecture page uses for what is not a file: the policy file an administrator
#: writes, and the module the design notes proposed and the code did without.
NOT_FILES = {"jupyter_agent_policy.json", "streaming_executor.py"}


def test_the_architecture_page_names_only_files_that_exist_and_every_part_of_the_package():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    files = [path.relative_to(ROOT).as_posix() for base in ("jupyter_agent", "labextension/src", "labextension/schema",
                                                              "tests")
             for path in (ROOT / base).rglob("*") if path.is_file()]
    named = set(re.findall(r"(?<![\w.])([\w/]+\.(?:py|ts|json))\b", text)) - NOT_FILES
    assert len(named) > 100
    gone = sorted(name for name in named if not any(f == name or f.endswith("/" + name) for f in files))
    assert not gone, f"docs/architecture.md names files that are not there: {gone}"
    package = ROOT / "jupyter_agent"
    parts = [p.name.removesuffix(".py") for p in package.iterdir()
             if p.name != "__init__.py" and (p.suffix == ".py" or (p / "__init__.py").exists())]
    unnamed = sorted(part for part in parts if not re.search(rf"(?<!\w){re.escape(part)}(/|\.py)", text))
    assert not unnamed, f"parts of jupyter_agent/ that docs/architecture.md does not place: {unnamed}"


def test_the_lessons_page_lists_every_lesson_notebook():
    text = (ROOT / "docs" / "lessons.md").read_text(encoding="utf-8")
    lessons = sorted(nb.stem for nb in (ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb") if nb.stem[:2] != "00")
    assert lessons and not [name for name in lessons if f"| `{name}` |" not in text]
