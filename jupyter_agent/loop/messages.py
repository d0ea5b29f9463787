"""Message helpers: building results, and keeping a history the API will accept.

The Messages API rejects (HTTP 400) a history in which an assistant ``tool_use`` is
not answered by a ``tool_result`` with the same id in the very next message, or in
which a ``tool_result`` points at nothing. Many agents break on this after a crash
or a Stop. Every request goes through :func:`ensure_tool_result_pairing` first.
"""

from __future__ import annotations

import re
from typing import Final, TypeVar, cast
from collections.abc import Iterable, Iterator, Sequence

from .identity_memo import IdentityMemo
from .wire import ContentBlock, Message, ToolResultBlock, ToolResultContent, ToolUseBlock, blocks_of, is_tool_result, \
    is_tool_use

_T = TypeVar("_T")

INTERRUPTED_MESSAGE = "Interrupted by user: the run was stopped before this tool call finished."
#: Set on a ``tool_use`` block whose input, as the model streamed it, was not a JSON
#: object (the value is that text; ``input`` is then ``{}``). The call gets an error
#: result and does not run; the key never goes to the API (see
#: :func:`normalize_messages_for_api`).
INVALID_INPUT_KEY: Final = "invalid_input_json"
MISSING_RESULT_MESSAGE = "No result: this tool call did not run (the response was cut short)."
#: What the loop itself writes into user messages (compaction tells these from the user's words).
STOP_HOOK_FEEDBACK_PREFIX = "Stop hook feedback:\n"
MAX_OUTPUT_TOKENS_RECOVERY_MESSAGE = (
    "Output token limit hit. Resume directly from where you stopped, with no apology "
    "or recap. Break remaining work into smaller pieces."
)


content_blocks = blocks_of  # the name the loop's modules have always used


def create_user_message(content: str | Sequence[ContentBlock]) -> Message:
    """A user message holding ``content`` (text, or blocks such as tool results)."""
    return {"role": "user", "content": content if isinstance(content, str) else list(content)}


def tool_result_block(tool_use_id: str, content: ToolResultContent | Sequence[object],
                      *, is_error: bool = False) -> ToolResultBlock:
    """A ``tool_result`` block; ``is_error`` is only written when true (as the API echoes it).

    The content is made :func:`sendable` here too, so what the UI shows and saves is
    what the model gets. A tool's blocks are the API's text and image blocks (the
    ``ToolOutput`` contract), so they are taken as such."""
    block = ToolResultBlock(type="tool_result", tool_use_id=tool_use_id,
                            content=cast(ToolResultContent, sendable(content)))
    if is_error:
        block["is_error"] = True
    return block


def tool_use_ids(message: Message) -> list[str]:
    """The ids of the ``tool_use`` blocks in ``message``, in order."""
    return [b["id"] for b in content_blocks(message) if is_tool_use(b)]


def yield_missing_tool_result_blocks(
    assistant_messages: Iterable[Message], answered_ids: Iterable[str], error_message: str
) -> Iterator[ToolResultBlock]:
    """An error ``tool_result`` for each ``tool_use`` in ``assistant_messages`` that has
    no result yet (seed: ``yieldMissingToolResultBlocks``). This repairs the record; it
    does not undo what a tool already did."""
    answered = set(answered_ids)
    for message in assistant_messages:
        for tool_use_id in tool_use_ids(message):
            if tool_use_id not in answered:
                answered.add(tool_use_id)
                yield tool_result_block(tool_use_id, error_message, is_error=True)


def ensure_tool_result_pairing(messages: list[Message]) -> tuple[list[Message], list[str]]:
    """Repair a history so every ``tool_use`` is answered right after, and no
    ``tool_result`` points at nothing. Returns the repaired list (new message dicts only
    where something changed) and a list of what was repaired, for a notice."""
    repaired: list[Message] = []
    notes: list[str] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        if message.get("role") != "assistant":
            if message.get("role") == "user":
                kept_message = _drop_dangling_results(message, repaired, notes)
                if kept_message is None:
                    i += 1
                    continue
                message = kept_message
            repaired.append(message)
            i += 1
            continue
        repaired.append(message)
        following = messages[i + 1] if i + 1 < len(messages) else None
        if following is not None and following.get("role") == "user":
            known = _answers_memo.get(message, following)
            answer, found = known if known is not None else _answers_memo.put(
                (message, following), _answer_of(message, following))
            if answer is None:  # no tool_use: the next message is taken as any user message
                i += 1
                continue
            notes.extend(found)
            repaired.append(answer)
            i += 2
            continue
        ids = tool_use_ids(message)
        if ids:
            notes.append(f"added error results for unanswered tool_use {', '.join(ids)}")
            repaired.append(create_user_message(
                [tool_result_block(t, MISSING_RESULT_MESSAGE, is_error=True) for t in ids]
            ))
        i += 1
    return repaired, notes


