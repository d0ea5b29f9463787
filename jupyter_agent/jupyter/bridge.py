"""The live-notebook bridge, kernel side: a comm to the JupyterLab page (docs/bridge.md).

The page side is ``labextension/src/bridge.ts``; the protocol's names and limits are
defined in ``protocol.py`` and, for the page, in ``labextension/src/protocol.ts``.

* ``%load_ext`` starts a :class:`KernelBridge`: it registers the target with the
  kernel's comm manager (pages that open later, or reload, open a comm to it) and
  opens one comm to the pages already open (they registered the target). Every page
  answers with a hello: its connection's ``clientId`` (the ``session`` of the execute
  requests it sends) and the notebook it shows. A hello of another protocol version is
  answered with a ``version`` refusal (the page tells its user to reload or reinstall)
  and the run says so too.
* :meth:`KernelBridge.request` sends ``{v, id, to, op, ...}`` and waits for the reply
  with that id, on the comm it was sent on (a reply on another comm is dropped). ``to``
  names one page: the one whose ``clientId`` sent the request that started the run;
  other tabs ignore it. A request larger than ``BRIDGE_MAX_MESSAGE_BYTES`` is not sent.
* Replies may arrive on another thread (JupyterLab 4.6 can send comm messages on a
  subshell), so what the comm receives there goes to the loop through
  ``loop.call_soon_threadsafe``; on the loop's own thread it is handled at once. A reply
  that comes after its request gave up (a timeout, a stopped run) is dropped; a malformed
  or unknown message gets an error reply and changes nothing.
* Every failure carries a :class:`~.protocol.BridgeCode`; the message the tools report is
  written here from the code (:func:`failure_message`), never parsed back.
"""

from __future__ import annotations

import asyncio
import functools
import collections
import itertools
import json
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .protocol import BRIDGE_MAX_MESSAGE_BYTES, BRIDGE_TARGET, BRIDGE_VERSION, BridgeCode, version_mismatch

log = logging.getLogger(__name__)

TARGET = BRIDGE_TARGET
#: The key under which a reply's result carries its page's ``changes`` as the kernel
#: counted them when the reply arrived (kernel side only: the page never sends it).
CHANGES_SEEN = "_changes_seen"
#: Requests whose success changed the page's document.
CHANGING_OPS = frozenset({"insert", "replace", "delete", "restore", "run"})
PROTOCOL_VERSION = BRIDGE_VERSION
#: Seconds a request other than "run" may take before the page counts as gone.
REQUEST_TIMEOUT_S = 5.0
#: While a cell runs through the page, how often the page is asked whether it is still there.
PING_INTERVAL_S = 2.0
#: A page that has been slow to answer (a loaded machine, many notebooks busy in one page)
#: is busy, not gone: it gets this many times its slowest recent answer before a request
#: counts as unanswered (at least the request's own timeout, at most MAX_NO_ANSWER_S).
SLOW_PAGE_PATIENCE = 10
MAX_NO_ANSWER_S = 60.0
#: How many of a page's recent answers (cell runs aside) that patience looks at.
RECENT_ANSWERS = 16

NOT_ANSWERING = (
    "The notebook page that started this run stopped answering (it was reloaded or closed, or "
    "its kernel restarted), so nothing more was applied to it. Run the %%agent cell again from "
    "the open notebook.")


class BridgeError(Exception):
    """A request the page refused or could not answer; ``code`` is a
    :class:`~.protocol.BridgeCode` (``stale`` when the document changed since the caller
    read it). The live backend turns it into the notebook errors the tools report.
    (Nothing here imports the notebook package: ``%load_ext`` starts the bridge and must
    stay fast.)"""

    def __init__(self, message: str, code: str = BridgeCode.FAILED) -> None:
        super().__init__(message)
        self.code = code


class PageGone(BridgeError):
    """The page did not answer in time (``no_answer``), said goodbye or its comm closed
    (``gone``)."""

    def __init__(self, message: str = NOT_ANSWERING, code: str = BridgeCode.GONE) -> None:
        super().__init__(message, code)


