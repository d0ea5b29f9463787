"""Turn a :class:`~jupyter_agent.loop.model_protocol.ModelRequest` into SDK parameters.

Prompt caching: ``cache_control: {"type": "ephemeral"}`` goes on the last system block
and on the last content block of the last message (as Claude Code does; never on
tools). The caller's lists and dicts are never mutated: only the few dicts that gain a
marker are copied, the rest of the history is passed by reference (the SDK only reads
it), so the loop's history stays byte-stable from one request to the next.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Mapping, Sequence

from ..loop.messages import sendable, sendable_messages
from ..loop.model_protocol import ModelRequest
from ..loop.wire import JSONObject, ThinkingConfig

__all__ = ["build_params", "with_cache_control", "EPHEMERAL", "MAX_BREAKPOINTS"]

EPHEMERAL = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4
# The API refuses cache_control on these (and on empty text blocks).
_UNCACHEABLE = {"thinking", "redacted_thinking"}


def _cacheable(block: Any) -> bool:
    if not isinstance(block, dict) or block.get("type") in _UNCACHEABLE:
        return False
    return not (block.get("type") == "text" and not block.get("text"))


def _count(blocks: list[Any]) -> int:
    # A plain loop: it runs over every block of the history on every request.
    found = 0
    for block in blocks:
        if isinstance(block, dict) and "cache_control" in block:
            found += 1
    return found


def _mark_last(blocks: list[Any]) -> list[Any] | None:
    """A copy of ``blocks`` with the last cacheable block marked, or None if none is
    (or one already carries a marker at that spot)."""
    for i in range(len(blocks) - 1, -1, -1):
        if _cacheable(blocks[i]):
            if "cache_control" in blocks[i]:
                return None
            out = list(blocks)
            out[i] = {**blocks[i], "cache_control": dict(EPHEMERAL)}
            return out
    return None


def with_cache_control(messages: Sequence[Mapping[str, Any]], system: Sequence[Mapping[str, Any]] | str | None,
                       tools: Sequence[Mapping[str, Any]] | None = None,
                       ) -> tuple[list[Mapping[str, Any]], list[Any]]:
    """``(messages, system)`` copies with the two cache markers added (at most 4 in all)."""
    sys_blocks: list[Any] = ([{"type": "text", "text": system}] if isinstance(system, str) and system
                             else list(system or []))
    msgs = list(messages)
    used = _count(list(tools or [])) + _count(sys_blocks)
    for m in msgs:
        c = m.get("content")
        if isinstance(c, list):
            used += _count(c)
    if msgs and used < MAX_BREAKPOINTS:
        last = msgs[-1]
        content = last.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        marked = _mark_last(blocks)
        if marked is not None:
            msgs[-1] = {**last, "content": marked}
            used += 1
    if sys_blocks and used < MAX_BREAKPOINTS:
        sys_blocks = _mark_last(sys_blocks) or sys_blocks
    return msgs, sys_blocks


def build_params(request: ModelRequest, *, max_tokens: int, thinking: ThinkingConfig | None) -> JSONObject:
    """Keyword arguments for ``client.messages.create`` (without ``model``/``stream``).

    Order matters for nothing on the wire but reads as the API's cache order: tools,
    system, messages. ``request.extra`` goes through ``extra_body`` untouched.

    This is the one place every request is built, so it is where the history is made
    sendable: a lone surrogate anywhere (a tool result, a model's own tool input, a
    system prompt) becomes U+FFFD instead of failing this request and every later one.
    """
    messages, system = with_cache_control(sendable_messages(request.messages), sendable(request.system),
                                          request.tools)
    params: dict[str, Any] = {"max_tokens": max_tokens}
    if request.tools:
        params["tools"] = sendable(list(request.tools))
    if system:
        params["system"] = system
    params["messages"] = messages
    if thinking := fitted_thinking(thinking, max_tokens):
        params["thinking"] = thinking
    if request.extra:
        params["extra_body"] = dict(request.extra)
    return params


#: The API's smallest extended-thinking budget (``budget_tokens``).
MIN_THINKING_BUDGET = 1024


def fitted_thinking(thinking: ThinkingConfig | None, max_tokens: int) -> ThinkingConfig | None:
    """``thinking`` as a request of ``max_tokens`` can carry it: the API wants an enabled
    budget under ``max_tokens`` and at least 1,024. A ``max_tokens`` lowered to fit a small
    window lowers the budget with it; under the minimum, the request goes without thinking
    (one answer without it beats a refused request)."""
    if not thinking:
        return None
    fitted = thinking.copy()
    budget = fitted.get("budget_tokens")
    if fitted.get("type") == "enabled" and isinstance(budget, int) and budget >= max_tokens:
        if max_tokens - 1 < MIN_THINKING_BUDGET:
            return None
        fitted["budget_tokens"] = max_tokens - 1
    return fitted
