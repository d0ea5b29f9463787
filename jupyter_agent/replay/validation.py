"""What the real Messages API rejects with HTTP 400 (and what a server that lacks a feature
rejects), and how it counts tokens and cache hits.

Pure functions and one small class; no HTTP here. The fake server uses them so a test
sees the same 400 a user would get from the real API (the orphan ``tool_use`` one has
broken many agents), and plausible ``usage`` numbers including prompt caching.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from typing import Any

__all__ = ["validate_request", "unsupported_feature", "CacheEmulator", "estimate_tokens", "prompt_tokens",
           "MAX_CACHE_BREAKPOINTS"]

MAX_CACHE_BREAKPOINTS = 4
# The real API always bills a few uncached tokens (message framing) even on a full hit.
FRAMING_TOKENS = 3

_TOOL_USE_MSG = ("messages.{n}: `tool_use` ids were found without `tool_result` blocks immediately "
                 "after: {ids}. Each `tool_use` block must have a corresponding `tool_result` block "
                 "in the next message.")
_UNEXPECTED_MSG = ("messages.{n}.content.{k}: unexpected `tool_use_id` found in `tool_result` blocks: "
                   "{id}. Each `tool_result` block must have a corresponding `tool_use` block in the "
                   "previous message.")


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


def _count_cache_control(body: dict[str, Any]) -> int:
    n = sum(1 for t in body.get("tools") or [] if isinstance(t, dict) and "cache_control" in t)
    system = body.get("system")
    if isinstance(system, list):
        n += sum(1 for b in system if isinstance(b, dict) and "cache_control" in b)
    for m in body.get("messages") or []:
        if isinstance(m, dict):
            n += sum(1 for b in _blocks(m.get("content")) if isinstance(b, dict) and "cache_control" in b)
    return n


#: The API's smallest extended-thinking budget.
MIN_THINKING_BUDGET = 1024


def validate_request(body: Any) -> str | None:
    """The API's 400 ``invalid_request_error`` message for ``body``, or None if it would pass.

    Checks the shapes that matter to an agent loop: required fields, an extended-thinking
    budget under ``max_tokens``, roles, empty content, ``tool_use``/``tool_result`` pairing
    by id between consecutive messages, and the limit of 4 ``cache_control`` breakpoints.
    The first problem found is reported.
    """
    if not isinstance(body, dict):
        return "Request body must be a JSON object"
    for name in ("model", "max_tokens", "messages"):
        if name not in body:
            return f"{name}: Field required"
    if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
        return "max_tokens: Input should be a valid integer greater than or equal to 1"
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or budget < MIN_THINKING_BUDGET:
            return f"thinking.enabled.budget_tokens: Input should be greater than or equal to {MIN_THINKING_BUDGET}"
        if body["max_tokens"] <= budget:
            return "`max_tokens` must be greater than `thinking.budget_tokens`"
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
    if messages[0]["role"] != "user":
        return 'messages: first message must use the "user" role'
    last = len(messages) - 1
    for i, m in enumerate(messages):
        content = m.get("content")
        if not _blocks(content) and not (i == last and m["role"] == "assistant"):
            return (f"messages.{i}: all messages must have non-empty content except for the "
                    "optional final assistant message")
        if not isinstance(content, (str, list)):
            return f"messages.{i}.content: Input should be a valid string or list"

    for i, m in enumerate(messages):
        blocks = _blocks(m.get("content"))
        if m["role"] == "assistant":
            ids = [b.get("id") for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
            if not ids:
                continue
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            answered: set[str] = set()
            if nxt is not None and nxt["role"] == "user":
                answered = {str(b.get("tool_use_id")) for b in _blocks(nxt.get("content"))
                            if isinstance(b, dict) and b.get("type") == "tool_result"}
            missing = [x for x in ids if x not in answered]
            if missing:
                # The real API names the message where the results were expected.
                n = i + 1 if nxt is not None else i
                return _TOOL_USE_MSG.format(n=n, ids=", ".join(str(x) for x in missing))
        else:
            prev = messages[i - 1] if i > 0 else None
            prev_ids: set[str] = set()
            if prev is not None and prev["role"] == "assistant":
                prev_ids = {str(b.get("id")) for b in _blocks(prev.get("content"))
                            if isinstance(b, dict) and b.get("type") == "tool_use"}
            for k, b in enumerate(blocks):
                if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") not in prev_ids:
                    return _UNEXPECTED_MSG.format(n=i, k=k, id=b.get("tool_use_id"))

    found = _count_cache_control(body)
    if found > MAX_CACHE_BREAKPOINTS:
        return f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found {found}."
    return None


def unsupported_feature(body: Any, unsupported: tuple[str, ...]) -> str | None:
    """The 400 message of a server without one of the features ``body`` uses (of
    ``thinking``, ``tool_choice``, ``image``, ``cache_control``), or None."""
    for feature in unsupported:
        if _uses(body, feature):
            return f"{feature}: not supported by this server"
    return None


def _uses(body: Any, feature: str) -> bool:
    if not isinstance(body, dict):
        return False
    if feature in ("thinking", "tool_choice"):
        return feature in body
    blocks = [b for m in body.get("messages") or [] if isinstance(m.get("content"), list) for b in m["content"]]
    blocks += [r for b in blocks if b.get("type") == "tool_result" and isinstance(b.get("content"), list)
               for r in b["content"]]
    if feature == "image":
        return any(b.get("type") == "image" for b in blocks)
    system: list[Any] = body["system"] if isinstance(body.get("system"), list) else []
    return any("cache_control" in b for b in [*blocks, *system, *(body.get("tools") or [])])


def estimate_tokens(obj: Any) -> int:
    """About four characters of JSON per token: plausible, deterministic, cheap."""
    s = obj if isinstance(obj, str) else json.dumps(obj, sort_keys=True, separators=(",", ":"))
    return max(1, math.ceil(len(s) / 4))


def prompt_tokens(body: dict[str, Any]) -> int:
    """The prompt's size as ``usage`` reports it (input + cache write + cache read)."""
    return max(sum(estimate_tokens(seg["v"]) for seg, _ in _segments(body)), 1) + FRAMING_TOKENS


