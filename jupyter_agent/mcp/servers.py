"""The MCP servers of one conversation: started on first use, shared by its runs, stopped at its end.

:class:`McpServers` is a part of ``ToolContext.services`` (one per conversation) and the
loop's :class:`~jupyter_agent.loop.tool.ToolSource`: before a run's first request the loop
asks it for tools, and it starts the servers not running yet (in parallel, each with a
time limit) and offers their tools. Servers come from the settings (``query(mcp_servers=)``,
``Conversation(mcp_servers=)``, ``AgentConfig.mcp_servers``) and from ``.mcp.json`` in the
working folder; one from ``.mcp.json`` starts only after a person approved it (an approval
card showing the exact command, through ``can_use_tool``). A server that cannot start is a
notice, never a hung run.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..loop.events import Notice
from ..loop.permission_result import PermissionAllow, PermissionAsk
from ..loop.tool import AnyTool, ToolContext, ToolSource
from ..loop.tool_execution import CanUseTool, private_results_dir
from .config import PROJECT_FILE, ServerConfig, parse_servers, read_project_servers
from .connection import START_TIMEOUT_S, McpConnection, McpServerError, ServerState
from .tools import MCP_PREFIX, make_tool, mcp_tool_name

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServerStatus:
    """One server as ``%agent mcp`` and the side panel show it."""

    name: str
    transport: str
    command: str
    source: str
    state: ServerState
    tools: tuple[str, ...]
    error: str
    log_path: str | None


class McpServers(ToolSource):
    """The conversation's MCP servers (see the module's doc)."""

    def __init__(self) -> None:
        self.configured: dict[str, ServerConfig] = {}
        #: The servers of the working folder's .mcp.json when it was last read.
        self.project: dict[str, ServerConfig] = {}
        self.connections: dict[str, McpConnection] = {}
        #: .mcp.json servers a person approved or refused, by their exact settings.
        self.approved: set[ServerConfig] = set()
        self.refused: set[ServerConfig] = set()
        self.start_timeout_s = start_timeout()
        self._lock: asyncio.Lock | None = None

    def configure(self, servers: Mapping[str, Any] | None) -> None:
        """Use these servers from now on (raises ``ValueError`` on bad settings). A server
        whose settings changed is restarted on next use."""
        self.configured = parse_servers(servers)

    # -- the loop's ToolSource -------------------------------------------------------------
    async def load_tools(self, context: ToolContext,
                         can_use_tool: CanUseTool | None) -> tuple[list[AnyTool], list[Notice]]:
        """Start what is not running yet and return every running server's tools."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            notices: list[Notice] = []
            wanted = await self._wanted(context, can_use_tool, notices)
            await self._drop_stale(wanted)
            log_dir = private_results_dir(context.tool_results_dir) / "mcp-logs"
            starting = []
            for name, config in wanted.items():
                connection = self.connections.get(name)
                if connection is None or connection.state in (ServerState.FAILED, ServerState.STOPPED):
                    connection = self.connections[name] = McpConnection(config, context.cwd, log_dir)
                if connection.state is not ServerState.RUNNING:
                    starting.append(connection)
            outcomes = await asyncio.gather(*(c.start(self.start_timeout_s) for c in starting), return_exceptions=True)
            for outcome in outcomes:
                if isinstance(outcome, BaseException):
                    text = str(outcome) if isinstance(outcome, McpServerError) else repr(outcome)
                    notices.append(Notice("mcp_server_failed", f"{text} Its tools are not offered in this run."))
            tools: list[AnyTool] = []
            for name in wanted:
                connection = self.connections[name]
                if connection.state is ServerState.RUNNING:
                    tools.extend(make_tool(connection, tool) for tool in connection.tools)
            return tools, notices

    async def _wanted(self, context: ToolContext, can_use_tool: CanUseTool | None,
                      notices: list[Notice]) -> dict[str, ServerConfig]:
        """The servers this run may use: the configured ones, and the approved ones of .mcp.json."""
        self.project, problems = read_project_servers(context.cwd)
        notices.extend(Notice("mcp_config", text) for text in problems)
        wanted = dict(self.configured)
        for name, config in self.project.items():
            if name in wanted or config in self.refused:
                continue  # the settings win over the project's file; a refused server stays refused
            if config not in self.approved and not await self._approve(config, context, can_use_tool, notices):
                continue
            wanted[name] = config
        return wanted

    async def _approve(self, config: ServerConfig, context: ToolContext, can_use_tool: CanUseTool | None,
                       notices: list[Notice]) -> bool:
        """Ask a person whether a server of .mcp.json may start (a repository's file can run any program)."""
        # (the message is shown as text: no Markdown backticks around the command)
        what = (f"run this command: {config.command_line()}" if config.transport == "stdio"
                else f"connect to {config.command_line()}")
        if can_use_tool is None:
            notices.append(Notice("mcp_server_needs_approval", f"The MCP server {config.name!r} of {PROJECT_FILE} "
                                  f"was not started: it needs approval, and no one is here to give it ({what})."))
            return False
        ask = PermissionAsk(message=f"Start the MCP server {config.name!r} from {config.source}? It would {what}. "
                                    f"A {PROJECT_FILE} can run any program: allow it only if you trust this folder.",
                            suggested_rules=(MCP_PREFIX + config.name,))
        answer = can_use_tool(MCP_PREFIX + config.name, config.shown(), ask)
        if inspect.isawaitable(answer):
            answer = await answer
        if answer is True or isinstance(answer, PermissionAllow):
            self.approved.add(config)
            if isinstance(answer, PermissionAllow) and answer.always:
                context.permissions.add_session_rules(answer.always)
            return True
        self.refused.add(config)
        notices.append(Notice("mcp_server_refused", f"The MCP server {config.name!r} of {PROJECT_FILE} was not "
                              "approved: it was not started, and it is not asked about again in this conversation."))
        return False

    def refuse_project_servers(self, cwd: Path) -> list[ServerConfig]:
        """Leave the servers of ``cwd``'s .mcp.json that the settings do not name unstarted for
        the rest of the conversation, without asking (a headless run: no one can approve them);
        returns them, for the caller to say so."""
        found, _ = read_project_servers(cwd)
        refused = [config for name, config in found.items() if name not in self.configured]
        self.refused.update(refused)
        return refused

    async def _drop_stale(self, wanted: dict[str, ServerConfig]) -> None:
        """Stop servers that are no longer configured, or whose settings changed."""
        stale = [c for name, c in self.connections.items() if wanted.get(name) != c.config]
        for connection in stale:
            self.connections.pop(connection.name, None)
        await asyncio.gather(*(c.stop() for c in stale), return_exceptions=True)

    async def aclose(self) -> None:
        """Stop every server (the conversation ended); each process is gone when this returns."""
        connections, self.connections = list(self.connections.values()), {}
        results = await asyncio.gather(*(c.stop() for c in connections), return_exceptions=True)
        for connection, result in zip(connections, results):
            if isinstance(result, BaseException):
                log.debug("stopping MCP server %s failed: %r; killing it", connection.name, result)
                connection.kill_now()

    def kill_now(self) -> None:
        """Synchronous: kill every server's process group (the kernel is shutting down)."""
        for connection in list(self.connections.values()):
            connection.kill_now()

    # -- what a person sees ------------------------------------------------------------------
    def status(self, cwd: Path | None = None) -> list[ServerStatus]:
        """Every server known to this conversation (``cwd``: read its .mcp.json again)."""
        if cwd is not None:
            self.project, _ = read_project_servers(cwd)
        found = []
        for name, config in {**self.project, **self.configured}.items():
            connection = self.connections.get(name)
            if connection is not None and connection.config == config:
                state, error = connection.state, connection.error
                if state is ServerState.RUNNING and not connection.alive():
                    state, error = ServerState.FAILED, "its process has exited"
                running = state is ServerState.RUNNING
                tools = tuple(mcp_tool_name(name, t.name) for t in connection.tools) if running else ()
                log_path = str(connection.log_path) if connection.log_path else None
            else:
                state = (ServerState.NOT_APPROVED if config in self.refused else
                         ServerState.NEEDS_APPROVAL if config.source != "settings" and config not in self.approved
                         else ServerState.NOT_STARTED)
                tools, error, log_path = (), "", None
            found.append(ServerStatus(name, config.transport, config.command_line(), config.source, state, tools,
                                      error, log_path))
        return found


def start_timeout() -> float:
    """Seconds a server may take to start: ``$MCP_TIMEOUT`` (milliseconds, as in Claude Code), else 30."""
    raw = os.environ.get("MCP_TIMEOUT", "").strip()
    try:
        return max(int(raw) / 1000, 1.0) if raw else START_TIMEOUT_S
    except ValueError:
        log.debug("MCP_TIMEOUT=%r is not a number of milliseconds; using %g s", raw, START_TIMEOUT_S)
        return START_TIMEOUT_S


def mcp_servers(context: ToolContext) -> McpServers:
    """The conversation's :class:`McpServers` (made on first use)."""
    return context.services.get(McpServers)
