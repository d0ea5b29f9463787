"""``NotebookEdit {notebook_path, cell_id?, new_source?, cell_type?, edit_mode?}``, Claude Code's rules
(``new_source`` may be left out for a delete).

* ``cell_id`` is a cell's id, or ``cell-N`` for the cell at 0-based index N.
* insert: without ``cell_id`` the cell goes first, with one it goes after that cell;
  ``cell_type`` is required; the new cell gets ``new_cell_id`` (the model's choice, so that
  a run in the same answer can name it) or a fresh id.
* The result names the cell, its type and line count, never the source the model sent.
* replace (default): a code cell loses its outputs and execution count.
* The notebook must have been read, and must not have changed since.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..loop.permission_result import PermissionAsk, PermissionResult
from ..notebook import (
    NotebookDocument,
    NotebookSnapshot,
    is_notebook_path,
    open_notebook,
)
from ..notebook.document import POSITION_ID, VALID_CELL_ID, StaleNotebookError, check_cell_id_text
from ..notebook.session import tool_session
from ..loop.tool import FileReadRecord, PreparedCall, ToolContext, ToolError, ToolInput, ToolOutput
from .common import PathTool, check_text_size, unified_diff
from .fileio import NOT_READ_YET
from .paths import display_path, inside_roots
from .undo import cell_state, run_changes
from .write import suggest_edit_rules


class NotebookEditInput(ToolInput):
    notebook_path: str = Field(description="The absolute path to the Jupyter notebook file to edit "
                                           "(must be absolute, not relative)")
    cell_id: str | None = Field(default=None, description=(
        "The ID of the cell to edit. When inserting a new cell, the new cell will be inserted after the cell "
        "with this ID, or at the beginning if not specified. cell-N (0-based index) is accepted too."))
    new_source: str | None = Field(default=None, description="The new source for the cell (not needed for "
                                                             "edit_mode=delete)")
    cell_type: Literal["code", "markdown"] | None = Field(default=None, description=(
        "The type of the cell (code or markdown). If not specified, it defaults to the current cell type. "
        "If using edit_mode=insert, this is required."))
    edit_mode: Literal["replace", "insert", "delete"] | None = Field(default=None, description=(
        "The type of edit to make (replace, insert, delete). Defaults to replace."))
    new_cell_id: str | None = Field(default=None, description=(
        "For edit_mode=insert: the new cell's id, of your choosing (1-64 letters, digits, - or _; not an id "
        "in the notebook), so that later calls of the same answer can use it. Default: a fresh id."))


async def notebook_for_change(path_text: str, path, ctx: ToolContext, *, sources_only: bool = False,
                              cell_id: str | None = None) -> tuple[NotebookDocument, NotebookSnapshot]:
    """The notebook's document and snapshot, after checking it takes changes, was read and
    has not changed since. ``sources_only``: a snapshot whose outputs may be older (a run's
    plan: ``NotebookDocument.sources_snapshot``). ``cell_id``: the one cell the call changes
    or runs; the cell a Fix with agent click quoted counts as read (:func:`_clicked_read`)."""
    doc = open_notebook(path, tool_session(ctx))
    refused = await doc.changes_refused()
    if refused:  # before anyone is asked: the snapshot would be the file, not the page
        raise ToolError(refused)
    snapshot = await (doc.sources_snapshot() if sources_only else doc.snapshot())
    record = ctx.read_file_state.get(str(path)) or _clicked_read(ctx, path, snapshot, cell_id)
    if record is None:
        raise ToolError(NOT_READ_YET.replace("File", "Notebook"))
    if record.content_hash != snapshot.version:
        raise StaleNotebookError()
    return doc, snapshot


def _clicked_read(ctx: ToolContext, path, snapshot: NotebookSnapshot, cell_id: str | None) -> FileReadRecord | None:
    """The read a Fix with agent / Explain click stands for: the model was shown the clicked
    cell, so a change of that cell, while its source is still the one shown, needs no Read
    first (the click's prompt asks for exactly that edit). Any other cell still needs one."""
    clicked = tool_session(ctx).clicked_cell
    if clicked is None or cell_id is None or clicked[0] != str(path):
        return None
    try:
        cell = snapshot.find(cell_id)
    except ToolError:
        return None
    if cell.id != clicked[1] or cell.source != clicked[2]:
        return None
    record = FileReadRecord(path=str(path), mtime_ns=snapshot.mtime_ns, content_hash=snapshot.version, partial=True)
    ctx.read_file_state[str(path)] = record
    return record


def note_notebook_change(ctx: ToolContext, path, version: str, mtime_ns: int) -> None:
    """The model made this change itself: later edits need no fresh Read."""
    previous = ctx.read_file_state.get(str(path))
    ctx.read_file_state[str(path)] = FileReadRecord(
        path=str(path), mtime_ns=mtime_ns, content_hash=version, partial=previous.partial if previous else False)


class NotebookEdit(PathTool[NotebookEditInput]):
    name = "NotebookEdit"
    Input = NotebookEditInput
    path_field = "notebook_path"
    edits_files = True
    description = (
        "Completely replaces the contents of a specific cell in a Jupyter notebook (.ipynb file) with new "
        "source. The notebook_path parameter must be an absolute path, not a relative path. The cell_id "
        "identifies the cell (its id as shown by Read, or cell-N for the 0-based index N). Use edit_mode=insert "
        "to add a new cell after the cell with cell_id (or at the beginning without cell_id); give it an id of "
        "your own with new_cell_id to run it in the same answer. Use edit_mode=delete to delete the cell. Read "
        "the notebook first: edits fail if it changed since it was read. Replacing a code cell clears its "
        "outputs."
    )

    def mode(self, input: NotebookEditInput) -> str:
        return input.edit_mode or "replace"

    async def validate_input(self, input: NotebookEditInput, context: ToolContext) -> str | None:
        mode = self.mode(input)
        if input.new_source is None and mode != "delete":
            return f"new_source is required for edit_mode={mode}: give the cell's whole new source."
        error = self.validate_path_text(input, context) or check_text_size(input.new_source or "", "new_source")
        if error:
            return error
        path = self.resolve(input, context)
        if not is_notebook_path(path.real):
            return "File must be a Jupyter notebook (.ipynb file). For editing other file types, use the Edit tool."
        if input.cell_id is not None and (error := check_cell_id_text(input.cell_id)):
            return error
        if mode == "insert" and input.cell_type is None:
            return "Cell type is required when using edit_mode=insert."
        if mode != "insert" and input.cell_id is None:
            return "Cell ID must be specified when not inserting a new cell."
        if input.new_cell_id is not None:
            if mode != "insert":
                return "new_cell_id is for edit_mode=insert only: leave it out to replace or delete a cell."
            if not VALID_CELL_ID.fullmatch(input.new_cell_id):
                return (f"new_cell_id {input.new_cell_id[:80]!r} is not a valid cell id: use 1-64 letters, digits, "
                        "'-' or '_'.")
            if POSITION_ID.fullmatch(input.new_cell_id):
                return (f"new_cell_id {input.new_cell_id!r} reads as a position (cell-N): choose an id of "
                        "another form.")
        return None
        return None

    async def prepare(self, input: NotebookEditInput, context: ToolContext) -> PreparedCall:
        """Plan the edit once (one read of the notebook): the policy and the approval card
        look at this plan, and ``call`` carries it out. Time passes while the user decides;
        the backend checks the plan's version again when it applies the edit (the page does
        it in the same step), so a notebook changed meanwhile is refused, never overwritten."""
        prepared = await super().prepare(input, context)
        if prepared.paths and inside_roots(prepared.paths[0], context):
            try:
                plan = await self.plan(input, context)
            except ToolError as exc:
                prepared.problem = str(exc)
            else:
                prepared.change, prepared.content_hash = plan, plan[1].version
                prepared.diff = self._diff(input, context, plan)
        return prepared

    async def planned(self, input: NotebookEditInput, context: ToolContext,
                      prepared: PreparedCall) -> tuple[NotebookDocument, NotebookSnapshot, str, int | None]:
        """The plan's edit; for a notebook outside the working folders, read only once the call
        is allowed (see :meth:`prepare`), it is planned now."""
        if prepared.change is not None:
            return prepared.change
        return await self.plan(input, context)

    async def plan(
        self, input: NotebookEditInput, context: ToolContext
    ) -> tuple[NotebookDocument, NotebookSnapshot, str, int | None]:
        """Check everything; return the document, its snapshot, the effective mode and cell index."""
        path = self.resolve(input, context).real
        doc, snapshot = await notebook_for_change(input.notebook_path, path, context,
                                                  cell_id=input.cell_id if self.mode(input) == "replace" else None)
        mode = self.mode(input)
        if input.new_cell_id is not None and any(c.id == input.new_cell_id for c in snapshot.cells):
            raise ToolError(f"A cell with id {input.new_cell_id!r} is already in the notebook: choose another "
                            "new_cell_id, or leave it out for a fresh one.")
        if input.cell_id is None:
            return doc, snapshot, mode, None
        if mode == "replace" and input.cell_id == f"cell-{len(snapshot.cells)}":
            return doc, snapshot, "append", len(snapshot.cells)  # Claude Code: replacing one past the end appends
        return doc, snapshot, mode, snapshot.find(input.cell_id).index

    def _diff(self, input: NotebookEditInput, context: ToolContext, plan) -> str:
        _, snapshot, mode, index = plan
        label = display_path(self.resolve(input, context).real, context.cwd)
        before = snapshot.cells[index].source if mode in ("replace", "delete") and index is not None else ""
        after = "" if mode == "delete" else input.new_source or ""
        where = snapshot.cells[index].id if mode in ("replace", "delete") and index is not None else "new cell"
        # A cell's source has no final newline: diff whole lines, without "No newline" noise.
        return unified_diff(_as_lines(before), _as_lines(after), f"{label} ({where})")

    async def check_permissions(self, input: NotebookEditInput, context: ToolContext,
                                prepared: PreparedCall) -> PermissionResult:
        path = prepared.paths[0].real
        return PermissionAsk(message=f"NotebookEdit wants to {self.mode(input)} a cell in {input.notebook_path}.",
                             diff=prepared.diff, suggested_rules=suggest_edit_rules(path, context))

    async def call(self, input: NotebookEditInput, context: ToolContext, prepared: PreparedCall) -> ToolOutput:
        path = prepared.paths[0].real
        doc, snapshot, mode, index = await self.planned(input, context, prepared)
        version = snapshot.version  # the backend refuses the edit if the notebook moved since
        changes, live = run_changes(context), bool(getattr(doc, "live", False))
        target = snapshot.cells[index] if mode in ("replace", "delete") and index is not None else None
        changes.before_cell_change(str(path), cell_state(snapshot, target.index) if target else None, live=live)
        if mode == "delete":
            result = await doc.delete_cell(input.cell_id or "", expected_version=version)
            message = f"Deleted cell {input.cell_id}."
            changes.after_cell_change(str(path), target.id if target else result.cell.id, None, None)
        elif mode in ("insert", "append"):
            position = 0 if index is None else index + 1 if mode == "insert" else index
            result = await doc.insert_cell(position, input.cell_type or "code", input.new_source or "",
                                           expected_version=version, cell_id=input.new_cell_id)
            what = _what(result.cell.cell_type, input.new_source)
            message = f"Inserted cell {result.cell.id} ({what}) at cell-{position}."
            changes.after_cell_change(str(path), result.cell.id, input.new_source or "", result.cell.cell_type)
        else:
            result = await doc.replace_cell(input.cell_id or "", input.new_source or "", input.cell_type,
                                            expected_version=version)
            message = f"Updated cell {input.cell_id} ({_what(result.cell.cell_type, input.new_source)})."
            changes.after_cell_change(str(path), result.cell.id, input.new_source or "", result.cell.cell_type,
                                      was_id=target.id if target else "")
        note_notebook_change(context, path, result.version, result.mtime_ns)
        return ToolOutput(message + (f"\n\n[{result.note}]" if result.note else ""))


def _what(cell_type: str, source: str | None) -> str:
    """"code, 3 lines": the model wrote the source itself; echoing it back costs tokens."""
    lines = len((source or "").splitlines())
    return f"{cell_type}, {lines} line{'' if lines == 1 else 's'}"


def _as_lines(source: str) -> str:
    return source if not source or source.endswith("\n") else source + "\n"


__all__ = ["NotebookEdit", "NotebookEditInput", "note_notebook_change", "notebook_for_change"]