def failure_message(code: str, detail: str) -> str:
    """What the model is told of a refusal with ``code`` (``detail``: the page's words)."""
    if code == BridgeCode.TOO_LARGE:
        return (f"The notebook page could not answer: the message would be larger than the "
                f"{BRIDGE_MAX_MESSAGE_BYTES // (1024 * 1024)} MiB the bridge carries ({detail}). Ask for "
                "less: smaller cells or edits, or outputs that print less.")
    if code == BridgeCode.SEND_FAILED:
        return f"The notebook page could not send its answer ({detail}). The page is still open; try again."
    if code == BridgeCode.VERSION:
        return detail
    return detail or "the page refused the request"


_page_serials = itertools.count(1)


@dataclass
class Page:
    """One browser page (tab) showing a notebook on this kernel."""

    client_id: str
    comm: Any
    path: str = ""
    server_root: str = ""
    version: str = ""
    app: str = ""
    protocol: Any = PROTOCOL_VERSION
    seen: float = field(default_factory=time.monotonic)
    gone: bool = False
    #: the page sends a ``changed`` notice on the first change of its document after a
    #: reply to a request that asked for it (``notify``)
    notices: bool = False
    #: changes of the page's document this kernel knows of: notices, and the replies of
    #: requests that changed it (each reply carries the count as ``CHANGES_SEEN``)
    changes: int = 0
    #: tells this entry from an earlier one of the same page (a new hello makes a new entry)
    serial: int = field(default_factory=lambda: next(_page_serials))
    #: seconds each recent answer took (cell runs aside: their time is the cell's)
    answer_s: collections.deque[float] = field(default_factory=lambda: collections.deque(maxlen=RECENT_ANSWERS))

    def no_answer_after(self, timeout: float | None) -> float | None:
        """How long a request with ``timeout`` waits for this page before it counts as gone."""
        if timeout is None or not self.answer_s:
            return timeout
        return max(timeout, min(MAX_NO_ANSWER_S, SLOW_PAGE_PATIENCE * max(self.answer_s)))

    @property
    def compatible(self) -> bool:
        return self.protocol == PROTOCOL_VERSION

    def notebook_path(self, kernel_cwd: Path | None = None) -> Path | None:
        """The notebook's absolute path, from the server root the page reports."""
        if not self.path:
            return None
        if self.server_root:
            return (Path(self.server_root).expanduser() / self.path).resolve()
        if kernel_cwd is not None:  # a server started in the notebook's folder or above it
            for base in (kernel_cwd, *kernel_cwd.parents):
                candidate = base / self.path
                if candidate.exists():
                    return candidate.resolve()
        return None


@dataclass
class _Pending:
    future: asyncio.Future
    loop: asyncio.AbstractEventLoop
    client_id: str
    comm: Any  # the comm the request went out on: only its reply settles it
    op: str = ""


