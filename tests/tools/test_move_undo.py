"""An outside agent's ``move_cell`` as the kernel carries it out (``jupyter/outside/outside_move.py``, the
agent's NotebookEdit by name) on a real ``.ipynb``, without a page: the cell keeps its id and
outputs, the run records a move (``ChangeKind.CELL_MOVED``), and one undo puts it back where it
was, unless it moved again since; every refusal changes nothing."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from jupyter_agent.changes import ChangeKind, RunChanges, UndoOutcome
from jupyter_agent.jupyter.outside.outside_move import OutsideNotebookMove
from jupyter_agent.jupyter.persistence.saved_conversation import _changes_json, changes_from_json
from jupyter_agent.loop.tool_execution import ToolRunEnv, execute_tool_call
from jupyter_agent.notebook import MemoryNotebook, register_document, tool_session
from jupyter_agent.tools.undo import run_changes, undo_run
from jupyter_agent.view.review import changes_lines

from .conftest import TOOLS, call_tool, text_of


async def move(ctx, **input) -> dict:
    env = ToolRunEnv(tools_by_name={**TOOLS, "NotebookEdit": OutsideNotebookMove()}, context=ctx)
    block = {"type": "tool_use", "id": "toolu_move", "name": "NotebookEdit",
             "input": {"notebook_path": "nb.ipynb", "edit_mode": "move", **input}}
    return await execute_tool_call(block, env)


def notebook(workspace: Path) -> Path:
    path = workspace / "nb.ipynb"
    cells = [new_code_cell(f"v{i} = {i}", id=f"c{i}") for i in range(4)]
    cells[1].outputs = [nbformat.v4.new_output("stream", text="kept\n")]
    cells[1].execution_count = 7
    cells.append(new_markdown_cell("# notes", id="md"))
    nbformat.write(new_notebook(cells=cells), path)
    return path


def order(path: Path) -> list[str]:
    return [c.id for c in nbformat.read(path, as_version=4).cells]


async def test_a_moved_cell_keeps_its_id_and_outputs_and_one_undo_puts_it_back(ctx, workspace):
    path = notebook(workspace)
    before = path.read_bytes()
    ctx.services.put(RunChanges())
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    moved = await move(ctx, cell_id="c1", after_cell_id="c3")
    assert not moved.get("is_error"), moved
    assert "Moved cell c1 after cell c3 (index 3; it was at 1)" in text_of(moved)
    assert order(path) == ["c0", "c2", "c3", "c1", "md"]
    cell = nbformat.read(path, as_version=4).cells[3]
    assert (cell.source, cell.execution_count, cell.outputs[0]["text"]) == ("v1 = 1", 7, "kept\n")
    again = await move(ctx, cell_id="md", before_cell_id="c0")  # no fresh read: the run made the change itself
    assert not again.get("is_error"), again
    assert order(path) == ["md", "c0", "c2", "c3", "c1"]

    changes = run_changes(ctx)
    assert [c.kind for c in changes.changes()] == [ChangeKind.CELL_MOVED, ChangeKind.CELL_MOVED]
    assert changes.changes()[0].before == "placed after cell c0\n"
    assert changes.changes()[0].after == "placed after cell c3\n"
    assert changes_lines(changes, workspace) == ["moved cell nb.ipynb (cell c1)", "moved cell nb.ipynb (cell md)"]

    report = await undo_run(changes, ctx)
    assert [s.outcome for s in report.steps] == [UndoOutcome.RESTORED, UndoOutcome.RESTORED]
    assert path.read_bytes() == before


@pytest.mark.parametrize("users, c1_outcome, after_undo", [
    (("c0", "c3", "md", "c2", "c1"), UndoOutcome.LEFT_CHANGED, ["c0", "c2", "c3", "md", "c1"]),  # moved again
    (("c0", "c1", "c3", "md", "c2"), UndoOutcome.ALREADY, ["c0", "c2", "c1", "c3", "md"]),  # moved back
])
async def test_a_cell_the_user_moved_since_the_run_is_left_as_it_is(ctx, workspace, users, c1_outcome, after_undo):
    path = notebook(workspace)
    ctx.services.put(RunChanges())
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    assert not (await move(ctx, cell_id="c1", after_cell_id="c3")).get("is_error")
    assert not (await move(ctx, cell_id="c2", after_cell_id="md")).get("is_error")
    assert order(path) == ["c0", "c3", "c1", "md", "c2"]
    nb = nbformat.read(path, as_version=4)
    by_id = {c.id: c for c in nb.cells}
    nb.cells = [by_id[i] for i in users]
    nbformat.write(nb, path)
    report = await undo_run(run_changes(ctx), ctx)
    assert {s.cell_id: s.outcome for s in report.steps} == {"c1": c1_outcome, "c2": UndoOutcome.RESTORED}
    assert order(path) == after_undo


async def test_a_move_that_cannot_be_made_changes_nothing(ctx, workspace):
    path = notebook(workspace)
    before = path.read_bytes()
    ctx.services.put(RunChanges())
    unread = await move(ctx, cell_id="c1", after_cell_id="c3")
    assert unread.get("is_error") and "Read" in text_of(unread), unread
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    for input, says in [({"cell_id": "c1"}, "Give exactly one of after_cell_id"),
                        ({"cell_id": "c1", "after_cell_id": "c2", "before_cell_id": "c3"}, "exactly one"),
                        ({"cell_id": "c1", "after_cell_id": "c1"}, "cannot move next to itself"),
                        ({"cell_id": "c1", "after_cell_id": "c0"}, "already there"),
                        ({"cell_id": "c1", "before_cell_id": "c2"}, "already there"),
                        ({"cell_id": "c1", "after_cell_id": "nope"}, 'Cell with ID "nope" not found'),
                        ({"cell_id": "<b>x</b>", "after_cell_id": "c0"}, "is not a valid cell id"),
                        ({"cell_id": "c1", "after_cell_id": "c0\"><img src=x>"}, "is not a valid cell id")]:
        refused = await move(ctx, **input)
        assert refused.get("is_error") and says in text_of(refused), (input, text_of(refused))
    nb = nbformat.read(path, as_version=4)
    nb.cells[2].source = "v2 = 'the user edited this'"  # after the read: the move is stale
    nbformat.write(nb, path)
    changed = path.read_bytes()
    stale = await move(ctx, cell_id="c2", before_cell_id="c0")
    assert stale.get("is_error") and "modified since" in text_of(stale).lower(), text_of(stale)
    assert path.read_bytes() == changed and before != changed
    assert run_changes(ctx).empty


@pytest.mark.parametrize("undone", [False, True])
async def test_a_saved_run_keeps_its_moves(ctx, workspace, undone):
    path = notebook(workspace)
    before = path.read_bytes()
    ctx.services.put(RunChanges())
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    assert not (await move(ctx, cell_id="c0", after_cell_id="md")).get("is_error")
    saved, unsaved = _changes_json(run_changes(ctx), [1 << 20])
    assert unsaved == 0 and saved["notebooks"][0]["cells"][0]["moved_after"] == "md"
    back = changes_from_json(saved)
    back.saved = True
    assert [c.kind for c in back.changes()] == [ChangeKind.CELL_MOVED]
    if undone:
        report = await undo_run(back, ctx)
        assert [s.outcome for s in report.steps] == [UndoOutcome.RESTORED]
        assert path.read_bytes() == before


async def test_a_cell_moved_then_replaced_goes_back_where_it_was_as_it_was(ctx, workspace):
    path = notebook(workspace)
    before = path.read_bytes()
    ctx.services.put(RunChanges())
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    assert not (await move(ctx, cell_id="c1", before_cell_id="c0")).get("is_error")
    replaced = await call_tool(ctx, "NotebookEdit", {"notebook_path": "nb.ipynb", "cell_id": "c1",
                                                     "new_source": "v1 = 'changed'"})
    assert not replaced.get("is_error"), replaced
    assert order(path) == ["c1", "c0", "c2", "c3", "md"]
    assert [c.kind for c in run_changes(ctx).changes()] == [ChangeKind.CELL_REPLACED]
    report = await undo_run(run_changes(ctx), ctx)
    assert [s.outcome for s in report.steps] == [UndoOutcome.RESTORED]
    assert path.read_bytes() == before


async def test_a_document_without_its_own_restore_moves_by_a_delete_and_an_insert_keeping_the_id(ctx, workspace):
    doc = MemoryNotebook(workspace / "nb.ipynb", new_notebook(cells=[new_code_cell(f"m{i}", id=f"m{i}")
                                                                     for i in range(3)]))
    register_document(tool_session(ctx), doc)
    ctx.services.put(RunChanges())
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    assert not (await move(ctx, cell_id="m0", after_cell_id="m2")).get("is_error")
    assert [c["id"] for c in doc.cells] == ["m1", "m2", "m0"]
    report = await undo_run(run_changes(ctx), ctx)
    assert [s.outcome for s in report.steps] == [UndoOutcome.RESTORED]
    assert [c["id"] for c in doc.cells] == ["m0", "m1", "m2"]


async def test_a_cell_moved_after_a_cell_the_run_inserted_is_put_back(ctx, workspace):
    path = notebook(workspace)
    before = path.read_bytes()
    ctx.services.put(RunChanges())
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    inserted = await call_tool(ctx, "NotebookEdit", {"notebook_path": "nb.ipynb", "cell_id": "c0", "new_source": "n",
                                                     "cell_type": "code", "edit_mode": "insert", "new_cell_id": "nn"})
    assert not inserted.get("is_error"), inserted
    assert not (await move(ctx, cell_id="c3", after_cell_id="nn")).get("is_error")
    more = await call_tool(ctx, "NotebookEdit", {"notebook_path": "nb.ipynb", "cell_id": "nn", "new_source": "m",
                                                 "cell_type": "code", "edit_mode": "insert", "new_cell_id": "mm"})
    assert not more.get("is_error"), more
    assert order(path) == ["c0", "nn", "mm", "c3", "c1", "c2", "md"]  # (mm, the run's too, between)
    report = await undo_run(run_changes(ctx), ctx)
    assert {s.cell_id: s.outcome for s in report.steps} == {
        "nn": UndoOutcome.REMOVED, "c3": UndoOutcome.RESTORED, "mm": UndoOutcome.REMOVED}
    assert path.read_bytes() == before
