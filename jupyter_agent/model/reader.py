"""The thread that reads the Messages API's responses, off the kernel's event loop.

The kernel's event loop is shared with the user: a cell that blocks it (``time.sleep``, a
training loop) used to stop the response's bytes from being read, and when the cell ended
the per-event stall timer had long run out, so a healthy stream counted as stalled and was
paid for again. Now the model's HTTP client lives on an event loop of its own, in a daemon
thread (:class:`ReaderThread`, one per :class:`~.anthropic_model.AnthropicModel`, started on
its first request and stopped by its ``aclose()`` or when it is garbage-collected). That
loop does nothing but the HTTP work, so its stall timer counts only time in which the server
sent nothing. Each raw SSE event crosses to the consumer's loop through an :class:`Inbox`,
which keeps them in order while that loop is blocked and hands them over when it runs again.
See docs/design.md, "The model's stream and the kernel's loop".
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Coroutine
from typing import Any, TypeVar

from ..loop.share import LoopShare

log = logging.getLogger(__name__)

__all__ = ["ReaderThread", "ReadJob", "Inbox"]

T = TypeVar("T")



class ReaderThread:
    """A daemon thread running an asyncio loop of its own, for the HTTP client's work.

    ``submit(coro)`` runs a coroutine there (a ``concurrent.futures.Future``); ``run(coro)``
    awaits one from another loop; ``aclose()`` stops the loop and the thread.
    """

    def __init__(self, name: str = "jupyter-agent-reader") -> None:
        self.loop = asyncio.new_event_loop()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=_serve, args=(self.loop, self._stopped), name=name, daemon=True)
        self._thread.start()
        # A model dropped without aclose() must not leave its thread behind.
        self._finalizer = weakref.finalize(self, _request_stop, self.loop)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and not self._stopped.is_set()

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coro`` on the reader's loop; its result (or exception) lands in the Future."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the reader's loop and await its result from the caller's loop."""
        return await asyncio.wrap_future(self.submit(coro))

    async def aclose(self, timeout: float = 5.0) -> None:
        """Stop the loop (tasks still there are cancelled and finish) and join the thread,
        waiting on the caller's loop, never blocking it."""
        self._finalizer.detach()
        if not _request_stop(self.loop):
            return
        deadline = time.monotonic() + timeout
        while not self._stopped.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        self._thread.join(timeout=0.5)
        if self._thread.is_alive():
            log.warning("the model's reader thread did not stop within %.0f s", timeout)


def _request_stop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        loop.call_soon_threadsafe(loop.stop)
    except RuntimeError:  # already closed
        return False
    return True


def _serve(loop: asyncio.AbstractEventLoop, stopped: threading.Event) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
        # Whatever still runs (a stream nobody closed) is cancelled and gets to close its
        # response before the loop goes.
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()
        if tasks:
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
    except Exception:  # noqa: BLE001 - a thread's last words; nobody else would see them
        log.exception("the model's reader thread failed")
    finally:
        loop.close()
        stopped.set()


class Inbox:
    """Items handed from another thread to one reader on ``loop``, in order.

    ``put`` may be called from any thread, also while ``loop`` is blocked: items wait in a
    deque, and at most one wake-up is pending on the loop at a time (a burst costs one
    ``call_soon_threadsafe``, not one per item). ``get`` is for the task on ``loop``.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._items: collections.deque[Any] = collections.deque()
        self._lock = threading.Lock()
        self._wake_pending = False
        self._waiter: asyncio.Future[None] | None = None
        self._share = LoopShare()

    def put(self, item: Any) -> None:
        """Add ``item`` (any thread)."""
        with self._lock:
            self._items.append(item)
            if self._wake_pending:
                return
            self._wake_pending = True
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody reads any more
            self._loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        with self._lock:
            self._wake_pending = False
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def get(self) -> Any:
        """The next item, waiting for it if need be. A burst queued while the loop was
        blocked is handed out a few milliseconds at a time (``loop/share.py``)."""
        await self._share.pause_if_due()
        while True:
            with self._lock:
                if self._items:
                    return self._items.popleft()
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
            self._share.resumed()


class ReadJob:
    """One request's reading: ``coro`` runs as a task on the reader's loop; when it is done
    (returned, failed or cancelled, its clean-up run) :attr:`CLOSED` is put into ``inbox``.

    The task is started and cancelled through ``call_soon_threadsafe``, in that order on
    the reader's loop, so a cancel that comes before the task started still ends it.
    """

    #: The last item of a job's inbox: the task is over and its response closed.
    CLOSED: Any = type("Closed", (), {"__repr__": lambda self: "ReadJob.CLOSED"})()

    def __init__(self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, None], inbox: Inbox) -> None:
        self._loop = loop
        self._inbox = inbox
        self._task: asyncio.Task[None] | None = None
        self.closed = False
        try:
            loop.call_soon_threadsafe(self._start, coro)
        except RuntimeError:  # the reader was stopped (the model closed meanwhile)
            coro.close()
            inbox.put(RuntimeError("the model was closed while a request was starting"))
            inbox.put(self.CLOSED)

    def _start(self, coro: Coroutine[Any, Any, None]) -> None:
        self._task = self._loop.create_task(coro)
        self._task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:  # the coroutine hands its own over
            log.error("a model request's reader failed", exc_info=task.exception())
        self._inbox.put(self.CLOSED)

    def _cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def next(self) -> Any:
        """The next item of the inbox (:attr:`CLOSED` last)."""
        item = await self._inbox.get()
        if item is self.CLOSED:
            self.closed = True
        return item

    async def close(self, timeout: float = 10.0) -> None:
        """Cancel the task if it still runs and wait (on the caller's loop) until it is over,
        its HTTP response closed. Items still queued are dropped."""
        if self.closed:
            return
        with contextlib.suppress(RuntimeError):  # a stopped reader cancelled its tasks itself
            self._loop.call_soon_threadsafe(self._cancel)
        try:
            async with asyncio.timeout(timeout):
                while await self._inbox.get() is not self.CLOSED:
                    pass
        except TimeoutError:
            log.warning("a model request's reader did not end within %.0f s of its cancel", timeout)
        self.closed = True
