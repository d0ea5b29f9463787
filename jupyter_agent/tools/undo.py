"""A run's checkpoint, recorded by the tools, and the undo that puts it back.

The tools record into the run's :class:`~jupyter_agent.changes.RunChanges` (a part of
``ToolContext.services``) just before and after each change: ``Write``/``Edit`` the
file's bytes and mode, ``NotebookEdit`` the cell as it was, ``NotebookRun`` the names
the cell changed in its kernel. :func:`undo_run` puts back what the run changed and
nothing the user changed after it: a file whose bytes are no longer the ones the run
left, or a cell whose source is no longer the run's, is left as it is, and the report
says so (:class:`~jupyter_agent.changes.UndoOutcome`).

Where it writes: only where the run wrote, never through a symbolic link put in the way
since (the recorded path must still be its own real path). A record read back from a saved
conversation (``RunChanges.saved``) is data anyone with the file could have written, so
it puts back only files inside the conversation's working folders and cells of a notebook
there or of the notebook open in the page; anything else is refused, and the report says
why (``UndoOutcome.REFUSED``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
from pathlib import Path
from typing import TypeGuard

from ..changes import (CellRecord, CellState, FileRecord, NotebookRecord, RunChanges, UndoOutcome, UndoReport,
                       UndoStep, digest)
from ..files.atomic import atomic_write
from ..loop.tool import ToolContext, ToolError
from ..notebook import open_notebook
from ..notebook.document import Cell, CellRestore, NotebookSnapshot
from ..notebook.session import tool_session
from .paths import is_within

log = logging.getLogger(__name__)


def run_changes(context: ToolContext) -> RunChanges:
    """The checkpoint of the run this call belongs to."""
    return context.services.get(RunChanges)


def current_bytes(path: Path, expected_hash: str | None) -> tuple[bytes, int] | None:
    """What a planned write of ``path`` replaces: its bytes and mode, or None when the plan
    is to create it (``expected_hash`` None). The write checks the hash again."""
    if expected_hash is None:
        return None
    try:
        data = path.read_bytes()
        return data, stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        log.debug("could not read %s before writing it; the write will say why", path, exc_info=True)
        return None


def cell_state(snapshot: NotebookSnapshot, index: int) -> CellState:
    """The cell at ``index`` as a checkpoint keeps it."""
    cell: Cell = snapshot.cells[index]
    return CellState(cell.id, cell.cell_type, cell.source, tuple(dict(o) for o in cell.outputs),
                     cell.execution_count, dict(cell.metadata), cell.index,
                     snapshot.cells[index - 1].id if index > 0 else "")


async def undo_run(changes: RunChanges, context: ToolContext) -> UndoReport:
    """Put back every file and cell ``changes`` recorded, except those changed since the
    run (left, and reported). A run is undone once: a second call returns the first report,
    unless a step of it failed (``UndoReport.failed``): then it is tried again, and what the
    first put back is reported as it was then (put back, not "already as before")."""
    earlier = changes.undo_report
    if earlier is not None and not earlier.failed:
        return earlier
    changes.undo_started()  # every view of the run hears it here, whoever asked (RunChanges)
    report = None
    try:
        steps = []
        for record in reversed(list(changes.files.values())):
            why = _refusal(record.path, changes, context)
            steps.append(UndoStep(record.kind, record.path, UndoOutcome.REFUSED, error=why) if why else
                         _undo_file(record))
        for notebook in changes.notebooks.values():
            why = _notebook_refusal(notebook, changes, context)
            if why:
                steps.extend(UndoStep(r.kind, notebook.path, UndoOutcome.REFUSED, r.cell_id, why)
                             for r in notebook.cells.values() if not (r.before is None and r.after_source is None))
                continue
            steps.extend(await _undo_notebook(notebook, context))
        report = UndoReport(_after(earlier, steps), tuple(changes.variables))
    finally:
        changes.undo_ended(report)
    return report


def undo_settled(task: asyncio.Task[UndoReport] | None) -> TypeGuard[asyncio.Task[UndoReport]]:
    """Whether ``task``, a run's last undo, answers another ask to undo it: still going (two
    clicks never undo twice), or ended with a report that put back all it could. One that
    raised, was cancelled or failed a step (``UndoReport.failed``) does not: the run handles
    (``AgentRun``, ``OutsideRun``, ``ResumedRun``) start a new one, which retries."""
    if task is None:
        return False
    if not task.done():
        return True
    return not task.cancelled() and task.exception() is None and not task.result().failed


def _after(earlier: UndoReport | None, steps: list[UndoStep]) -> tuple[UndoStep, ...]:
    """A retry's steps, each change the earlier undo did put back reported as it did."""
    if earlier is None:
        return tuple(steps)
    done = {(s.kind, s.path, s.cell_id): s for s in earlier.steps if s.outcome is not UndoOutcome.FAILED}
    return tuple(done.get((s.kind, s.path, s.cell_id), s) if s.outcome is UndoOutcome.ALREADY else s
                 for s in steps)