def _segments(body: dict[str, Any]) -> list[tuple[dict[str, Any], bool]]:
    """The request in the API's cache order (tools, system, messages), one entry per
    tool/block, each with ``cache_control`` removed and a flag saying it carried one."""
    out: list[tuple[dict[str, Any], bool]] = []

    def add(kind: str, obj: Any) -> None:
        if isinstance(obj, dict):
            marked = "cache_control" in obj
            clean = {k: v for k, v in obj.items() if k != "cache_control"}
        else:
            marked, clean = False, obj
        out.append(({"at": kind, "v": clean}, marked))

    for t in body.get("tools") or []:
        add("tool", t)
    system = body.get("system")
    for b in _blocks(system) if system else []:
        add("system", b)
    for m in body.get("messages") or []:
        for b in _blocks(m.get("content")):
            add(m.get("role", "?"), b)
    return out


class CacheEmulator:
    """Prompt caching as the API reports it, with a remembered set of cached prefixes.

    Each ``cache_control`` marker writes the request prefix up to and including that
    block; a later request reads the longest remembered prefix it shares, found at a
    block boundary up to ``lookback`` blocks before one of its own markers (the API's
    20-block lookback). Prefixes under ``min_tokens`` are not cached (the real minimum
    is 1024 tokens for Sonnet; tests default to 0 so small requests cache too).
    """

    def __init__(self, *, min_tokens: int = 0, lookback: int = 20) -> None:
        self.min_tokens = min_tokens
        self.lookback = lookback
        self._store: dict[str, int] = {}
        self._lock = threading.Lock()

    def usage_for(self, body: dict[str, Any]) -> dict[str, int]:
        """``input_tokens``, ``cache_creation_input_tokens``, ``cache_read_input_tokens``."""
        segs = _segments(body)
        h = hashlib.sha256(str(body.get("model")).encode())
        hashes: list[str] = []
        cum: list[int] = []
        total = 0
        for seg, _ in segs:
            h.update(json.dumps(seg, sort_keys=True, separators=(",", ":")).encode())
            hashes.append(h.copy().hexdigest())
            total += estimate_tokens(seg["v"])
            cum.append(total)
        total = max(total, 1)
        marks = [i for i, (_, marked) in enumerate(segs) if marked]
        if not marks:
            return {"input_tokens": total + FRAMING_TOKENS, "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0}
        with self._lock:
            read_pos = -1
            for bp in marks:
                for p in range(bp, max(-1, bp - self.lookback), -1):
                    if hashes[p] in self._store:
                        read_pos = max(read_pos, p)
                        break
            last = marks[-1]
            cache_read = cum[read_pos] if read_pos >= 0 else 0
            creation = 0
            if last > read_pos and cum[last] >= self.min_tokens:
                creation = cum[last] - cache_read
            for bp in marks:
                if cum[bp] >= self.min_tokens:
                    self._store[hashes[bp]] = cum[bp]
        return {"input_tokens": total - cache_read - creation + FRAMING_TOKENS,
                "cache_creation_input_tokens": creation, "cache_read_input_tokens": cache_read}
