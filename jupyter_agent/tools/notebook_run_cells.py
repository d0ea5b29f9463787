"""``NotebookRunCells {notebook_path, from_cell_id?, to_cell_id?}``: run a range of cells, in order.

"Make it run top to bottom" was one ``NotebookRun`` per cell, and what the later calls of an
answer do once one raises was not said. This tool runs the code cells from ``from_cell_id``
to ``to_cell_id`` (both included; the first and the last cell of the notebook when omitted),
one after another through the same path as ``NotebookRun`` (``NotebookDocument.run_cell``:
the CLI's kernel, the page, or the user's kernel itself), and stops at the first cell that
raises, times out or is stopped. The result says which cells ran, which raised and which did
not run, then each run cell's outputs.

One approval for the whole range, showing every cell's code; each run checks the notebook's
version it was planned on (the version after the previous run), so a cell changed while
the user decided or while the range ran is refused, never run unseen.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import Field

from ..loop.events import ToolOutcome
from ..loop.permission_result import CONTENT_FOLLOWS, PermissionAsk, PermissionResult
from ..loop.tool import PreparedCall, ToolContext, ToolError, ToolInput, ToolOutput
from ..notebook import is_notebook_path
from ..notebook.document import Cell, NotebookDocument, NotebookSnapshot, RunResult, check_cell_id_text, find_cell_index
from ..notebook.outputs import finish_outputs
from ..notebook.render import render_run
from ..notebook.session import tool_session
from ..redact import redact
from .common import PathTool
from .notebook_edit import note_notebook_change, notebook_for_change
from .notebook_run import (DEFAULT_CELL_TIMEOUT_S, FAILED, cell_position, exception_name, planned_inside,
                           with_progress)
from .paths import display_path
from .saved_text import traceback_saver
from .undo import run_changes

log = logging.getLogger(__name__)


class NotebookRunCellsInput(ToolInput):
    notebook_path: str = Field(description="The absolute path to the Jupyter notebook (.ipynb)")
    from_cell_id: str | None = Field(default=None, description="The first cell to run (its id, or cell-N); "
                                                               "default: the first cell")
    to_cell_id: str | None = Field(default=None, description="The last cell to run, included; default: the "
                                                             "last cell")
    all_outputs: bool = Field(default=False, description="Return every run cell's outputs; default: only the "
                                                         "last run cell's (after an error: the error's and "
                                                         "the cell's before it)")


def _joined(parts: list[Any]) -> str | list[dict[str, Any]]:
    """Several rendered results (each a string or a list of blocks) as one tool result."""
    if all(isinstance(p, str) for p in parts):
        return "\n\n".join(parts)
    blocks: list[dict[str, Any]] = []
    for part in parts:
        blocks += [{"type": "text", "text": part}] if isinstance(part, str) else part
    return blocks


class NotebookRunCells(PathTool[NotebookRunCellsInput]):
    name = "NotebookRunCells"
    Input = NotebookRunCellsInput
    path_field = "notebook_path"
    runs_code = True  # asks in every permission mode unless an allow rule covers it
    timeout_s = None  # each cell's own time limit applies
    description = (
        "Runs the code cells of a Jupyter notebook from from_cell_id to to_cell_id (both included; the whole "
        "notebook when both are omitted), in order, in the notebook's kernel, and stops at the first cell that "
        "raises an error. Returns which cells ran, which raised and which did not run, and the last run "
        "cell's outputs (after an error, the cell's before it too; all_outputs=true: every run cell's); "
        "all outputs are saved into the notebook. "
        "Markdown and raw cells are skipped. Read the notebook first; the run fails if the notebook changed "
        "since it was read."
    )

    async def validate_input(self, input: NotebookRunCellsInput, context: ToolContext) -> str | None:
        error = self.validate_path_text(input, context)
        for cell_id in (input.from_cell_id, input.to_cell_id):
            error = error or (check_cell_id_text(cell_id) if cell_id is not None else None)
        if error:
            return error
        if not is_notebook_path(self.resolve(input, context).real):
            return "NotebookRunCells runs cells of Jupyter notebooks (.ipynb files)."
        return None

    async def prepare(self, input: NotebookRunCellsInput, context: ToolContext) -> PreparedCall:
        """Plan the range with one read of the notebook (the approval shows every cell of it)."""
        return await planned_inside(await super().prepare(input, context), context,
                                    lambda: self.plan(input, context))

    async def plan(self, input: NotebookRunCellsInput,
                   context: ToolContext) -> tuple[NotebookDocument, NotebookSnapshot, list[Cell]]:
        """The document, its snapshot and the code cells of the range."""
        doc, snapshot = await notebook_for_change(input.notebook_path, self.resolve(input, context).real, context,
                                                  sources_only=True)
        first = find_cell_index(snapshot.cells, input.from_cell_id) if input.from_cell_id else 0
        last = find_cell_index(snapshot.cells, input.to_cell_id) if input.to_cell_id else len(snapshot.cells) - 1
        if first > last:
            raise ToolError(f"from_cell_id ({input.from_cell_id}, cell-{first}) comes after to_cell_id "
                            f"({input.to_cell_id}, cell-{last}): give the earlier cell as from_cell_id.")
        cells = [c for c in snapshot.cells[first:last + 1] if c.cell_type == "code"]
        if not cells:
            raise ToolError("There is no code cell in that range: nothing to run.")
        return doc, snapshot, cells

    async def planned(self, input: NotebookRunCellsInput, context: ToolContext,
                      prepared: PreparedCall) -> tuple[NotebookDocument, NotebookSnapshot, list[Cell]]:
        return prepared.change if prepared.change is not None else await self.plan(input, context)

    async def check_permissions(self, input: NotebookRunCellsInput, context: ToolContext,
                                prepared: PreparedCall) -> PermissionResult:
        label = display_path(self.resolve(input, context).real, context.cwd)
        try:
            _, snapshot, cells = await self.planned(input, context, prepared)
        except ToolError as exc:
            log.debug("NotebookRunCells' approval shows no code: %s", exc)
            return PermissionAsk(message=f"NotebookRunCells wants to run cells of {input.notebook_path}.",
                                 suggested_rules=(f"NotebookRunCells({label})",))
        # Every cell's code, whole: what the person approves is what runs.
        code = "\n\n".join(f"# ---- {cell_position(snapshot, c)} ----\n{c.source}" for c in cells)
        count = f"{len(cells)} code cell{'s' if len(cells) != 1 else ''}"
        return PermissionAsk(
            message=f"NotebookRunCells wants to run {count} of {input.notebook_path}, in order, stopping at the "
                    f"first error{CONTENT_FOLLOWS}{code}",
            suggested_rules=(f"NotebookRunCells({label})",),
        )

    async def call(self, input: NotebookRunCellsInput, context: ToolContext, prepared: PreparedCall) -> ToolOutput:
        path = self.resolve(input, context).real
        doc, snapshot, cells = await self.planned(input, context, prepared)
        timeout = float(tool_session(context).cell_timeout_s or DEFAULT_CELL_TIMEOUT_S)
        version = snapshot.version
        results: list[RunResult] = []
        rendered: list[Any] = []
        shown: list[dict[str, Any]] = []
        stopped = False
        for cell in cells:
            if results and context.abort is not None and context.abort.is_set():
                stopped = True  # Stop between two cells: the next one is not sent to the kernel
                break
            try:
                result = await with_progress(doc.run_cell(cell.id, timeout=timeout, abort=context.abort,
                                                          expected_version=version),
                                             f"Cell {cell.id} ({len(results) + 1} of {len(cells)})", context)
            except ToolError as exc:
                if not results:
                    raise
                rendered.append(f"Cell {cell.id} could not run: {exc}")
                break
            if result.saved and result.version:
                note_notebook_change(context, path, result.version, result.mtime_ns)
            version = result.version or version
            run_changes(context).ran_cell(result.names_changed)
            outputs = finish_outputs(result.outputs, redact)
            shown += outputs
            results.append(result)
            rendered.append(render_run(result.cell, outputs, result.execution_count, result.status, result.note,
                                       traceback_saver(context)))
            if result.status != "ok":
                break
        last = results[-1] if results else None
        summary = _summary(cells, results) + ("\nStopped by the user before the next cell." if stopped else "")
        if not input.all_outputs and len(rendered) > 1:
            rendered = _quiet(results, rendered, keep=2 if last and last.status != "ok" else 1)
        outcome = ToolOutcome.RAISED if last and last.status == "error" else (
            ToolOutcome.STOPPED if stopped or (last and last.status == "interrupted") else None)
        return ToolOutput(_joined([summary, *rendered]), is_error=bool(last and last.status in FAILED),
                          display=shown, outcome=outcome, exception=exception_name(last) if last else "")


def _quiet(results: list[RunResult], rendered: list[Any], keep: int = 1) -> list[Any]:
    """Only the last ``keep`` rendered parts (the last cell run, or the error that stopped the
    run, or why the next cell could not run; after a failure also the cell run just before it,
    whose outputs often show what the error is about: a blind play lost a request to a
    ``KeyError`` whose column names were in the cell before), and one line naming the earlier
    cells whose outputs are left out (those that had any)."""
    keep = min(keep, len(rendered))
    with_outputs = [r.cell.id for r in results[:len(rendered) - keep] if r.outputs]
    if not with_outputs:
        return rendered[-keep:]
    names = ", ".join(with_outputs) if len(with_outputs) <= 8 else f"{len(with_outputs)} cells"
    return [f"(Outputs of {names} left out: Read the notebook to see them, or run with all_outputs=true.)",
            *rendered[-keep:]]


def _summary(cells: list[Cell], results: list[RunResult]) -> str:
    """The first line of the result: which cells ran, which raised, which did not run."""
    ran = [r.cell.id for r in results]
    failed = results[-1] if results and results[-1].status != "ok" else None
    not_run = [c.id for c in cells[len(results):]]
    lines = [f"Ran {len(ran)} of {len(cells)} code cells" + (f": {', '.join(ran)}." if ran else ".")]
    if failed is not None:
        what = {"error": f"raised {exception_name(failed)}", "timeout": "timed out",
                "interrupted": "was interrupted", "died": "killed the kernel"}.get(failed.status, failed.status)
        lines.append(f"Cell {failed.cell.id} {what}; the run stopped there.")
    if not_run:
        lines.append(f"Not run: {', '.join(not_run)}.")
    return "\n".join(lines)


__all__ = ["NotebookRunCells", "NotebookRunCellsInput"]
