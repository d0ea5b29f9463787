"""``NotebookRestart {notebook_path}``: restart the kernel ``NotebookRun`` runs a notebook's cells in.

A tool of its own rather than an option of ``NotebookRun``: what it does is another kind of
act (it loses state, it runs nothing), so it has its own approval (which lists the
variables that would be lost), its own permission rules (``NotebookRestart(path)``), and
``NotebookRun`` keeps Claude Code's schema.

Only a kernel the conversation started itself (one per notebook, in the kernel pool: the
CLI's, or a notebook file that a ``%%agent`` conversation runs in a kernel of its own) can be
restarted. The kernel of the open notebook the agent runs in (a ``%%agent`` cell's, the
side panel's) is the kernel the loop itself lives in: restarting it would end the run and
lose the conversation, so the call is refused with a message that says so and what the
user can do.
"""

from __future__ import annotations

import logging
from pathlib import Path

from pydantic import Field

from ..loop.permission_result import PermissionAsk, PermissionResult
from ..loop.tool import PreparedCall, ToolContext, ToolError, ToolInput, ToolOutput
from ..notebook import is_notebook_path, open_notebook
from ..notebook.document import NotebookError
from ..notebook.kernels import KernelPool
from ..notebook.session import tool_session
from .common import PathTool
from .paths import display_path

log = logging.getLogger(__name__)

#: Variables named in the approval, at most (the rest are counted).
MAX_NAMES_SHOWN = 60
OWN_KERNEL_REFUSAL = (
    "NotebookRestart cannot restart the kernel of {path}: the agent itself runs in that kernel "
    "(this conversation lives there), so restarting it would end this run and lose the "
    "conversation; it could not go on afterwards. If a restart is needed, ask the user to restart "
    "the kernel (Kernel > Restart Kernel) and to send a new prompt afterwards."
)


class NotebookRestartInput(ToolInput):
    notebook_path: str = Field(description="The absolute path to the Jupyter notebook (.ipynb) whose kernel "
                                           "to restart")


def variables_phrase(names: list[str] | None) -> str:
    """What a restart loses, in words: "its 3 variables: a, df, model"."""
    if names is None:
        return "all of its variables (the kernel did not say which)"
    if not names:
        return "its state (it holds no variables of its own: imports and settings only)"
    shown = ", ".join(names[:MAX_NAMES_SHOWN])
    more = f" and {len(names) - MAX_NAMES_SHOWN:,} more" if len(names) > MAX_NAMES_SHOWN else ""
    return f"its {len(names):,} variable{'s' if len(names) != 1 else ''}: {shown}{more}"


class NotebookRestart(PathTool[NotebookRestartInput]):
    name = "NotebookRestart"
    Input = NotebookRestartInput
    path_field = "notebook_path"
    runs_code = True  # what it loses cannot be undone: it asks in every mode unless a rule allows it
    always_asks_as = "Restarting a kernel"
    timeout_s = 120.0
    description = (
        "Restarts the kernel that NotebookRun runs a notebook's cells in. Every variable, import and open "
        "resource in that kernel is lost; the next run is in the fresh kernel, so run the cells you need "
        "again, in order (NotebookRunCells runs them all). Use it when the kernel's state is broken or stale "
        "(a module changed on disk, memory is full, a cell left things half done). It needs approval unless "
        "a rule allows it, and it refuses the kernel you yourself run in (the notebook the user is working "
        "in, when you run inside its kernel): ask the user to restart that one."
    )

    async def validate_input(self, input: NotebookRestartInput, context: ToolContext) -> str | None:
        error = self.validate_path_text(input, context)
        if error:
            return error
        path = self.resolve(input, context).real
        if not is_notebook_path(path):
            return "NotebookRestart restarts the kernel of a Jupyter notebook (.ipynb file)."
        try:
            self._pool(path, input, context)
        except ToolError as exc:
            return str(exc)
        return None

    def _pool(self, path: Path, input: NotebookRestartInput, context: ToolContext) -> KernelPool:
        """The pool holding the notebook's kernel; ToolError when there is none to restart."""
        doc = open_notebook(path, tool_session(context))
        if getattr(doc, "live", False) or not isinstance(getattr(doc, "kernels", None), KernelPool):
            raise ToolError(OWN_KERNEL_REFUSAL.format(path=input.notebook_path))
        pool: KernelPool = doc.kernels  # type: ignore[attr-defined]
        if pool.running(path) is None:
            raise ToolError(f"No kernel runs {input.notebook_path} in this conversation yet (NotebookRun starts "
                            "one on first use), so there is nothing to restart.")
        return pool

    async def _variables(self, path: Path, input: NotebookRestartInput, context: ToolContext) -> list[str] | None:
        kernel = self._pool(path, input, context).running(path)
        ids = await kernel.namespace_ids() if kernel is not None else None
        return sorted(ids) if ids is not None else None

    async def check_permissions(self, input: NotebookRestartInput, context: ToolContext,
                                prepared: PreparedCall) -> PermissionResult:
        path = self.resolve(input, context).real
        try:
            lost = variables_phrase(await self._variables(path, input, context))
        except ToolError as exc:  # (validated a moment ago; the kernel went away since)
            log.debug("NotebookRestart's approval lists no variables: %s", exc)
            lost = variables_phrase(None)
        return PermissionAsk(
            message=(f"NotebookRestart wants to restart the kernel of {input.notebook_path}. "
                     f"It will lose {lost}. Cells must run again to rebuild them."),
            suggested_rules=(f"NotebookRestart({display_path(path, context.cwd)})",),
        )

    async def call(self, input: NotebookRestartInput, context: ToolContext, prepared: PreparedCall) -> ToolOutput:
        path = self.resolve(input, context).real
        names = await self._variables(path, input, context)
        pool = self._pool(path, input, context)
        try:
            kernel_name = (await open_notebook(path, tool_session(context)).snapshot()).kernel_name
        except NotebookError as exc:  # unreadable now: the pool's own choice of kernel applies
            log.debug("restarting with the default kernel: %s", exc)
            kernel_name = None
        await pool.restart(path, kernel_name)
        return ToolOutput(f"Restarted the kernel of {input.notebook_path}: a fresh kernel is ready. Lost: "
                          f"{variables_phrase(names)}. Run the cells you need again, in order.")


__all__ = ["NotebookRestart", "NotebookRestartInput", "variables_phrase"]
