"""``jupyter agent mcp``: jupyter-agent's MCP server over stdio, for clients that start their
servers as programs. It forwards every call to the streamable-HTTP endpoint of a running
Jupyter server (``--url`` and ``--token``, else the running servers' runtime files, only the
user's own in a runtime folder only the user can write to: the one whose root holds the
working folder, else the only one; the token it sends: ``--token``,
else ``$JUPYTER_AGENT_MCP_TOKEN``, the endpoint's own, else the server's), where the call reaches the
notebook's kernel as any other (``http.py``). The name the endpoint shows on approval cards
is this program's client's own, from its ``initialize``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import stat
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TextIO

from .protocol import TOKEN_ENV as ENV
from .protocol import PATH, Caller
from .tools import OutsideError, build_server, error_result

log = logging.getLogger(__name__)


def add_command(commands: Any) -> None:
    """The ``mcp`` subcommand of ``jupyter agent``."""
    mcp = commands.add_parser(
        "mcp", help="serve the open notebooks to an MCP client over stdio (docs/mcp-server.md)",
        description="An MCP server over stdio whose tools work on the notebooks open in a running Jupyter "
                    "server (through its jupyter-agent endpoint): every edit and run asks the user there.")
    mcp.add_argument("--url", help="the Jupyter server's URL, e.g. http://127.0.0.1:8888/ (default: the running "
                     "server whose root holds this folder, else the only one running)")
    mcp.add_argument("--token", help="the server's token, or the endpoint's own (default: $JUPYTER_AGENT_MCP_TOKEN, "
                     "else the running server's, or $JUPYTER_TOKEN)")


def find_server(url: str | None, token: str | None, cwd: Path | None = None) -> tuple[str, str]:
    """The endpoint's URL and the token to send; raises OutsideError saying what to pass.
    Without ``url``, a running server is chosen only from runtime files this user owns, in a
    runtime folder only this user can write to (:func:`trusted_servers`): a file someone else
    planted never gets the token, the client's name or its calls."""
    if token is None and os.environ.get(ENV, "").strip():
        token = os.environ[ENV].strip()  # the endpoint's own token, when the client was given one
    if url:
        return url.rstrip("/") + "/" + PATH, token if token is not None else os.environ.get("JUPYTER_TOKEN", "")
    from jupyter_core.paths import jupyter_runtime_dir

    folder = Path(jupyter_runtime_dir())
    servers, skipped = trusted_servers(folder)
    here = (cwd or Path.cwd()).resolve()
    inside = [s for s in servers if here.is_relative_to(Path(s.get("root_dir") or "/").expanduser().resolve())]
    chosen = inside or servers
    if len(chosen) != 1:
        found = ", ".join(str(s.get("url", "?")) for s in servers) or "none"
        why = "".join(f" Not used: {reason}." for reason in skipped)
        raise OutsideError(f"Which Jupyter server? Running (from {folder}): {found}.{why} Pass --url (and --token).")
    for reason in skipped:
        log.warning("not used: %s", reason)
    server = chosen[0]
    return str(server["url"]).rstrip("/") + "/" + PATH, token if token is not None else str(server.get("token") or "")


