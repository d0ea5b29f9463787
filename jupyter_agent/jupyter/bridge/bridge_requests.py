"""The live-notebook bridge's requests in flight, kernel side (docs/bridge.md).

:meth:`BridgeRequests.request` sends ``{v, id, to, op, ...}`` to one page and waits for
the reply with that id, on the comm it was sent on (a reply on another comm is dropped).
A request larger than ``BRIDGE_MAX_MESSAGE_BYTES`` is not sent. A waiting request wakes
every 0.1 s (a Stop is only noticed then) and, during a cell run, pings the page every
2 s; a page that does not answer in time counts as gone (:class:`~.bridge_errors.PageGone`).
A reply settles its request on the request's own loop (replies may arrive on another
thread); a reply that comes after its request gave up is dropped.

:class:`~.bridge.KernelBridge` builds on this: it keeps the comms and the pages, and hands
each reply it receives to :meth:`BridgeRequests._settle`.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import threading
import time
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .bridge_errors import NOT_ANSWERING, BridgeError, PageGone, failure_message, mismatch_message
from .bridge_page import CHANGING_OPS, PROTOCOL_VERSION, Page
from .comm_protocol import BRIDGE_MAX_MESSAGE_BYTES, BridgeCode
from .kernel_types import Comm

log = logging.getLogger(__name__)

#: Seconds a request other than "run" may take before the page counts as gone.
REQUEST_TIMEOUT_S = 5.0
#: While a cell runs through the page, how often the page is asked whether it is still there.
PING_INTERVAL_S = 2.0


@dataclass
class _Pending:
    future: asyncio.Future[Any]
    loop: asyncio.AbstractEventLoop
    client_id: str
    comm: Comm  # the comm the request went out on: only its reply settles it
    op: str = ""


class BridgeRequests:
    """Requests in flight to the pages, by id, and the pages they go to by client id."""

    def __init__(self) -> None:
        self.pages: dict[str, Page] = {}
        self._pending: dict[str, _Pending] = {}
        self._late: set[str] = set()  # ids of requests that gave up: drop their replies
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        #: the page's own handling time (ms) of recent replies, for benchmarks
        self.page_ms: collections.deque[float] = collections.deque(maxlen=1000)
        #: set to a list to record each answered request as (op, wall time of the answer,
        #: round trip in ms, from the send to the answer in this loop): benchmarks/bench_load.py.
        #: None (the default): nothing is timed.
        self.timings: list[tuple[str, float, float]] | None = None
        self.protocol_errors: list[str] = []  # what malformed messages the pages sent
        #: called with a page on the kernel's loop each time its document is known to have
        #: changed (its ``changed`` notice, or the reply of a request that changed it): an
        #: outside agent's resource subscriptions (``outside_watch.py``)
        self.change_listeners: list[Callable[[Page], None]] = []

    async def request(self, client_id: str, op: str, *, timeout: float | None = REQUEST_TIMEOUT_S,
                      abort: asyncio.Event | None = None, **arguments: Any) -> dict[str, Any]:
        """Send one request to one page and return its result (raises on a refusal).

        ``timeout=None`` waits as long as the page keeps answering pings (a cell run).
        """
        if {"v", "id", "to", "op"} & arguments.keys():
            raise ValueError(f"request arguments may not use the envelope's names: {sorted(arguments)}")
        page = self.pages.get(client_id)
        if page is None or page.gone:
            raise PageGone()
        if not page.compatible:
            raise BridgeError(mismatch_message(page.protocol), "version")
        loop = asyncio.get_running_loop()
        request_id = f"k{next(self._ids)}"
        message = {"v": PROTOCOL_VERSION, "id": request_id, "to": client_id, "op": op, **arguments}
        size = _json_size(message)
        if size > BRIDGE_MAX_MESSAGE_BYTES:
            # a larger message would close the page's kernel connection (docs/bridge.md)
            raise BridgeError(failure_message(BridgeCode.TOO_LARGE, f"this {op!r} request has {size:,} bytes"),
                              BridgeCode.TOO_LARGE)
        future = loop.create_future()
        with self._lock:
            self._pending[request_id] = _Pending(future, loop, client_id, page.comm, op)
        sent = time.perf_counter()
        try:
            page.comm.send(message)
        except Exception as exc:
            self._give_up(request_id)
            raise PageGone(f"{NOT_ANSWERING} ({exc})") from None
        try:
            result = await self._await_reply(future, request_id, client_id, op, page.no_answer_after(timeout), abort)
        finally:
            self._give_up(request_id)
        took = time.perf_counter() - sent
        if op != "run":
            page.answer_s.append(took)
        if self.timings is not None:
            self.timings.append((op, time.time(), took * 1000))
        return result

    async def _await_reply(self, future: asyncio.Future[Any], request_id: str, client_id: str, op: str,
                           timeout: float | None, abort: asyncio.Event | None) -> dict[str, Any]:
        started = time.monotonic()
        next_ping = started + PING_INTERVAL_S
        while True:
            # Wake up often: a Stop (the abort flag) is only noticed then (docs/bridge.md).
            done, _ = await asyncio.wait({future}, timeout=0.1)
            if done:
                outcome = future.result()
                if isinstance(outcome, BaseException):
                    raise outcome
                reply: dict[str, Any] = outcome
                return reply
            if abort is not None and abort.is_set():
                raise asyncio.CancelledError()
            now = time.monotonic()
            if timeout is not None and now - started > timeout:
                raise PageGone(f"{NOT_ANSWERING} (no answer to {op!r} within {timeout:.0f} s)",
                               BridgeCode.NO_ANSWER)
            if timeout is None and now >= next_ping:
                # A long run: make sure the page is still there (a reload orphans the comm).
                await self.request(client_id, "version", timeout=REQUEST_TIMEOUT_S)
                next_ping = time.monotonic() + PING_INTERVAL_S

    def _give_up(self, request_id: str) -> None:
        with self._lock:
            if self._pending.pop(request_id, None) is not None:
                self._late.add(request_id)

    def _settle(self, c: Any, data: dict[str, Any]) -> None:
        """Settle the request a reply (``data``, with ``re``) answers, if it came on ``c``,
        the comm the request went out on."""
        request_id = str(data.get("re"))
        with self._lock:
            pending = self._pending.get(request_id)
            foreign = pending is not None and pending.comm is not c
            if not foreign:
                self._pending.pop(request_id, None)
        if foreign:  # a reply on another comm than the request's: not from the page asked
            self.protocol_errors.append(f"a reply to {request_id} came on another comm")
            return
        if isinstance(data.get("ms"), (int, float)):
            self.page_ms.append(float(data["ms"]))
        if pending is None:
            self._late.discard(request_id)  # late (the request gave up) or not ours: drop it
            return
        if data.get("ok") is True and isinstance(data.get("result"), dict):
            outcome: Any = data["result"]
            page = self.pages.get(pending.client_id)
            if page is not None and page.notices:
                # Counted here, in the order the page's messages came: a notice sent after
                # this reply is counted after it, whenever the caller wakes up.
                page.count_reply(pending.op, outcome)
                if pending.op in CHANGING_OPS:
                    self.tell_change(page)
        else:
            code = str(data.get("code") or BridgeCode.FAILED)
            outcome = BridgeError(failure_message(code, str(data.get("error") or "")), code)
        if running_here(pending.loop):
            _resolve(pending.future, outcome)
        else:
            pending.loop.call_soon_threadsafe(_resolve, pending.future, outcome)

    def tell_change(self, page: Page) -> None:
        """Tell :attr:`change_listeners` that ``page``'s document changed."""
        for listener in list(self.change_listeners):
            try:
                listener(page)
            except Exception:  # a listener's failure must not lose the page's message
                log.warning("a change listener failed", exc_info=True)

    def _fail_requests_to(self, client_id: str, why: str) -> None:
        """Fail every request waiting for this page's answer (it went away: ``why``)."""
        with self._lock:
            doomed = [rid for rid, p in self._pending.items() if p.client_id == client_id]
            failed = [self._pending.pop(rid) for rid in doomed]
        for p in failed:
            p.loop.call_soon_threadsafe(_resolve, p.future, PageGone(f"{NOT_ANSWERING} ({why})"))


def running_here(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether ``loop`` is the loop running in this thread (then no thread hop is needed)."""
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:  # no loop runs in this thread
        return False


def _resolve(future: asyncio.Future[Any], outcome: Any) -> None:
    if not future.done():
        future.set_result(outcome)


def _json_size(message: dict[str, Any]) -> int:
    """Bytes of ``message`` as JSON (about what the comm sends)."""
    return len(json.dumps(message, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass"))
