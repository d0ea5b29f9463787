"""The Stop button's wire into the loop (the seed's ``AbortController``).

``abort()`` may be called from any thread (widget callbacks can run on a comm
subshell thread): it hops onto the loop's own thread before touching anything.
Listeners wake whatever the loop is waiting on (a model stream, running tools).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable


#: Why a run was aborted (``AbortSignal.reason``, and ``Terminal.stopped_by`` at its end).
STOP_BUTTON = "user"
CONSUMER_CLOSED = "consumer_closed"
#: The user interrupted a cell the run was running (the kernel's interrupt button): the
#: same as Stop for the run.
CELL_INTERRUPTED = "cell_interrupted"


class AbortSignal:
    """Set once; ``event`` is the ``asyncio.Event`` tools can check or await."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.reason: str | None = None
        self._listeners: list[Callable[[], None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Remember the loop the run lives on, so other threads can reach it."""
        self._loop = loop
        self._thread = threading.get_ident()

    @property
    def aborted(self) -> bool:
        return self.event.is_set()

    def abort(self, reason: str = "user") -> None:
        loop = self._loop
        if loop is not None and threading.get_ident() != self._thread and not loop.is_closed():
            loop.call_soon_threadsafe(self._abort, reason)
        else:
            self._abort(reason)

    def _abort(self, reason: str) -> None:
        if self.event.is_set():
            return
        self.reason = reason
        self.event.set()
        for listener in list(self._listeners):
            listener()

    def add_listener(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` on abort (at once if already aborted); returns a remover."""
        if self.aborted:
            listener()
            return lambda: None
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove
