"""Findings 8.8-8.16 and the prepared call: limits that hold before anything is read,
written or shown, each tested as the adversarial test found it."""

from __future__ import annotations

import os
import stat
import tracemalloc
from pathlib import Path

import pytest

from jupyter_agent.view.transcript import redact_and_cut as transcript_cut
from jupyter_agent.redact import redact
from jupyter_agent.loop.messages import cut_at_word, cut_middle
from jupyter_agent.loop.permission_result import PermissionAllow
from jupyter_agent.loop.tool_execution import private_results_dir
from jupyter_agent.tools import edit as edit_module

from .conftest import call_tool, make_ctx, text_of

KEY = "sk-ant-api03-" + "Q7x" * 30 + "AA"  # 107 characters, like a real key
PASSWORD = "hunter2-correct-horse-battery-staple-42"


async def read(ctx, path):
    result = await call_tool(ctx, "Read", {"file_path": str(path)})
    assert not result.get("is_error"), result
    return result


# --- 8.8: redact before cutting ---------------------------------------------------------------

def _leaks(shown: str, secret: str) -> bool:
    """Any 8 consecutive characters of the secret's body left in ``shown``?"""
    body = secret[7:] if secret.startswith("sk-ant-") else secret
    return any(body[i:i + 8] in shown for i in range(len(body) - 7))


