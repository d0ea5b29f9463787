"""Before a run's first request: the tools of its tool sources (MCP servers', see :class:`~.tool.ToolSource`).

A source may start processes and wait for a person's approval, so the wait is a task
that Stop cancels at once. What the sources offer joins the run's own tools; a name
that is already taken is not offered twice.
"""

from __future__ import annotations

import asyncio
import logging
from .abort import AbortSignal
from .events import Notice
from .permission_result import CanUseTool
from .tool import AnyTool, ToolContext, ToolSource

log = logging.getLogger(__name__)


async def load_tool_sources(sources: list[ToolSource], tools: list[AnyTool], context: ToolContext,
                            can_use_tool: CanUseTool | None,
                            signal: AbortSignal) -> tuple[list[AnyTool], list[Notice]] | None:
    """``tools`` and every source's, with the sources' notices; None when Stop came first."""
    task = asyncio.ensure_future(_load_all(sources, context, can_use_tool))

    def stop() -> None:
        task.cancel()

    remove = signal.add_listener(stop)
    try:
        found, notices = await task
    except asyncio.CancelledError:
        if signal.aborted and task.cancelled():
            return None
        raise
    finally:
        remove()
    names = {t.name for t in tools}
    offered = list(tools)
    for tool in found:
        if tool.name in names:
            notices.append(Notice("tool_name_taken", f"The tool {tool.name} is offered once (another tool has "
                                                     "that name)."))
            continue
        names.add(tool.name)
        offered.append(tool)
    return offered, notices


async def _load_all(sources: list[ToolSource], context: ToolContext,
                    can_use_tool: CanUseTool | None) -> tuple[list[AnyTool], list[Notice]]:
    found: list[AnyTool] = []
    notices: list[Notice] = []
    for source in sources:
        try:
            tools, said = await source.load_tools(context, can_use_tool)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a source's bug must not end the run: its tools are missing, and it says so
            log.debug("%s.load_tools failed", type(source).__name__, exc_info=True)
            notices.append(Notice("tool_source_failed", f"Some tools could not be loaded: {type(exc).__name__}: {exc}"))
            continue
        found.extend(tools)
        notices.extend(said)
    return found, notices
