"""The stepper: walk a run of the loop one of its four steps at a time, forward and back.

It builds on ``query(..., checkpoints=True)``, whose run yields a
:class:`~jupyter_agent.loop.events.Checkpoint` at each of the four steps and then waits
until someone pulls the next event. The stepper is that someone::

    stepper = Stepper.start("Read notes.txt", model=model, cwd=workdir)
    snap = await stepper.step()        # step 1: the request is built, about to call the model
    snap = await stepper.next_turn()   # on to step 1 of the next turn (or the end)
    stepper.back()                     # an earlier snapshot, exactly as it was
    snap = await stepper.run_to_end()  # snap.end_reason == "completed"

Every snapshot is an immutable deep copy (:class:`~.snapshot.Snapshot`). Moving forward
after going back replays the recorded snapshots before pulling new ones from the loop.

Approvals work while stepping: the loop waits inside step 3 for an answer. If an
approval is asked while a step is in progress, ``step()`` returns early with the current
snapshot and the request in :attr:`Stepper.pending_approvals`; answer it
(``request.allow()``, ``.allow_always()``, ``.deny("feedback")``) and step again. Or
pass ``can_use_tool`` (or ``on_approval``) to answer in code.

Import-light: no ipywidgets, no IPython, no anthropic.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any
from collections.abc import AsyncIterator, Callable

from ..loop.events import (
    AssistantMessage, Checkpoint, ModelFallback, ModelRetry, Notice, RequestStart, StreamEvent,
    ToolResult, ToolStart, UserMessage,
)
from ..loop.state import Terminal
from .recording import Recording
from .snapshot import FrozenDict, Snapshot, changes, freeze


def _stream_line(event: StreamEvent) -> str | None:
    block = event.block or {}
    if event.type == "content_block_stop" and block.get("type") == "tool_use":
        return f"stream: tool_use {block.get('name')} ({block.get('id')}) complete"
    return "stream: message_stop" if event.type == "message_stop" else None


#: Event type -> its line in "what happened since the last step" (other events get none).
_LINES: dict[type, Callable[[Any], str | None]] = {
    RequestStart: lambda e: f"request #{e.request_index} sent to {e.model} ({e.message_count} messages)",
    StreamEvent: _stream_line,
    AssistantMessage: lambda e: f"assistant message (stop_reason={e.stop_reason}, {len(e.tool_uses)} tool_use)",
    ToolStart: lambda e: f"tool started: {e.name} ({e.tool_use_id})",
    ToolResult: lambda e: f"tool_result for {e.tool_use_id}: {e.outcome.value}",
    UserMessage: lambda e: "user message added" + (" (synthetic)" if e.synthetic else ""),
    ModelRetry: lambda e: f"model retry {e.attempt}/{e.max_retries}: {e.error}",
    ModelFallback: lambda e: f"fallback model: {e.from_model} -> {e.to_model}",
    Notice: lambda e: f"notice ({e.kind}): {e.text}",
    Terminal: lambda e: f"Terminal: {e.reason.value}",
}


def describe(event: Any) -> str | None:
    """One line about an event for "what happened since the last step" (None: not worth a line)."""
    line = next((line for kind, line in _LINES.items() if isinstance(event, kind)), None)
    return line(event) if line else None


class Stepper:
    """Steps a run made with ``checkpoints=True`` (see module doc)."""

    def __init__(self, run: Any, *, broker: Any = None,
                 on_approval: Callable[[Any], Any] | None = None) -> None:
        options = getattr(getattr(run, "params", None), "options", None)
        if not getattr(options, "checkpoints", False):
            raise ValueError("The stepper needs a run made with checkpoints=True: "
                             "query(prompt, ..., checkpoints=True), or use Stepper.start(prompt, ...).")
        self.run = run
        self.broker = broker
        self.recording = Recording()
        self._snapshots: list[Snapshot] = []
        self.position = -1
        self._events: AsyncIterator[Any] | None = None
        self._pull: asyncio.Task | None = None
        self._approval_waiting = asyncio.Event()
        self._pending_lines: list[str] = []
        self._listeners: list[Callable[[Stepper], Any]] = []
        self._on_approval = on_approval
        if broker is not None:
            broker.listeners.append(self._approval_asked)

    # -- construction --------------------------------------------------------------------
    @classmethod
    def start(cls, prompt: Any, *, permission_mode: str = "default", allow: Any = (), deny: Any = (),
              ask: Any = (), can_use_tool: Any = None, on_approval: Callable[[Any], Any] | None = None,
              cwd: Any = None, **query_kwargs: Any) -> Stepper:
        """``query(prompt, checkpoints=True, ...)`` wrapped in a stepper.

        Without ``can_use_tool``, every "ask" becomes an
        :class:`~jupyter_agent.permissions.ApprovalRequest` in :attr:`pending_approvals`
        (``on_approval(request)`` may answer it at once). ``allow``/``deny``/``ask`` are
        permission rules (``Tool`` or ``Tool(glob)``).
        """
        from pathlib import Path

        from ..agent import query
        from ..permissions import ApprovalBroker, Permissions

        policy = query_kwargs.pop("permissions", None)
        if policy is None:
            policy = Permissions(mode=permission_mode, allow=allow, deny=deny, ask=ask,
                                 cwd=Path(cwd or Path.cwd()).expanduser().resolve())
        broker = None
        if can_use_tool is None:
            broker = ApprovalBroker(policy)
            can_use_tool = broker
        run = query(prompt, checkpoints=True, can_use_tool=can_use_tool, permissions=policy,
                    permission_mode=permission_mode, cwd=cwd, **query_kwargs)
        return cls(run, broker=broker, on_approval=on_approval)

    # -- what there is to look at --------------------------------------------------------
    @property
    def snapshots(self) -> tuple[Snapshot, ...]:
        """Every snapshot taken so far, oldest first."""
        return tuple(self._snapshots)

    @property
    def current(self) -> Snapshot | None:
        """The snapshot being looked at (``None`` before the first step)."""
        return self._snapshots[self.position] if self.position >= 0 else None

    @property
    def previous(self) -> Snapshot | None:
        """The snapshot before the current one (what "changed since the last step" compares to)."""
        return self._snapshots[self.position - 1] if self.position >= 1 else None

    @property
    def ended(self) -> bool:
        """The run has ended (its last snapshot is the end), wherever we are looking."""
        return bool(self._snapshots) and self._snapshots[-1].ended

    @property
    def at_end(self) -> bool:
        return self.ended and self.position == len(self._snapshots) - 1

    @property
    def terminal(self) -> Terminal | None:
        return self.run.terminal

    @property
    def pending_approvals(self) -> list[Any]:
        """Approval requests the loop is waiting on (answer them to let the step finish)."""
        if self.broker is None:
            return []
        return [r for r in self.broker.pending if not r.done]

    def on_change(self, callback: Callable[[Stepper], Any]) -> None:
        """Call ``callback(stepper)`` whenever the position, the snapshots or the approvals change."""
        self._listeners.append(callback)

    def _changed(self) -> None:
        for callback in list(self._listeners):
            callback(self)

    # -- moving --------------------------------------------------------------------------
    async def step(self, *, wait_for_approvals: bool = False) -> Snapshot | None:
        """The next snapshot: a recorded one after going back, else pull the loop to its next step.

        Returns early (same snapshot) if an approval is waiting (see :attr:`pending_approvals`),
        unless ``wait_for_approvals``: then it waits until someone answers.
        """
        if self.position < len(self._snapshots) - 1:
            self.position += 1
            self._changed()
            return self.current
        if self.ended:
            return self.current
        if self._pull is None:
            self._pull = asyncio.ensure_future(self._pull_next())
        while True:
            asked = bool(self.pending_approvals) and not wait_for_approvals
            if asked and not self._streaming():
                self._approval_waiting.set()
            else:
                self._approval_waiting.clear()
            waiter = asyncio.ensure_future(self._approval_waiting.wait())
            try:
                # While the model streams, a call released before the stream's end may already
                # ask; step 2 still ends on its own, so wait for that snapshot, looking again
                # shortly in case the loop has moved on to the tools and waits for the answer.
                await asyncio.wait({self._pull, waiter}, timeout=0.05 if asked else None,
                                   return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()
            if self._pull.done():
                break
            for _ in range(3):  # an answer given in code settles on the next loop iterations
                await asyncio.sleep(0)
            if self.pending_approvals and not wait_for_approvals and not self._streaming():
                self._changed()  # an approval is waiting: the step returns, the loop waits
                return self.current
        pull, self._pull = self._pull, None
        pull.result()  # raise what the loop raised
        self.position = len(self._snapshots) - 1
        self._changed()
        return self.current

    def _streaming(self) -> bool:
        """The model is still streaming (step 2 will end without anyone's answer)."""
        return self.run.record.phase == "streaming"

    async def next_turn(self, *, wait_for_approvals: bool = False) -> Snapshot | None:
        """Step until step 1 of the next turn (or the end). Stops early for an approval
        unless ``wait_for_approvals``."""
        start = self.current
        while True:
            before = self.position, len(self._snapshots)
            snap = await self.step(wait_for_approvals=wait_for_approvals)
            if snap is None or snap.ended or (snap.step == 1 and snap is not start):
                return snap
            if (self.position, len(self._snapshots)) == before:  # waiting for an approval
                return snap

    async def run_to_end(self, *, wait_for_approvals: bool = False) -> Snapshot | None:
        """Step until the run ends. Stops early for an approval unless ``wait_for_approvals``."""
        while True:
            before = self.position, len(self._snapshots)
            snap = await self.step(wait_for_approvals=wait_for_approvals)
            if snap is None or snap.ended or (self.position, len(self._snapshots)) == before:
                return snap

    def back(self, steps: int = 1) -> Snapshot | None:
        """Look at an earlier snapshot (the loop itself does not move)."""
        return self.go(max(self.position - steps, 0))

    def go(self, index: int) -> Snapshot | None:
        """Look at snapshot ``index`` (0-based; negative counts from the newest)."""
        if not self._snapshots:
            return None
        if index < 0:
            index += len(self._snapshots)
        if not 0 <= index < len(self._snapshots):
            raise IndexError(f"There are {len(self._snapshots)} snapshots (0..{len(self._snapshots) - 1}); "
                             f"{index} is not one of them.")
        self.position = index
        self._changed()
        return self.current

    async def close(self) -> None:
        """Stop the run if it has not ended, and wait for its end (answers every open tool call)."""
        if self._pull is not None or not self.ended:
            self.run.stop()
            for request in self.pending_approvals:
                request.deny()
            if self._pull is not None:
                await asyncio.gather(self._pull, return_exceptions=True)
                self._pull = None
            while not self.ended and self._events is not None:
                await self._pull_next()
            self.position = len(self._snapshots) - 1
            self._changed()

    # -- pulling -------------------------------------------------------------------------
    async def _pull_next(self) -> None:
        """Pull events until the next Checkpoint or the Terminal; record a snapshot."""
        if self._events is None:
            self.recording.now()  # the clock starts with the first pull
            self._events = self.run.__aiter__()
        events = self._events
        self.recording.resume()
        try:
            while True:
                try:
                    event = await events.__anext__()
                except StopAsyncIteration:
                    if not self.ended and self.run.terminal is not None:
                        self._snap_end(self.run.terminal)
                    return
                self.recording.add(event)
                line = describe(event)
                if line:
                    self._pending_lines.append(line)
                if isinstance(event, Checkpoint):
                    self._snap_checkpoint(event)
                    return
                if isinstance(event, Terminal):
                    self._snap_end(event)
                    return
        finally:
            self.recording.pause()

    def _snap_checkpoint(self, cp: Checkpoint) -> None:
        extra = {k: v for k, v in cp.extra.items() if k != "request"}  # the request is messages_for_query again
        self._add(Snapshot(
            index=len(self._snapshots), step=cp.step, step_name=cp.step_name, turn_count=cp.turn_count,
            transition=cp.transition.reason if cp.transition else None,
            state_messages=freeze(cp.state.messages), messages_for_query=freeze(cp.messages_for_query),
            assistant_messages=freeze(cp.assistant_messages), tool_results=freeze(cp.tool_results),
            needs_follow_up=cp.needs_follow_up, t=self.recording.now(),
            events=tuple(self._pending_lines), extra=freeze(extra),
        ))

    def _snap_end(self, terminal: Terminal) -> None:
        state = self.run.state
        last = self._snapshots[-1] if self._snapshots else None
        self._add(Snapshot(
            index=len(self._snapshots), step=None, step_name="end", turn_count=state.turn_count,
            transition=state.transition.reason if state.transition else None,
            state_messages=freeze(state.messages),
            messages_for_query=last.messages_for_query if last else (),
            assistant_messages=last.assistant_messages if last and last.step in (2, 3) else (),
            tool_results=last.tool_results if last and last.step == 3 else (),
            needs_follow_up=last.needs_follow_up if last else False,
            end_reason=terminal.reason.value, end_message=terminal.message, t=self.recording.now(),
            events=tuple(self._pending_lines), extra=FrozenDict({"error": terminal.error}),
        ))

    def _add(self, snapshot: Snapshot) -> None:
        previous = self._snapshots[-1] if self._snapshots else None
        snapshot = dataclasses.replace(snapshot, changed=changes(previous, snapshot))
        self._snapshots.append(snapshot)
        self._pending_lines = []

    def _approval_asked(self, request: Any) -> Any:
        self.recording.watch_approval(request)
        request.future.add_done_callback(lambda _f: self._changed())
        outcome = self._on_approval(request) if self._on_approval is not None else None
        self._approval_waiting.set()
        self._changed()
        return outcome
