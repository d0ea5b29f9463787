"""An outside agent's long cell runs: still running after ``wait_seconds``, polled, interrupted.

``run_cell`` waits for its cell at most ``wait_seconds`` (:data:`DEFAULT_WAIT_S`, at most
:data:`MAX_WAIT_S`); a cell still running then goes on, and the call returns "still
running" with the run's id. :class:`RunRegistry` keeps each run: the call to the kernel
(a task of its own, so neither the end of the request nor the client's going away stops
the cell), and what the server sees of it on the kernel's IOPub (the request ids of the
call's cell runs start with ``protocol.run_tag``): whether it has started, its outputs so
far. ``run_status`` reads that; ``interrupt`` interrupts the kernel while the run's own
cell executes (``kernel_link.py``).

A run whose client went away goes on to its end, as a cell the user started would: the
page shows its outputs in the cell, the side panel shows it as a call of the outside run
(undo included), and its result stays here for :data:`KEEP_S` for a client that polls
again with the run's id.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from ..redact import redact
from .protocol import Caller

log = logging.getLogger(__name__)

#: Seconds ``run_cell`` waits for its cell by default, and at most.
DEFAULT_WAIT_S, MAX_WAIT_S = 30, 600
#: Seconds an ended run's result is kept for polling.
KEEP_S = 3600.0
#: Characters of outputs so far kept per run (the tail is what a poll wants).
OUTPUT_CHARS = 20_000
#: Characters of outputs so far a poll returns (head and tail).
SHOWN_CHARS = 4_000


class RunState(enum.Enum):
    """Where a run is (``run_status`` says it)."""

    WAITING = "waiting"  # for the user's approval, or for its turn in the kernel
    RUNNING = "running"  # its cell executes in the kernel
    ENDED = "ended"  # the call answered (the cell ended, was interrupted, or was refused)
    FAILED = "failed"  # no answer: the kernel restarted or died, or the server stopped


@dataclass
class RunHandle:
    """One ``run_cell`` call and what is known of it."""

    path: str
    cell_id: str
    kernel_id: str
    owner: Caller  # the client that started it (only it may interrupt it)
    id: str = field(default_factory=lambda: "run-" + uuid.uuid4().hex[:12])
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    executing: bool = False
    #: when its cell's code started (the kernel's ``execute_input``), monotonic
    executing_since: float | None = None
    #: its cell has ended (the kernel's ``idle`` after it): no interrupt may be sent for it now
    cell_over: bool = False
    outputs: str = ""
    reply: dict[str, Any] | None = None
    failure: str | None = None
    task: asyncio.Task[Any] | None = None
    #: the current request's progress sender (None once ``run_cell`` returned)
    progress: Any = None

    @property
    def state(self) -> RunState:
        if self.failure is not None:
            return RunState.FAILED
        if self.reply is not None:
            return RunState.ENDED
        return RunState.RUNNING if self.executing else RunState.WAITING

    def elapsed(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def saw(self, kind: str, content: dict[str, Any]) -> None:
        """An IOPub message of the run's cell (the server's reader calls this)."""
        if kind == "execute_input":  # (published right before the cell's code runs)
            self.executing = True
            self.executing_since = time.monotonic()
            self.cell_over = False  # (run_cells: the range's next cell; an interrupt may reach it)
        elif kind == "status" and content.get("execution_state") == "idle" and self.executing_since is not None:
            self.cell_over = True  # (the call's answer follows: the kernel formats it first)
        elif kind == "stream":
            self._add(str(content.get("text") or ""))
        elif kind in ("execute_result", "display_data"):
            data = content.get("data") or {}
            text = data.get("text/plain") if isinstance(data, dict) else None
            shown = str(text) if text else "[" + ", ".join(sorted(data)) + "]" if isinstance(data, dict) else ""
            self._add(shown + "\n")
        elif kind == "error":
            self._add(f"{content.get('ename', '')}: {content.get('evalue', '')}\n")

    def _add(self, text: str) -> None:
        self.outputs = redact(self.outputs + text)[-OUTPUT_CHARS:]

    async def report(self, text: str) -> None:
        """The kernel's progress words, to the request still waiting (if any; none once
        ``run_cell`` answered "still running")."""
        progress = self.progress
        if progress is not None:
            await progress(text)

    def finish(self, task: asyncio.Task[Any]) -> None:
        self.ended = time.monotonic()
        self.progress = None
        if task.cancelled():
            self.failure = "The run's call was cancelled (the Jupyter server is stopping)."
        elif task.exception() is not None:
            self.failure = str(task.exception())
        else:
            self.reply = task.result()


class RunRegistry:
    """The runs started through this server, by id (ended ones kept :data:`KEEP_S`)."""

    def __init__(self) -> None:
        self.runs: dict[str, RunHandle] = {}

    def start(self, handle: RunHandle, call: Any) -> RunHandle:
        """Keep ``handle`` and run ``call`` (a coroutine: the kernel's answer) in a task of its own."""
        self._forget_old()
        handle.task = asyncio.get_event_loop().create_task(call)
        handle.task.add_done_callback(handle.finish)
        self.runs[handle.id] = handle
        return handle

    def get(self, run_id: str) -> RunHandle | None:
        return self.runs.get(run_id)

    def running(self, kernel_id: str, owner: Caller) -> list[RunHandle]:
        """``owner``'s runs on the kernel that have not ended."""
        return [h for h in self.runs.values() if h.kernel_id == kernel_id and h.owner == owner and h.ended is None]

    def _forget_old(self) -> None:
        now = time.monotonic()
        for run_id in [i for i, h in self.runs.items() if h.ended is not None and now - h.ended > KEEP_S]:
            del self.runs[run_id]

    def close(self) -> None:
        """The server stops: calls still waiting are cancelled (their cells go on in the kernel)."""
        for handle in self.runs.values():
            if handle.task is not None and not handle.task.done():
                handle.task.cancel()


def still_running(handle: RunHandle, wait_s: float) -> dict[str, Any]:
    """``run_cell``'s answer when its cell did not end within ``wait_s``: a kernel reply."""
    what = ("its cell is executing" if handle.state is RunState.RUNNING
            else "it waits for the user's approval in JupyterLab, or for its turn in the kernel")
    text = (f"Still running after {wait_s:.0f} s: run_id={handle.id} (cell {handle.cell_id} of {handle.path}); "
            f"{what}. Call run_status with this run_id to see its outputs so far and its result once it ends, "
            "or interrupt to stop it.")
    return {"ok": True, "content": [{"type": "text", "text": text + _outputs_part(handle)}]}


def status_reply(handle: RunHandle) -> dict[str, Any]:
    """``run_status``'s answer: state, time, outputs so far; the run's result once ended."""
    head = f"run_id={handle.id} (cell {handle.cell_id} of {handle.path}): "
    state = handle.state
    if state is RunState.ENDED:
        reply = dict(handle.reply or {})
        text = head + f"ended after {handle.elapsed():.0f} s. Its result:"
        return {**reply, "content": [{"type": "text", "text": text}, *(reply.get("content") or [])]}
    if state is RunState.FAILED:
        return {"ok": False, "error": head + f"failed after {handle.elapsed():.0f} s: {handle.failure}"}
    doing = ("running" if state is RunState.RUNNING
             else "waiting (for the user's approval in JupyterLab, or for its turn in the kernel)")
    text = head + f"{doing} for {handle.elapsed():.0f} s. Call run_status again later, or interrupt to stop it."
    return {"ok": True, "content": [{"type": "text", "text": text + _outputs_part(handle)}]}


def _outputs_part(handle: RunHandle) -> str:
    if not handle.outputs:
        return "\nNo output yet." if handle.state is RunState.RUNNING else ""
    text = handle.outputs
    if len(text) > SHOWN_CHARS:
        half = SHOWN_CHARS // 2
        text = f"{text[:half]}\n[... {len(text) - SHOWN_CHARS:,} characters left out ...]\n{text[-half:]}"
    return "\nOutputs so far:\n" + text
