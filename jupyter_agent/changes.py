"""What one run changed, recorded so that it can be put back, and what putting it back did.

Plain data, no I/O: the tools record into a :class:`RunChanges` (the conversation's
``Services`` part for the run going now) just before and after each change;
``tools/undo.py`` puts the changes back; the views (``view/``) and the fronts show the
records and the :class:`UndoReport`, whose outcomes are values (:class:`UndoOutcome`).

What is kept, per run and in memory for the session: for a file, its bytes and mode
before the run's first change to it (or that it did not exist) and the hash of what the
run left; for a notebook cell, the cell as it was before the run's first change to it
and the source it had after the run's last one. A file or cell over
:data:`MAX_KEPT_BYTES` (or past :data:`MAX_RUN_BYTES` for the whole run) is kept by hash
only: the undo says it cannot put it back.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

log = logging.getLogger(__name__)

#: A file larger than this is recorded by its hash only (it cannot be put back).
MAX_KEPT_BYTES = 8 * 1024 * 1024
#: What one run keeps at most, all files and cells together.
MAX_RUN_BYTES = 64 * 1024 * 1024


def digest(data: bytes) -> str:
    """The hash a recorded state is compared by (sha256, as ``files.atomic.content_hash``)."""
    return hashlib.sha256(data).hexdigest()


class ChangeKind(str, Enum):
    """What a run did to one file or cell."""

    FILE_CREATED = "file_created"
    FILE_CHANGED = "file_changed"
    CELL_INSERTED = "cell_inserted"
    CELL_REPLACED = "cell_replaced"
    CELL_DELETED = "cell_deleted"
    #: the cell's source and type are as before the run; its place is not
    CELL_MOVED = "cell_moved"


class UndoOutcome(str, Enum):
    """What the undo did with one change.

    ``restored``: put back as it was; ``removed``: a file or cell the run created is gone
    again; ``left_changed``: it changed after the run (by the user, another run, a tool),
    so it was left as it is; ``already``: it was already as before the run; ``too_large``:
    recorded by hash only, it cannot be put back; ``failed``: putting it back failed
    (``UndoStep.error`` says why).
    """

    RESTORED = "restored"
    REMOVED = "removed"
    LEFT_CHANGED = "left_changed"
    ALREADY = "already"
    TOO_LARGE = "too_large"
    FAILED = "failed"
    REFUSED = "refused"


#: The outcomes that leave something of the run in place.
LEFT_OUTCOMES = frozenset({UndoOutcome.LEFT_CHANGED, UndoOutcome.TOO_LARGE, UndoOutcome.FAILED,
                           UndoOutcome.REFUSED})


@dataclass
class FileRecord:
    """A file the run wrote: as it was before (``data`` None and ``existed`` False: there
    was no file; ``data`` None and ``existed`` True: too large to keep), and the hash
    of the bytes the run's last write left."""

    path: str
    existed: bool
    data: bytes | None
    mode: int | None
    before_hash: str | None
    after_hash: str = ""
    #: the run's last bytes (for the review's diff; None when too large to keep)
    after: bytes | None = None

    @property
    def kind(self) -> ChangeKind:
        return ChangeKind.FILE_CHANGED if self.existed else ChangeKind.FILE_CREATED

    @property
    def restorable(self) -> bool:
        return not self.existed or self.data is not None


@dataclass
class CellState:
    """A notebook cell as a checkpoint keeps it (what putting it back needs)."""

    id: str
    cell_type: str
    source: str
    outputs: tuple[dict[str, Any], ...] = ()
    execution_count: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    #: where it was: its 0-based index, and the id of the cell before it ("" if first)
    index: int = 0
    after_id: str = ""


