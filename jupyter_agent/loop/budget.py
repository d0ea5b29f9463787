"""The per-message budget for tool results (part of building ``messages_for_query``).

One tool's output is already capped when it runs (``Tool.max_result_size_chars``).
This keeps one *turn's* results bounded too: when the results in one user message
add up to more than the budget, the largest are replaced by a short note (a lone result
is left to its own cap). The budget is set from the context window (``ContextBudget``). The choice
is made once per ``tool_use_id`` and remembered, so every later request carries the
same bytes for that result and the prompt cache keeps hitting.
"""

from __future__ import annotations

import json
from .identity_memo import IdentityMemo
from .wire import ContentBlock, Message, ToolResultBlock, ToolResultContent, is_tool_result

DEFAULT_MESSAGE_BUDGET_CHARS = 200_000


def _size(content: ToolResultContent | None) -> int:
    """Characters of text. An image or document (PDF) counts without its base64 data:
    the tool that made it bounds it already (Read: bytes, pages), and as text it would
    always look oversized and be left out."""
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(_size(b) if isinstance(b, str) else len(json.dumps(_without_media_data(b))) for b in content)
    return len(json.dumps(content))


def _without_media_data(block: object) -> object:
    """``block`` as measured: an image's or a document's base64 data left out."""
    if not isinstance(block, dict):
        return block
    source = block.get("source")
    if block.get("type") in ("image", "document") and isinstance(source, dict) and "data" in source:
        return {**block, "source": {**source, "data": ""}}
    return block


class ToolResultBudget:
    """Remembers, per ``tool_use_id``, whether its result was replaced."""

    def __init__(self, max_chars_per_message: int = DEFAULT_MESSAGE_BUDGET_CHARS) -> None:
        self.max_chars_per_message = max_chars_per_message
        self._replaced: dict[str, str | None] = {}
        # A message's results are decided once, so its budgeted form never changes.
        self._applied: IdentityMemo[Message] = IdentityMemo()

    def apply(self, messages: list[Message]) -> list[Message]:
        out: list[Message] = []
        for message in messages:
            known = self._applied.get(message)
            if known is None:
                known = self._applied.put((message,), self._apply_one(message)
                                          if message.get("role") == "user" else message)
            out.append(known)
        return out

    def _apply_one(self, message: Message) -> Message:
        content = message.get("content")
        if not isinstance(content, list):
            return message
        results = [b for b in content if is_tool_result(b)]
        if not results:
            return message
        undecided = [b for b in results if b["tool_use_id"] not in self._replaced]
        if undecided:
            self._decide(results)
        if not any(self._replaced.get(b["tool_use_id"]) for b in results):
            return message
        new_content: list[ContentBlock] = []
        for block in content:
            note = self._replaced.get(block["tool_use_id"]) if is_tool_result(block) else None
            new_content.append({**block, "content": note} if note and is_tool_result(block) else block)
        return {**message, "content": new_content}

    def _decide(self, results: list[ToolResultBlock]) -> None:
        if len(results) == 1:
            # one result alone is bounded when it runs (its tool's cap, and the window's: the
            # budget may shrink after it ran, as the run learns the API's token count)
            self._replaced[results[0]["tool_use_id"]] = None
            return
        total = sum(_size(b.get("content")) for b in results)
        for block in sorted(results, key=lambda b: _size(b.get("content")), reverse=True):
            tool_use_id = block["tool_use_id"]
            if tool_use_id in self._replaced:
                continue
            if total > self.max_chars_per_message:
                size = _size(block.get("content"))
                self._replaced[tool_use_id] = (
                    f"[This result ({size} characters) was left out to keep this turn's tool "
                    "results within budget. Run the tool again with a narrower request.]"
                )
                total -= size
            else:
                self._replaced[tool_use_id] = None