def trusted_servers(folder: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The running servers of ``folder``'s ``jpserver-*.json`` files that this user can be sure
    of, and why each other file was not used. A folder that others can write to (or replace)
    gives none: any file in it could be anyone's."""
    if not folder.exists():
        return [], []
    problem = _not_private(folder)
    if problem is not None:
        raise OutsideError(f"The Jupyter runtime folder {folder} is not yours alone ({problem}), so a server's file "
                           "there could be anyone's: no server is chosen from it, and nothing was sent. Pass --url "
                           "and --token, or set JUPYTER_RUNTIME_DIR to a folder only you can write to.")
    servers: list[dict[str, Any]] = []
    skipped: list[str] = []
    for path in sorted(folder.glob("jpserver-*.json")):
        try:
            info = _own_file(path)
        except (OSError, ValueError) as exc:
            skipped.append(f"{path.name} ({exc})")
            continue
        if info is not None:
            servers.append(info)
    return servers, skipped


def _not_private(folder: Path) -> str | None:
    """Why ``folder`` is not a folder only this user (or root) can change, or None: it and
    every folder above it belong to them, and none is writable by others (above it: unless
    sticky, as /tmp)."""
    uid = os.getuid()
    try:
        real = folder.resolve(strict=True)
    except OSError as exc:
        return f"it cannot be read: {exc.strerror}"
    for place in (real, *real.parents):
        info = place.stat()
        others_write = _others_write(info)
        if place == real and (info.st_uid != uid or others_write):
            return (f"it belongs to uid {info.st_uid}" if info.st_uid != uid
                    else f"other users can write to it: mode {stat.S_IMODE(info.st_mode):o}")
        if place != real and (info.st_uid not in (0, uid) or (others_write and not info.st_mode & stat.S_ISVTX)):
            return f"{place}, above it, can be changed by other users"
    return None


def _others_write(info: os.stat_result) -> bool:
    """Whether someone other than this user may write to what ``info`` describes: anyone, or
    its group unless that group is the user's own (a user private group, as Debian and Fedora
    give every user: named as the user, no other members; umask 002 makes folders 775 there)."""
    if info.st_mode & 0o002:
        return True
    if not info.st_mode & 0o020:
        return False
    try:
        import grp
        import pwd

        group, user = grp.getgrgid(info.st_gid), pwd.getpwuid(os.getuid())
    except (ImportError, KeyError):
        return True
    return not (info.st_gid == os.getgid() and group.gr_name == user.pw_name and set(group.gr_mem) <= {user.pw_name})


def _own_file(path: Path) -> dict[str, Any] | None:
    """A runtime file's contents if this user owns it (a regular file, not a link, writable by
    no one else) and its server's process runs; None for a server that is gone. Raises
    ValueError saying why a file is not used."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, encoding="utf-8") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file")
        if info.st_uid != os.getuid():
            raise ValueError(f"it belongs to uid {info.st_uid}, not to you")
        if _others_write(info):
            raise ValueError(f"other users can write to it: mode {stat.S_IMODE(info.st_mode):o}")
        data = json.load(file)
    if not isinstance(data, dict) or not isinstance(data.get("url"), str):
        raise ValueError("not a Jupyter server's runtime file")
    pid = data.get("pid")
    if not isinstance(pid, int) or not _runs(pid):
        return None  # (a server that stopped without removing its file)
    return data


def _runs(pid: int) -> bool:
    """Whether process ``pid`` runs, as this user (a pid reused by another user's process is not
    the server that wrote the file)."""
    try:
        os.kill(pid, 0)
    except PermissionError:
        return False  # (someone else's)
    except OSError:
        return False
    proc = Path(f"/proc/{pid}")
    try:
        return proc.stat().st_uid == os.getuid() if proc.exists() else True
    except OSError:
        return False


class Forwarder:
    """The endpoint's client, held by a task of its own (the SDK's client is entered and left
    in one task), opened on the first call with the name of this program's client."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.client: Any = None
        self._ready: asyncio.Future[Any] | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        #: ``on_message(message)``: the endpoint's notifications (a subscribed resource changed)
        self.on_message: Any = None

    async def get(self, name: str) -> Any:
        if self._ready is None:
            self._ready = asyncio.get_event_loop().create_future()
            self._task = asyncio.get_event_loop().create_task(self._own(name))
        return await asyncio.shield(self._ready)

    async def _own(self, name: str) -> None:
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client
        from mcp_types import Implementation

        assert self._ready is not None
        try:
            headers = {"Authorization": f"token {self.token}"} if self.token else None
            http = create_mcp_http_client(headers=headers)
            # The initialize handshake ('legacy'): its MCP session keeps this program's reads and
            # runs apart from another's of the same client name (the sessionless 2026 protocol cannot).
            async with Client(streamable_http_client(self.url, http_client=http), mode="legacy",
                              client_info=Implementation(name=name, version=""),
                              message_handler=self._message) as client:
                self._ready.set_result(client)
                await self._stop.wait()
        except Exception as exc:  # said to the client on its calls
            log.debug("the endpoint %s is not reachable", self.url, exc_info=True)
            if not self._ready.done():
                self._ready.set_exception(OutsideError(
                    f"Cannot reach jupyter-agent's endpoint at {self.url}: {type(exc).__name__}: {exc}. Is the Jupyter "
                    "server running with jupyter-agent installed, and the token right?"))
        self._ready = None if not self._ready.done() or self._ready.exception() else self._ready

    async def _message(self, message: Any) -> None:
        if self.on_message is not None:
            self.on_message(message)

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            await asyncio.wait({self._task}, timeout=10)


