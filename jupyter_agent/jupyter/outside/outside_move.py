"""An outside agent's ``move_cell``, carried out as the agent's own NotebookEdit (the same name:
its rules, the policy, the card, the stale check, the run's undo record).

The cell is moved as it is, by the page (a ``restore`` step ``move``: JupyterLab's own move, in
one transaction, so one step of the notebook's undo, with the cell's id, outputs, metadata and
attachments kept). Where it goes is named by a cell, never by an index: ``after_cell_id`` or
``before_cell_id`` (an index would have the client count cells, and would move with every
insert another client or the user makes). The card shows which cell moves from where to where,
and the notebook's outline before and after as a diff; the run records the move
(``RunChanges.cell_moved``), whose undo puts the cell back after the cell it followed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...loop.permission_result import PermissionAsk, PermissionResult
from ...loop.tool import PreparedCall, ToolContext, ToolError, ToolOutput
from ...notebook.document import Cell, CellRestore, NotebookDocument, NotebookSnapshot, check_cell_id_text
from ...tools.common import unified_diff
from ...tools.notebook_edit import NotebookEdit, NotebookEditInput, note_notebook_change, notebook_for_change
from ...tools.paths import display_path
from ...tools.undo import cell_state, run_changes
from ...tools.write import suggest_edit_rules

#: Characters of a cell's first line the card's outline shows.
OUTLINE_CHARS = 80


class OutsideNotebookMoveInput(NotebookEditInput):
    cell_id: str = Field(description="The id of the cell to move.")
    after_cell_id: str | None = Field(default=None, description="Move it to just after this cell.")
    before_cell_id: str | None = Field(default=None, description="Move it to just before this cell.")
    edit_mode: Literal["move"] = Field(default="move", description="Always move.")  # type: ignore[assignment]


class OutsideNotebookMove(NotebookEdit):
    """NotebookEdit's move (same name: the same rules and policy decide it), for ``move_cell``."""

    Input = OutsideNotebookMoveInput  # type: ignore[assignment]

    def mode(self, input: NotebookEditInput) -> str:
        return "move"

    async def validate_input(self, input: OutsideNotebookMoveInput, context: ToolContext) -> str | None:  # type: ignore[override]
        targets = [t for t in (input.after_cell_id, input.before_cell_id) if t is not None]
        if len(targets) != 1:
            return ("Give exactly one of after_cell_id (move the cell to just after that cell) and before_cell_id "
                    "(to just before it): for the top, before_cell_id of the first cell; for the end, "
                    "after_cell_id of the last. Nothing was changed.")
        for cell_id in (input.cell_id, targets[0]):
            if error := check_cell_id_text(cell_id):
                return error
        if targets[0] == input.cell_id:
            return f"A cell cannot move next to itself ({input.cell_id}): name another cell. Nothing was changed."
        input.new_source = ""  # (NotebookEdit's checks of a source: a move has none)
        return await super().validate_input(input, context)

    async def plan(  # type: ignore[override]
            self, input: OutsideNotebookMoveInput, context: ToolContext,
    ) -> tuple[NotebookDocument, NotebookSnapshot, int, str, int]:
        """The document, its snapshot, the cell's index now, and where it goes: the id of the
        cell it will follow ("": first) and its index among the other cells."""
        path = self.resolve(input, context).real
        doc, snapshot = await notebook_for_change(input.notebook_path, path, context)
        cell = snapshot.find(input.cell_id)
        others = [c for c in snapshot.cells if c.id != cell.id]
        if input.after_cell_id is not None:
            anchor = snapshot.find(input.after_cell_id)
            to = next(i for i, c in enumerate(others) if c.id == anchor.id) + 1
        else:
            anchor = snapshot.find(input.before_cell_id or "")
            to = next(i for i, c in enumerate(others) if c.id == anchor.id)
        after_id = others[to - 1].id if to > 0 else ""
        if to == cell.index:
            where = f"after cell {after_id}" if after_id else "first"
            raise ToolError(f"Cell {cell.id} is already there ({where}, index {cell.index}): nothing to move. "
                            "Nothing was changed.")
        return doc, snapshot, cell.index, after_id, to

    def _diff(  # type: ignore[override]
            self, input: OutsideNotebookMoveInput, context: ToolContext,
            plan: tuple[NotebookDocument, NotebookSnapshot, int, str, int]) -> str:
        _, snapshot, index, _, to = plan
        label = display_path(self.resolve(input, context).real, context.cwd)
        before = [_outline(c) for c in snapshot.cells]
        after = before[:index] + before[index + 1:]
        after.insert(to, before[index])
        return unified_diff("".join(before), "".join(after), f"{label} (cell order)")

    async def check_permissions(self, input: OutsideNotebookMoveInput, context: ToolContext,  # type: ignore[override]
                                prepared: PreparedCall) -> PermissionResult:
        path = prepared.paths[0].real
        plan = prepared.change
        what = f"NotebookEdit wants to move cell {input.cell_id} in {input.notebook_path}"
        if plan is not None:  # (None: outside the working folders, planned once allowed)
            _, snapshot, index, after_id, to = plan
            count = len(snapshot.cells)
            there = f"to just after cell {after_id}" if after_id else "to the top"
            what += (f" from position {index + 1} of {count} {there} (position {to + 1} of {count}). Its source "
                     "and outputs stay as they are")
        return PermissionAsk(message=what + ".",
                             diff=prepared.diff, suggested_rules=suggest_edit_rules(path, context))

    async def call(self, input: OutsideNotebookMoveInput, context: ToolContext,  # type: ignore[override]
                   prepared: PreparedCall) -> ToolOutput:
        path = prepared.paths[0].real
        plan = prepared.change if prepared.change is not None else await self.plan(input, context)
        doc, snapshot, index, after_id, to = plan
        changes, live = run_changes(context), bool(getattr(doc, "live", False))
        cell = snapshot.cells[index]
        changes.before_cell_change(str(path), cell_state(snapshot, index), live=live)
        version = await doc.restore_cells([CellRestore("move", cell.id, after_id=after_id, index=to)],
                                          expected_version=snapshot.version)
        changes.cell_moved(str(path), cell.id, after_id)
        note_notebook_change(context, path, version, 0)
        there = f"after cell {after_id}" if after_id else "first in the notebook"
        return ToolOutput(f"Moved cell {cell.id} {there} (index {to}; it was at {index}). Its id, source and "
                          "outputs are as they were.")


def _outline(cell: Cell) -> str:
    """One line of the card's outline: the cell's id, type and first line."""
    lines = cell.source.strip().splitlines()
    first = lines[0] if lines else "(empty)"
    if len(first) > OUTLINE_CHARS:
        first = first[:OUTLINE_CHARS - 1] + "…"
    more = f"  (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
    return f"[{cell.id}] {cell.cell_type}: {first}{more}\n"


__all__ = ["OutsideNotebookMove", "OutsideNotebookMoveInput"]
