"""MCP servers' tools for the agent: ``mcp__<server>__<tool>`` (docs/tools.md, "MCP servers").

The official ``mcp`` SDK does the protocol. :mod:`.config` reads the settings and
``.mcp.json``; :mod:`.connection` holds one server's connection in a task of its own;
:mod:`.tools` turns a server's tools into the loop's ``Tool``; :mod:`.servers` is the
conversation's set of servers, which the loop asks for tools before a run's first request.
"""

from __future__ import annotations

from .config import HttpServer, StdioServer, parse_servers
from .connection import ServerState
from .servers import McpServers, ServerStatus, mcp_servers

__all__ = ["HttpServer", "McpServers", "ServerState", "ServerStatus", "StdioServer", "mcp_servers", "parse_servers"]
