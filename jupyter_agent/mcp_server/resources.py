"""Resources: the notebooks open in the server and their cells, to read and to subscribe to
(docs/mcp-server.md, "Resources").

A notebook is ``notebook://PATH`` (its server-relative path, percent-encoded but for its
slashes), one of its cells ``notebook://PATH#cell=ID``. ``resources/list`` gives the open
notebooks (the cells are reached by the template, or by the ids a read gives). A read is the
kernel's ``read`` call, as ``read_cells`` makes it (the page's live notebook, sources cut to
head and tail, outputs by reference, every text redacted), and counts as a read for the
stale check as ``read_cells`` does: the client may edit after it.

Subscriptions reach a client two ways. On a session (the ``initialize`` handshake, and
``jupyter agent mcp``'s one), ``resources/subscribe`` and ``resources/unsubscribe``: the
session gets ``notifications/resources/updated`` for the URI it named. On the sessionless
2026-07-28 protocol, ``subscriptions/listen`` (the SDK's ``ListenHandler``): the stream it
opens carries the same notifications for the URIs it lists, while it stays open. Either way
the URIs are *held* (:class:`Subscriptions`): over HTTP a held notebook is watched through
its kernel (``watch.py``), over stdio each URI is subscribed to on the endpoint, and what
comes back is published to the holders.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote, unquote

from ..redact import redact
from .tools import MAX_LIMIT, OutsideError, caller_of

log = logging.getLogger(__name__)

SCHEME = "notebook://"
NOTEBOOK_TEMPLATE = "notebook://{+path}"
CELL_TEMPLATE = "notebook://{+path}#cell={cell_id}"
#: Characters of each cell's source a notebook's read keeps (head and tail), and a cell's.
NOTEBOOK_CHARS, CELL_CHARS = 4_000, 100_000
#: JSON-RPC error code of a resource that cannot be read (the specification's "not found").
NOT_FOUND = -32002


def notebook_uri(path: str) -> str:
    """The resource URI of notebook ``path`` (server-relative)."""
    return SCHEME + quote(path.replace("\\", "/").lstrip("/"), safe="/")


def cell_uri(path: str, cell_id: str) -> str:
    """The resource URI of cell ``cell_id`` of notebook ``path``."""
    return f"{notebook_uri(path)}#cell={quote(cell_id, safe='')}"


def parse_uri(uri: str) -> tuple[str, str | None]:
    """(notebook path, cell id or None) of one of our URIs; raises OutsideError for another."""
    if not isinstance(uri, str) or not uri.startswith(SCHEME) or len(uri) > 8192:
        raise OutsideError(f"{redact(str(uri)[:120])!r} is not a resource of this server: its resources are "
                           "notebook://PATH and notebook://PATH#cell=ID (resources/list gives them).")
    rest, _, fragment = uri[len(SCHEME):].partition("#")
    path = unquote(rest).lstrip("/")
    cell = None
    if fragment:
        if not fragment.startswith("cell=") or not fragment[5:]:
            raise OutsideError(f"{redact(uri[:120])!r}: a cell is named as #cell=ID.")
        cell = unquote(fragment[5:])
    if not path or any(ord(c) < 32 for c in path + (cell or "")):
        raise OutsideError(f"{redact(uri[:120])!r} names no notebook.")
    return path, cell


class Subscriptions:
    """Who holds which URI: the sessions that subscribed (``resources/subscribe``) and the open
    listen streams. ``hold(uri)`` / ``release(uri)`` are called as the first holder of a URI
    comes and the last goes (what keeps it watched); :meth:`publish` tells its holders."""

    def __init__(self, hold: Callable[[str], Awaitable[None]], release: Callable[[str], None]) -> None:
        from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler

        self.hold, self.release = hold, release
        self.bus = InMemorySubscriptionBus()
        self._listen = ListenHandler(self.bus)
        #: uri -> the connections subscribed to it (each once), with their MCP session ids
        self.sessions: dict[str, list[tuple[Any, str]]] = {}
        #: ``alive(session id)``: whether that MCP session is still open (sending to one that
        #: ended is silently dropped by the SDK, so an ended session is found this way)
        self.alive: Callable[[str], bool] = lambda _: True
        #: the connections that listed the resources (told when the list changes), by identity
        self.listers: dict[int, tuple[Any, str]] = {}
        #: uri -> how many holders it has (sessions and listen streams)
        self.holders: dict[str, int] = {}
        #: the sessions whose stream is gone (their client may open it again): their
        #: subscriptions are kept, holding nothing, until it does (:meth:`stream_gone`)
        self.asleep: set[str] = set()
        #: (uri, session id) of the subscriptions that hold their URI now
        self._holding: set[tuple[str, str]] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def _take(self, uri: str) -> None:
        self.holders[uri] = self.holders.get(uri, 0) + 1
        if self.holders[uri] == 1:
            try:
                await self.hold(uri)
            except BaseException:
                self._drop(uri)
                raise

    def _drop(self, uri: str) -> None:
        left = self.holders.get(uri, 0) - 1
        if left > 0:
            self.holders[uri] = left
            return
        self.holders.pop(uri, None)
        self.release(uri)

    async def subscribe(self, session: Any, uri: str, session_id: str = "") -> None:
        parse_uri(uri)
        subscribed = self.sessions.setdefault(uri, [])
        if any(s is session for s, _ in subscribed):
            return
        if session_id not in self.asleep:  # (asleep: held once its stream is back)
            await self._take(uri)
            self._holding.add((uri, session_id))
        subscribed.append((session, session_id))

    def unsubscribe(self, session: Any, uri: str) -> None:
        subscribed = self.sessions.get(uri, [])
        for _, session_id in [(s, i) for s, i in subscribed if s is session]:
            self.sessions[uri] = [(s, i) for s, i in subscribed if s is not session]
            if not self.sessions[uri]:
                del self.sessions[uri]
            if (uri, session_id) in self._holding:
                self._holding.discard((uri, session_id))
                self._drop(uri)

    def forget_ended(self) -> None:
        """Drop the subscriptions of the sessions that ended (closed by their client, or timed out)."""
        for key, (_, session_id) in list(self.listers.items()):
            if not self.alive(session_id):
                self.listers.pop(key, None)
        for uri, subscribed in list(self.sessions.items()):
            for session, session_id in subscribed:
                if not self.alive(session_id):
                    log.debug("dropping a subscription of ended session %s", session_id[:16])
                    self.unsubscribe(session, uri)
        self.asleep = {s for s in self.asleep if self.alive(s)}

    def stream_gone(self, session_id: str) -> None:
        """Session ``session_id``'s stream closed under it while the session goes on (HTTP: its
        GET stream; a killed client's closes with its connection): nothing can be told to it
        now, so its subscriptions hold nothing (no watch is kept for it) until it opens a stream
        again (:meth:`stream_back`), as a client that reconnects may; they go with the session."""
        self.asleep.add(session_id)
        for uri, subscribed in list(self.sessions.items()):
            if (uri, session_id) in self._holding and any(i == session_id for _, i in subscribed):
                self._holding.discard((uri, session_id))
                self._drop(uri)

    async def stream_back(self, session_id: str) -> None:
        """Session ``session_id`` opened a stream again: its subscriptions hold their URIs again,
        and it is told that each may have changed meanwhile (what changed then was told to no
        one). One that cannot be held now (its notebook closed) is told too: its read says why."""
        if session_id not in self.asleep:
            return
        self.asleep.discard(session_id)
        for uri, subscribed in list(self.sessions.items()):
            for session in [s for s, i in subscribed if i == session_id]:
                try:
                    await self._take(uri)
                except Exception:  # (an OutsideError: the notebook is closed, or its kernel gone)
                    log.debug("a subscription cannot be held again now", exc_info=True)
                else:
                    if session_id in self.asleep:  # (its stream went again meanwhile)
                        self._drop(uri)
                        continue
                    self._holding.add((uri, session_id))
                try:
                    await session.send_resource_updated(uri)
                except Exception:  # the session ended meanwhile: nothing to tell
                    log.debug("a woken session is gone", exc_info=True)

    async def listen(self, ctx: Any, params: Any) -> Any:
        """``subscriptions/listen`` (2026-07-28): the stream's URIs of ours are held while it is open."""
        uris = [u for u in (params.notifications.resource_subscriptions or []) if isinstance(u, str)]
        ours = []
        for uri in dict.fromkeys(uris):
            try:
                parse_uri(uri)
                await self._take(uri)
            except OutsideError:  # not ours, or not watchable now: honored by the SDK, never told
                log.debug("a listen stream's %s is not watched", redact(uri[:200]), exc_info=True)
                continue
            except Exception:  # a notebook that cannot be watched now: the stream still opens
                log.info("a listen stream's %s cannot be watched now", uri, exc_info=True)
                continue
            ours.append(uri)
        try:
            return await self._listen(ctx, params)
        finally:
            for uri in ours:
                self._drop(uri)

    def publish(self, uris: list[str]) -> None:
        """Tell the holders of each of ``uris`` that it changed (from the server's loop)."""
        self.publish_later(self._publish(uris))

    def publish_later(self, work: Awaitable[Any]) -> asyncio.Task[None]:
        """Run ``work`` in a task of the loop's (kept until it ends; its failure logged)."""

        async def run() -> None:
            try:
                await work
            except Exception:  # (a notification that cannot go: its client went away)
                log.debug("a subscription's work failed", exc_info=True)

        task = asyncio.get_event_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def listed(self, session: Any, session_id: str) -> None:
        """``session`` listed the resources: it is told when the list changes (until it ends)."""
        self.listers[id(session)] = (session, session_id)

    def list_changed(self) -> None:
        """The open notebooks changed (one opened, closed or renamed): tell the listen streams that
        asked and the sessions that listed them."""
        self.publish_later(self._list_changed())

    async def _list_changed(self) -> None:
        from mcp.server.subscriptions import ResourcesListChanged

        await self.bus.publish(ResourcesListChanged())
        for key, (session, session_id) in list(self.listers.items()):
            if not self.alive(session_id):
                self.listers.pop(key, None)
                continue
            try:
                await session.send_resource_list_changed()
            except Exception:  # the session ended
                log.debug("a session that listed the resources is gone", exc_info=True)
                self.listers.pop(key, None)

    async def _publish(self, uris: list[str]) -> None:
        from mcp.server.subscriptions import ResourceUpdated

        self.forget_ended()
        for uri in uris:
            await self.bus.publish(ResourceUpdated(uri=uri))
            for session, _ in list(self.sessions.get(uri, ())):
                try:
                    await session.send_resource_updated(uri)
                except Exception:  # the session ended: its subscriptions go with it
                    log.debug("a subscribed session is gone", exc_info=True)
                    self.unsubscribe(session, uri)