_answers_memo: IdentityMemo[tuple[Message | None, list[str]]] = IdentityMemo()


def _answer_of(assistant: Message, following: Message) -> tuple[Message | None, list[str]]:
    """The user message that answers ``assistant``'s tool calls, made from ``following``
    (itself when it answers each call and nothing else), and the repairs made; ``None``
    when ``assistant`` called no tool. A pure function of the two messages, remembered
    by their identity (:mod:`.identity_memo`)."""
    ids = tool_use_ids(assistant)
    if not ids:
        return None, []
    wanted = set(ids)
    blocks = content_blocks(following)
    answered = {b["tool_use_id"] for b in blocks if is_tool_result(b)}
    missing = [t for t in ids if t not in answered]
    kept = [b for b in blocks if not is_tool_result(b) or b["tool_use_id"] in wanted]
    notes = []
    if len(kept) != len(blocks):
        notes.append(f"dropped {len(blocks) - len(kept)} tool_result(s) pointing at nothing")
    if missing:
        notes.append(f"added error results for unanswered tool_use {', '.join(missing)}")
    if not notes:
        return following, notes
    results: list[ContentBlock] = [b for b in kept if is_tool_result(b)]
    others = [b for b in kept if not is_tool_result(b)]
    fill: list[ContentBlock] = [tool_result_block(t, MISSING_RESULT_MESSAGE, is_error=True) for t in missing]
    # Results first: the API wants tool_result blocks before any other content.
    return {**following, "content": results + fill + others}, notes


def _drop_dangling_results(message: Message, so_far: list[Message], notes: list[str]) -> Message | None:
    """Drop ``tool_result`` blocks of a user message whose previous message did not ask for them."""
    blocks = content_blocks(message)
    if not any(is_tool_result(b) for b in blocks):
        return message
    previous = so_far[-1] if so_far else None
    allowed = set(tool_use_ids(previous)) if previous and previous.get("role") == "assistant" else set()
    kept = [b for b in blocks if not is_tool_result(b) or b["tool_use_id"] in allowed]
    if len(kept) == len(blocks):
        return message
    notes.append(f"dropped {len(blocks) - len(kept)} tool_result(s) pointing at nothing")
    return {**message, "content": kept} if kept else None


def normalize_messages_for_api(messages: Iterable[Message]) -> list[Message]:
    """The history as the API takes it: consecutive messages of one role merged (tool
    results first in a merged user message), empty messages dropped.

    Messages are never mutated; unchanged ones are passed through as the same objects,
    so the request bytes stay stable from one turn to the next (prompt caching). The
    loop's own marks on blocks (:data:`INVALID_INPUT_KEY`) are left out.
    """
    out: list[Message] = []
    for message in messages:
        content = message.get("content")
        if not content:
            continue
        if message.get("role") == "assistant" and isinstance(content, list) and _has_invalid_input(content):
            content = [_without_mark(b) if is_tool_use(b) else b for b in content]
            message = {**message, "content": content}
        if out and out[-1].get("role") == message.get("role"):
            merged = content_blocks(out[-1]) + content_blocks(message)
            if message.get("role") == "user":
                merged = [b for b in merged if is_tool_result(b)] + [b for b in merged if not is_tool_result(b)]
            out[-1] = {"role": message["role"], "content": merged}
            continue
        out.append(message)
    return out


def _has_invalid_input(content: list[ContentBlock]) -> bool:
    # A plain loop: it runs over every assistant message of the history on every request.
    for block in content:
        if isinstance(block, dict) and INVALID_INPUT_KEY in block:
            return True
    return False


def _without_mark(block: ToolUseBlock) -> ToolUseBlock:
    """``block`` without the loop's :data:`INVALID_INPUT_KEY` mark (it never goes to the API)."""
    if INVALID_INPUT_KEY not in block:
        return block
    clean = block.copy()
    del clean["invalid_input_json"]
    return clean