def _refusal(path: str, changes: RunChanges, context: ToolContext) -> str:
    """Why the undo may not write ``path`` ("" when it may): see the module docstring."""
    real = os.path.realpath(path)
    if real != os.path.normpath(path):
        return f"a symbolic link now leads it to {real}; the undo writes only where the run wrote"
    if not changes.saved:
        return ""
    roots = context.permissions.allowed_roots(context)
    if any(is_within(real, root) for root in roots):
        return ""
    folders = ", ".join(str(root) for root in roots)
    return (f"it is outside the working folders ({folders}); an undo record read from a saved conversation "
            "puts back only files inside them")


def _notebook_refusal(notebook: NotebookRecord, changes: RunChanges, context: ToolContext) -> str:
    """Why the undo may not put back ``notebook``'s cells ("" when it may)."""
    page = tool_session(context).page_notebook
    if page is not None and page.key == notebook.path:
        return ""  # the notebook open in the page: its cells go back through the page
    if notebook.live and not changes.saved:
        return ""  # this kernel's run changed them in its page, which it reaches by that key
    return _refusal(notebook.path, changes, context)


def _undo_file(record: FileRecord) -> UndoStep:
    path = Path(record.path)

    def step(outcome: UndoOutcome, error: str = "") -> UndoStep:
        return UndoStep(record.kind, record.path, outcome, error=error)

    try:
        now = path.read_bytes() if path.exists() else None
    except OSError as exc:
        return step(UndoOutcome.FAILED, str(exc))
    if now is None:
        return step(UndoOutcome.ALREADY if not record.existed else UndoOutcome.LEFT_CHANGED)
    if digest(now) != record.after_hash:
        return step(UndoOutcome.ALREADY if digest(now) == record.before_hash else UndoOutcome.LEFT_CHANGED)
    try:
        if not record.existed:
            path.unlink()
            return step(UndoOutcome.REMOVED)
        if record.data is None:
            return step(UndoOutcome.TOO_LARGE)
        atomic_write(path, record.data, record.mode, expected_hash=record.after_hash)
    except (OSError, ToolError) as exc:  # changed in the meantime, or the folder is gone
        return step(UndoOutcome.FAILED, str(exc))
    return step(UndoOutcome.RESTORED)


