"""``jupyter agent mcp``: jupyter-agent's MCP server over stdio, for clients that start their
servers as programs. It forwards every call to the streamable-HTTP endpoint of a running
Jupyter server (``--url`` and ``--token``, else the running servers' runtime files: the one
whose root holds the working folder, else the only one; the token it sends: ``--token``,
else ``$JUPYTER_AGENT_MCP_TOKEN``, the endpoint's own, else the server's), where the call reaches the
notebook's kernel as any other (``http.py``). The name the endpoint shows on approval cards
is this program's client's own, from its ``initialize``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
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
    """The endpoint's URL and the token to send; raises OutsideError saying what to pass."""
    if token is None and os.environ.get(ENV, "").strip():
        token = os.environ[ENV].strip()  # the endpoint's own token, when the client was given one
    if url:
        return url.rstrip("/") + "/" + PATH, token if token is not None else os.environ.get("JUPYTER_TOKEN", "")
    from jupyter_server.serverapp import list_running_servers

    servers = list(list_running_servers())
    here = (cwd or Path.cwd()).resolve()
    inside = [s for s in servers if here.is_relative_to(Path(s.get("root_dir") or "/").expanduser().resolve())]
    chosen = inside or servers
    if len(chosen) != 1:
        found = ", ".join(s.get("url", "?") for s in servers) or "none"
        raise OutsideError(f"Which Jupyter server? Running: {found}. Pass --url (and --token).")
    server = chosen[0]
    return str(server["url"]).rstrip("/") + "/" + PATH, token if token is not None else str(server.get("token") or "")


class Forwarder:
    """The endpoint's client, held by a task of its own (the SDK's client is entered and left
    in one task), opened on the first call with the name of this program's client."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.client: Any = None
        self._ready: asyncio.Future[Any] | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

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
                              client_info=Implementation(name=name, version="")) as client:
                self._ready.set_result(client)
                await self._stop.wait()
        except Exception as exc:  # said to the client on its calls
            log.debug("the endpoint %s is not reachable", self.url, exc_info=True)
            if not self._ready.done():
                self._ready.set_exception(OutsideError(
                    f"Cannot reach jupyter-agent's endpoint at {self.url}: {type(exc).__name__}: {exc}. Is the Jupyter "
                    "server running with jupyter-agent installed, and the token right?"))
        self._ready = None if not self._ready.done() or self._ready.exception() else self._ready

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            await asyncio.wait({self._task}, timeout=10)


def build_forwarder(forwarder: Forwarder) -> Any:
    """The stdio server: the same tools and checks, each call made on the endpoint; the
    endpoint's progress notifications (a running cell) go on to the client that asked."""

    async def forward(name: str, args: dict[str, Any], caller: Caller, progress: Any = None) -> Any:
        client = await forwarder.get(caller.name)

        async def relay(done: float, total: float | None, message: str | None) -> None:
            await progress(message or "")  # the endpoint's notification, on to this program's client

        try:
            return await client.call_tool(name, args, progress_callback=relay if progress is not None else None)
        except Exception as exc:  # the endpoint went away mid-call
            log.debug("a forwarded call failed", exc_info=True)
            return error_result(f"The call to {forwarder.url} failed: {type(exc).__name__}: {exc}")

    return build_server(None, forward=forward)


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
        try:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())
        finally:
            with contextlib.suppress(Exception):
                await forwarder.close()

    asyncio.run(serve())
    return 0

