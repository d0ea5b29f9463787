"""Arrival times of a run's events, for the timeline.

The loop's events carry no timestamps, so whoever iterates the run notes when each one
arrived (:class:`Recording`). Times are *loop time*: seconds since the run started,
minus the pauses a stepper spent at checkpoints (while nobody pulls, the loop waits).
Approvals are noted by the approval broker's listener (asked, answered, outcome).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable


@dataclass(frozen=True)
class Timed:
    """One event and when it arrived (loop seconds)."""

    t: float
    event: Any
    #: when it happened, if the event says (``ToolStart.started_at``), else when it arrived
    happened: float | None = None

    @property
    def at(self) -> float:
        return self.happened if self.happened is not None else self.t


@dataclass
class ApprovalSpan:
    """One approval the loop waited on."""

    tool_name: str
    input: dict[str, Any]
    asked_at: float
    answered_at: float | None = None
    outcome: str = "waiting"  # allow / always / deny / cancelled


@dataclass
class Recording:
    """The timed events of one run (see module doc)."""

    events: list[Timed] = field(default_factory=list)
    approvals: list[ApprovalSpan] = field(default_factory=list)
    _t0: float | None = None
    _paused_total: float = 0.0
    _paused_since: float | None = None

    def now(self) -> float:
        """Loop seconds since the first event (pauses left out)."""
        real = time.perf_counter()
        if self._t0 is None:
            self._t0 = real
        paused = self._paused_total + (real - self._paused_since if self._paused_since is not None else 0.0)
        return max(real - self._t0 - paused, 0.0)

    def pause(self) -> None:
        if self._paused_since is None and self._t0 is not None:
            self._paused_since = time.perf_counter()

    def resume(self) -> None:
        if self._paused_since is not None:
            self._paused_total += time.perf_counter() - self._paused_since
            self._paused_since = None

    def loop_time(self, perf: float) -> float:
        """A ``time.perf_counter()`` reading as loop seconds."""
        now = self.now()
        return min(max(now - (time.perf_counter() - perf), 0.0), now)

    def of_type(self, kind: type) -> list[Any]:
        """The recorded events of one type, in arrival order."""
        return [timed.event for timed in self.events if isinstance(timed.event, kind)]

    @property
    def terminal(self) -> Any:
        """The run's ``Terminal`` (its last event), or None."""
        return self.events[-1].event if self.events and type(self.events[-1].event).__name__ == "Terminal" else None

    def add(self, event: Any) -> Timed:
        started = getattr(event, "started_at", None)
        timed = Timed(self.now(), event, self.loop_time(started) if isinstance(started, float) else None)
        self.events.append(timed)
        return timed

    def watch_approval(self, request: Any) -> None:
        """An approval broker listener: note when ``request`` was asked and answered."""
        span = ApprovalSpan(request.tool_name, dict(request.input), self.now())
        self.approvals.append(span)

        def answered(future: Any) -> None:
            span.answered_at = self.now()
            if future.cancelled():
                span.outcome = "cancelled"
                return
            result = future.result()
            if getattr(result, "behavior", "") == "allow":
                span.outcome = "always" if getattr(result, "always", ()) else "allow"
            else:
                span.outcome = "deny"

        request.future.add_done_callback(answered)


async def record_run(run: Any, recording: Recording | None = None, *,
                     stop_when: Callable[[Any], bool] | None = None) -> Recording:
    """Drive ``run`` to its end, noting when each event arrived; returns the recording.

    ``stop_when(event)``: press Stop (``run.stop()``) at the first event it accepts (a
    lesson uses it to stop while the model streams, or while a tool runs). To time
    approvals too, add ``recording.watch_approval`` to the approval broker's listeners.
    """
    recording = recording if recording is not None else Recording()
    recording.now()  # start the clock before the first request
    stopped = False
    async for event in run:
        recording.add(event)
        if stop_when is not None and not stopped and stop_when(event):
            stopped = True
            run.stop()
    return recording
