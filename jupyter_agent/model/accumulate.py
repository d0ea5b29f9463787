"""Accumulate streamed Messages-API events into the assistant message, as plain dicts.

Pure: no ``anthropic`` import, no I/O. Each event updates one live ``snapshot`` dict (the
same object throughout, so a widget holding it sees it grow) and yields the
:class:`~jupyter_agent.loop.events.StreamEvent` for it. Blocks are kept exactly as they
came on the wire; unknown block types are kept untouched (they must go back to the API
unchanged) and unknown event or delta types pass through without changing anything.
"""

from __future__ import annotations

import json
from typing import Any, cast

from ..loop.events import StreamEvent
from ..loop.messages import INVALID_INPUT_KEY
from ..loop.wire import Message, MessageSnapshot

__all__ = ["MessageAccumulator"]


class MessageAccumulator:
    """Builds the assistant message from the raw event dicts of one streaming response.

    ``feed(type, data)`` returns the ``StreamEvent``. ``done`` is True once
    ``message_stop`` arrived; a response without it was cut and must not be used.
    Tool input arrives as ``input_json_delta`` fragments: they are joined and parsed
    when the block stops (until then the block's ``input`` stays ``{}``). Input that is
    not a JSON object leaves ``input`` as ``{}`` and the text under
    :data:`~jupyter_agent.loop.messages.INVALID_INPUT_KEY`: the loop answers that call
    with an error instead of running it with ``{}``.
    """

    def __init__(self) -> None:
        self.snapshot: dict[str, Any] = {"role": "assistant", "content": []}
        self.done = False
        self._json: dict[int, list[str]] = {}

    @property
    def content(self) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = self.snapshot["content"]
        return content

    @property
    def stop_reason(self) -> str | None:
        return self.snapshot.get("stop_reason")

    @property
    def usage(self) -> dict[str, Any]:
        return self.snapshot.get("usage") or {}

    def feed(self, type: str, data: dict[str, Any]) -> StreamEvent:  # noqa: A002 - the API's word
        """Apply one event (its SSE name and parsed ``data``) and describe it."""
        handler = getattr(self, "_on_" + type, None) if type.isidentifier() else None
        index, delta = handler(data) if handler else (data.get("index"), data)
        return StreamEvent(type=type, index=index, delta=delta, snapshot=self.wire_snapshot)

    @property
    def wire_snapshot(self) -> MessageSnapshot:
        """The snapshot as the loop reads it: the API's JSON, in the shapes the API documents
        (blocks of unknown types are kept as they came)."""
        return cast(MessageSnapshot, self.snapshot)

    def message(self) -> Message:
        """The finished message in history form: ``{"role": "assistant", "content": [...]}``."""
        return cast(Message, {"role": "assistant", "content": list(self.content)})

    # -- one method per known event type -------------------------------------------------------
    def _on_message_start(self, data: dict[str, Any]) -> tuple[int | None, Any]:
        message = dict(data.get("message") or {})
        content = message.pop("content", None) or []
        self.snapshot.update(message)
        self.snapshot["role"] = "assistant"
        self.snapshot["usage"] = dict(message.get("usage") or {})
        self.content.extend(dict(b) for b in content)
        return None, data.get("message")

    def _block(self, index: Any) -> dict[str, Any] | None:
        if isinstance(index, int) and 0 <= index < len(self.content):
            return self.content[index]
        return None

    def _on_content_block_start(self, data: dict[str, Any]) -> tuple[int | None, Any]:
        index = data.get("index")
        block = dict(data.get("content_block") or {})
        if isinstance(index, int) and index < len(self.content):
            self.content[index] = block
        else:
            self.content.append(block)
            index = len(self.content) - 1
        return index, data.get("content_block")

    def _on_content_block_delta(self, data: dict[str, Any]) -> tuple[int | None, Any]:
        index = data.get("index")
        delta = data.get("delta") or {}
        block = self._block(index)
        kind = delta.get("type")
        if block is None:
            return index, delta
        if kind == "text_delta":
            block["text"] = block.get("text", "") + delta.get("text", "")
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
        elif kind == "signature_delta":
            block["signature"] = delta.get("signature", "")
        elif kind == "input_json_delta" and index is not None:
            self._json.setdefault(index, []).append(delta.get("partial_json", ""))
        elif kind == "citations_delta":
            block.setdefault("citations", [])
            if block["citations"] is None:
                block["citations"] = []
            block["citations"].append(delta.get("citation"))
        # any other delta type: unknown semantics, leave the block as it came
        return index, delta

    def _on_content_block_stop(self, data: dict[str, Any]) -> tuple[int | None, Any]:
        index = data.get("index")
        parts = self._json.pop(index, None) if index is not None else None
        block = self._block(index)
        if parts is not None and block is not None:
            raw = "".join(parts)
            try:
                parsed = json.loads(raw) if raw.strip() else {}
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                block["input"] = parsed
            else:
                # {} keeps the block sendable back to the API; the mark keeps the call from running.
                block["input"] = {}
                block[INVALID_INPUT_KEY] = raw
        return index, None

    def _on_message_delta(self, data: dict[str, Any]) -> tuple[int | None, Any]:
        delta = data.get("delta") or {}
        for key, value in delta.items():
            self.snapshot[key] = value
        usage = data.get("usage") or {}
        self.snapshot.setdefault("usage", {}).update({k: v for k, v in usage.items() if v is not None})
        return None, delta

    def _on_message_stop(self, data: dict[str, Any]) -> tuple[int | None, Any]:
        self.done = True
        return None, None
