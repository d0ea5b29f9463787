"""MCP server settings, in the shape Claude Code and the Claude Agent SDK use (docs/tools.md, "MCP servers").

``{"name": {"command": ..., "args": [...], "env": {...}}}`` runs a server over stdio;
``{"name": {"type": "http", "url": ..., "headers": {...}}}`` talks to one over streamable
HTTP. A ``.mcp.json`` in the working folder (``{"mcpServers": {...}}``) holds the same
shape; a server from it starts only once the user approved it (:mod:`.servers`).
:func:`read_mcp_configs` reads what ``jupyter agent run --mcp-config`` is given: files or
the JSON itself, with or without the ``mcpServers`` wrapper.
"""

from __future__ import annotations

import json
import logging
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..redact import redact, redact_values

log = logging.getLogger(__name__)

#: The file a project keeps its MCP servers in, as in Claude Code.
PROJECT_FILE = ".mcp.json"
#: A server's name becomes part of its tools' names (``mcp__<server>__<tool>``).
_SERVER_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_))*$")
_MAX_PROJECT_FILE = 1_000_000


@dataclass(frozen=True)
class StdioServer:
    """A server the agent starts as a child process and talks to over its stdin/stdout."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    #: Where it was configured: "settings" (query, Conversation, AgentConfig) or a .mcp.json path.
    source: str = "settings"

    @property
    def transport(self) -> str:
        return "stdio"

    def command_line(self) -> str:
        """The exact command, quoted as a shell would need it."""
        return shlex.join([self.command, *self.args])

    def shown(self) -> dict[str, Any]:
        """What an approval card and ``%agent mcp`` show (secret-looking values redacted)."""
        return {"server": self.name, "command": self.command, "args": list(self.args),
                "env": redact_values(dict(self.env))}


@dataclass(frozen=True)
class HttpServer:
    """A server reached over streamable HTTP."""

    name: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    source: str = "settings"

    @property
    def transport(self) -> str:
        return "http"

    def command_line(self) -> str:
        return redact(self.url)

    def shown(self) -> dict[str, Any]:
        return {"server": self.name, "type": "http", "url": redact(self.url),
                "headers": redact_values(dict(self.headers))}


ServerConfig = StdioServer | HttpServer


def parse_servers(servers: Mapping[str, Any] | None, source: str = "settings") -> dict[str, ServerConfig]:
    """Read ``{"name": {...}}``; raises ``ValueError`` naming the first entry that is wrong."""
    if servers is None:
        return {}
    if not isinstance(servers, Mapping):
        raise ValueError(f"mcp_servers must be a dict of server name -> settings, not {type(servers).__name__}.")
    return {name: parse_server(name, spec, source) for name, spec in servers.items()}


def parse_server(name: Any, spec: Any, source: str = "settings") -> ServerConfig:
    """One server's settings (see the module's doc)."""
    if not isinstance(name, str) or not _SERVER_NAME.match(name):
        raise ValueError(f"MCP server name {name!r}: use letters, digits, '-' and single '_' (it becomes part "
                         "of the tool names, mcp__<server>__<tool>).")
    if not isinstance(spec, Mapping):
        raise ValueError(f"MCP server {name!r}: its settings must be a dict, not {type(spec).__name__}.")
    kind = spec.get("type", "stdio")
    if kind == "stdio":
        _only(name, spec, {"type", "command", "args", "env"})
        command, args, env = spec.get("command"), spec.get("args", []), spec.get("env", {})
        if not isinstance(command, str) or not command.strip():
            raise ValueError(f"MCP server {name!r}: 'command' must be the program to run (a non-empty string).")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ValueError(f"MCP server {name!r}: 'args' must be a list of strings.")
        return StdioServer(name, command, tuple(args), _string_pairs(name, "env", env), source)
    if kind == "http":
        _only(name, spec, {"type", "url", "headers"})
        url, headers = spec.get("url"), spec.get("headers", {})
        if not isinstance(url, str) or not re.match(r"^https?://", url):
            raise ValueError(f"MCP server {name!r}: 'url' must be an http:// or https:// address.")
        return HttpServer(name, url, _string_pairs(name, "headers", headers), source)
    raise ValueError(f"MCP server {name!r}: type {kind!r} is not supported; use 'stdio' (command) or 'http' (url).")


def _only(name: str, spec: Mapping[str, Any], keys: set[str]) -> None:
    extra = sorted(str(k) for k in spec if k not in keys)
    if extra:
        raise ValueError(f"MCP server {name!r}: unknown setting(s) {', '.join(extra)}; "
                         f"expected {', '.join(sorted(keys))}.")


def _string_pairs(name: str, what: str, value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ValueError(f"MCP server {name!r}: '{what}' must be a dict of strings.")
    return tuple(sorted(value.items()))


def read_project_servers(cwd: Path) -> tuple[dict[str, ServerConfig], list[str]]:
    """The servers of ``cwd/.mcp.json`` (none when there is no such file), and the problems
    found in it, in words (a broken entry is left out; the others still count)."""
    path = cwd / PROJECT_FILE
    try:
        if not path.is_file():
            return {}, []
        if path.stat().st_size > _MAX_PROJECT_FILE:
            return {}, [f"{path} is larger than {_MAX_PROJECT_FILE:,} bytes; it was not read."]
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return {}, [f"{path} could not be read: {exc}"]
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        return {}, [f"{path} has no \"mcpServers\" object."]
    found: dict[str, ServerConfig] = {}
    problems = []
    for name, spec in servers.items():
        try:
            found[name] = parse_server(name, spec, str(path))
        except ValueError as exc:
            problems.append(f"{path}: {exc}")
    return found, problems


#: What ``--mcp-config`` takes, for error messages.
MCP_CONFIG_SHAPE = ('{"mcpServers": {"NAME": {"command": "PROGRAM", "args": ["..."]}}} (as in .mcp.json), '
                    'or the bare {"NAME": {...}} mapping')


def read_mcp_config(value: str, cwd: Path) -> dict[str, Any]:
    """The servers of one ``--mcp-config`` value: the path of a JSON file (a relative one
    from ``cwd``) or the JSON itself (it starts with ``{``), either ``{"mcpServers": {...}}`` or
    the bare servers mapping; returned as that mapping (``mcp_servers`` takes it), each
    entry checked. Raises ``ValueError`` saying what is wrong and what to give."""
    if value.lstrip().startswith("{"):
        where, text = "the JSON given", value
    else:
        path = (cwd / Path(value).expanduser()) if value else cwd
        where = str(path)
        try:
            if path.stat().st_size > _MAX_PROJECT_FILE:
                raise ValueError(f"{where} is larger than {_MAX_PROJECT_FILE:,} bytes.")
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ValueError(f"{where}: no such file. Give the path of a JSON file or the JSON itself: "
                             f"{MCP_CONFIG_SHAPE}.") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"{where} could not be read ({exc}).") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{where} is not valid JSON ({exc}). Expected {MCP_CONFIG_SHAPE}.") from None
    servers = data.get("mcpServers", data) if isinstance(data, dict) else data
    if not isinstance(servers, dict):
        raise ValueError(f"{where} is not a JSON object of servers. Expected {MCP_CONFIG_SHAPE}.")
    try:
        parse_servers(servers)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    return servers


def read_mcp_configs(values: list[str], cwd: Path) -> dict[str, Any] | None:
    """The servers of every ``--mcp-config`` value (None when there is none); raises
    ``ValueError`` for a bad one or a server name given twice."""
    if not values:
        return None
    servers: dict[str, Any] = {}
    for value in values:
        for name, spec in read_mcp_config(value, cwd).items():
            if name in servers:
                raise ValueError(f"the MCP server {name!r} is given twice; give each name once.")
            servers[name] = spec
    return servers
