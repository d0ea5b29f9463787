"""The context window the loop works to, the prompt's size, and microcompact.

- :class:`ContextBudget`: the window (from a table of known models, or the caller's
  number) and every budget derived from it (thresholds, the summary's reserve, files read
  again, the user's kept words, tool-result caps, the request's ``max_tokens``).
- :class:`PromptSize`: the prompt's size before each request, from the last response's
  reported usage plus an estimate of what was added since (no extra request).
- :func:`microcompact`: past its threshold, old tool results are replaced by a short
  marker saying what was there and how to get it again; images and large ones first, the
  most recent few kept. No model call, and deterministic: a result once cleared stays
  cleared in the history, so the cached prefix changes only when it must.

See docs/context.md; the summary layer is :mod:`.compaction`.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from collections.abc import Sequence

from .messages import content_blocks
from .tool import AnyTool
from .usage import Usage
from .wire import ContentBlock, Message, ToolResultBlock, ToolUseBlock, is_tool_result, is_tool_use

log = logging.getLogger(__name__)

#: Context windows of known models, by id prefix (the first match wins).
KNOWN_CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    ("claude-", 200_000),
)
DEFAULT_CONTEXT_WINDOW = 200_000
#: Characters per token in estimates (the Messages API's own rule of thumb).
CHARS_PER_TOKEN = 4
#: What an image costs in an estimate (a 1,200-pixel image is about this many tokens).
IMAGE_TOKENS = 1_600
#: Microcompact keeps this many of the latest tool results whole.
KEEP_RECENT_RESULTS = 3
#: A result smaller than this is not worth a marker.
MIN_CLEARED_TOKENS = 100
CLEARED_MARKER = "[Old tool result cleared to keep the context small"
#: The summary's reserve, at most and at least (in a tiny window the fixed part leaves little).
MAX_SUMMARY_TOKENS = 8_192
MIN_SUMMARY_TOKENS = 256
#: One file read again after a compaction, at most.
MAX_REREAD_TOKENS_PER_FILE = 8_000


def window_for_model(model_name: str) -> int:
    """The context window of ``model_name`` from :data:`KNOWN_CONTEXT_WINDOWS`."""
    for prefix, window in KNOWN_CONTEXT_WINDOWS:
        if model_name.startswith(prefix):
            return window
    return DEFAULT_CONTEXT_WINDOW


@dataclass(frozen=True)
class ContextBudget:
    """Every budget of context organisation, derived from the window in this one place
    (all in tokens; docs/context.md has the figures for 8k, 16k, 32k and 200k).

    ``window``: the model's context window. ``max_tokens``: the answer's limit the run
    asks for. ``fixed``: what every request carries besides the history (system prompt,
    tool definitions, user context), estimated once per run. ``density``: the API's
    tokens per estimated token, learned from its usage (at least 1: a tokenizer that
    counts code or another language denser than four characters a token); the budgets
    are in the API's tokens, :meth:`estimated` turns one into the estimate's.

    The window is cut into the answer's room, a margin for estimates (they are
    estimates), and ``compact_at``: past it the history is summarised. What is left of
    ``compact_at`` after the fixed part is ``room``, the conversation's own space; the
    other budgets are fractions of it, so that they scale with the window and a rebuilt
    history (summary, files read again, the user's words) takes at most about 60 % of it,
    leaving the rest for the work that follows.
    """

    window: int
    max_tokens: int = 8192
    fixed: int = 0
    density: float = 1.0

    def estimated(self, tokens: int) -> int:
        """``tokens`` of the API in the estimate's units (what :func:`estimate_tokens` counts)."""
        return int(tokens / self.density)

    def counted(self, estimate: int) -> int:
        """An estimate in the API's tokens."""
        return round(estimate * self.density)

    @property
    def fixed_tokens(self) -> int:
        """The fixed part in the API's tokens."""
        return self.counted(self.fixed)

    @property
    def answer_room(self) -> int:
        """Room kept for the answer: ``min(max_tokens, 20k, window / 4)``."""
        return min(self.max_tokens, 20_000, self.window // 4)

    @property
    def margin(self) -> int:
        """Room kept for the estimates' error: ``min(13k, window / 10)``."""
        return min(13_000, self.window // 10)

    @property
    def compact_at(self) -> int:
        """Past this prompt size the history is summarised."""
        return self.window - self.answer_room - self.margin

    @property
    def room(self) -> int:
        """The conversation's own space: ``compact_at`` less the fixed part."""
        return max(self.compact_at - self.fixed_tokens, 0)

    @property
    def microcompact_at(self) -> int:
        """Past this size old tool results are cleared (the fixed part + 60 % of the room)."""
        return self.fixed_tokens + self.room * 6 // 10

    @property
    def microcompact_target(self) -> int:
        """What clearing old results aims for (the fixed part + half the room)."""
        return self.fixed_tokens + self.room // 2

    @property
    def summary_tokens(self) -> int:
        """The summary's own reserve: the summary request's ``max_tokens``, and what the
        summary may take of the rebuilt history (a fifth of the room, at most 8,192)."""
        return max(min(self.max_tokens, MAX_SUMMARY_TOKENS, self.room // 5), MIN_SUMMARY_TOKENS)

    @property
    def reread_room(self) -> int:
        """How much of the rebuilt history the files read again may take, in all (a sixth of the room)."""
        return self.room // 6

    @property
    def reread_file_tokens(self) -> int:
        """One file read again, at most (half the files' room, at most 8,000)."""
        return min(MAX_REREAD_TOKENS_PER_FILE, self.reread_room // 2)

    @property
    def user_messages_room(self) -> int:
        """How much of the rebuilt history the user's own messages may take (a quarter of
        the room; the latest is kept whatever its size)."""
        return self.room // 4

    @property
    def tool_result_tokens(self) -> int:
        """One tool result, at most (two fifths of the room): a result over it is cut, so
        that it fits beside a rebuilt history."""
        return self.room * 2 // 5

    @property
    def message_results_tokens(self) -> int:
        """One turn's tool results together, at most (three fifths of the room: one result
        within its own cap always fits, even when the density learned after it ran is higher)."""
        return self.room * 3 // 5

    def user_words_fit(self, estimate: int) -> bool:
        """Whether the user's latest message (``estimate``) leaves room to work: with the
        fixed part it must stay under ``compact_at``, since no compaction can shorten it."""
        return self.fixed_tokens + self.counted(estimate) <= self.compact_at

    def request_max_tokens(self, prompt: int) -> int:
        """The request's ``max_tokens`` for a prompt of ``prompt`` tokens: ``max_tokens``,
        less when the prompt and the answer would not fit in the window together (an
        endpoint refuses that, or cuts the answer), never under the answer's room."""
        return min(self.max_tokens, max(self.answer_room, self.window - prompt - self.margin))


def estimate_tokens(value: object) -> int:
    """Tokens of a message, block or list of them: JSON characters / 4, images at a
    fixed price (their base64 data is not what the API counts)."""
    images = 0

    def strip(item: object) -> object:
        nonlocal images
        if isinstance(item, dict):
            source = item.get("source")
            if item.get("type") in ("image", "document") and isinstance(source, dict) and "data" in source:
                images += 1
                return {**item, "source": {**source, "data": ""}}
            return {k: strip(v) for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [strip(v) for v in item]
        return item

    if isinstance(value, str):
        return -(-len(value) // CHARS_PER_TOKEN)
    text = json.dumps(value, ensure_ascii=False)
    if '"base64"' in text:  # (rare) media inside: count it at its price, not its data's length
        text = json.dumps(strip(value), ensure_ascii=False)
    return -(-len(text) // CHARS_PER_TOKEN) + images * IMAGE_TOKENS


class PromptSize:
    """The prompt's size before a request: the last reported size plus what was added.

    ``fixed``: the system prompt and tool definitions (estimated once per run). After a
    response, :meth:`observe` keeps the messages that were sent and the tokens the API
    counted for them; :meth:`estimate` then adds only what follows them (or estimates
    the whole history, if it changed before that point). Estimates are scaled by
    ``density``, the API's count over the estimate of the last prompt (when over 1).
    """

    def __init__(self, fixed: int) -> None:
        self.fixed = fixed
        self._sent: tuple[Message, ...] = ()
        self._reported = 0
        self._estimated = 0  # the estimate of what was sent, to compare with the API's count
        #: The API's tokens per estimated token (at least 1), from the last response's usage.
        self.density = 1.0

    def observe(self, sent: Sequence[Message], usage: Usage) -> None:
        reported = usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens
        if reported:
            grown = self._grown(sent)
            estimated = (self._estimated + estimate_tokens(list(sent[len(self._sent):])) if grown
                         else self.fixed + estimate_tokens(list(sent)))
            self._sent, self._reported, self._estimated = tuple(sent), reported, estimated
            self.density = max(1.0, reported / estimated) if estimated else 1.0

    def estimate(self, messages: Sequence[Message]) -> int:
        if self._grown(messages):
            return self._reported + round(estimate_tokens(list(messages[len(self._sent):])) * self.density)
        return round((self.fixed + estimate_tokens(list(messages))) * self.density)

    def _grown(self, messages: Sequence[Message]) -> bool:
        """``messages`` start with what was sent last (the usual turn: results added)."""
        sent = self._sent
        return bool(sent) and len(messages) >= len(sent) and all(a is b or a == b for a, b in zip(sent, messages))


# -- microcompact -----------------------------------------------------------------------

def microcompact(messages: list[Message], tools_by_name: dict[str, AnyTool], size: int,
                 target: int, *, only_if_enough: bool = True) -> tuple[list[Message], int, int]:
    """Clear old tool results until the estimate ``size`` is at most ``target``.

    Images first, then the largest; ties go to the oldest; the latest
    :data:`KEEP_RECENT_RESULTS` stay. Returns (messages, results cleared, tokens saved);
    messages that did not change are the same objects.

    ``only_if_enough``: clear nothing unless the target is reached. Each clearing changes
    the prompt's prefix (the prompt cache is read again from there on), so it is done in
    one batch that buys room for several turns, never one result per turn; when the latest
    results alone are over the target, the summary is the layer that helps.
    """
    calls = {b["id"]: b for m in messages if m.get("role") == "assistant"
             for b in content_blocks(m) if is_tool_use(b)}
    found: list[tuple[int, int, int, ToolResultBlock]] = []  # (message, block, tokens, block)
    for i, message in enumerate(messages):
        if message.get("role") != "user" or not isinstance(message.get("content"), list):
            continue
        for j, block in enumerate(content_blocks(message)):
            if is_tool_result(block) and not _is_cleared(block):
                found.append((i, j, estimate_tokens(block.get("content")), block))
    candidates = found[:-KEEP_RECENT_RESULTS] if KEEP_RECENT_RESULTS else found
    order = sorted(candidates, key=lambda c: (not _has_image(c[3]), -c[2], c[0], c[1]))
    cleared: dict[tuple[int, int], ContentBlock] = {}
    saved = 0
    for i, j, tokens, block in order:
        if size - saved <= target:
            break
        if tokens < MIN_CLEARED_TOKENS:
            continue
        marker = _cleared_marker(block, calls.get(block["tool_use_id"]), tools_by_name)
        cleared[(i, j)] = {**block, "content": marker}
        saved += tokens - estimate_tokens(marker)
    if not cleared or (only_if_enough and size - saved > target):
        return messages, 0, 0
    out = list(messages)
    for i in sorted({i for i, _ in cleared}):
        content = [cleared.get((i, j), b) for j, b in enumerate(content_blocks(messages[i]))]
        out[i] = {**messages[i], "content": content}
    return out, len(cleared), saved


def _is_cleared(block: ToolResultBlock) -> bool:
    content = block.get("content")
    return isinstance(content, str) and content.startswith(CLEARED_MARKER)


def _has_image(block: ToolResultBlock) -> bool:
    content = block.get("content")
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "image" for b in content)


def _cleared_marker(block: ToolResultBlock, call: ToolUseBlock | None, tools_by_name: dict[str, AnyTool]) -> str:
    name = str(call.get("name", "")) if call else ""
    tool = tools_by_name.get(name)
    what = ""
    if tool is not None and call is not None and isinstance(call.get("input"), dict):
        try:
            what = tool.summary(call["input"])
        except Exception:  # a tool's summary failing must not stop the compaction
            log.debug("%s.summary failed; the marker names the tool only", name, exc_info=True)
    size = len(json.dumps(block.get("content"), ensure_ascii=False))
    call_text = f"{name} {what}".strip() or "this call"
    again = f" Call {name} again if you need it." if name else ""
    return f"{CLEARED_MARKER}: {call_text} returned about {size:,} characters here.{again}]"
