"""A run's checkpoint as the tools record it, and its undo, without a kernel: the size
bound, a deleted cell put back where it was, and a document that can only make ordinary
edits (the default ``restore_cells``, what an older page gets)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from jupyter_agent import changes as changes_module
from jupyter_agent.changes import ChangeKind, RunChanges, UndoOutcome, UndoState
from jupyter_agent.notebook import MemoryNotebook, register_document, tool_session
from jupyter_agent.tools.undo import run_changes, undo_run, undo_settled

from .conftest import call_tool


def outcomes(report) -> dict[tuple[str, str], UndoOutcome]:
    return {(Path(s.path).name, s.cell_id): s.outcome for s in report.steps}


async def test_a_file_over_the_bound_is_kept_by_hash_only_and_left(ctx, workspace, monkeypatch):
    monkeypatch.setattr(changes_module, "MAX_KEPT_BYTES", 10)
    ctx.services.put(RunChanges())
    big, small = workspace / "big.txt", workspace / "small.txt"
    big.write_text("0123456789 and more\n")
    small.write_text("tiny\n")
    for name in ("big.txt", "small.txt"):
        await call_tool(ctx, "Read", {"file_path": name})
        await call_tool(ctx, "Write", {"file_path": name, "content": "agent\n"})
    report = await undo_run(run_changes(ctx), ctx)
    assert outcomes(report) == {("big.txt", ""): UndoOutcome.TOO_LARGE, ("small.txt", ""): UndoOutcome.RESTORED}
    assert big.read_text() == "agent\n" and small.read_text() == "tiny\n"
    assert report.left[0].path == str(big)
    assert await undo_run(run_changes(ctx), ctx) is report  # a run is undone once


async def test_a_deleted_cell_comes_back_where_it_was_with_its_outputs(ctx, workspace):
    path = workspace / "nb.ipynb"
    cells = [new_code_cell(f"v{i} = {i}", id=f"c{i}") for i in range(4)]
    cells[2].outputs = [nbformat.v4.new_output("stream", text="kept\n")]
    nbformat.write(new_notebook(cells=cells), path)
    before = path.read_bytes()
    ctx.services.put(RunChanges())
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    for cell_id in ("c1", "c2"):
        result = await call_tool(ctx, "NotebookEdit", {"notebook_path": "nb.ipynb", "cell_id": cell_id,
                                                       "new_source": "", "edit_mode": "delete"})
        assert not result.get("is_error"), result
    assert [c.kind for c in run_changes(ctx).changes()] == [ChangeKind.CELL_DELETED, ChangeKind.CELL_DELETED]
    report = await undo_run(run_changes(ctx), ctx)
    assert set(outcomes(report).values()) == {UndoOutcome.RESTORED}
    assert path.read_bytes() == before


async def test_a_document_without_its_own_restore_gets_ordinary_edits(ctx, workspace):
    path = workspace / "mem.ipynb"
    doc = MemoryNotebook(path, new_notebook(cells=[new_code_cell("a = 1", id="a"), new_code_cell("b = 2", id="b")]))
    register_document(tool_session(ctx), doc)
    ctx.services.put(RunChanges())
    await call_tool(ctx, "Read", {"file_path": "mem.ipynb"})
    await call_tool(ctx, "NotebookEdit", {"notebook_path": "mem.ipynb", "cell_id": "a", "new_source": "a = 100"})
    await call_tool(ctx, "NotebookEdit", {"notebook_path": "mem.ipynb", "cell_id": "b", "new_source": "c = 3",
                                          "cell_type": "code", "edit_mode": "insert"})
    await call_tool(ctx, "NotebookEdit", {"notebook_path": "mem.ipynb", "cell_id": "b", "new_source": "b = 20"})
    doc.cells[1]["source"] = "b = 20  # the user's"  # changed after the run: left as it is
    report = await undo_run(run_changes(ctx), ctx)
    assert outcomes(report)[("mem.ipynb", "a")] is UndoOutcome.RESTORED
    assert outcomes(report)[("mem.ipynb", "b")] is UndoOutcome.LEFT_CHANGED
    assert [(c["id"], c["source"]) for c in doc.cells] == [("a", "a = 1"), ("b", "b = 20  # the user's")]


async def test_a_notebook_without_cell_ids_is_undone_after_its_first_edit_gave_it_ids(ctx, workspace):
    path = workspace / "old.ipynb"
    old = new_notebook(cells=[new_code_cell("a = 1"), new_code_cell("b = 2")])
    old.nbformat_minor = 4
    for cell in old.cells:
        del cell["id"]
    path.write_text(nbformat.writes(old, version=4))
    ctx.services.put(RunChanges())
    await call_tool(ctx, "Read", {"file_path": "old.ipynb"})
    result = await call_tool(ctx, "NotebookEdit", {"notebook_path": "old.ipynb", "cell_id": "cell-1",
                                                   "new_source": "b = 20"})
    assert not result.get("is_error"), result
    report = await undo_run(run_changes(ctx), ctx)
    assert [s.outcome for s in report.steps] == [UndoOutcome.RESTORED]
    assert [c.source for c in nbformat.read(path, as_version=4).cells] == ["a = 1", "b = 2"]


class _Unreachable(MemoryNotebook):
    """A document whose next snapshot fails with an error the undo does not expect (as a
    page that went away mid-answer might): the undo raises, as it must not hide it."""

    broken = False

    async def snapshot(self):
        if self.broken:
            raise ConnectionResetError("the page went away")
        return await super().snapshot()


async def test_an_undo_that_raised_is_tried_again_not_reused(ctx, workspace):
    """``undo_settled`` (the run handles' one rule): a running or successful undo is reused
    (two clicks never undo twice), one that raised is not, and the run's state says FAILED
    meanwhile, to every view that listens."""
    doc = _Unreachable(workspace / "mem.ipynb", new_notebook(cells=[new_code_cell("a = 1", id="a")]))
    register_document(tool_session(ctx), doc)
    changes = RunChanges()
    ctx.services.put(changes)
    await call_tool(ctx, "Read", {"file_path": "mem.ipynb"})
    await call_tool(ctx, "NotebookEdit", {"notebook_path": "mem.ipynb", "cell_id": "a", "new_source": "a = 100"})
    heard: list[UndoState] = []
    changes.listen_undo(lambda: heard.append(changes.undo_state))
    doc.broken = True
    first = asyncio.get_running_loop().create_task(undo_run(changes, ctx))
    assert undo_settled(first)  # going: a second ask gets it
    with pytest.raises(ConnectionResetError):
        await first
    assert not undo_settled(first) and changes.undo_state is UndoState.FAILED and changes.undo_report is None
    doc.broken = False
    second = asyncio.get_running_loop().create_task(undo_run(changes, ctx))
    report = await second
    assert undo_settled(second) and outcomes(report) == {("mem.ipynb", "a"): UndoOutcome.RESTORED}
    assert changes.undo_state is UndoState.DONE and doc.cells[0]["source"] == "a = 1"
    assert heard == [UndoState.RUNNING, UndoState.FAILED, UndoState.RUNNING, UndoState.DONE]