@pytest.mark.parametrize("secret", [KEY, PASSWORD])
def test_no_cut_leaves_part_of_a_secret(secret, monkeypatch):
    monkeypatch.setenv("SERVICE_PASSWORD", PASSWORD)
    limit = 400
    for start in range(0, 520):  # the secret at every position around both cut points
        text = "w " * (start // 2) + ("x" if start % 2 else "") + secret + " tail" * 60
        assert not _leaks(transcript_cut(text, limit), secret), start
        # The loop's own cut keeps a secret whole or drops it whole, so redaction still finds it.
        assert not _leaks(redact(cut_middle(text, limit)), secret), start
        assert not _leaks(redact(cut_at_word(text, limit)), secret), start  # an oversized result's preview


# --- 8.9: spilled results stay private ----------------------------------------------------------

async def test_large_results_are_spilled_privately(workspace, tmp_path):
    (workspace / "big.txt").write_text("line of text\n" * 5000)
    ctx = make_ctx(workspace)
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    if os.getuid() == 0:
        os.chown(shared, 12345, 12345)  # a folder someone else owns and anyone may write
    ctx.tool_results_dir = shared
    result = await call_tool(ctx, "Grep", {"pattern": "line", "output_mode": "content"})
    saved = Path(text_of(result).split("saved to ")[1].split(";")[0])
    assert saved.parent != shared and saved.exists()
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    folder = saved.parent.lstat()
    assert stat.S_IMODE(folder.st_mode) == 0o700 and folder.st_uid == os.getuid()
    default = private_results_dir()
    assert stat.S_IMODE(default.lstat().st_mode) == 0o700


# --- 8.10: replace_all is bounded before it is built --------------------------------------------

@pytest.mark.parametrize("mode", ["acceptEdits", "default", "plan"])
async def test_replace_all_blowup_is_refused_before_memory_grows(workspace, mode):
    path = workspace / "small.txt"
    path.write_text("a" * 20)  # (the finding used 200 bytes: a 2 GB result; 20 make 200 MB)
    ctx = make_ctx(workspace, mode)
    await read(ctx, path)
    tracemalloc.start()
    try:
        result = await call_tool(ctx, "Edit", {"file_path": str(path), "old_string": "a",
                                               "new_string": "b" * 9_999_999, "replace_all": True})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result["is_error"] and "limit is" in text_of(result)
    assert peak < 100 * 1024 * 1024  # the input itself is 10 MB; the result would be 200 MB
    assert path.read_text() == "a" * 20


# --- 8.11: caps apply before reading ------------------------------------------------------------

def _sparse(path: Path, size: int, head: bytes = b"") -> None:
    with open(path, "wb") as fh:
        fh.write(head)
        fh.truncate(size)


async def test_read_of_a_huge_broken_notebook_does_not_load_it(workspace):
    path = workspace / "huge.ipynb"
    _sparse(path, 300 * 1024 * 1024, b'{"cells": [')
    tracemalloc.start()
    try:
        result = await call_tool(make_ctx(workspace), "Read", {"file_path": str(path)})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result["is_error"] and "too large" in text_of(result)
    assert peak < 50 * 1024 * 1024


# --- the prepared call: one read, one hash ------------------------------------------------------

async def test_an_edit_reads_its_file_once(workspace, monkeypatch):
    path = workspace / "a.txt"
    path.write_text("one\n")
    ctx = make_ctx(workspace)
    await read(ctx, path)
    reads = []
    real = edit_module.read_text_file
    monkeypatch.setattr(edit_module, "read_text_file", lambda p: reads.append(p) or real(p))
    asks = []
    result = await call_tool(ctx, "Edit", {"file_path": "a.txt", "old_string": "one", "new_string": "two"},
                             can_use_tool=lambda name, input, ask: asks.append(ask) or PermissionAllow())
    assert not result.get("is_error") and path.read_text() == "two\n"
    assert len(reads) == 1 and "-one\n+two\n" in asks[0].diff


async def test_a_change_after_approval_is_not_overwritten(workspace):
    path = workspace / "a.txt"
    path.write_text("one\n")
    ctx = make_ctx(workspace)
    await read(ctx, path)

    def user_edits_while_card_is_open(name, input, ask):
        path.write_text("one, and the user's line\n")
        return PermissionAllow()

    result = await call_tool(ctx, "Edit", {"file_path": "a.txt", "old_string": "one", "new_string": "two"},
                             can_use_tool=user_edits_while_card_is_open)
    assert result["is_error"] and "modified since read" in text_of(result)
    assert path.read_text() == "one, and the user's line\n"


# --- 8.14: suggestions escape glob characters -------------------------------------------------

async def test_always_allow_suggestion_for_a_folder_named_stars_is_literal(workspace):
    (workspace / "**").mkdir()
    (workspace / "other").mkdir()
    ctx = make_ctx(workspace)
    asks = []
    await call_tool(ctx, "Write", {"file_path": "**/x.txt", "content": "x"},
                    can_use_tool=lambda name, input, ask: asks.append(ask)
                    or PermissionAllow(always=ask.suggested_rules))
    assert asks[0].suggested_rules == (r"Edit(\*\*/**)",)
    assert (workspace / "**" / "x.txt").exists()
    again = await call_tool(ctx, "Write", {"file_path": "**/y.txt", "content": "y"})
    assert not again.get("is_error")
    elsewhere = await call_tool(ctx, "Write", {"file_path": "other/z.txt", "content": "z"})
    assert elsewhere["is_error"] and not (workspace / "other" / "z.txt").exists()


# --- 8.15 / 8.16: metadata and hard links -----------------------------------------------------

async def test_edit_keeps_owner_and_extended_attributes(workspace):
    path = workspace / "a.txt"
    path.write_text("one\n")
    try:
        os.setxattr(path, "user.origin", b"kept")
    except OSError:
        pytest.skip("this file system has no user extended attributes")
    if os.getuid() == 0:
        os.chown(path, 12345, 23456)
    ctx = make_ctx(workspace, "acceptEdits")
    await read(ctx, path)
    result = await call_tool(ctx, "Edit", {"file_path": "a.txt", "old_string": "one", "new_string": "two"})
    assert not result.get("is_error") and path.read_text() == "two\n"
    assert os.getxattr(path, "user.origin") == b"kept"
    if os.getuid() == 0:
        assert (path.stat().st_uid, path.stat().st_gid) == (12345, 23456)


async def test_a_hard_linked_file_asks_and_keeps_its_links(workspace, outside):
    inside = workspace / "looks-local.txt"
    os.link(outside / "secret.txt", inside)
    ctx = make_ctx(workspace)
    asked = await call_tool(ctx, "Read", {"file_path": str(inside)})
    assert asked["is_error"] and "hard links" in text_of(asked)  # no UI here: the ask became a refusal
    denied = make_ctx(workspace, deny=["Read(.env)"])
    (workspace / ".env").write_text("PASSWORD=x\n")
    os.link(workspace / ".env", workspace / "notes.txt")
    assert (await call_tool(denied, "Read", {"file_path": "notes.txt"}))["is_error"]
    edit_ctx = make_ctx(workspace, "acceptEdits")
    await call_tool(edit_ctx, "Read", {"file_path": str(inside)}, can_use_tool=lambda *a: PermissionAllow())
    result = await call_tool(edit_ctx, "Edit", {"file_path": str(inside), "old_string": "top", "new_string": "no"},
                             can_use_tool=lambda *a: PermissionAllow())
    assert not result.get("is_error"), result
    assert (outside / "secret.txt").read_text() == "no secret\n" and os.stat(inside).st_nlink == 2


def test_an_unplanned_write_through_a_symlinked_folder_still_works(tmp_path):
    from jupyter_agent.files.atomic import atomic_write

    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "real" / "nb.ipynb").write_text("old")
    atomic_write(tmp_path / "link" / "nb.ipynb", b"new")  # how the notebook backend saves
    assert (tmp_path / "real" / "nb.ipynb").read_text() == "new" and (tmp_path / "link").is_symlink()
