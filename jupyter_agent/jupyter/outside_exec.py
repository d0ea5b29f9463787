"""An outside agent's ``execute_code``: scratch code run in the notebook's own kernel (its
variables), no cell added, nothing saved to the notebook.

It asks as a cell run does: the tool is NotebookRun by name (so the conversation's rules, an
"Always allow" of NotebookRun for this notebook, and the administrator's policy decide it as
they decide a run), and the card shows the whole code. The code goes to this kernel as an
ordinary execute request from its client of itself (``self_run.py``), its id tagged for the
server (``RUN_TAG``: ``run_status`` and ``interrupt`` know it as any run); at its time limit
the kernel is interrupted. Its outputs come back bounded and redacted as a run's do; the
names it bound are the run's changed variables (the undo says they stay in the kernel).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from pydantic import Field

from ..loop.permission_result import CONTENT_FOLLOWS, PermissionAsk, PermissionResult
from ..loop.tool import PreparedCall, ToolContext, ToolInput, ToolOutput
from ..notebook import is_notebook_path
from ..notebook.document import Cell
from ..notebook.live_backend import RUN_TAG
from ..notebook.namespace import changed_names, namespace_ids
from ..notebook.outputs import finish_outputs
from ..notebook.render import render_run
from ..redact import redact
from ..tools.common import PathTool
from ..tools.notebook_run import FAILED, OUTCOMES, NotebookRun, with_progress
from ..tools.paths import display_path
from ..tools.undo import run_changes

log = logging.getLogger(__name__)

#: What the run's outputs name the code as (it is no cell).
SCRATCH_ID = "scratch"


class OutsideExecuteInput(ToolInput):
    notebook_path: str = Field(description="The notebook whose kernel runs the code")
    code: str = Field(description="The code to run in the kernel")
    timeout_seconds: int = Field(default=60, ge=1, le=600, description="Interrupted after this many seconds")


class OutsideExecute(NotebookRun):
    """Scratch code in this kernel, asked and decided as NotebookRun (the module says why)."""

    Input = OutsideExecuteInput  # type: ignore[assignment]

    def __init__(self, shell: Any) -> None:
        super().__init__()
        self.shell = shell

    async def validate_input(self, input: OutsideExecuteInput, context: ToolContext) -> str | None:  # type: ignore[override]
        error = self.validate_path_text(input, context)
        if error:
            return error
        if not is_notebook_path(self.resolve(input, context).real):
            return "execute_code runs code in the kernel of a Jupyter notebook (.ipynb)."
        return None

    async def prepare(self, input: OutsideExecuteInput, context: ToolContext) -> PreparedCall:  # type: ignore[override]
        return await PathTool.prepare(self, input, context)  # (no cell to plan)

    async def check_permissions(self, input: OutsideExecuteInput, context: ToolContext,  # type: ignore[override]
                                prepared: PreparedCall) -> PermissionResult:
        label = display_path(self.resolve(input, context).real, context.cwd)
        # The whole code: what the person approves is what runs.
        return PermissionAsk(
            message=(f"NotebookRun wants to run code in the kernel of {input.notebook_path} (scratch code: no "
                     f"cell is added, nothing is saved to the notebook; interrupted after "
                     f"{input.timeout_seconds} s){CONTENT_FOLLOWS}{input.code}"),
            suggested_rules=(f"NotebookRun({label})",),
        )

    async def call(self, input: OutsideExecuteInput, context: ToolContext,  # type: ignore[override]
                   prepared: PreparedCall) -> ToolOutput:
        from .self_run import self_runner

        run = self_runner(self.shell)
        if run is None:
            return ToolOutput("This kernel has no connection file to run scratch code through (an embedded "
                              "kernel?): insert a cell and run it with run_cell instead.", is_error=True)
        namespace = getattr(self.shell, "user_ns", None)
        hidden = getattr(self.shell, "user_ns_hidden", None)
        before = namespace_ids(namespace, hidden) if isinstance(namespace, dict) else None
        msg_id = RUN_TAG.get() + uuid.uuid4().hex

        async def execute() -> Any:
            return await run(input.code, msg_id, SCRATCH_ID, timeout=float(input.timeout_seconds),
                             abort=context.abort, store_history=False)  # (no execution count, no In entry)

        execution = await with_progress(execute(), "Your code", context)
        after = namespace_ids(namespace, hidden) if isinstance(namespace, dict) else None
        run_changes(context).ran_cell(changed_names(before, after))
        status = execution.status
        if status == "error" and any(o.get("ename") == "KeyboardInterrupt" for o in execution.outputs):
            status = "interrupted"
        outputs = finish_outputs(execution.outputs, redact)
        cell = Cell(id=SCRATCH_ID, index=0, cell_type="code", source=input.code)
        content = render_run(cell, outputs, execution.execution_count, status, execution.note)
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        note = "(Scratch code in the notebook's kernel: no cell was added and nothing was saved to the notebook.)"
        return ToolOutput([{"type": "text", "text": note}, *blocks], is_error=status in FAILED,
                          outcome=OUTCOMES.get(status))
