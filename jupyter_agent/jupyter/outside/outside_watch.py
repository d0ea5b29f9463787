"""An outside agent's resource subscription, kernel side: the server's ``watch`` call on one
notebook, kept open, telling the server which cells changed (docs/mcp-server.md, "Resources").

The server opens the usual outside-call comm with ``op: "watch"`` (``mcp_server/watch.py``)
and keeps it open while a client subscribes to the notebook or one of its cells. This
module answers once, ``{"v", "ok": true, "content": []}`` (or ``ok`` false with why: no page
shows the notebook), then sends ``{"v", "changed": [cell ids]}`` each time the notebook as
the page shows it settled after a change: the cells whose type, source, outputs or execution
count differ from the last time it said (a deleted cell and a new one are named too); an
empty list when only the cells' order changed (a move).

What tells of a change is the live-notebook bridge (docs/bridge.md): the page's ``changed``
notices (a person typing, running or deleting a cell; an ``%%agent`` transcript; outputs)
and the replies of this kernel's own changing requests (an outside client's edit, the
user's ``%%agent`` run): ``KernelBridge.change_listeners``. The page sends one notice per
request that asks for it (``notify``), so while changes go on this watch asks again with a
``version`` request each time it hears of one, and says nothing until the notebook has been
quiet for :data:`QUIET_S` (one message per pause in typing, not per key), or at most every
:data:`MOST_S` while changes never stop (a cell that prints all the time). The server turns
the message into MCP notifications for the subscribed sessions. The comm's close (the
server's: the last subscription went) ends the watch.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ...mcp_server.protocol import VERSION
from ..bridge.kernel_types import Comm

if TYPE_CHECKING:
    from ...notebook.session import PageNotebook
    from ..bridge.kernel_bridge import Page
    from ..bridge.kernel_links import KernelLinks

log = logging.getLogger(__name__)

#: Seconds without a change after which the notebook counts as settled (a pause in typing).
QUIET_S = 0.4
#: Seconds at most between a change and its message while changes never stop.
MOST_S = 5.0


def cell_marks(snapshot: Any) -> dict[str, str]:
    """Each cell's id -> a hash of what a reader of it sees: type, source, outputs, count."""
    marks: dict[str, str] = {}
    for cell in snapshot.cells:
        seen = json.dumps([cell.cell_type, cell.source, cell.execution_count, list(cell.outputs)], sort_keys=True,
                          default=str)
        marks[cell.id] = hashlib.sha1(seen.encode("utf-8", "surrogatepass")).hexdigest()
    return marks


class WatchHub(Protocol):
    """What a watch reads of the outside agents' hub (``outside_hub.py``'s ``OutsideHub``, which
    imports this module: typed by what it offers, not by its class)."""

    @property
    def links(self) -> KernelLinks:
        """The bridge, tracker and self-client of the loaded extension."""

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The kernel's event loop."""

    def page_for(self, path: str) -> tuple[Page, PageNotebook]:
        """The page that shows notebook ``path``, and where the tools find it (refused: none)."""


