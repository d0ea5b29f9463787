"""Coalesce widget updates to one per frame.

A model streams tokens far faster than a browser needs updates; sending one comm
message per token floods the websocket and the page. Views call :meth:`mark` with a
key and a redraw function whenever their data changes; the scheduler runs each
marked redraw at most once per ``interval`` (and at most ``interval`` late), so a
widget costs at most one comm message per frame whatever the token rate.

Everything here runs on the kernel's event loop; callers on other threads (widget
callbacks in a JupyterLab subshell) go through ``loop.call_soon_threadsafe`` first.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable


class FrameScheduler:
    """Run marked redraws at most once per ``interval`` seconds."""

    def __init__(self, interval: float = 0.06, loop: asyncio.AbstractEventLoop | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self.loop = loop or asyncio.get_event_loop()
        self.clock = clock
        self.flushes = 0
        self._dirty: dict[Hashable, Callable[[], None]] = {}
        self._handle: asyncio.Handle | None = None
        self._last = float("-inf")
        self._closed = False

    def mark(self, key: Hashable, redraw: Callable[[], None]) -> None:
        """Ask for ``redraw`` to run in the next frame (once, however often marked)."""
        if self._closed:
            return
        self._dirty[key] = redraw
        if self._handle is None:
            delay = max(0.0, self._last + self.interval - self.clock())
            self._handle = self.loop.call_later(delay, self.flush)

    def flush(self) -> None:
        """Run every pending redraw now."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if not self._dirty:
            return
        self._last = self.clock()
        self.flushes += 1
        pending, self._dirty = self._dirty, {}
        for redraw in pending.values():
            redraw()

    def close(self) -> None:
        """Flush what is pending and accept no more marks."""
        self.flush()
        self._closed = True
