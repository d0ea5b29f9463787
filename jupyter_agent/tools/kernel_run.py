"""``KernelRun {notebook_path, code, timeout?}``: run code in a notebook's kernel, outside any cell.

The model's scratch pad: a check ("is the frame clean?", ``assert_frame_equal``) without the
insert, run and delete of a throwaway cell (three calls and two turns each, gaps in the
execution counts, a cell left behind if the run is cut short). The code runs in the kernel
``NotebookRun`` runs the notebook's cells in, so it sees the notebook's variables, and what
it assigns stays in the kernel (named in "variables changed", as a cell run's names are);
nothing enters the notebook: no cell, no outputs, no execution count, no history entry.

Where it runs is the document's :meth:`~jupyter_agent.notebook.document.NotebookDocument.run_code`:
the conversation's own kernel for a notebook file (the CLI's, ``kernels.run_code_in_kernel``),
or, for the notebook open in the page whose kernel the agent lives in (``%%agent``, the side
panel), that kernel itself through its client of itself (``jupyter/bridge/self_client.py``), which the page
is not told of, so no cell shows it. Running code asks in every permission mode unless an allow
rule covers it (``KernelRun`` or ``KernelRun(path)``); the approval shows all of the code.
"""

from __future__ import annotations

import logging

from pydantic import Field

from ..loop.permission_result import CONTENT_FOLLOWS, PermissionAsk, PermissionResult
from ..loop.tool import PreparedCall, ToolContext, ToolInput, ToolOutput
from ..notebook import is_notebook_path, open_notebook
from ..notebook.outputs import finish_outputs
from ..notebook.render import render_run
from ..notebook.session import tool_session
from ..redact import redact
from .common import PathTool, check_text_size
from .notebook_run import DEFAULT_CELL_TIMEOUT_S, FAILED, OUTCOMES, exception_name, with_progress
from .paths import display_path
from .saved_text import traceback_saver
from .undo import run_changes

log = logging.getLogger(__name__)

#: The longest time limit a call may ask for, in milliseconds (Bash's too).
MAX_TIMEOUT_MS = 600_000


class KernelRunInput(ToolInput):
    notebook_path: str = Field(description="The absolute path to the Jupyter notebook (.ipynb) whose kernel "
                                           "runs the code")
    code: str = Field(description="The code to run in the kernel")
    timeout: int | None = Field(default=None, description=f"Optional time limit in milliseconds (max "
                                                          f"{MAX_TIMEOUT_MS}); the kernel is interrupted then")


class KernelRun(PathTool[KernelRunInput]):
    name = "KernelRun"
    Input = KernelRunInput
    path_field = "notebook_path"
    runs_code = True  # asks in every permission mode unless an allow rule covers it
    timeout_s = None  # the code's own time limit applies (and interrupts the kernel cleanly)
    description = (
        "Runs code in a notebook's kernel without adding a cell, and returns its outputs (text, results, "
        "errors, images). Nothing is saved into the notebook. The code sees the variables the notebook's "
        "cells made, and what it assigns stays in the kernel. Use it for checks and quick looks (shapes, "
        "dtypes, asserts, comparing results); put code the notebook should keep in a cell with NotebookEdit "
        "and run it with NotebookRun. No prior Read is needed."
    )

    async def validate_input(self, input: KernelRunInput, context: ToolContext) -> str | None:
        error = self.validate_path_text(input, context)
        if error:
            return error
        if not is_notebook_path(self.resolve(input, context).real):
            return "KernelRun runs code in the kernel of a Jupyter notebook: notebook_path must be an .ipynb file."
        if not input.code.strip():
            return "code is empty: give the code to run."
        if input.timeout is not None and not 0 < input.timeout <= MAX_TIMEOUT_MS:
            return f"timeout is in milliseconds, from 1 to {MAX_TIMEOUT_MS}; omit it for the default."
        return check_text_size(input.code, "code")

    async def check_permissions(self, input: KernelRunInput, context: ToolContext,
                                prepared: PreparedCall) -> PermissionResult:
        label = display_path(self.resolve(input, context).real, context.cwd)
        # All of the code, never a part: what the person approves is what runs.
        return PermissionAsk(
            message=f"KernelRun wants to run code in the kernel of {input.notebook_path} "
                    f"(nothing is saved into the notebook){CONTENT_FOLLOWS}{input.code}",
            suggested_rules=(f"KernelRun({label})",),
        )

    async def call(self, input: KernelRunInput, context: ToolContext, prepared: PreparedCall) -> ToolOutput:
        path = self.resolve(input, context).real
        doc = open_notebook(path, tool_session(context))
        timeout = (input.timeout / 1000 if input.timeout
                   else float(tool_session(context).cell_timeout_s or DEFAULT_CELL_TIMEOUT_S))
        result = await with_progress(doc.run_code(input.code, timeout=timeout, abort=context.abort),
                                     "The code", context)
        run_changes(context).ran_cell(result.names_changed)
        outputs = finish_outputs(result.outputs, redact)
        content = render_run(result.cell, outputs, None, result.status, result.note, traceback_saver(context))
        return ToolOutput(content, is_error=result.status in FAILED, display=outputs,
                          outcome=OUTCOMES.get(result.status), exception=exception_name(result))


__all__ = ["KernelRun", "KernelRunInput"]