class NotebookWatch:
    """One server's watch on one notebook (``path``, server-relative), on comm ``comm``."""

    def __init__(self, hub: WatchHub, comm: Comm, path: str) -> None:
        self.hub, self.comm, self.path = hub, comm, path
        self.links: KernelLinks = hub.links  # the bridge its pages answer on
        self.loop = hub.loop
        self.closed = asyncio.Event()
        self._wake = asyncio.Event()
        self._first: float | None = None
        self._last = 0.0
        self._page_id: str | None = None
        self._document: Any = None
        self._marks: dict[str, str] = {}

    # -- the bridge's listeners (the kernel's loop; a thread hop when not) ---------------------
    def heard(self, page: Any) -> None:
        """A page's document changed (``KernelBridge.change_listeners``), or a page said hello
        (a reload: its notebook may differ from the last one's)."""
        if _norm(getattr(page, "path", "") or "") != _norm(self.path):
            return
        try:
            self.loop.call_soon_threadsafe(self._mark)
        except RuntimeError:  # the kernel's loop is closed: it is going down
            log.debug("a change after the kernel's loop closed")

    def _mark(self) -> None:
        now = time.monotonic()
        self._last = now
        if self._first is None:
            self._first = now
        self._wake.set()

    # -- the loop -----------------------------------------------------------------------------
    async def run(self) -> None:
        """Answer the watch, then tell of each settled change until the comm closes."""
        bridge = self.links.bridge
        try:
            self._marks = cell_marks(await self._snapshot())
        except Exception as exc:  # (the hub's refusals: no page shows it; said to the server)
            self._send({"v": VERSION, "ok": False, "error": str(exc)})
            self._close_comm()
            return
        assert bridge is not None  # (_snapshot found a page on it)
        bridge.change_listeners.append(self.heard)
        bridge.hello_listeners.append(self.heard)
        self._send({"v": VERSION, "ok": True, "content": []})
        try:
            while not self.closed.is_set():
                await _first_of(self._wake.wait(), self.closed.wait())
                if self.closed.is_set():
                    break
                await self._settle()
                await self._tell()
        finally:
            _discard(bridge.change_listeners, self.heard)
            _discard(bridge.hello_listeners, self.heard)

    async def _settle(self) -> None:
        """Wait until the notebook has been quiet for QUIET_S (at most MOST_S since the first
        change), asking the page each time to tell of its next change."""
        while not self.closed.is_set():
            self._wake.clear()
            await self._ask_again()
            first = self._first if self._first is not None else time.monotonic()
            remaining = min(self._last + QUIET_S, first + MOST_S) - time.monotonic()
            if remaining <= 0:
                break
            try:
                await asyncio.wait_for(_first_of(self._wake.wait(), self.closed.wait()), remaining)
            except TimeoutError:
                break
        self._first = None

    async def _ask_again(self) -> None:
        """A ``version`` request with ``notify``: the page tells of its next change (one notice
        per request that asks)."""
        bridge = self.links.bridge
        if bridge is None or self._page_id is None or self._page_id not in bridge.pages:
            return
        try:
            await bridge.request(self._page_id, "version", notify=True)
        except Exception:  # (the page went: its successor's hello wakes this watch again)
            log.debug("the page did not answer a watch's version request", exc_info=True)

    async def _tell(self) -> None:
        try:
            marks = cell_marks(await self._snapshot())
        except Exception as exc:  # the page is gone (closed, reloading): the notebook as a whole changed
            log.debug("a watched notebook could not be read: %s", exc)
            marks = {}
        changed = sorted(k for k in marks.keys() | self._marks.keys() if marks.get(k) != self._marks.get(k))
        moved = list(marks) != list(self._marks)  # (a move changes no cell: the notebook's order)
        self._marks = marks
        if changed or moved:
            self._send({"v": VERSION, "changed": changed})

    async def _snapshot(self) -> Any:
        """The notebook as the page showing it has it now (a LiveNotebook of this watch's own,
        made again when another page, or a reload, shows it)."""
        from ..bridge.live_notebook import live_notebook

        page, where = self.hub.page_for(self.path)
        if self._document is None or page.client_id != self._page_id:
            self._document = live_notebook(self.links, page.client_id, where)
            self._page_id = page.client_id
        return await self._document.snapshot()

    def _send(self, data: dict[str, Any]) -> None:
        try:
            self.comm.send(data)
        except Exception:  # the server went away: its comm's close ends this watch
            log.debug("could not send a watch's message", exc_info=True)

    def _close_comm(self) -> None:
        try:
            self.comm.close()
        except Exception:  # already closed
            log.debug("could not close a watch's comm", exc_info=True)

    def stop(self) -> None:
        """The server closed the comm (any thread)."""
        try:
            self.loop.call_soon_threadsafe(self.closed.set)
        except RuntimeError:  # the kernel's loop is closed
            log.debug("a watch stopped after the kernel's loop closed")


async def watch_notebook(hub: WatchHub, comm: Comm, data: dict[str, Any]) -> None:
    """Serve a ``watch`` call (``OutsideHub._serve``): until the server closes ``comm``."""
    watch = NotebookWatch(hub, comm, str(data.get("path") or ""))
    comm.on_close(lambda _msg: watch.stop())
    try:
        await watch.run()
    except Exception:  # a bug here: the server hears the watch ended (its next read watches again)
        log.warning("a resource watch failed", exc_info=True)
        watch._close_comm()


async def _first_of(*waits: Any) -> None:
    """Wait until the first of ``waits`` (coroutines) is done; cancel the others."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()


def _discard(listeners: list[Any], listener: Any) -> None:
    if listener in listeners:
        listeners.remove(listener)


def _norm(path: str) -> str:
    return Path("/" + path.replace("\\", "/").lstrip("/")).as_posix()
