"""Hooks: user code the loop calls before and after each tool, and before it stops.

A hook is a plain or async callable returning a :class:`HookResult` or ``None``
(no opinion). Three kinds, as in Claude Code:

- ``PreToolUse(tool_name, input, context)``: may deny the call, change its input,
  approve it without asking, or stop the run (``hook_stopped``).
- ``PostToolUse(tool_name, input, result, context)``: may replace the result the model
  sees, or stop the run. ``result`` is a :class:`ToolCallResult`.
- ``Stop(stop_input)``: called when the model gave a final answer. ``decision="block"``
  with a ``message`` sends the message back to the model and the loop goes on
  (``stop_hook_blocking``); ``stop=True`` ends the run as ``stop_hook_prevented``.
- ``PreCompact(compact_input)``: called before the history is summarised. A ``message``
  is added to the summary's instructions (what to keep); ``decision="deny"`` (or
  ``stop=True``) vetoes the compaction, with ``message`` saying why.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Literal
from collections.abc import Awaitable, Callable

from .wire import JSONObject, Message, ToolOutputContent

#: A hook: called with what its kind sees, it answers now or when awaited (None: no opinion).
Hook = Callable[..., "HookResult | None | Awaitable[HookResult | None]"]


@dataclass(frozen=True)
class HookResult:
    """What a hook wants. Leave a field at its default to have no opinion on it."""

    decision: Literal["allow", "deny", "block"] | None = None
    message: str | None = None
    updated_input: JSONObject | None = None
    updated_output: ToolOutputContent | None = None
    stop: bool = False


@dataclass(frozen=True)
class ToolCallResult:
    """The result a PostToolUse hook sees."""

    content: ToolOutputContent
    is_error: bool


@dataclass(frozen=True)
class StopHookInput:
    """What a Stop hook sees: the final answer, the history, and whether the loop is
    already continuing because of a Stop hook (so a hook can avoid looping forever)."""

    last_assistant_text: str
    messages: tuple[Message, ...]
    stop_hook_active: bool


@dataclass(frozen=True)
class PreCompactInput:
    """What a PreCompact hook sees: why the compaction runs (``auto``, ``reactive``,
    ``manual``), the instructions given so far, and the history about to be summarised."""

    trigger: str
    instructions: str
    messages: tuple[Message, ...]


@dataclass
class Hooks:
    """The hooks of one run, by kind."""

    pre_tool_use: list[Hook] = field(default_factory=list)
    post_tool_use: list[Hook] = field(default_factory=list)
    stop: list[Hook] = field(default_factory=list)
    pre_compact: list[Hook] = field(default_factory=list)

    @classmethod
    def coerce(cls, hooks: Hooks | dict[str, list[Hook]] | None) -> Hooks:
        """Accept a ``Hooks`` or a dict keyed ``PreToolUse`` / ``PostToolUse`` / ``Stop`` /
        ``PreCompact``."""
        if hooks is None:
            return cls()
        if isinstance(hooks, Hooks):
            return hooks
        known = {"PreToolUse": "pre_tool_use", "PostToolUse": "post_tool_use", "Stop": "stop",
                 "PreCompact": "pre_compact"}
        unknown = set(hooks) - set(known)
        if unknown:
            raise ValueError(
                f"Unknown hook kind(s) {sorted(unknown)}: use PreToolUse, PostToolUse, Stop or PreCompact."
            )
        return cls(**{known[k]: list(v) for k, v in hooks.items()})


async def call_hook(hook: Hook, *args: object) -> HookResult | None:
    """Call a sync or async hook; anything but a HookResult/None is a programming error."""
    result = hook(*args)
    if inspect.isawaitable(result):
        result = await result
    if result is not None and not isinstance(result, HookResult):
        raise TypeError(f"hook {hook!r} returned {type(result).__name__}; return a HookResult or None")
    return result
