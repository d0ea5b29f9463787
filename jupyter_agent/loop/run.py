"""The run handle: what ``query()`` returns and what ``%%agent`` displays.

A run is pull-based: the loop advances only while someone iterates it, so a lesson
can pause between steps by not pulling the next event. ``wait()`` drives the run
itself when nobody iterates. ``stop()`` is safe from any thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from .abort import CONSUMER_CLOSED, STOP_BUTTON, AbortSignal
from .messages import ensure_tool_result_pairing
from .events import LoopEvent
from .query import QueryParams, RunRecord, next_state, query_loop
from .state import State, Terminal, TerminalReason
from .meter import StreamUsage
from .usage import Usage


class QueryRun:
    """One run of the loop: async-iterable over its events (the last is a ``Terminal``).

    - ``async for event in run``: the events, once (one consumer).
    - ``await run.wait()``: the ``Terminal``; drives the run if nobody iterates it.
    - ``run.stop()``: abort (``aborted_streaming`` or ``aborted_tools``).
    - ``run.terminal`` (``None`` while running), ``run.state``, ``run.usage``.
    """

    def __init__(self, params: QueryParams, initial_state: State, *, permission_mode: str = "default") -> None:
        self.params = params
        self.signal = AbortSignal()
        price: Callable[[str, Usage], float] | None = getattr(params.model, "price", None)  # optional (Model)
        self.record = RunRecord(state=initial_state, meter=StreamUsage(price))
        self.terminal: Terminal | None = None
        self.permission_mode = permission_mode
        self._iterated = False
        self._done = asyncio.Event()
        self._on_end: list[Callable[[QueryRun], object]] = []

    # -- what a UI reads ---------------------------------------------------------
    @property
    def state(self) -> State:
        return self.record.state

    @property
    def usage(self) -> Usage:
        return self.record.usage

    @property
    def model_name(self) -> str:
        return self.params.model.name

    @property
    def running(self) -> bool:
        return self._iterated and self.terminal is None

    def __repr__(self) -> str:
        status = self.terminal.reason.value if self.terminal else ("running" if self._iterated else "not started")
        return f"<QueryRun model={self.model_name!r} turn={self.state.turn_count} {status}>"

    # -- driving it ----------------------------------------------------------------
    def __aiter__(self) -> AsyncIterator[LoopEvent]:
        if self._iterated:
            raise RuntimeError(
                "This run is already being iterated; a run has one consumer. "
                "Use `await run.wait()` to wait for its end instead."
            )
        self._iterated = True
        return self._events()

    async def _events(self) -> AsyncIterator[LoopEvent]:
        self.signal.bind(asyncio.get_running_loop())
        generator = query_loop(self.params, self.record, self.signal)
        try:
            async for event in generator:
                if isinstance(event, Terminal):
                    self._finish(event)
                yield event
        finally:
            await generator.aclose()
            if self.params.owns_model and hasattr(self.params.model, "aclose"):
                await self.params.model.aclose()
            if self.params.owns_tool_sources:  # query() started them for this run alone
                for source in self.params.tool_sources:
                    await source.aclose()
            if self.terminal is None:
                # The consumer went away (break, cancel, widget closed): count it as a Stop
                # and leave a history the API accepts.
                self.signal.abort(CONSUMER_CLOSED)
                reason = (TerminalReason.ABORTED_TOOLS if self.record.phase == "tools"
                          else TerminalReason.ABORTED_STREAMING)
                messages, _ = ensure_tool_result_pairing(list(self.record.state.messages))
                self.record.state = next_state(self.record.state, messages)
                self._finish(Terminal(reason, self.record.state.turn_count,
                                      "The run was closed before it finished.", None, self.usage,
                                      stopped_by=self.signal.reason))

    def _finish(self, terminal: Terminal) -> None:
        self.terminal = terminal
        self._done.set()
        for callback in self._on_end:
            callback(self)

    def add_done_callback(self, callback: Callable[[QueryRun], object]) -> None:
        """Call ``callback(run)`` when the run ends (at once if it already has)."""
        if self.terminal is not None:
            callback(self)
        else:
            self._on_end.append(callback)

    async def wait(self) -> Terminal:
        """Wait for the end and return the ``Terminal``."""
        if not self._iterated:
            async for _ in self:
                pass
        await self._done.wait()
        assert self.terminal is not None
        return self.terminal

    def stop(self) -> None:
        """Abort the run (from any thread). The loop answers every open tool call first."""
        self.signal.abort(STOP_BUTTON)
