"""jupyter-agent: a Jupyter-native coding agent (Claude's tool-using loop, in your notebook).

Public API: :func:`query` (one run of the loop), :class:`Conversation` (several runs
sharing a history), :class:`AgentOptions` (their options), :func:`compact` (summarise a
history), the loop's types, and ``%load_ext jupyter_agent`` (the ``%%agent`` magic).
Importing this package does not import ``anthropic`` or ``ipywidgets``.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what a type checker sees: each lazily exported name as its real type
    from .agent import compact, query
    from .conversation import Conversation
    from .errors import Busy, JupyterAgentError, Refused
    from .loop.events import (
        AssistantMessage, Checkpoint, Compaction, ContextUsage, LoopEvent, ModelFallback, ModelRetry, Notice,
        RequestStart, StreamEvent, ToolProgress, ToolResult, ToolStart, UserMessage,
    )
    from .loop.hooks import HookResult, Hooks
    from .loop.model_protocol import Model, ModelError, ModelRequest
    from .loop.permission_result import PermissionAllow, PermissionAsk, PermissionDeny
    from .loop.query import query_loop
    from .loop.run import QueryRun
    from .loop.state import State, Terminal, TerminalReason, Transition, TransitionReason
    from .loop.usage import Usage
    from .model.providers import Provider, ProviderSettings
    from .options import AgentOptions

# Names are imported on first use, so `%load_ext jupyter_agent` stays fast (pydantic,
# the loop and the tools load when a run starts, anthropic when a model is first used).
_EXPORTS = {
    "Conversation": ".conversation", "Busy": ".errors", "JupyterAgentError": ".errors", "Refused": ".errors",
    "query": ".agent", "compact": ".agent", "AgentOptions": ".options", "query_loop": ".loop.query",
    "QueryRun": ".loop.run",
    "State": ".loop.state", "Terminal": ".loop.state", "TerminalReason": ".loop.state",
    "Transition": ".loop.state", "TransitionReason": ".loop.state", "Usage": ".loop.usage",
    "HookResult": ".loop.hooks", "Hooks": ".loop.hooks",
    "Model": ".loop.model_protocol", "ModelError": ".loop.model_protocol",
    "ModelRequest": ".loop.model_protocol",
    "PermissionAllow": ".loop.permission_result", "PermissionAsk": ".loop.permission_result",
    "PermissionDeny": ".loop.permission_result",
    "Provider": ".model.providers", "ProviderSettings": ".model.providers",
    **{name: ".loop.events" for name in (
        "AssistantMessage", "Checkpoint", "Compaction", "ContextUsage", "LoopEvent", "ModelFallback", "ModelRetry",
        "Notice",
        "RequestStart", "StreamEvent", "ToolProgress", "ToolResult", "ToolStart", "UserMessage")},
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'jupyter_agent' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__version__ = "0.1.0"

__all__ = [
    "AgentOptions", "AssistantMessage", "Busy", "Checkpoint", "Compaction", "ContextUsage", "Conversation",
    "HookResult", "Hooks", "JupyterAgentError", "LoopEvent", "Model", "ModelError", "ModelFallback", "ModelRequest",
    "ModelRetry", "Notice", "PermissionAllow", "PermissionAsk", "PermissionDeny", "Provider",
    "ProviderSettings", "QueryRun", "Refused", "RequestStart", "State", "StreamEvent", "Terminal",
    "TerminalReason", "ToolProgress", "ToolResult", "ToolStart", "Transition", "TransitionReason", "Usage",
    "UserMessage", "chat", "compact", "load_ipython_extension", "query", "query_loop", "unload_ipython_extension",
]


def load_ipython_extension(ipython):  # noqa: D103 - `%load_ext jupyter_agent`
    from .jupyter.magic.agent_magic import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython):  # noqa: D103 - `%unload_ext jupyter_agent`
    from .jupyter.magic.agent_magic import unload_ipython_extension as unload

    unload(ipython)


def chat(*args, **kwargs):
    """Show the multi-turn chat widget in the notebook (see ``jupyter_agent.jupyter.magic.chat``)."""
    from .jupyter.kernel import warmup

    warmup.wait()  # after `%load_ext`: join the background imports rather than race them
    from .jupyter.magic.chat import chat as show_chat

    return show_chat(*args, **kwargs)