class KernelBridge:
    """The kernel's end of the bridge: pages by client id, and requests in flight."""

    def __init__(self) -> None:
        self.pages: dict[str, Page] = {}
        self._pending: dict[str, _Pending] = {}
        self._late: set[str] = set()  # ids of requests that gave up: drop their replies
        self._ids = itertools.count(1)
        self._comms: list[Any] = []  # strong references: a Comm's __del__ closes it
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._hello_waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
        #: the page's own handling time (ms) of recent replies, for benchmarks
        self.page_ms: collections.deque[float] = collections.deque(maxlen=1000)
        #: set to a list to record each answered request as (op, wall time of the answer,
        #: round trip in ms, from the send to the answer in this loop): benchmarks/bench_load.py.
        #: None (the default): nothing is timed.
        self.timings: list[tuple[str, float, float]] | None = None
        self.protocol_errors: list[str] = []  # what malformed messages the pages sent
        self.mismatch_said = False
        self.started = False

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
        for c in list(self._comms):
            try:
                c.close()
            except Exception:  # already closed by the page
                log.debug("could not close a bridge comm", exc_info=True)
        self._comms.clear()
        for client_id in list(self.pages):
            self._forget(client_id, "the extension was unloaded")
        self.started = False

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
        if loop is not None and not loop.is_closed() and not _running_here(loop):
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
            return self._changed(c, str(data.get("from") or ""))
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
            app=str(info.get("app") or ""), protocol=data.get("v"), notices=info.get("notices") is True)
        for loop, event in list(self._hello_waiters):
            loop.call_soon_threadsafe(event.set)

    def _changed(self, c: Any, client_id: str) -> None:
        """The page's document changed after its last reply to a request with ``notify``."""
        page = self.pages.get(client_id)
        if page is not None and page.comm is c:  # only a page's own comm speaks for it
            page.changes += 1

    def _settle(self, c: Any, data: dict[str, Any]) -> None:
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
                if pending.op in CHANGING_OPS:
                    page.changes += 1
                outcome[CHANGES_SEEN] = (page.serial, page.changes)
        else:
            code = str(data.get("code") or BridgeCode.FAILED)
            outcome = BridgeError(failure_message(code, str(data.get("error") or "")), code)
        if _running_here(pending.loop):
            _resolve(pending.future, outcome)
        else:
            pending.loop.call_soon_threadsafe(_resolve, pending.future, outcome)

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
        with self._lock:
            doomed = [rid for rid, p in self._pending.items() if p.client_id == client_id]
            failed = [self._pending.pop(rid) for rid in doomed]
        for p in failed:
            p.loop.call_soon_threadsafe(_resolve, p.future, PageGone(f"{NOT_ANSWERING} ({why})"))
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

    async def _await_reply(self, future: asyncio.Future, request_id: str, client_id: str, op: str,
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
                return outcome
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


def _running_here(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether ``loop`` is the loop running in this thread (then no thread hop is needed)."""
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:  # no loop runs in this thread
        return False


def _resolve(future: asyncio.Future, outcome: Any) -> None:
    if not future.done():
        future.set_result(outcome)


def _json_size(message: dict[str, Any]) -> int:
    """Bytes of ``message`` as JSON (about what the comm sends)."""
    return len(json.dumps(message, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass"))


def mismatch_message(protocol: Any) -> str:
    """What the user and the model are told when the page speaks another bridge version."""
    return (version_mismatch("bridge", protocol, PROTOCOL_VERSION)
            + " Until then the agent edits no open notebook.")


# -- one bridge per kernel -------------------------------------------------------------------

_bridge: KernelBridge | None = None


def get_bridge() -> KernelBridge | None:
    """The kernel's bridge, if ``%load_ext`` started one."""
    return _bridge


def start_bridge(shell: Any) -> KernelBridge | None:
    """Start the bridge when there is a kernel with comms (not in terminal IPython)."""
    global _bridge
    if getattr(shell, "kernel", None) is None:
        return None
    if _bridge is not None and _bridge.started:
        _bridge.open_broadcast()  # %reload_ext: greet pages again
        return _bridge
    bridge = KernelBridge()
    try:
        bridge.start()
    except Exception:  # no comm manager (an unusual kernel): the agent works on files only
        log.warning("the live-notebook bridge did not start", exc_info=True)
        return None
    _bridge = bridge
    return bridge


def stop_bridge() -> None:
    global _bridge
    if _bridge is not None:
        _bridge.close()
    _bridge = None


class ExecutionTracker:
    """Knows whether a cell is executing in this kernel (IPython's pre/post_run_cell): a
    cell run through the page would queue behind it forever (docs/bridge.md, the deadlock)."""

    def __init__(self, shell: Any) -> None:
        self.depth = 0
        self._lock = threading.Lock()
        self.shell = shell
        shell.events.register("pre_run_cell", self._pre)
        shell.events.register("post_run_cell", self._post)

    def _pre(self, *args: Any) -> None:
        with self._lock:
            self.depth += 1

    def _post(self, *args: Any) -> None:
        with self._lock:
            self.depth = max(0, self.depth - 1)

    def busy(self) -> bool:
        return self.depth > 0

    def remove(self) -> None:
        for name, fn in (("pre_run_cell", self._pre), ("post_run_cell", self._post)):
            try:
                self.shell.events.unregister(name, fn)
            except ValueError:
                pass


_trackers: dict[int, ExecutionTracker] = {}


def tracker_for(shell: Any) -> ExecutionTracker | None:
    """The shell's tracker, registered on first use (``%load_ext``)."""
    if shell is None or not hasattr(shell, "events"):
        return None
    key = id(shell)
    if key not in _trackers:
        _trackers[key] = ExecutionTracker(shell)
    return _trackers[key]


def forget_tracker(shell: Any) -> None:
    tracker = _trackers.pop(id(shell), None)
    if tracker is not None:
        tracker.remove()
