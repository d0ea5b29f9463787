"""No path trick reaches outside the working folder without a person saying yes.

Each attempt runs through the loop's pipeline with no UI attached, so an "ask" is a
deny: the result must be an error and every file outside must stay as it was.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .conftest import call_tool, make_ctx, tree_bytes

WRITES = [
    ("Write", lambda p: {"file_path": p, "content": "pwned\n"}),
    ("Edit", lambda p: {"file_path": p, "old_string": "top secret", "new_string": "pwned"}),
]


def escape_forms(workspace: Path, outside: Path) -> dict[str, str]:
    rel = os.path.relpath(outside / "secret.txt", workspace)
    return {
        "traversal": rel,
        "traversal_via_subdir": f"sub/../{rel}",
        "absolute": str(outside / "secret.txt"),
        "double_slash": "/" + str(outside / "secret.txt"),
        "dot_segments": str(workspace) + "/./../" + outside.name + "/./secret.txt",
        "home": "~/secret.txt",
        "symlink_out": "link_out/secret.txt",
        "file_symlink_out": "secret_link.txt",
    }


@pytest.fixture
def trap(workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    (workspace / "sub").mkdir()
    (workspace / "link_out").symlink_to(outside, target_is_directory=True)
    (workspace / "secret_link.txt").symlink_to(outside / "secret.txt")
    monkeypatch.setenv("HOME", str(outside))
    return escape_forms(workspace, outside)


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "plan"])
@pytest.mark.parametrize("tool,args", WRITES, ids=[w[0] for w in WRITES])
async def test_no_write_escape_succeeds(workspace, outside, trap, mode, tool, args):
    ctx = make_ctx(workspace, mode)
    before = tree_bytes(outside)
    for form, path in trap.items():
        # Even a model that "read" the file first gets nowhere.
        real = str(outside / "secret.txt")
        from jupyter_agent.loop.tool import FileReadRecord
        from jupyter_agent.tools.fileio import content_hash
        ctx.read_file_state[real] = FileReadRecord(real, 0, content_hash((outside / "secret.txt").read_bytes()))
        result = await call_tool(ctx, tool, args(path))
        assert result.get("is_error"), (form, result)
        assert "outside the working folders" in result["content"] or "plan mode" in result["content"], form
        assert "pwned" not in (outside / "secret.txt").read_text()
    assert tree_bytes(outside) == before


@pytest.mark.parametrize("form", ["traversal", "absolute", "home", "symlink_out", "file_symlink_out", "dot_segments"])
async def test_no_read_escape_succeeds_without_approval(workspace, outside, trap, form):
    ctx = make_ctx(workspace, "default")
    result = await call_tool(ctx, "Read", {"file_path": trap[form]})
    assert result.get("is_error") and "top secret" not in str(result["content"])
    assert "outside the working folders" in result["content"]


async def test_a_nul_byte_or_control_character_is_refused_before_any_disk_access(workspace, outside):
    ctx = make_ctx(workspace, "bypassPermissions")
    for path in ("ok.txt\x00/../../etc/passwd", "a\nb.txt", str(outside / "secret.txt\x00")):
        result = await call_tool(ctx, "Write", {"file_path": path, "content": "x"})
        assert result["is_error"] and ("NUL" in result["content"] or "control" in result["content"])
    assert sorted(os.listdir(workspace)) == []


async def test_search_tools_cannot_walk_out(workspace, outside, trap):
    ctx = make_ctx(workspace, "default")
    for name, args in (("Glob", {"pattern": "**/*", "path": ".."}), ("Glob", {"pattern": "../**/*.txt"}),
                       ("Glob", {"pattern": f"{outside}/*"}), ("Grep", {"pattern": "secret", "path": ".."}),
                       ("Grep", {"pattern": "secret", "path": "~"})):
        result = await call_tool(ctx, name, args)
        assert result.get("is_error") and "top secret" not in result["content"], (name, args, result)
    # Inside the root, symlinks to the outside are not followed.
    glob = await call_tool(ctx, "Glob", {"pattern": "**/*.txt"})
    assert "link_out/secret.txt" not in glob["content"]
    grep = await call_tool(ctx, "Grep", {"pattern": "top secret", "output_mode": "content"})
    assert grep["content"] == "No matches found"


async def test_symlink_from_outside_into_the_root_is_fine(workspace, outside):
    (workspace / "data.txt").write_text("inside\n")
    (outside / "into.txt").symlink_to(workspace / "data.txt")
    ctx = make_ctx(workspace, "default")
    result = await call_tool(ctx, "Read", {"file_path": str(outside / "into.txt")})
    assert result["content"] == "1\tinside"  # it really reads a file inside the root


async def test_a_rule_can_open_a_folder_outside(workspace, outside):
    ctx = make_ctx(workspace, "default", allow=[f"Read({outside}/**)"])
    result = await call_tool(ctx, "Read", {"file_path": str(outside / "secret.txt")})
    assert result["content"] == "1\ttop secret"
    # An allow rule for the link's own path does not cover where it really leads.
    (workspace / "sneaky").symlink_to(outside, target_is_directory=True)
    ctx = make_ctx(workspace, "acceptEdits", allow=["Edit(sneaky/**)"])
    ctx.read_file_state.clear()
    result = await call_tool(ctx, "Write", {"file_path": "sneaky/new.txt", "content": "x"})
    assert result["is_error"] and not (outside / "new.txt").exists()
