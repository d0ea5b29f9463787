"""``NotebookRun {notebook_path, cell_id}``: execute one code cell in the notebook's kernel.

One kernel per notebook per conversation (``tool_session(ctx).kernels``), started on first
use in the notebook's folder. The outputs come back rendered as ``Read`` renders them,
and (file and memory backends) are stored in the notebook. A run that exceeds its time
limit, or that the user stops, interrupts the kernel.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from pydantic import Field

from ..loop.permission_result import PermissionAsk, PermissionResult, code_message, one_line
from ..notebook import is_notebook_path
from ..notebook.document import Cell, NotebookDocument, NotebookSnapshot, RunResult, check_cell_id_text
from ..notebook.outputs import finish_outputs
from ..notebook.render import render_run
from ..notebook.session import tool_session
from ..redact import redact
from ..loop.events import ToolOutcome
from ..loop.tool import PreparedCall, ToolContext, ToolError, ToolInput, ToolOutput
from .common import PathTool
from .notebook_edit import note_notebook_change, notebook_for_change
from .paths import display_path, inside_roots
from .saved_text import traceback_saver
from .undo import run_changes

log = logging.getLogger(__name__)

#: Seconds a cell may run before it is interrupted (``tool_session(ctx).cell_timeout_s`` overrides).
DEFAULT_CELL_TIMEOUT_S = 300.0
FAILED = ("timeout", "interrupted", "died")
#: Seconds between "still running" progress reports while a cell runs.
PROGRESS_EVERY_S = 1.0


class NotebookRunInput(ToolInput):
    notebook_path: str = Field(description="The absolute path to the Jupyter notebook (.ipynb) containing the cell")
    cell_id: str = Field(description="The ID of the code cell to run (or cell-N for the 0-based index N)")


class NotebookRun(PathTool[NotebookRunInput]):
    name = "NotebookRun"
    Input = NotebookRunInput
    path_field = "notebook_path"
    runs_code = True  # asks in every permission mode unless an allow rule covers it
    timeout_s = None  # the cell's own time limit applies (and interrupts the kernel cleanly)
    description = (
        "Executes one code cell of a Jupyter notebook in the notebook's kernel and returns its outputs "
        "(text, results, errors, images). The kernel keeps its state between runs, as in Jupyter: run cells in "
        "the order they depend on each other. The outputs are saved into the notebook. Read the notebook "
        "first; the run fails if the notebook changed since it was read. A cell that runs too long is "
        "interrupted."
    )

    async def validate_input(self, input: NotebookRunInput, context: ToolContext) -> str | None:
        error = self.validate_path_text(input, context) or check_cell_id_text(input.cell_id)
        if error:
            return error
        path = self.resolve(input, context)
        if not is_notebook_path(path.real):
            return "NotebookRun runs cells of Jupyter notebooks (.ipynb files)."
        return None

    async def prepare(self, input: NotebookRunInput, context: ToolContext) -> PreparedCall:
        """Plan the run with one read of the notebook: which cell (the approval shows its
        whole code) and the version the run is checked against. Time passes while the user
        decides; the backend checks that version again when it runs the cell (the page in
        the same step), so a cell changed meanwhile is refused, never run unseen. Outside
        the working folders nothing is read before permission (see :meth:`planned`)."""
        return await planned_inside(await super().prepare(input, context), context,
                                    lambda: self.plan(input, context))

    async def plan(self, input: NotebookRunInput, context: ToolContext) -> tuple[NotebookDocument, NotebookSnapshot]:
        """The document and its snapshot, once the cell is known to be a code cell in it."""
        doc, snapshot = await notebook_for_change(input.notebook_path, self.resolve(input, context).real, context,
                                                  sources_only=True, cell_id=input.cell_id)
        cell = snapshot.find(input.cell_id)
        if cell.cell_type != "code":
            raise ToolError(f"Cell {input.cell_id} is a {cell.cell_type} cell; only code cells can be run.")
        return doc, snapshot

    async def planned(self, input: NotebookRunInput, context: ToolContext,
                      prepared: PreparedCall) -> tuple[NotebookDocument, NotebookSnapshot]:
        return prepared.change if prepared.change is not None else await self.plan(input, context)

    async def check_permissions(self, input: NotebookRunInput, context: ToolContext,
                                prepared: PreparedCall) -> PermissionResult:
        path = self.resolve(input, context).real
        source, position = "", f"cell {input.cell_id}"
        try:
            _, snapshot = await self.planned(input, context, prepared)
            cell = snapshot.find(input.cell_id)
            source, position = cell.source, cell_position(snapshot, cell)
        except ToolError as exc:
            log.debug("NotebookRun's approval shows no code: %s", exc)
        label = display_path(path, context.cwd)
        # The whole cell, never a part: what the person approves is what runs (the cards
        # scroll, the terminal prints every line).
        question = f"NotebookRun wants to run {position} of {input.notebook_path}"
        return PermissionAsk(
            message=code_message(question, source) if source else one_line(question) + ".",
            suggested_rules=(f"NotebookRun({label})",),
        )

    async def call(self, input: NotebookRunInput, context: ToolContext, prepared: PreparedCall) -> ToolOutput:
        path = self.resolve(input, context).real
        doc, snapshot = await self.planned(input, context, prepared)
        timeout = float(tool_session(context).cell_timeout_s or DEFAULT_CELL_TIMEOUT_S)
        result = await with_progress(doc.run_cell(input.cell_id, timeout=timeout, abort=context.abort,
                                                   expected_version=snapshot.version),
                                      f"Cell {input.cell_id}", context)
        if result.saved and result.version:
            note_notebook_change(context, path, result.version, result.mtime_ns)
        run_changes(context).ran_cell(result.names_changed)
        if result.status == "error" and exception_name(result) == "KeyboardInterrupt":
            # Interrupted (the kernel's interrupt, from the page or another client), not by
            # our Stop or time limit: an interrupt is Stop for the run (a STOPPED result ends it).
            result = replace(result, status="interrupted")
        # The file and memory backends have done this already; a backend that runs cells its
        # own way (a live page) may not have, and nothing unbounded or secret goes to the model.
        outputs = finish_outputs(result.outputs, redact)
        content = render_run(result.cell, outputs, result.execution_count, result.status, result.note,
                             traceback_saver(context))
        return ToolOutput(content, is_error=result.status in FAILED, display=outputs,
                          outcome=OUTCOMES.get(result.status), exception=exception_name(result))


#: A run's status that is more than ok / error (a timeout or a dead kernel is an error).
OUTCOMES = {"error": ToolOutcome.RAISED, "interrupted": ToolOutcome.STOPPED}


def exception_name(result: RunResult) -> str:
    """The name of the exception the cell raised ("" if it raised none)."""
    if result.status != "error":
        return ""
    names = [str(o.get("ename") or "") for o in result.outputs if o.get("output_type") == "error"]
    return next((n for n in names if n), "an exception")


def cell_position(snapshot: NotebookSnapshot, cell: Cell) -> str:
    """"cell 5 of 9 (id abc)": the 1-based position among all cells, as the page numbers
    them, in the document the tools use (the live page when it is open, not the file,
    which lags behind unsaved cells)."""
    return f"cell {cell.index + 1} of {len(snapshot.cells)} (id {cell.id})"


async def planned_inside(prepared: PreparedCall, context: ToolContext,
                         plan: Callable[[], Awaitable[Any]]) -> PreparedCall:
    """``prepared`` with the run's plan (``plan()``, one read of the notebook) when its
    notebook is inside the working folders, or the plan's problem; outside them nothing is
    read before permission. Shared by NotebookRun and NotebookRunCells."""
    if prepared.paths and inside_roots(prepared.paths[0], context):
        try:
            prepared.change = await plan()
        except ToolError as exc:
            prepared.problem = str(exc)
    return prepared


async def with_progress(run: Awaitable[RunResult], what: str, context: ToolContext) -> RunResult:
    """Await the run; while it lasts, tell the UI every second that the cell is still running
    (a ``ToolProgress`` event: the tool card shows the message)."""
    task = asyncio.ensure_future(run)
    started = time.monotonic()
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=PROGRESS_EVERY_S)
            if done:
                return task.result()
            context.progress(f"{what} is running ({time.monotonic() - started:.0f} s)")
    finally:
        if not task.done():  # the call was cancelled (Stop): the run interrupts its kernel
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


__all__ = ["NotebookRun", "NotebookRunInput"]
