"""The conversation's MCP servers as ``%agent mcp`` prints them and the side panel shows them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...mcp import ServerStatus
from ...redact import redact

if TYPE_CHECKING:
    from ...conversation import Conversation
    from .agent_session import AgentSession


def server_statuses(session: AgentSession, *, reread: bool = True) -> list[ServerStatus]:
    """The servers of the kernel's conversation (settings and the working folder's .mcp.json,
    read again unless ``reread`` is false: the side panel asks on every update)."""
    conv: Conversation = session.conversation
    return conv.mcp_servers.status(conv.context.cwd if reread else None)


def mcp_text(session: AgentSession) -> str:
    """``%agent mcp``: each server, its state, its tools and where its log is."""
    servers = server_statuses(session)
    if not servers:
        return ("No MCP servers. Add some with %config AgentConfig.mcp_servers = {'name': {'command': ..., "
                "'args': [...]}} or a .mcp.json in the working folder (see docs/tools.md, \"MCP servers\").")
    lines = ["MCP servers (tools are mcp__<server>__<tool>; each asks unless a rule allows it):"]
    for server in servers:
        where = "" if server.source == "settings" else f"  from {server.source}"
        lines.append(f"  {server.name}  [{server.state.value}]  {server.transport}: {server.command}{where}")
        if server.error:
            lines.append(f"      error: {server.error}")
        if server.tools:
            lines.append(f"      tools: {', '.join(server.tools)}")
        if server.log_path:
            lines.append(f"      log: {server.log_path}")
    return redact("\n".join(lines))


def mcp_payload(session: AgentSession) -> list[dict[str, object]]:
    """The same for the side panel (plain data; the panel renders it as text)."""
    return [{"name": s.name, "state": s.state.value, "transport": s.transport, "command": redact(s.command),
             "source": s.source, "tools": list(s.tools), "error": redact(s.error), "log": s.log_path or ""}
            for s in server_statuses(session, reread=False)]
