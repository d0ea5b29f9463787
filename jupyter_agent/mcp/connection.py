"""One MCP server's connection, held by a task of its own (the ``mcp`` SDK does the protocol).

The SDK's client and its transports are anyio context managers: they must be entered
and left by the same task. So each server gets an owner task that enters them, lists
the tools, then waits to be told to stop; calls from the run's tool tasks go through the
connected client, and Stop cancels such a call without touching the connection. The
owner task leaves the contexts on every path (stop, failure, cancellation), which ends
the server process (stdin closed, then its process group killed: the SDK's shutdown).

A stdio server's stderr goes to a log file (``log_path``); its process id is found from
a marker in its environment, so that whatever happens to the owner task, the process
group can still be killed when the interpreter exits (:func:`kill_leftover_servers`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import signal
import tempfile
import uuid
import weakref
from enum import Enum
from pathlib import Path
from typing import Any, TextIO

from ..errors import JupyterAgentError
from ..notebook import deferred_grammar  # noqa: F401 - the SDK imports jsonschema: no IRI grammar built
from .config import HttpServer, ServerConfig, StdioServer

log = logging.getLogger(__name__)

#: Seconds a server may take to start and list its tools.
START_TIMEOUT_S = 30.0
#: Seconds the owner task is given to shut a server down before it is cancelled.
STOP_TIMEOUT_S = 8.0
_MARKER = "JUPYTER_AGENT_MCP_SERVER"
_live: weakref.WeakSet[McpConnection] = weakref.WeakSet()


class ServerState(str, Enum):
    """Where a server is (``%agent mcp`` and the side panel show it)."""

    NOT_STARTED = "not started"
    NEEDS_APPROVAL = "needs approval"
    NOT_APPROVED = "not approved"
    STARTING = "starting"
    RUNNING = "running"
    FAILED = "failed"
    STOPPED = "stopped"


class McpServerError(JupyterAgentError):
    """The server could not be started, or stopped answering."""


class McpConnection:
    """A connection to one server: :meth:`start`, :attr:`tools`, :meth:`call_tool`, :meth:`stop`."""

    def __init__(self, config: ServerConfig, cwd: Path, log_dir: Path) -> None:
        self.config = config
        self.cwd = cwd
        self.log_dir = log_dir
        self.state = ServerState.NOT_STARTED
        #: Why it failed, in words (empty while fine).
        self.error = ""
        self.tools: list[Any] = []  # mcp_types.Tool
        self.log_path: Path | None = None
        self.pid: int | None = None
        self._client: Any = None
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._stop = asyncio.Event()
        self._marker = ""  # a stdio server's environment carries it: how its process is found

    @property
    def name(self) -> str:
        return self.config.name

    async def start(self, timeout: float = START_TIMEOUT_S) -> None:
        """Start the server (once) and wait until its tools are listed; raises
        :class:`McpServerError` if it fails or takes longer than ``timeout``."""
        if self._task is None:
            self.state = ServerState.STARTING
            self._ready = asyncio.get_running_loop().create_future()
            self._task = asyncio.get_running_loop().create_task(self._own(), name=f"mcp-server-{self.name}")
            _live.add(self)
        assert self._ready is not None
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), timeout)
        except TimeoutError:
            self._fail(f"it did not answer within {timeout:g} s")
            await self.stop()
            raise McpServerError(self._failure_text()) from None

    async def _own(self) -> None:
        """The owner task: enter the SDK's client, list the tools, wait for :meth:`stop`."""
        assert self._ready is not None
        errlog: TextIO | None = None
        try:
            from mcp import Client

            async with contextlib.AsyncExitStack() as stack:
                if isinstance(self.config, StdioServer):
                    errlog = stack.enter_context(self._open_log())
                transport = self._transport(errlog)
                client = await stack.enter_async_context(Client(transport, client_info=_client_info()))
                if isinstance(self.config, StdioServer):
                    self.pid = _find_pid(self._marker)
                self.tools = await _list_tools(client)
                self._client = client
                self.state = ServerState.RUNNING
                self._ready.set_result(None)
                await self._stop.wait()
                self._client = None
        except asyncio.CancelledError:
            self._settle_start("it was stopped while starting")
            raise
        except BaseException as exc:  # noqa: BLE001 - any failure of a server is reported, never raised here
            log.debug("MCP server %s ended with an error", self.name, exc_info=True)
            self._fail(_describe(exc))
        finally:
            self._client = None
            if self.state in (ServerState.RUNNING, ServerState.STARTING):
                self.state = ServerState.STOPPED
            self._settle_start("it stopped")
            _live.discard(self)

    def _settle_start(self, why: str) -> None:
        if self._ready is not None and not self._ready.done():
            self._fail(why)
            self._ready.set_exception(McpServerError(self._failure_text()))
            self._ready.exception()  # read: a start nobody awaits any more must not warn

    def _fail(self, why: str) -> None:
        if self.state is not ServerState.FAILED:
            self.state, self.error = ServerState.FAILED, why

    def _failure_text(self) -> str:
        where = f" Its log: {self.log_path}" if self.log_path else ""
        return f"The MCP server {self.name!r} ({self.config.command_line()}) failed: {self.error}.{where}"

    @contextlib.contextmanager
    def _open_log(self) -> Any:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        fd, path = tempfile.mkstemp(prefix=f"mcp-{self.name}-", suffix=".log", dir=self.log_dir)
        self.log_path = Path(path)
        with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as handle:
            yield handle

    def _transport(self, errlog: TextIO | None) -> Any:
        if isinstance(self.config, HttpServer):
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            http = create_mcp_http_client(headers=dict(self.config.headers) or None)
            return streamable_http_client(self.config.url, http_client=http)
        from mcp.client.stdio import StdioServerParameters, stdio_client

        self._marker = uuid.uuid4().hex
        params = StdioServerParameters(command=self.config.command, args=list(self.config.args),
                                       env={**dict(self.config.env), _MARKER: self._marker}, cwd=str(self.cwd))
        return stdio_client(params, errlog=errlog) if errlog is not None else stdio_client(params)

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> Any:
        """Call ``tool``; returns the SDK's ``CallToolResult``. A server that is gone or
        stops answering raises :class:`McpServerError` (and is marked failed)."""
        client = self._client
        if client is None or self.state is not ServerState.RUNNING:
            raise McpServerError(f"The MCP server {self.name!r} is not running ({self.error or self.state.value}).")
        try:
            return await client.call_tool(tool, arguments)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if (self._task is not None and self._task.done()) or _connection_lost(exc) or not self.alive():
                self._fail(f"it stopped answering ({_describe(exc)})")
                await self.stop()
                raise McpServerError(self._failure_text()) from None
            raise

    def alive(self) -> bool:
        """Is the server's process (stdio) still there? (HTTP: is the connection open?)"""
        if self._task is None or self._task.done():
            return False
        if self.pid is None:
            return True
        try:
            with open(f"/proc/{self.pid}/stat", encoding="ascii") as handle:
                return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    async def stop(self) -> None:
        """Stop the server and wait (bounded) until its process is gone."""
        task = self._task
        if task is None:
            return
        self._stop.set()
        if not task.done():
            done, _ = await asyncio.wait({task}, timeout=STOP_TIMEOUT_S)
            if not done:
                task.cancel()
                await asyncio.wait({task}, timeout=STOP_TIMEOUT_S)
        self.kill_now()

    def kill_now(self) -> None:
        """Last resort, synchronous: kill the server's process group (interpreter exit)."""
        pid, self.pid = self.pid, None
        if pid is None:
            return
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)  # the SDK starts it in a session of its own: pgid == pid


def _client_info() -> Any:
    from mcp_types import Implementation

    return Implementation(name="jupyter-agent", version="0.1.0")


async def _list_tools(client: Any) -> list[Any]:
    tools: list[Any] = []
    cursor = None
    for _ in range(100):  # a server whose pages never end cannot hang the start
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _describe(exc: BaseException) -> str:
    """An exception (an ExceptionGroup from anyio's task groups included) in a few words."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _connection_lost(exc: BaseException) -> bool:
    import anyio

    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return isinstance(exc, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream,
                            ConnectionError, EOFError)) or "closed" in str(exc).lower()


def _find_pid(marker: str) -> int | None:
    """The child process whose environment carries ``marker`` (Linux: /proc), else None."""
    me = str(os.getpid())
    needle = f"{_MARKER}={marker}".encode()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                ppid = handle.read().rsplit(b")", 1)[1].split()[1].decode()
            if ppid != me:
                continue
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if needle in handle.read().split(b"\0"):
                    return int(entry)
        except (OSError, IndexError):
            continue
    return None


@atexit.register
def kill_leftover_servers() -> None:
    """At interpreter exit (the kernel shutting down), no server outlives us."""
    for connection in list(_live):
        connection.kill_now()