class NotebookWatches:
    """Over HTTP: the notebooks held, each watched through its kernel while held."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.subscriptions = Subscriptions(self.hold, self.release)
        #: path -> the URIs held in it (the notebook's, its cells')
        self.held: dict[str, set[str]] = {}
        #: path -> how to close its watch (none while it has no watch: not yet, or it ended)
        self.closers: dict[str, Callable[[], None]] = {}
        #: path -> held while its watch opens (two subscriptions at once open one watch)
        self._opening: dict[str, asyncio.Lock] = {}

    async def hold(self, uri: str) -> None:
        path = self._key(uri)
        self.held.setdefault(path, set()).add(uri)
        try:
            await self.ensure(path)
        except BaseException:
            self.release(uri)
            raise

    def release(self, uri: str) -> None:
        path = self._key(uri)
        held = self.held.get(path, set())
        held.discard(uri)
        if not held:
            self.held.pop(path, None)
            close = self.closers.pop(path, None)
            if close is not None:
                close()

    async def ensure(self, path: str) -> None:
        """Watch ``path`` if it is held and not watched (again, after its kernel restarted)."""
        lock = self._opening.setdefault(path, asyncio.Lock())
        async with lock:
            await self._open(path)
        if not lock.locked() and self._opening.get(path) is lock:
            del self._opening[path]

    async def _open(self, path: str) -> None:
        if path not in self.held or path in self.closers:
            return
        from .watch import open_watch

        shown = parse_uri(next(iter(self.held[path])))[0]

        def changed(cells: list[str] | None) -> None:
            if cells is None:  # the watch ended (kernel restarted, or it closed it): the next read opens one
                self.closers.pop(path, None)
            uris = [notebook_uri(shown)] + [cell_uri(shown, c) for c in cells or ()]
            self.subscriptions.publish(uris)

        self.closers[path] = await open_watch(self.backend, shown, changed)
        if path not in self.held:  # (released while it opened)
            self.closers.pop(path, lambda: None)()

    @staticmethod
    def _key(uri: str) -> str:
        return _norm(parse_uri(uri)[0])

    def close(self) -> None:
        for close in list(self.closers.values()):
            close()
        self.closers.clear()


def _norm(path: str) -> str:
    import posixpath

    return posixpath.normpath("/" + path.replace("\\", "/").lstrip("/"))


def subscriber(ctx: Any) -> Any:
    """Who subscribes: the request's MCP connection (the SDK makes a ``ServerSession`` per
    request, over the connection that lasts), which sends ``notifications/resources/updated``
    on its own stream (HTTP: the session's GET stream; stdio: the pipe)."""
    session = ctx.session
    connection = getattr(session, "_connection", None)  # (the SDK has no public name for it)
    return connection if callable(getattr(connection, "send_resource_updated", None)) else session


def resource_error(exc: OutsideError) -> Exception:
    """The MCP error a resource request answers with (not found), its text redacted."""
    from mcp.shared.exceptions import MCPError

    return MCPError(NOT_FOUND, redact(str(exc)))


def resource_handlers(backend: Any, watches: NotebookWatches | None = None) -> dict[str, Any]:
    """The lowlevel ``Server``'s resource handlers over ``backend`` (``tools.NotebookBackend``),
    subscriptions through ``watches``."""
    from mcp_types import (EmptyResult, ListResourcesResult, ListResourceTemplatesResult, ReadResourceResult,
                           Resource, ResourceTemplate, TextResourceContents)

    watches = watches or NotebookWatches(backend)
    subscriptions = watches.subscriptions

    async def list_resources(ctx: Any, params: Any) -> Any:
        subscriptions.listed(subscriber(ctx), caller_of(ctx).connection)
        notebooks = await backend.notebooks()
        return ListResourcesResult(resources=[Resource(
            uri=notebook_uri(n["path"]), name=redact(str(n["path"])), title=redact(str(n["path"])),
            mime_type="text/plain", description=(
                "The notebook as the user's page shows it: each cell's id, type and source, outputs by reference "
                f"(kernel {redact(str(n.get('kernel_state') or 'unknown'))}). Reading it counts as read_cells."))
            for n in notebooks])

    async def list_templates(ctx: Any, params: Any) -> Any:
        return ListResourceTemplatesResult(resource_templates=[
            ResourceTemplate(uri_template=CELL_TEMPLATE, name="cell", title="A notebook's cell", mime_type="text/plain",
                             description="One cell of an open notebook by its id (as a notebook's read shows it): its "
                                         "type, source (up to 100,000 characters) and outputs by reference."),
            ResourceTemplate(uri_template=NOTEBOOK_TEMPLATE, name="notebook", title="An open notebook",
                             mime_type="text/plain", description="An open notebook by its server-relative path.")])

    async def read_resource(ctx: Any, params: Any) -> Any:
        try:
            path, cell = parse_uri(params.uri)
            args: dict[str, Any] = {"start": 0, "limit": MAX_LIMIT, "max_chars": NOTEBOOK_CHARS}
            if cell is not None:
                args = {"cell_id": cell, "max_chars": CELL_CHARS}
            reply = await backend.call(path, "read", args, caller_of(ctx))
        except OutsideError as exc:
            raise resource_error(exc) from None
        if not reply.get("ok"):
            raise resource_error(OutsideError(str(reply.get("error") or "The resource could not be read.")))
        try:
            await watches.ensure(_norm(path))  # (a subscribed notebook whose kernel restarted: watched again)
        except OutsideError:
            log.debug("a subscribed notebook cannot be watched now", exc_info=True)
        text = "\n".join(str(b.get("text") or "") for b in reply.get("content") or [] if b.get("type") == "text")
        return ReadResourceResult(contents=[TextResourceContents(uri=params.uri, mime_type="text/plain",
                                                                 text=redact(text))])

    async def subscribe(ctx: Any, params: Any) -> Any:
        try:
            await subscriptions.subscribe(subscriber(ctx), params.uri, caller_of(ctx).connection)
        except OutsideError as exc:
            raise resource_error(exc) from None
        return EmptyResult()

    async def unsubscribe(ctx: Any, params: Any) -> Any:
        subscriptions.unsubscribe(subscriber(ctx), params.uri)
        return EmptyResult()

    return {"on_list_resources": list_resources, "on_list_resource_templates": list_templates,
            "on_read_resource": read_resource, "on_subscribe_resource": subscribe,
            "on_unsubscribe_resource": unsubscribe, "on_subscriptions_listen": subscriptions.listen}


def follow_sessions(serverapp: Any, changed: Callable[[], None]) -> bool:
    """Call ``changed()`` each time jupyter_server's session manager has made, changed (a rename,
    another kernel) or deleted a session: the open notebooks, which ``resources/list`` gives.
    Its methods are wrapped on the instance (it has no event of its own for them); False when
    it does not have them as coroutines (another session manager: no list_changed then)."""
    manager = getattr(serverapp, "session_manager", None)
    methods = {name: getattr(manager, name, None) for name in ("create_session", "update_session", "delete_session")}
    if not all(inspect.iscoroutinefunction(m) for m in methods.values()):
        return False
    for name, method in methods.items():
        setattr(manager, name, _then(method, changed))
    return True


def _then(method: Any, changed: Callable[[], None]) -> Any:
    @functools.wraps(method)
    async def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return await method(*args, **kwargs)
        finally:
            changed()

    return wrapped


def with_list_changed(server: Any) -> Any:
    """``server`` (the SDK's lowlevel ``Server``) saying ``resources.listChanged: true`` in its
    ``initialize`` answer (it takes that from options its transports do not pass)."""
    from mcp.server.lowlevel.server import NotificationOptions

    server.create_initialization_options = functools.partial(
        server.create_initialization_options, NotificationOptions(resources_changed=True))
    return server


def list_changed_note(message: Any) -> bool:
    """Whether a client received ``notifications/resources/list_changed``."""
    from mcp_types import ResourceListChangedNotification

    return isinstance(getattr(message, "root", message), ResourceListChangedNotification)


def updated_uri(message: Any) -> str | None:
    """The URI of a ``notifications/resources/updated`` a client received, else None."""
    from mcp_types import ResourceUpdatedNotification

    message = getattr(message, "root", message)
    return str(message.params.uri) if isinstance(message, ResourceUpdatedNotification) else None