def forwarded_handlers(upstream: Callable[[str], Awaitable[Any]]) -> tuple[dict[str, Any], Any]:
    """``jupyter agent mcp``'s resource handlers: each request made on the endpoint by the
    client ``upstream(name)`` gives (its own MCP session there); a held URI is subscribed to
    there, and the endpoint's notifications come back through :meth:`Subscriptions.publish`
    (the forwarder's message handler calls it)."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import EmptyResult

    from .resources import Subscriptions, caller_of, resource_error, subscriber

    client: Any = None

    async def hold(uri: str) -> None:
        await client.session.subscribe_resource(uri)

    #: uri -> the endpoint's unsubscribe in flight (the client's own unsubscribe waits for it)
    releasing: dict[str, asyncio.Task[None]] = {}

    def release(uri: str) -> None:
        if client is not None:
            releasing[uri] = subscriptions.publish_later(client.session.unsubscribe_resource(uri))

    subscriptions = Subscriptions(hold, release)

    async def on(ctx: Any) -> Any:
        nonlocal client
        client = await upstream(caller_of(ctx).name)
        return client

    async def relayed(call: Awaitable[Any]) -> Any:
        try:
            return await call
        except MCPError:
            raise
        except Exception as exc:  # the endpoint went away
            why = f"The endpoint could not be reached: {type(exc).__name__}: {exc}"
            raise resource_error(OutsideError(why)) from None

    async def list_resources(ctx: Any, params: Any) -> Any:
        subscriptions.listed(subscriber(ctx), caller_of(ctx).connection)
        return await relayed((await on(ctx)).list_resources(cache_mode="bypass"))

    async def list_templates(ctx: Any, params: Any) -> Any:
        return await relayed((await on(ctx)).list_resource_templates(cache_mode="bypass"))

    async def read_resource(ctx: Any, params: Any) -> Any:
        return await relayed((await on(ctx)).read_resource(params.uri, cache_mode="bypass"))

    async def subscribe(ctx: Any, params: Any) -> Any:
        await on(ctx)
        try:
            await relayed(subscriptions.subscribe(subscriber(ctx), params.uri, caller_of(ctx).connection))
        except OutsideError as exc:
            raise resource_error(exc) from None
        return EmptyResult()

    async def unsubscribe(ctx: Any, params: Any) -> Any:
        subscriptions.unsubscribe(subscriber(ctx), params.uri)
        done = releasing.pop(params.uri, None)
        if done is not None:
            await done  # (answered once the endpoint holds it no more)
        return EmptyResult()

    async def listen(ctx: Any, params: Any) -> Any:
        upstream = await on(ctx)
        if params.notifications.resources_list_changed:  # (the endpoint tells the sessions that listed)
            await relayed(upstream.list_resources(cache_mode="bypass"))
        return await subscriptions.listen(ctx, params)

    return ({"on_list_resources": list_resources, "on_list_resource_templates": list_templates,
             "on_read_resource": read_resource, "on_subscribe_resource": subscribe,
             "on_unsubscribe_resource": unsubscribe, "on_subscriptions_listen": listen}, subscriptions)


def build_forwarder(forwarder: Forwarder) -> Any:
    """The stdio server: the same tools, resources and checks, each call made on the endpoint;
    the endpoint's progress notifications (a running cell) go on to the client that asked, and
    its resource notifications to the subscribed client (:func:`forwarded_handlers`)."""

    async def forward(name: str, args: dict[str, Any], caller: Caller, progress: Any = None) -> Any:
        client = await forwarder.get(caller.name)

        async def relay(done: float, total: float | None, message: str | None) -> None:
            await progress(message or "")  # the endpoint's notification, on to this program's client

        try:
            return await client.call_tool(name, args, progress_callback=relay if progress is not None else None)
        except Exception as exc:  # the endpoint went away mid-call
            log.debug("a forwarded call failed", exc_info=True)
            return error_result(f"The call to {forwarder.url} failed: {type(exc).__name__}: {exc}")

    from .resources import list_changed_note, updated_uri, with_list_changed

    resources, subscriptions = forwarded_handlers(forwarder.get)

    def heard(message: Any) -> None:  # a resource the client subscribed to changed: on to it
        uri = updated_uri(message)
        if uri is not None:
            subscriptions.publish([uri])
        elif list_changed_note(message):
            subscriptions.list_changed()

    forwarder.on_message = heard
    return with_list_changed(build_server(None, forward=forward, resources=resources))


def run(args: argparse.Namespace, err: TextIO = sys.stderr) -> int:
    """``jupyter agent mcp``: serve on stdin/stdout until the client closes them."""
    try:
        url, token = find_server(args.url, args.token)
    except OutsideError as exc:
        err.write(f"jupyter agent mcp: {exc}\n")
        return 2

    async def serve() -> None:
        from mcp.server.stdio import stdio_server

        forwarder = Forwarder(url, token)
        server = build_forwarder(forwarder)
        end_on_signals(forwarder)
        try:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())
        finally:  # stdin's end: the client closed it
            with contextlib.suppress(Exception):
                await forwarder.close()

    asyncio.run(serve())
    return 0


#: The signals a client stops its server with (a terminal's Ctrl+C and hang-up too; Windows has no SIGHUP).
END_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name))


def end_on_signals(forwarder: Forwarder) -> None:
    """On SIGTERM, SIGINT or SIGHUP, end the MCP session on the endpoint (the transport's
    DELETE: the endpoint drops its subscriptions at once, rather than when it
    times the session out), then die of that signal as the client expects. Not by unwinding
    the stdio server: its reader waits in a thread for stdin's next line, which a client that
    signals may never send."""
    loop = asyncio.get_running_loop()

    async def end(signum: int) -> None:
        try:
            await forwarder.close()
        except Exception:  # (the endpoint went away: nothing left to end there)
            log.debug("could not end the endpoint's session", exc_info=True)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    ending: set[asyncio.Task[None]] = set()  # (held: a task nothing refers to may be collected)

    def heard(signum: int) -> None:
        task = loop.create_task(end(signum))
        ending.add(task)
        task.add_done_callback(ending.discard)

    for signum in END_SIGNALS:
        try:
            loop.add_signal_handler(signum, heard, signum)
        except NotImplementedError:  # (Windows' loops take no handlers: there it ends with stdin only)
            log.debug("no handler for signal %s on this loop", signum)

