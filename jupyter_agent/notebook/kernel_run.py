"""A live notebook's cell run by the kernel itself, shown by the page afterwards.

When the page that shows the notebook is a page of the agent's own kernel, and it says in
its hello that it shows runs made elsewhere (``kernel_runs``), :class:`~.live_backend.LiveNotebook`
does not ask the page to run the cell. It tells the page "request M runs cell C" (the
``show_run`` request, not waited for), then runs the cell's source in this kernel itself
(``run_here``: ``jupyter/bridge/self_client.py``), and the tool's result is built from the outputs the
kernel collected. IOPub is ordered, so the page has the notice before any output of M, and
it routes M's messages into cell C as a Shift+Enter run would show them
(``labextension/src/kernelRun.ts``).

The page answers ``show_run`` once it has shown the whole run, with the cell as its
document now holds it (and, as a ``run`` reply does, the state the run left the document
in). The next request to the page waits for that answer first (``LiveNotebook._shown``), so
the kernel's copy of the notebook follows the run as it does after a run through the page.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Any, Protocol

from .document import Cell, RunResult, scratch_cell
from .kernels import Execution

log = logging.getLogger(__name__)

#: The request that tells the page which cell an execute request of the kernel's runs.
SHOW_RUN = "show_run"


class RunHere(Protocol):
    """Runs ``code`` in this kernel as execute request ``msg_id`` (for cell ``cell_id``)."""

    async def __call__(self, code: str, msg_id: str, cell_id: str, *, timeout: float,
                       abort: asyncio.Event | None, store_history: bool = True) -> Execution: ...


def run_result(cell: Cell, execution: Execution, timeout: float, version: str,
               names_changed: tuple[str, ...]) -> RunResult:
    """The tool's result of a run made here, from what the kernel collected."""
    status = execution.status
    if status == "timeout":
        note = f"The cell was interrupted after {timeout:.0f} s (the cell time limit), in the user's kernel."
    elif status == "interrupted":
        note = "Stopped by the user while the cell was running; the kernel was interrupted."
    else:
        note = "Ran in the user's kernel; the open notebook page shows its outputs."
    if execution.note:
        note = f"{execution.note}\n{note}"
    ran = replace(cell, outputs=tuple(execution.outputs), execution_count=execution.execution_count)
    return RunResult(cell=ran, outputs=execution.outputs, execution_count=execution.execution_count,
                     status=status, version=version, saved=True, note=note, names_changed=names_changed)


def run_result_of_code(code: str, execution: Execution, timeout: float, names_changed: tuple[str, ...]) -> RunResult:
    """The tool's result of a scratch run made here (``KernelRun``): nothing was saved."""
    note = {"timeout": f"The code was interrupted after {timeout:.0f} s (its time limit), in the user's kernel.",
            "interrupted": "Stopped by the user while the code was running; the kernel was interrupted."}
    text = "\n".join(n for n in (execution.note, note.get(execution.status, "")) if n)
    return RunResult(cell=scratch_cell(code), outputs=execution.outputs, execution_count=None,
                     status=execution.status, saved=False, note=text, names_changed=names_changed)


def log_failure(task: asyncio.Future[Any]) -> None:
    """Nobody may await a page's answer to ``show_run`` (a run's last tool): its failure is
    logged here, never left as an unretrieved exception."""
    if not task.cancelled() and task.exception() is not None:
        log.debug("show_run: %s", task.exception())
