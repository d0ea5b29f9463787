"""Turn a scripted response into the exact event sequence the Messages API streams.

Order, as the API sends it: ``message_start`` (with usage), then per block
``content_block_start`` / deltas / ``content_block_stop`` (a ``ping`` right after the
first block starts), then ``message_delta`` (stop_reason, output usage) and
``message_stop``. Tool input goes out as ``input_json_delta`` fragments, the first one
``""``; a thinking block ends with one ``signature_delta``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .script import Pause, ScriptedResponse
from .validation import estimate_tokens

__all__ = ["build_events", "encode_event", "final_message", "Event"]

Event = tuple[str, dict[str, Any]] | Pause


def _chunks(s: str, n: int) -> list[str]:
    return [s[i:i + n] for i in range(0, len(s), n)] or [""]


def _block_events(index: int, block: dict[str, Any], chunk: int) -> Iterator[tuple[str, dict[str, Any]]]:
    kind = block.get("type")

    def start(cb: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return "content_block_start", {"type": "content_block_start", "index": index, "content_block": cb}

    def delta(d: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return "content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}

    if kind == "text":
        yield start({"type": "text", "text": ""})
        for piece in _chunks(block.get("text", ""), chunk):
            yield delta({"type": "text_delta", "text": piece})
    elif kind == "thinking":
        yield start({"type": "thinking", "thinking": ""})
        for piece in _chunks(block.get("thinking", ""), chunk):
            yield delta({"type": "thinking_delta", "thinking": piece})
        yield delta({"type": "signature_delta", "signature": block.get("signature", "")})
    elif kind == "tool_use":
        yield start({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}})
        # The real API's first fragment is always the empty string.
        yield delta({"type": "input_json_delta", "partial_json": ""})
        payload = json.dumps(block.get("input") or {}) if block.get("input") else ""
        if payload:
            for piece in _chunks(payload, max(1, chunk // 2)):
                yield delta({"type": "input_json_delta", "partial_json": piece})
    else:
        yield start(dict(block))
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def output_tokens(resp: ScriptedResponse) -> int:
    return max(1, sum(estimate_tokens(b) for b in resp.content))


def build_events(resp: ScriptedResponse, *, model: str, message_id: str,
                 usage: dict[str, int]) -> list[Event]:
    """The full event list (and pauses) for ``resp``; ``usage`` is the input-side usage."""
    start_usage = {**usage, "output_tokens": 1}
    final_usage = {"output_tokens": output_tokens(resp)}
    if resp.usage:
        start_usage.update({k: v for k, v in resp.usage.items() if k != "output_tokens"})
        if "output_tokens" in resp.usage:
            final_usage["output_tokens"] = resp.usage["output_tokens"]
    events: list[Event] = [("message_start", {"type": "message_start", "message": {
        "id": message_id, "type": "message", "role": "assistant", "model": resp.model or model,
        "content": [], "stop_reason": None, "stop_sequence": None, "usage": start_usage}})]
    index = 0
    for b in resp.blocks:
        if isinstance(b, Pause):
            events.append(b)
            continue
        for j, ev in enumerate(_block_events(index, b, resp.chunk_chars)):
            events.append(ev)
            if index == 0 and j == 0:
                events.append(("ping", {"type": "ping"}))
        index += 1
    if index == 0:
        events.append(("ping", {"type": "ping"}))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": resp.effective_stop_reason, "stop_sequence": None},
                                     "usage": final_usage}))
    events.append(("message_stop", {"type": "message_stop"}))
    # Unknown event types: a bare dict goes right after message_start, (n, dict) before
    # event n of the normal sequence (counting only events, not pauses).
    positioned = sorted(((e[0], e[1]) if isinstance(e, tuple) else (1, e) for e in resp.extra_events),
                        key=lambda p: p[0], reverse=True)
    for n, ev in positioned:
        seen, at = 0, len(events)
        for k, item in enumerate(events):
            if not isinstance(item, Pause):
                if seen == n:
                    at = k
                    break
                seen += 1
        events.insert(at, (ev.get("type", "unknown"), dict(ev)))
    return events


def encode_event(name: str, data: dict[str, Any]) -> bytes:
    """One SSE event as the API writes it: an ``event:`` line, a ``data:`` line, a blank line."""
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def final_message(resp: ScriptedResponse, *, model: str, message_id: str, usage: dict[str, int]) -> dict[str, Any]:
    """The non-streaming (``stream: false``) JSON body for ``resp``."""
    u = {**usage, "output_tokens": output_tokens(resp)}
    if resp.usage:
        u.update(resp.usage)
    return {"id": message_id, "type": "message", "role": "assistant", "model": resp.model or model,
            "content": resp.content, "stop_reason": resp.effective_stop_reason, "stop_sequence": None,
            "usage": u}