@dataclass
class CellRecord:
    """One cell a run inserted, replaced, deleted or moved: ``before`` None means the run
    inserted it; ``after_source`` None means the run deleted it; ``moved_after`` not None
    means the run moved it, and left it after that cell ("": first)."""

    cell_id: str
    before: CellState | None
    after_source: str | None
    after_type: str | None = None
    moved_after: str | None = None

    @property
    def kind(self) -> ChangeKind:
        if self.before is None:
            return ChangeKind.CELL_INSERTED
        if self.after_source is None:
            return ChangeKind.CELL_DELETED
        if self.moved_after is not None and not self.changed_text:
            return ChangeKind.CELL_MOVED
        return ChangeKind.CELL_REPLACED

    @property
    def changed_text(self) -> bool:
        """The run left the cell with another source or type than it had."""
        before = self.before
        return before is None or (self.after_source, self.after_type) != (before.source, before.cell_type)

    @property
    def moved(self) -> bool:
        """The run left the cell somewhere else than it was (after another cell)."""
        return self.before is not None and self.moved_after is not None and self.moved_after != self.before.after_id


@dataclass
class NotebookRecord:
    """The cells of one notebook a run changed, in the order it first changed them."""

    path: str
    #: the open notebook of a page (the live document, not the file)
    live: bool = False
    cells: dict[str, CellRecord] = field(default_factory=dict)


@dataclass(frozen=True)
class Change:
    """One line of a run's list of changes (what the review and the CLI show)."""

    kind: ChangeKind
    path: str
    cell_id: str = ""
    #: before and after as text, for a diff ("" when there was none; None when not kept)
    before: str | None = ""
    after: str | None = ""


@dataclass(frozen=True)
class UndoStep:
    """What the undo did with one change."""

    kind: ChangeKind
    path: str
    outcome: UndoOutcome
    cell_id: str = ""
    error: str = ""


@dataclass(frozen=True)
class UndoReport:
    """The whole undo of one run: a step per change, and the kernel's names the run's
    cells created or rebound (undoing cells does not undo what they did in the kernel)."""

    steps: tuple[UndoStep, ...]
    variables: tuple[str, ...] = ()

    @property
    def left(self) -> tuple[UndoStep, ...]:
        """The changes still in place after the undo."""
        return tuple(s for s in self.steps if s.outcome in LEFT_OUTCOMES)

    @property
    def failed(self) -> bool:
        """Whether putting a change back failed (``UndoOutcome.FAILED``: a file that could not
        be written, a page that did not answer): the run may be undone again once fixed."""
        return any(s.outcome is UndoOutcome.FAILED for s in self.steps)


class UndoState(str, Enum):
    """Where a run's undo is: the one answer every place that shows it reads
    (:attr:`RunChanges.undo_state`), whoever started the undo."""

    #: not undone (nor being undone)
    NOT_UNDONE = "not_undone"
    #: the undo is putting the changes back now
    RUNNING = "running"
    #: undone (a run is undone once): :attr:`RunChanges.undo_report` says what it did
    DONE = "done"
    #: the last undo failed, in part (:attr:`UndoReport.failed`: the report says what it could
    #: not put back) or whole (it raised): the run may be undone again, which retries
    FAILED = "failed"