async def _undo_notebook(notebook: NotebookRecord, context: ToolContext) -> list[UndoStep]:
    """Compare each cell the run changed with the document now, and put back those the
    run left as they are, in one :meth:`restore_cells` (one undo step in a page)."""
    records = [r for r in notebook.cells.values() if not (r.before is None and r.after_source is None)]
    try:
        doc = open_notebook(Path(notebook.path), tool_session(context))
        snapshot = await doc.snapshot()
    except ToolError as exc:
        return [UndoStep(r.kind, notebook.path, UndoOutcome.FAILED, r.cell_id, str(exc)) for r in records]
    now = {cell.id: cell for cell in snapshot.cells}
    place = _Places(snapshot.cells, notebook)
    plan: list[tuple[CellRecord, list[CellRestore], UndoOutcome]] = []
    for record in reversed(records):
        plan.append(_plan_cell(record, now.get(record.cell_id), place))
    restores = [step for _, steps, _ in plan for step in steps]
    error = ""
    if restores:
        try:
            await doc.restore_cells(restores, expected_version=snapshot.version)
        except ToolError as exc:
            error = str(exc)
    return [UndoStep(record.kind, notebook.path, UndoOutcome.FAILED if error and steps else outcome,
                     record.cell_id, error if steps else "")
            for record, steps, outcome in plan]


class _Places:
    """Where the cells are now, told as a move recorded where it left a cell: the id of the
    cell just before it ("": first), the cells the run inserted passed over unless one is
    the cell the move named."""

    def __init__(self, cells: tuple[Cell, ...], notebook: NotebookRecord) -> None:
        self.order = [cell.id for cell in cells]
        self.at = {cell_id: i for i, cell_id in enumerate(self.order)}
        self.inserted = {r.cell_id for r in notebook.cells.values() if r.before is None}
        self.deleted = {r.cell_id for r in notebook.cells.values() if r.before is not None and r.after_source is None}

    def after(self, cell_id: str, expected: str | None) -> str | None:
        """The cell ``cell_id`` follows now; None when it cannot be told against ``expected``
        (the run deleted the cell the move left it after)."""
        if expected in self.deleted:
            return None
        for previous in reversed(self.order[:self.at.get(cell_id, 0)]):
            if previous == expected or previous not in self.inserted:
                return previous
        return ""


def _plan_cell(record: CellRecord, now: Cell | None,
               place: _Places) -> tuple[CellRecord, list[CellRestore], UndoOutcome]:
    """What to do with one cell the run changed, given the cell now (None: not there) and
    where the cells are."""
    before = record.before
    if before is None:  # the run inserted it
        if now is None:
            return record, [], UndoOutcome.ALREADY
        if (now.source, now.cell_type) != (record.after_source, record.after_type or now.cell_type):
            return record, [], UndoOutcome.LEFT_CHANGED
        return record, [CellRestore("delete", record.cell_id)], UndoOutcome.REMOVED
    as_it_was = CellRestore("insert" if now is None else "restore", before.id if now is None else record.cell_id,
                            before.cell_type, before.source,
                            before.outputs, before.execution_count, before.metadata, before.after_id, before.index)
    if record.after_source is None:  # the run deleted it
        if now is not None:
            return record, [], UndoOutcome.ALREADY
        return record, [as_it_was], UndoOutcome.RESTORED
    if now is None:
        return record, [], UndoOutcome.LEFT_CHANGED  # deleted since the run
    moved = record.moved
    if moved:
        here = place.after(now.id, record.moved_after)
        if here == before.after_id and (now.source, now.cell_type) == (before.source, before.cell_type):
            return record, [], UndoOutcome.ALREADY
        if here is not None and here != record.moved_after:  # moved again since the run
            return record, [], UndoOutcome.LEFT_CHANGED
    if not moved and (now.source, now.cell_type) == (before.source, before.cell_type):
        return record, [], UndoOutcome.ALREADY
    if (now.source, now.cell_type) != (record.after_source, record.after_type or now.cell_type):
        return record, [], UndoOutcome.LEFT_CHANGED
    if not moved:
        return record, [as_it_was], UndoOutcome.RESTORED
    # Moved: put back after the cell it followed, as it is (its id, and the outputs of a
    # later run too; a page moves it whole, nothing of it sent); one the run also changed
    # first goes back as it was.
    back = CellRestore("move", record.cell_id, after_id=before.after_id, index=before.index)
    return record, [as_it_was, back] if record.changed_text else [back], UndoOutcome.RESTORED


__all__ = ["cell_state", "current_bytes", "run_changes", "undo_run", "undo_settled"]