def prepend_user_context(messages: list[Message], user_context: dict[str, str]) -> list[Message]:
    """Put the user context (working directory, notebook, date...) in front of the
    history as a ``<system-reminder>`` user message, as the seed's
    ``prependUserContext()`` does. It is rebuilt for every request and never stored."""
    if not user_context:
        return messages
    lines = "\n".join(f"# {key}\n{value}" for key, value in user_context.items())
    reminder: ContentBlock = {
        "type": "text",
        "text": "<system-reminder>\nAs you answer the user's questions, you can use the "
        f"following context:\n{lines}\n</system-reminder>\n",
    }
    if messages and messages[0].get("role") == "user":
        first = messages[0]
        return [{"role": "user", "content": [reminder, *content_blocks(first)]}, *messages[1:]]
    return [create_user_message([reminder]), *messages]


def cut_middle(text: str, limit: int) -> str:
    """Shorten ``text`` to about ``limit`` characters by cutting out its middle.

    The cuts fall between words, never inside one (up to :data:`MAX_WORD_CHARS`): a key
    or password is kept whole or dropped whole, so a later redaction still recognises
    it instead of leaving most of it in a transcript.
    """
    if len(text) <= limit:
        return text
    half = max(limit // 2, 1)
    head = cut_at_word(text, half)
    tail_start = _word_start_after(text, len(text) - half)
    omitted = tail_start - len(head)
    return f"{head}\n... [{omitted} characters cut] ...\n{text[tail_start:]}"


#: A run of word characters longer than this may be cut inside (a base64 blob, not a key).
MAX_WORD_CHARS = 512
_WORD = re.compile(r"[^\s\"'`,;:(){}\[\]<>|]")


def cut_at_word(text: str, limit: int) -> str:
    """The first ``limit`` characters of ``text``, less any word the cut would split."""
    if len(text) <= limit:
        return text
    end = limit
    while end > 0 and limit - end < MAX_WORD_CHARS and _WORD.match(text, end - 1) and _WORD.match(text, end):
        end -= 1
    if limit - end >= MAX_WORD_CHARS:
        end = limit
    return text[:end]


def _word_start_after(text: str, start: int) -> int:
    """``start`` moved forward past the rest of a word it falls inside."""
    begin = start
    while start < len(text) and start - begin < MAX_WORD_CHARS and start > 0 and _WORD.match(text, start - 1) \
            and _WORD.match(text, start):
        start += 1
    return begin if start - begin >= MAX_WORD_CHARS else start


def _sendable_text(text: str) -> str:
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        # Pairs of surrogates become the character they stand for; a lone one becomes U+FFFD.
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def sendable(value: _T) -> _T:
    """``value`` (a message, a block, a list of them, a string) with no lone surrogate left.

    A lone surrogate (``\\udce9`` from a file name that is not UTF-8, half an emoji in a
    cell output, a model's ``\\ud800``) cannot be encoded as UTF-8, so a request holding
    one fails before it leaves, and so does every later request with the same history.
    Such characters become U+FFFD; everything else is returned as the same object, so
    the request bytes stay stable from one turn to the next (prompt caching).
    """
    if isinstance(value, str):
        return cast(_T, _sendable_text(value))
    if isinstance(value, dict):
        out: dict[object, object] | None = None
        for key, item in value.items():
            clean = sendable(item)
            clean_key = _sendable_text(key) if isinstance(key, str) else key
            if clean is not item or clean_key is not key:
                if out is None:
                    out = dict(value)
                if clean_key is not key:
                    del out[key]
                out[clean_key] = clean
        return value if out is None else cast(_T, out)
    if isinstance(value, (list, tuple)):
        items = [sendable(item) for item in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return cast(_T, items if isinstance(value, list) else tuple(items))
    return value


_sendable_memo: IdentityMemo[Message] = IdentityMemo()


def sendable_messages(messages: list[Message]) -> list[Message]:
    """:func:`sendable` of each message, each message walked once
    (:mod:`.identity_memo`: the history is resent whole on every turn)."""
    out: list[Message] = []
    for message in messages:
        clean = _sendable_memo.get(message)
        out.append(clean if clean is not None else _sendable_memo.put((message,), sendable(message)))
    return out
