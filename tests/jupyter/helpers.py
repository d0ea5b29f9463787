"""Hand-made event sequences, built the way the model layer builds them (through the
real accumulator), and a comm that records what widgets send."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from collections.abc import Iterator
from typing import Any

import comm
from comm.base_comm import BaseComm

from jupyter_agent.loop.events import AssistantMessage, StreamEvent
from jupyter_agent.loop.usage import Usage
from jupyter_agent.model.accumulate import MessageAccumulator


def raw_events(blocks: list[dict[str, Any]], chunk: int = 4, usage: dict | None = None) -> list[tuple[str, dict]]:
    """The SSE events (name, data) of a response made of ``blocks``."""
    usage = usage or {"input_tokens": 100, "output_tokens": 1}
    out: list[tuple[str, dict]] = [("message_start", {"message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [], "stop_reason": None, "usage": usage}})]
    for i, block in enumerate(blocks):
        kind = block["type"]
        if kind == "text":
            out.append(("content_block_start", {"index": i, "content_block": {"type": "text", "text": ""}}))
            t = block["text"]
            out += [("content_block_delta", {"index": i, "delta": {"type": "text_delta", "text": t[j:j + chunk]}})
                    for j in range(0, len(t), chunk)]
        elif kind == "thinking":
            out.append(("content_block_start", {"index": i, "content_block": {"type": "thinking", "thinking": ""}}))
            t = block["thinking"]
            out += [("content_block_delta",
                     {"index": i, "delta": {"type": "thinking_delta", "thinking": t[j:j + chunk]}})
                    for j in range(0, len(t), chunk)]
        elif kind == "tool_use":
            out.append(("content_block_start", {"index": i, "content_block": {
                "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}}))
            raw = json.dumps(block["input"])
            out.append(("content_block_delta", {"index": i, "delta": {"type": "input_json_delta", "partial_json": ""}}))
            out += [("content_block_delta",
                     {"index": i, "delta": {"type": "input_json_delta", "partial_json": raw[j:j + chunk]}})
                    for j in range(0, len(raw), chunk)]
        else:
            out.append(("content_block_start", {"index": i, "content_block": dict(block)}))
        out.append(("content_block_stop", {"index": i}))
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    out.append(("message_delta", {"delta": {"stop_reason": stop}, "usage": {"output_tokens": 50}}))
    out.append(("message_stop", {}))
    return out


def stream_response(blocks: list[dict[str, Any]], chunk: int = 4, cost: float = 0.001) -> Iterator[Any]:
    """StreamEvents then the AssistantMessage, as the model layer yields them: lazily,
    so each event's live snapshot holds the message *so far* when it is handled."""
    acc = MessageAccumulator()
    for name, data in raw_events(blocks, chunk):
        yield acc.feed(name, data)
    usage = Usage.from_api(acc.usage)
    usage.cost_usd = cost
    yield AssistantMessage(acc.message(), usage, "claude-test", acc.stop_reason, "req_1")


def response_events(blocks: list[dict[str, Any]], chunk: int = 4, cost: float = 0.001) -> list[Any]:
    """:func:`stream_response` as a list; each event keeps a copy of its snapshot."""
    return [replace(e, snapshot=copy.deepcopy(e.snapshot)) if isinstance(e, StreamEvent) else e
            for e in stream_response(blocks, chunk, cost)]


class RecordingComm(BaseComm):
    """A comm that keeps every message a widget would send to the frontend."""

    log: list[dict[str, Any]] = []

    def publish_msg(self, msg_type: str, data: Any = None, metadata: Any = None,
                    buffers: Any = None, **keys: Any) -> None:
        RecordingComm.log.append({"type": msg_type, "comm_id": self.comm_id, "data": data})


def record_widget_messages(monkeypatch) -> list[dict[str, Any]]:
    """Make new widgets use :class:`RecordingComm`; returns the (shared) log."""
    RecordingComm.log = []
    monkeypatch.setattr(comm, "create_comm", lambda *a, **k: RecordingComm(*a, **k))
    return RecordingComm.log


def updates(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The state updates (comm_msg method=update) in a log."""
    return [m for m in log if m["type"] == "comm_msg" and (m["data"] or {}).get("method") == "update"]