class RunChanges:
    """The checkpoint of one run: the tools record into it, the undo reads it.

    Made per run by the conversation (``Services.put(RunChanges())``); a call made
    outside a conversation records into the part its context makes on first use.

    It is also the one source of truth for "this run was undone": the undo
    (``tools/undo.py``) marks it here as it starts and ends, whichever front asked for it
    (a panel's button, ``%agent undo``, the cell's Undo button, ``await run.undo()``), and
    every view that shows the run's undo state listens here (:meth:`listen_undo`).
    """

    def __init__(self) -> None:
        self.files: dict[str, FileRecord] = {}
        self.notebooks: dict[str, NotebookRecord] = {}
        #: top-level names the run's executed cells created or rebound, in order
        self.variables: list[str] = []
        #: what the last undo did (None: not undone); a run is undone once, unless that
        #: undo failed (:attr:`undo_state`), when it may be undone again
        self.undo_report: UndoReport | None = None
        #: the conversation has told the model about the undo
        self.undo_told = False
        #: read back from a saved conversation (not recorded by this kernel's tools): its
        #: undo writes only inside the working folders and the open notebook (tools/undo.py)
        self.saved = False
        self._kept = 0
        self._undoing = False
        self._undo_raised = False
        self._undo_listeners: list[Callable[[], None]] = []

    # -- recording (the tools) -----------------------------------------------------------
    def _keep(self, data: bytes) -> bool:
        if len(data) > MAX_KEPT_BYTES or self._kept + len(data) > MAX_RUN_BYTES:
            return False
        self._kept += len(data)
        return True

    def file_written(self, path: str, before: tuple[bytes, int] | None, data: bytes) -> None:
        """The run wrote ``data`` to ``path``, which held ``before`` (bytes, mode) or did
        not exist (None). What was there before is kept on the run's first write only."""
        record = self.files.get(path)
        if record is None:
            if before is None:
                record = FileRecord(path, existed=False, data=None, mode=None, before_hash=None)
            else:
                kept = before[0] if self._keep(before[0]) else None
                record = FileRecord(path, existed=True, data=kept, mode=before[1], before_hash=digest(before[0]))
            self.files[path] = record
        record.after_hash = digest(data)
        record.after = data if len(data) <= MAX_KEPT_BYTES else None

    def before_cell_change(self, path: str, before: CellState | None, *, live: bool) -> None:
        """Just before the run changes the cell ``before`` (None: an insert, recorded by
        :meth:`after_cell_change` once its id is known)."""
        notebook = self.notebooks.setdefault(path, NotebookRecord(path, live=live))
        if before is not None and before.id not in notebook.cells:
            # outputs can be large (images): over the bound the cell keeps its source only
            if len(repr(before.outputs)) + len(before.source) > MAX_KEPT_BYTES \
                    or self._kept + len(repr(before.outputs)) > MAX_RUN_BYTES:
                before = CellState(before.id, before.cell_type, before.source, (), None, dict(before.metadata),
                                   before.index, before.after_id)
            self._kept += len(before.source) + len(repr(before.outputs))
            notebook.cells[before.id] = CellRecord(before.id, before, before.source, before.cell_type)

    def after_cell_change(self, path: str, cell_id: str, source: str | None, cell_type: str | None,
                          was_id: str = "") -> None:
        """The run left cell ``cell_id`` with ``source`` (None: it deleted the cell).
        ``was_id``: the id the cell had before the change, when the change gave it its id
        (a notebook older than cell ids is given ids on its first edit)."""
        notebook = self.notebooks.setdefault(path, NotebookRecord(path))
        if was_id and was_id != cell_id and was_id in notebook.cells and cell_id not in notebook.cells:
            moved = notebook.cells.pop(was_id)
            moved.cell_id = cell_id
            notebook.cells[cell_id] = moved
        record = notebook.cells.get(cell_id)
        if record is None:  # a cell the run inserted
            notebook.cells[cell_id] = CellRecord(cell_id, None, source, cell_type)
        else:
            record.after_source, record.after_type = source, cell_type

    def cell_moved(self, path: str, cell_id: str, after_id: str) -> None:
        """The run moved cell ``cell_id`` (recorded by :meth:`before_cell_change` first) to
        just after the cell ``after_id`` ("": first)."""
        record = self.notebooks.setdefault(path, NotebookRecord(path)).cells.get(cell_id)
        if record is not None and record.before is not None:
            record.moved_after = after_id

    def ran_cell(self, names: tuple[str, ...]) -> None:
        """A cell the run executed created or rebound ``names`` in its kernel."""
        for name in names:
            if name not in self.variables:
                self.variables.append(name)

    # -- the undo's state (the undo sets it; the views listen) ----------------------------
    @property
    def undo_state(self) -> UndoState:
        """Whether the run is undone, being undone, or neither."""
        if self._undoing:
            return UndoState.RUNNING
        if self._undo_raised or (self.undo_report is not None and self.undo_report.failed):
            return UndoState.FAILED
        return UndoState.NOT_UNDONE if self.undo_report is None else UndoState.DONE

    def listen_undo(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` each time :attr:`undo_state` changes (on the thread of the
        undo: the kernel's event loop). Returns what stops it."""
        self._undo_listeners.append(listener)

        def stop() -> None:
            if listener in self._undo_listeners:
                self._undo_listeners.remove(listener)
        return stop

    def undo_started(self) -> None:
        """The undo began putting the changes back (``tools/undo.py``)."""
        self._undoing = True
        self._tell_undo()

    def undo_ended(self, report: UndoReport | None) -> None:
        """The undo ended: ``report`` is what it did (None: it raised before it could say).
        Either way a failure leaves the run :attr:`UndoState.FAILED`, to be undone again."""
        self._undoing = False
        self._undo_raised = report is None
        if report is not None:
            self.undo_report = report
            self.undo_told = False  # (a retry's report is news to the model too)
        self._tell_undo()

    def _tell_undo(self) -> None:
        for listener in list(self._undo_listeners):
            try:
                listener()
            except Exception:  # one view's failure must not stop the undo or the other views
                log.exception("a view could not take a run's undo state")

    # -- reading (the views, the undo) ------------------------------------------------
    def changes(self) -> list[Change]:
        """Every change the run made, files first, each with its before and after text."""
        out = [Change(r.kind, r.path, before=_text(r.data) if r.existed else "", after=_text(r.after))
               for r in self.files.values()]
        for notebook in self.notebooks.values():
            for cell in notebook.cells.values():
                if cell.before is None and cell.after_source is None:
                    continue  # inserted, then deleted by the same run: nothing to undo
                if cell.before is not None and not cell.changed_text and not cell.moved:
                    continue  # put back as it was by the run itself
                if cell.kind is ChangeKind.CELL_MOVED and cell.before is not None:
                    out.append(Change(cell.kind, notebook.path, cell.cell_id, before=_place(cell.before.after_id),
                                      after=_place(cell.moved_after)))
                    continue
                out.append(Change(cell.kind, notebook.path, cell.cell_id,
                                  before=cell.before.source if cell.before else "",
                                  after=cell.after_source or ""))
        return out

    @property
    def empty(self) -> bool:
        return not self.changes()


def undo_note(report: UndoReport) -> str:
    """What the model is told in front of the next prompt after the user undid a run."""
    put_back = [s for s in report.steps if s.outcome not in LEFT_OUTCOMES and s.outcome is not UndoOutcome.ALREADY]
    lines = ["<system-reminder>The user undid the changes of your previous run: what it changed is back as it "
             "was before that run. Do not assume your edits from that run are there; Read files and notebooks "
             "again before you edit them."]
    for step in put_back:
        lines.append(f"- {_where(step)}: {_UNDONE_VERB[step.kind]}")
    for step in report.left:
        lines.append(f"- {_where(step)}: still as your run left it or changed since ({step.outcome.value})")
    if report.variables:
        lines.append("The kernel still holds what that run's cells did (undo does not undo the kernel): "
                     "variables changed: " + ", ".join(report.variables))
    lines.append("</system-reminder>")
    return "\n".join(lines)


_UNDONE_VERB = {
    ChangeKind.FILE_CREATED: "created by your run, removed again",
    ChangeKind.FILE_CHANGED: "put back as it was",
    ChangeKind.CELL_INSERTED: "inserted by your run, removed again",
    ChangeKind.CELL_REPLACED: "put back as it was",
    ChangeKind.CELL_DELETED: "deleted by your run, put back",
    ChangeKind.CELL_MOVED: "moved by your run, put back where it was",
}


def _where(step: UndoStep) -> str:
    return f"{step.path} (cell {step.cell_id})" if step.cell_id else step.path


def _place(after_id: str | None) -> str:
    """Where a moved cell is, as the review's diff shows it (one line)."""
    return f"placed after cell {after_id}\n" if after_id else "placed first in the notebook\n"


def _text(data: bytes | None) -> str | None:
    if data is None:
        return None
    return data.decode("utf-8", errors="replace")


__all__ = ["MAX_KEPT_BYTES", "MAX_RUN_BYTES", "CellRecord", "CellState", "Change", "ChangeKind", "FileRecord",
           "LEFT_OUTCOMES", "NotebookRecord", "RunChanges", "UndoOutcome", "UndoReport", "UndoState", "UndoStep",
           "digest", "undo_note"]
