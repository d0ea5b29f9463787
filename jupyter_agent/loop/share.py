"""Sharing the kernel's event loop with the user's cells.

In a notebook the agent's loop runs on the kernel's event loop, and a cell the user starts
waits for whatever callback holds that loop. Events that arrive in a burst (a fast stream,
or everything the model sent while a cell blocked the loop) would otherwise be handled in
one long step of the run's task: every queue ``get`` finds an item and never suspends.
:class:`LoopShare` bounds such a stretch: after :data:`HOLD_BUDGET_S` of work without a
pause, the next item waits for one turn of the loop (``asyncio.sleep(0)``), so other
callbacks, the user's cell among them, run within a few milliseconds: never a frame
(16 ms) late because of the agent. Measured by ``benchmarks/bench_kernel_share.py``.
"""

from __future__ import annotations

import asyncio
import time

__all__ = ["HOLD_BUDGET_S", "LoopShare"]

#: The longest stretch of work between two pauses; a frame at 60 Hz is 16 ms.
HOLD_BUDGET_S = 0.004


class LoopShare:
    """A task's count of the time it has held the loop since it last let it run.

    Call :meth:`resumed` after an ``await`` that really suspended (an empty queue's
    ``get``), and ``await pause_if_due()`` before taking an item that is already there.
    """

    def __init__(self, budget_s: float = HOLD_BUDGET_S) -> None:
        self.budget_s = budget_s
        self.pauses = 0
        self._since = time.perf_counter()

    def resumed(self) -> None:
        """The task was suspended just now: a new stretch starts."""
        self._since = time.perf_counter()

    async def pause_if_due(self) -> None:
        """Let the loop run once if this stretch has lasted longer than the budget."""
        if time.perf_counter() - self._since > self.budget_s:
            self.pauses += 1
            await asyncio.sleep(0)
            self._since = time.perf_counter()
