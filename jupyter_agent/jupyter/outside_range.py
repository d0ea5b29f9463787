"""An outside agent's ``run_cells``: the code cells of a range (or of the whole notebook) run
in order, as Shift+Enter on each, asked once for all of them.

It asks as a cell run does: the tool is NotebookRun by name (the conversation's rules, an
"Always allow" of NotebookRun for this notebook and the administrator's policy decide it as
they decide a run), and the card shows every cell's whole code. The run stops at the first
cell that does not end ``ok`` (an error, a timeout, an interrupt), and at a cell whose source
changed since it was approved (a person edited it meanwhile: it is not run unseen). The
answer says which cells ran, where it stopped and why, and which did not run, with each run
cell's outputs as ``run_cell`` gives them (bounded, redacted, images as images).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from pydantic import Field

from ..loop.permission_result import CONTENT_FOLLOWS, PermissionAsk, PermissionResult
from ..loop.tool import PreparedCall, ToolContext, ToolError, ToolInput, ToolOutput
from ..notebook import is_notebook_path
from ..notebook.document import check_cell_id_text
from ..notebook.outputs import finish_outputs
from ..notebook.render import render_run
from ..notebook.session import tool_session
from ..redact import redact
from ..tools.notebook_edit import note_notebook_change, notebook_for_change
from ..tools.notebook_run import DEFAULT_CELL_TIMEOUT_S, NotebookRun, cell_position, with_progress
from ..tools.paths import display_path
from ..tools.undo import run_changes

log = logging.getLogger(__name__)


class RunRangeInput(ToolInput):
    notebook_path: str = Field(description="The notebook whose cells run")
    start_cell_id: str | None = Field(default=None, description="The first cell of the range (default: the first)")
    end_cell_id: str | None = Field(default=None, description="The last cell of the range (default: the last)")


class OutsideRunRange(NotebookRun):
    """The code cells of a range, run in order, asked once as NotebookRun (the module says why)."""

    Input = RunRangeInput  # type: ignore[assignment]

    async def validate_input(self, input: RunRangeInput, context: ToolContext) -> str | None:  # type: ignore[override]
        error = self.validate_path_text(input, context)
        for cell_id in (input.start_cell_id, input.end_cell_id):
            error = error or (check_cell_id_text(cell_id) if cell_id is not None else None)
        if error:
            return error
        if not is_notebook_path(self.resolve(input, context).real):
            return "run_cells runs cells of Jupyter notebooks (.ipynb files)."
        return None

    async def plan(self, input: RunRangeInput, context: ToolContext) -> Any:  # type: ignore[override]
        """The document, its snapshot and the code cells of the range, in order."""
        doc, snapshot = await notebook_for_change(input.notebook_path, self.resolve(input, context).real, context,
                                                  sources_only=True)
        start = snapshot.find(input.start_cell_id).index if input.start_cell_id else 0
        end = snapshot.find(input.end_cell_id).index if input.end_cell_id else len(snapshot.cells) - 1
        if end < start:
            raise ToolError(f"end_cell_id {input.end_cell_id} comes before start_cell_id {input.start_cell_id}: "
                            "nothing was run.")
        cells = [c for c in snapshot.cells[start:end + 1] if c.cell_type == "code"]
        if not cells:
            raise ToolError("The range holds no code cell: nothing to run.")
        return doc, snapshot, cells

    async def _range(self, input: RunRangeInput, context: ToolContext, prepared: PreparedCall) -> tuple[Any, Any, Any]:
        """What :meth:`plan` found while preparing (else planned now)."""
        return prepared.change if prepared.change is not None else await self.plan(input, context)

    async def check_permissions(self, input: RunRangeInput, context: ToolContext,  # type: ignore[override]
                                prepared: PreparedCall) -> PermissionResult:
        label = display_path(self.resolve(input, context).real, context.cwd)
        try:
            _, snapshot, cells = await self._range(input, context, prepared)
        except ToolError as exc:  # (the call fails with it once asked: nothing would run)
            log.debug("run_cells' approval shows no code: %s", exc)
            return PermissionAsk(message=f"NotebookRun wants to run cells of {input.notebook_path}.",
                                 suggested_rules=(f"NotebookRun({label})",))
        # Every cell whole: what the person approves is what runs.
        code = "\n\n".join(f"# --- {cell_position(snapshot, c)} ---\n{c.source}" for c in cells)
        return PermissionAsk(
            message=(f"NotebookRun wants to run {len(cells)} cell{'s' if len(cells) != 1 else ''} of "
                     f"{input.notebook_path} in order, stopping at the first error{CONTENT_FOLLOWS}{code}"),
            suggested_rules=(f"NotebookRun({label})",),
        )

    async def call(self, input: RunRangeInput, context: ToolContext,  # type: ignore[override]
                   prepared: PreparedCall) -> ToolOutput:
        path = self.resolve(input, context).real
        doc, _, cells = await self._range(input, context, prepared)
        timeout = float(tool_session(context).cell_timeout_s or DEFAULT_CELL_TIMEOUT_S)
        ran: list[str] = []
        blocks: list[Any] = []
        stopped = ""
        for cell in cells:
            now = await doc.sources_snapshot()
            current = next((c for c in now.cells if c.id == cell.id), None)
            if current is None or current.source != cell.source:
                stopped = f"cell {cell.id} changed (or went) since you were allowed to run it: it was not run"
                break
            result = await with_progress(doc.run_cell(cell.id, timeout=timeout, abort=context.abort,
                                                      expected_version=now.version), f"Cell {cell.id}", context)
            if result.saved and result.version:
                note_notebook_change(context, path, result.version, result.mtime_ns)
            run_changes(context).ran_cell(result.names_changed)
            if result.status == "error" and any(o.get("ename") == "KeyboardInterrupt" for o in result.outputs):
                result = replace(result, status="interrupted")  # (as run_cell says it: Stop, or interrupt)
            ran.append(cell.id)
            outputs = finish_outputs(result.outputs, redact)
            content = render_run(result.cell, outputs, result.execution_count, result.status, result.note)
            blocks.extend([{"type": "text", "text": content}] if isinstance(content, str) else content)
            if result.status != "ok":
                stopped = f"cell {cell.id} ended '{result.status}'"
                break
        not_run = [c.id for c in cells if c.id not in ran]
        summary = (f"Ran {len(ran)} of {len(cells)} code cells: {', '.join(ran) or 'none'}."
                   + (f" Stopped: {stopped}." if stopped else "")
                   + (f" Not run: {', '.join(not_run)}." if not_run else ""))
        return ToolOutput([{"type": "text", "text": summary}, *blocks], is_error=bool(stopped))


__all__ = ["OutsideRunRange", "RunRangeInput"]
