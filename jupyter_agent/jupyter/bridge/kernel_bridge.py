"""The live-notebook bridge, kernel side: a comm to the JupyterLab page (docs/bridge.md).

The page side is ``labextension/src/bridge.ts``; the protocol's names and limits are
defined in ``comm_protocol.py`` and, for the page, in ``labextension/src/protocol.ts``.

* ``%load_ext`` starts a :class:`KernelBridge`: it registers the target with the
  kernel's comm manager (pages that open later, or reload, open a comm to it) and
  opens one comm to the pages already open (they registered the target). Every page
  answers with a hello: its connection's ``clientId`` (the ``session`` of the execute
  requests it sends) and the notebook it shows (a :class:`~.bridge_page.Page`). A hello
  of another protocol version is answered with a ``version`` refusal (the page tells its
  user to reload or reinstall) and the run says so too.
* Requests and their replies are ``bridge_requests.py``'s: ``{v, id, to, op, ...}`` to
  one page (``to``: the one whose ``clientId`` sent the request that started the run;
  other tabs ignore it), settled by the reply with that id on the comm it was sent on.
* What a comm receives may arrive on another thread (JupyterLab 4.6 can send comm
  messages on a subshell), so it goes to the loop through ``loop.call_soon_threadsafe``;
  on the loop's own thread it is handled at once. A malformed or unknown message gets an
  error reply and changes nothing.
* Every failure carries a :class:`~.protocol.BridgeCode`; the message the tools report is
  written from the code (``bridge_errors.py``), never parsed back.

One bridge per loaded extension, started and closed by ``kernel_links.py``'s
:class:`~.kernel_links.KernelLinks` (with which cell executes, ``execution_tracker.py``, and
the kernel's client of itself). The names other modules import from here are re-exported.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from typing import Any
from collections.abc import Callable

from .bridge_errors import NOT_ANSWERING, BridgeError, PageGone, failure_message, mismatch_message
from .bridge_page import (
    CHANGES_SEEN, CHANGING_OPS, MAX_NO_ANSWER_S, PROTOCOL_VERSION, RECENT_ANSWERS, SLOW_PAGE_PATIENCE,
    SOURCE_OPS, SOURCES_SEEN, Page)
from .bridge_requests import PING_INTERVAL_S, REQUEST_TIMEOUT_S, BridgeRequests, running_here
from .comm_hubs import close_comms
from .comm_protocol import BRIDGE_TARGET, BridgeCode
from .kernel_types import Comm

__all__ = [
    "CHANGES_SEEN", "CHANGING_OPS", "MAX_NO_ANSWER_S", "NOT_ANSWERING", "PING_INTERVAL_S", "PROTOCOL_VERSION",
    "RECENT_ANSWERS", "REQUEST_TIMEOUT_S", "SLOW_PAGE_PATIENCE", "SOURCES_SEEN", "SOURCE_OPS", "TARGET",
    "BridgeError", "KernelBridge", "Page", "PageGone", "failure_message", "mismatch_message",
]

log = logging.getLogger(__name__)

TARGET = BRIDGE_TARGET


class KernelBridge(BridgeRequests):
    """The kernel's end of the bridge: its comms, the pages by client id (their hellos,
    notices and goodbyes), and requests in flight (:class:`~.bridge_requests.BridgeRequests`)."""

    def __init__(self) -> None:
        super().__init__()
        self._comms: list[Comm] = []  # strong references: a Comm's __del__ closes it
        self._loop: asyncio.AbstractEventLoop | None = None
        self._hello_waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
        self.mismatch_said = False
        self.started = False
        #: called with each page on its hello, on the kernel's loop (``rejoin.py``)
        self.hello_listeners: list[Callable[[Page], None]] = []
        #: the ipykernel instance whose status publishing KernelLinks.start wrapped, if any
        self.kernel: Any = None

    # -- lifetime ------------------------------------------------------------------------
    def start(self) -> None:
        """Register the target and greet the pages that are already open."""
        import comm

        try:
            self._loop = asyncio.get_event_loop()
        except RuntimeError:
            self._loop = None
        manager = comm.get_comm_manager()
        manager.register_target(TARGET, self._on_page_open)
        self.open_broadcast()
        self.started = True

    def open_broadcast(self) -> None:
        """Open a comm to every page whose extension registered the target."""
        import comm

        # Looked up at call time: ipykernel replaces create_comm when it starts.
        broadcast = comm.create_comm(target_name=TARGET, data={"v": PROTOCOL_VERSION, "op": "open"})
        broadcast.on_msg(functools.partial(self._receive, broadcast))
        broadcast.on_close(lambda _msg: self._closed(broadcast))
        self._comms.append(broadcast)

    def close(self) -> None:
        """Close every comm and fail what is waiting (``%unload_ext``)."""
        import comm

        try:
            comm.get_comm_manager().unregister_target(TARGET, self._on_page_open)
        except Exception:  # the kernel's comm manager is going away with it
            log.debug("could not unregister the bridge target", exc_info=True)
        close_comms(self._comms, "bridge")
        for client_id in list(self.pages):
            self._forget(client_id, "the extension was unloaded")
        self.started = False

    def comm_ids(self) -> frozenset[str]:
        """The ids of the bridge's comms (asked on ipykernel's threads: bridge_status.py)."""
        return frozenset(str(getattr(c, "comm_id", "")) for c in list(self._comms))

    def _on_page_open(self, c: Any, msg: dict[str, Any]) -> None:
        """A page opened its own comm (it loaded after %load_ext): its hello is the open data."""
        self._comms.append(c)
        c.on_msg(lambda m, c=c: self._receive(c, m))
        c.on_close(lambda m, c=c: self._closed(c))
        self._receive(c, msg)

    # -- receiving (any thread) ------------------------------------------------------------
    def _receive(self, c: Any, msg: dict[str, Any]) -> None:
        data = (msg.get("content") or {}).get("data")
        loop = self._loop
        if loop is not None and not loop.is_closed() and not running_here(loop):
            loop.call_soon_threadsafe(self._dispatch, c, data)
        else:
            # On the loop's own thread (ipykernel's main shell handler): at once, not after
            # the kernel has finished handling the message (its idle status; ~2-3 ms a reply).
            self._dispatch(c, data)

    def _dispatch(self, c: Any, data: Any) -> None:
        if not isinstance(data, dict):
            return self._refuse(c, None, "bad_request", "a bridge message must be a JSON object")
        if "re" in data:
            return self._settle(c, data)
        op = data.get("op")
        if op == "hello" and isinstance(data.get("result"), dict):
            return self._hello(c, data)
        if op == "bye":
            return self._forget(str(data.get("from") or ""), "the page closed the notebook")
        if op == "changed":
            return self._changed(c, str(data.get("from") or ""), data.get("sources") is not False)
        if op == "open":
            return None  # our own broadcast open, echoed: nothing to answer
        self._refuse(c, data.get("id"), "unknown_op", f"the kernel does not answer {op!r} messages")

    def _refuse(self, c: Any, request_id: Any, code: str, error: str) -> None:
        self.protocol_errors.append(error)
        try:
            c.send({"v": PROTOCOL_VERSION, "re": request_id, "ok": False, "code": code, "error": error})
        except Exception:  # the comm closed: the page is gone, nobody to tell
            log.debug("could not send a refusal to the page", exc_info=True)

    def _hello(self, c: Any, data: dict[str, Any]) -> None:
        client_id = str(data.get("from") or "")
        info = data["result"]
        if not client_id:
            return self._refuse(c, None, "bad_request", "a hello needs the page's client id in 'from'")
        known = self.pages.get(client_id)
        if known is not None and known.comm is not c and known.comm in self._comms:
            # Only a page's own comm speaks for it: another comm's hello does not take its place.
            return self._refuse(c, None, BridgeCode.BAD_REQUEST,
                                f"client {client_id!r} already says hello on another open comm")
        if data.get("v") != PROTOCOL_VERSION:
            # Recorded (the run tells the user) and answered, so the page tells its user too.
            self._refuse(c, None, BridgeCode.VERSION, mismatch_message(data.get("v")))
        self.pages[client_id] = Page(
            client_id=client_id, comm=c, path=str(info.get("path") or ""),
            server_root=str(info.get("server_root") or ""), version=str(info.get("version") or ""),
            app=str(info.get("app") or ""), protocol=data.get("v"), notices=info.get("notices") is True,
            kernel_runs=info.get("kernel_runs") is True, asks=info.get("asks") is True,
            focus=info.get("focus") is True, open=info.get("open") is True,
            moves=info.get("moves") is True)
        for loop, event in list(self._hello_waiters):
            loop.call_soon_threadsafe(event.set)
        for listener in list(self.hello_listeners):
            try:
                listener(self.pages[client_id])
            except Exception:  # a listener's failure must not refuse the page
                log.warning("a hello listener failed", exc_info=True)

    def _changed(self, c: Any, client_id: str, sources: bool = True) -> None:
        """The page's document changed after its last reply to a request with ``notify``
        (``sources``: its cells' ids, types or sources may have)."""
        page = self.pages.get(client_id)
        if page is not None and page.comm is c:  # only a page's own comm speaks for it
            page.count_notice(sources)
            self.tell_change(page)

    def _closed(self, c: Any) -> None:
        for client_id, page in list(self.pages.items()):
            if page.comm is c:
                self._forget(client_id, "the page closed its connection")
        if c in self._comms:
            self._comms.remove(c)

    def _forget(self, client_id: str, why: str) -> None:
        page = self.pages.pop(client_id, None)
        if page is not None:
            page.gone = True
        self._fail_requests_to(client_id, why)
        log.debug("forgot page %s: %s", client_id, why)

    # -- asking ------------------------------------------------------------------------------
    async def wait_for_page(self, client_id: str, timeout: float) -> Page | None:
        """The page with this client id, waiting up to ``timeout`` s for its hello."""
        deadline = time.monotonic() + timeout
        loop = asyncio.get_running_loop()
        event = asyncio.Event()
        entry = (loop, event)
        self._hello_waiters.append(entry)
        try:
            while client_id not in self.pages:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                event.clear()
                try:
                    await asyncio.wait_for(event.wait(), min(remaining, 0.1))
                except TimeoutError:
                    pass
            return self.pages[client_id]
        finally:
            self._hello_waiters.remove(entry)

