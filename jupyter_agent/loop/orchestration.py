"""Step 3: running a response's tool calls (seed: ``runTools`` in toolOrchestration).

Calls are taken in order. Consecutive concurrency-safe calls form a batch that runs
concurrently (at most ``MAX_TOOL_CONCURRENCY`` at once); a call that is not safe
runs alone, after everything before it finished and before anything after it starts.
Results come back as they complete: pairing is by ``tool_use_id``, so order does not
matter to the model. On Stop, running calls are cancelled and every call without a
result gets an error result: each ``tool_use`` ends with exactly one ``tool_result``.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections import deque
from dataclasses import dataclass, replace
from typing import Literal
from collections.abc import AsyncIterator, Iterator

from .abort import CELL_INTERRUPTED, AbortSignal
from .events import Notice, ToolOutcome, ToolProgress, ToolResult, ToolStart, ToolUpdate
from .messages import INTERRUPTED_MESSAGE
from .tool_execution import CallResult, ToolRunEnv, error_result, run_tool_call
from .wire import ToolResultBlock, ToolUseBlock

MAX_TOOL_CONCURRENCY = 10
NOT_STARTED_MESSAGE = "The run was stopped before this tool call started."
DENIED_EARLIER_MESSAGE = "Not run: the user denied an earlier tool call in this response."
NOT_CONFIRMED_MESSAGE = ("Not run: the response broke off right after this call, so its input may be "
                         "incomplete. Ask for it again if it is still needed.")


@dataclass
class TrackedCall:
    """One ``tool_use`` on its way to a result."""

    block: ToolUseBlock
    safe: bool
    status: Literal["queued", "running", "done", "yielded"] = "queued"
    #: Changes nothing (``Tool.is_read_only``); decides what may start while the model streams.
    read_only: bool = False
    #: Queued but not to be started yet (a call that changes something, still streaming).
    held: bool = False
    task: asyncio.Task[None] | None = None
    result: CallResult | None = None
    started_at: float = 0.0
    ended_at: float = 0.0


class ToolScheduler:
    """Starts calls as the ordering rules allow and hands back events as they happen.

    Used directly by :func:`run_tools` (all calls known up front) and by the
    :class:`StreamingToolExecutor` (calls added while the model still streams).
    """

    def __init__(self, env: ToolRunEnv, signal: AbortSignal, *, in_order: bool,
                 max_concurrency: int = MAX_TOOL_CONCURRENCY) -> None:
        self.env = replace(env, emit=self._emit)
        self.calls: list[TrackedCall] = []
        self.in_order = in_order
        self.max_concurrency = max_concurrency
        self._events: deque[ToolStart | ToolProgress | Notice] = deque()
        self._wake = asyncio.Event()
        self._signal = signal
        self._remove_listener = signal.add_listener(self._on_abort)
        self._aborted = signal.aborted

    # -- adding and starting -------------------------------------------------
    def add(self, block: ToolUseBlock, *, hold: bool = False) -> None:
        """Track a call and start it if the ordering rules allow (``hold``: not yet)."""
        self.calls.append(TrackedCall(block, self.env.is_concurrency_safe(block),
                                      read_only=self.env.is_read_only(block), held=hold))
        self._start_ready()

    def _can_start(self, call: TrackedCall) -> bool:
        running = [c for c in self.calls if c.status == "running"]
        if len(running) >= self.max_concurrency:
            return False
        return not running or (call.safe and all(c.safe for c in running))

    def _start_ready(self) -> None:
        for call in self.calls:
            if call.status != "queued":
                continue
            if self._aborted:
                self._finish(call, error_result(call.block["id"], NOT_STARTED_MESSAGE, ToolOutcome.STOPPED))
            elif self.env.control.interrupted:
                self._finish(call, error_result(call.block["id"], DENIED_EARLIER_MESSAGE, ToolOutcome.NOT_RUN))
            elif call.held:
                break  # in order: nothing overtakes a call that is not released yet
            elif self._can_start(call):
                call.status = "running"
                call.started_at = time.perf_counter()
                call.task = asyncio.ensure_future(self._run(call))
                call.task.add_done_callback(functools.partial(self._task_done, call))
            else:
                break  # keep order: nothing overtakes a call that has to wait

    async def _run(self, call: TrackedCall) -> None:
        try:
            result = await run_tool_call(call.block, self.env)
        except Exception as exc:  # run_tool_call catches tool errors; this is a loop bug
            result = error_result(call.block["id"], f"Internal error: {exc!r}")
        self._finish(call, result)
        if result.outcome is ToolOutcome.STOPPED and not self._aborted:
            # The user interrupted what the call ran (a cell, from the page): that is Stop
            # for the run, which ends it here as Stop would (every open call answered).
            self._signal.abort(CELL_INTERRUPTED)
        self._start_ready()

    def _task_done(self, call: TrackedCall, task: asyncio.Task[None]) -> None:
        # A task cancelled before its first step never runs its body, so the result of
        # a cancelled call is set here, where every way out of the task passes.
        if call.status == "running":
            self._finish(call, error_result(call.block["id"], INTERRUPTED_MESSAGE, ToolOutcome.STOPPED))
            self._start_ready()

    def _finish(self, call: TrackedCall, result: CallResult) -> None:
        call.result = result
        call.status = "done"
        call.ended_at = time.perf_counter()
        self._wake.set()

    def _emit(self, event: ToolStart | ToolProgress | Notice) -> None:
        self._events.append(event)
        self._wake.set()

    def _on_abort(self) -> None:
        self.abort_all()

    def abort_all(self) -> None:
        """Cancel running calls; queued ones get a "not started" result."""
        self._aborted = True
        for call in self.calls:
            if call.status == "running" and call.task is not None:
                call.task.cancel()
        self._start_ready()  # queued calls get their "not started" result now

    # -- handing results back ------------------------------------------------
    def completed_events(self) -> Iterator[ToolUpdate]:
        """Events ready now, without waiting: progress first, then finished results.

        In order mode a finished result may pass a still-running *safe* call, but
        nothing passes an unsafe call that has not finished.
        """
        while self._events:
            yield self._events.popleft()
        for call in self.calls:
            if call.status == "done":
                call.status = "yielded"
                duration = max(call.ended_at - call.started_at, 0.0) if call.started_at else 0.0
                assert call.result is not None
                yield ToolResult(call.block["id"], call.block["name"], call.result.block, duration,
                                 call.result.outcome, call.result.exception, call.result.exit_code)
            elif call.status in ("running", "queued") and self.in_order and not call.safe:
                break

    async def remaining_events(self) -> AsyncIterator[ToolUpdate]:
        """Every event until each call has handed back its result."""
        try:
            while True:
                self._wake.clear()
                for event in self.completed_events():
                    yield event
                if all(c.status == "yielded" for c in self.calls) and not self._events:
                    return
                await self._wake.wait()
        finally:
            self._remove_listener()

    def results(self) -> dict[str, ToolResultBlock]:
        """The ``tool_result`` block of every finished call, by ``tool_use_id``."""
        return {c.block["id"]: c.result.block for c in self.calls if c.result is not None}

    def discard(self) -> None:
        """Drop everything (the response these calls came from was thrown away)."""
        self._remove_listener()
        for call in self.calls:
            if call.task is not None and not call.task.done():
                call.task.cancel()
        self.calls.clear()
        self._events.clear()


def partition_tool_calls(blocks: list[ToolUseBlock], env: ToolRunEnv) -> list[list[ToolUseBlock]]:
    """Split calls into batches: a run of consecutive safe calls, or one unsafe call."""
    batches: list[list[ToolUseBlock]] = []
    previous_safe = False
    for block in blocks:
        safe = env.is_concurrency_safe(block)
        if safe and previous_safe:
            batches[-1].append(block)
        else:
            batches.append([block])
        previous_safe = safe
    return batches


async def run_tools(blocks: list[ToolUseBlock], env: ToolRunEnv, signal: AbortSignal) -> AsyncIterator[ToolUpdate]:
    """Run a response's calls batch by batch (see module doc); yield ToolStart,
    ToolProgress and ToolResult events as they happen."""
    for batch in partition_tool_calls(blocks, env):
        scheduler = ToolScheduler(env, signal, in_order=False)
        for block in batch:
            scheduler.add(block)
        try:
            async for event in scheduler.remaining_events():
                yield event
        finally:
            scheduler.discard()


class StreamingToolExecutor(ToolScheduler):
    """Starts tool calls while the model is still streaming, where that is safe.

    ``add_tool`` is called when a ``tool_use`` block's ``content_block_stop`` arrives.
    A call that changes nothing (``Tool.is_read_only``: Read, Glob, Grep) starts at
    once. A call that changes something is *held* until the model has moved on:
    ``release()``, which the loop calls when the next block starts, when
    ``message_delta`` says ``stop_reason: tool_use``, or when the response is complete.
    A cut-off stream closes its last block too (the anthropic SDK's eager tool runner
    waits for the same signals for this reason), so a held call may be half of what
    the model meant; it never runs unless the stream goes on.

    Safe calls run beside other safe calls; an unsafe call waits until it can run
    alone. The loop yields finished results while the model is still streaming
    (``completed_events``) and collects the rest after (``remaining_events``).

    If the model layer starts the response over (retry, fallback): when no call that
    changes something has started (``has_effects`` is false), the loop calls
    ``discard()`` and those ids never reach the history. Otherwise the loop keeps the
    finished part of the response: ``refuse_held()`` answers the calls that were never
    released with an error, and the others run to their results; all go into the history.
    """

    def __init__(self, env: ToolRunEnv, signal: AbortSignal) -> None:
        super().__init__(env, signal, in_order=True)

    def add_tool(self, block: ToolUseBlock) -> None:
        """A complete ``tool_use`` block: start it now if it changes nothing, else hold it."""
        self.add(block, hold=not self.env.is_read_only(block))

    def release(self) -> None:
        """The model moved on: the calls held so far are whole and may start."""
        for call in self.calls:
            call.held = False
        self._start_ready()

    @property
    def has_effects(self) -> bool:
        """Has a call that may change something started (so it must not be thrown away)?"""
        return any(c.status != "queued" and not c.read_only for c in self.calls)

    def refuse_held(self) -> None:
        """The stream broke before the model moved on: each call still held gets an error
        result instead of running (its input may be cut short)."""
        for call in self.calls:
            if call.held and call.status == "queued":
                call.held = False
                self._finish(call, error_result(call.block["id"], NOT_CONFIRMED_MESSAGE, ToolOutcome.NOT_RUN))
        self._start_ready()
