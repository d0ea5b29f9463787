"""An MCP server's tools as the model sees them: ``mcp__<server>__<tool>``, their own schema.

Each tool of a running server becomes a :class:`McpTool` subclass of its own (a tool's
name and description are class attributes of the ``Tool`` interface). Input is checked
against the server's JSON schema before the call; the result's text, images (as image
blocks) and resources (as text) become the ``tool_result``. An MCP tool asks before it
runs unless a rule allows it (``mcp__<server>__<tool>`` or ``mcp__<server>``).
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from pydantic import ConfigDict

from ..loop.events import Notice
from ..loop.permission_result import PermissionAsk, PermissionResult
from ..loop.tool import PreparedCall, Tool, ToolContext, ToolError, ToolInput, ToolOutput
from .connection import McpConnection, McpServerError

#: The API's limit on a tool's name.
MAX_TOOL_NAME = 64
#: Descriptions longer than this are cut (a server's description goes into every request).
MAX_DESCRIPTION = 2_048
_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
MCP_PREFIX = "mcp__"


def mcp_tool_name(server: str, tool: str) -> str:
    """The name the model sees: ``mcp__<server>__<tool>``, characters the API refuses as ``_``."""
    return (MCP_PREFIX + server + "__" + re.sub(r"[^A-Za-z0-9_-]", "_", tool))[:MAX_TOOL_NAME]


class McpInput(ToolInput):
    """Whatever the server's schema describes (checked against that schema, not here)."""

    model_config = ConfigDict(extra="allow")


class McpTool(Tool[McpInput]):
    """One tool of one MCP server; :func:`make_tool` makes the subclass for each."""

    Input = McpInput
    timeout_s: ClassVar[float | None] = 600.0
    connection: ClassVar[McpConnection]
    server_name: ClassVar[str]
    tool_name: ClassVar[str]
    schema: ClassVar[dict[str, Any]]

    def input_schema(self) -> dict[str, Any]:
        return dict(self.schema)

    async def validate_input(self, input: McpInput, context: ToolContext) -> str | None:
        import jsonschema

        try:
            validator = jsonschema.validators.validator_for(self.schema)(self.schema)
            errors = sorted(validator.iter_errors(_arguments(input)), key=lambda e: list(e.path))
        except jsonschema.SchemaError as exc:
            return f"The MCP server's schema for {self.name} is not valid JSON Schema: {exc.message}"
        if not errors:
            return None
        lines = [f"`{'.'.join(map(str, e.path)) or 'input'}`: {e.message}" for e in errors[:10]]
        return f"InputValidationError: {self.name} failed due to the following issue(s):\n" + "\n".join(lines)

    async def check_permissions(self, input: McpInput, context: ToolContext,
                                prepared: PreparedCall) -> PermissionResult:
        return PermissionAsk(
            message=f"Call the tool {self.tool_name!r} of the MCP server {self.server_name!r} "
                    f"({self.connection.config.command_line()}).",
            suggested_rules=(self.name,))

    async def call(self, input: McpInput, context: ToolContext, prepared: PreparedCall) -> ToolOutput:
        try:
            result = await self.connection.call_tool(self.tool_name, _arguments(input))
        except McpServerError as exc:
            context.progress(Notice("mcp_server_failed", str(exc)))
            raise ToolError(str(exc)) from None
        except Exception as exc:  # an MCP error answer (unknown tool, bad params...): the model reads it
            raise ToolError(f"The MCP server {self.server_name!r} answered {self.tool_name} with an error: "
                            f"{type(exc).__name__}: {exc}") from None
        return ToolOutput(content=result_blocks(result), is_error=bool(result.is_error))

    def summary(self, input: dict[str, Any]) -> str:
        return f"{self.server_name}: {self.tool_name}"


def make_tool(connection: McpConnection, tool: Any) -> McpTool:
    """The :class:`McpTool` for ``tool`` (an ``mcp_types.Tool``) of ``connection``'s server."""
    schema = dict(tool.input_schema or {})
    schema.setdefault("type", "object")
    description = (tool.description or tool.title or f"The {tool.name} tool of the MCP server {connection.name}.")
    if len(description) > MAX_DESCRIPTION:
        description = description[:MAX_DESCRIPTION - 1] + "…"
    attributes = {"name": mcp_tool_name(connection.name, tool.name), "description": description,
                  "connection": connection, "server_name": connection.name, "tool_name": tool.name,
                  "schema": schema}
    kind = type(f"McpTool_{connection.name}_{tool.name}", (McpTool,), attributes)
    made: McpTool = kind()
    return made


def _arguments(input: McpInput) -> dict[str, Any]:
    return input.model_dump(by_alias=True)


def result_blocks(result: Any) -> list[dict[str, Any]]:
    """A ``CallToolResult`` as tool_result content: text as text, images as image blocks,
    embedded resources and links as text (binary ones described, not sent)."""
    blocks: list[dict[str, Any]] = []
    for item in result.content or []:
        kind = getattr(item, "type", "")
        if kind == "text":
            blocks.append({"type": "text", "text": item.text})
        elif kind == "image" and item.mime_type in _IMAGE_TYPES:
            blocks.append({"type": "image", "source": {"type": "base64", "media_type": item.mime_type,
                                                       "data": item.data}})
        elif kind in ("image", "audio"):
            blocks.append({"type": "text", "text": f"[{kind} of type {item.mime_type} not shown]"})
        elif kind == "resource":
            resource = item.resource
            text = getattr(resource, "text", None)
            mime = getattr(resource, "mime_type", None) or "unknown type"
            blocks.append({"type": "text", "text": f"[resource {resource.uri}]\n{text}" if text is not None
                           else f"[binary resource {resource.uri} ({mime}) not shown]"})
        elif kind == "resource_link":
            blocks.append({"type": "text", "text": f"[resource link {item.uri} ({item.name})]"})
    if not blocks and result.structured_content is not None:
        blocks.append({"type": "text", "text": json.dumps(result.structured_content, ensure_ascii=False)})
    return [b for b in blocks if b.get("type") != "text" or b["text"]]
