"""Context organisation: the window the loop knows, microcompact, and compaction.

Besides its four steps the loop keeps the prompt inside the model's context window
(docs/context.md):

- :class:`ContextBudget`: the window (from a table of known models, or the caller's
  number) and the thresholds derived from it.
- :class:`PromptSize`: the prompt's size before each request, from the last response's
  reported usage plus an estimate of what was added since (no extra request).
- :func:`microcompact`: past its threshold, old tool results are replaced by a short
  marker saying what was there and how to get it again; large ones first, the most
  recent few kept. No model call, and deterministic: a result once cleared stays
  cleared in the history, so the cached prefix changes only when it must.
- :func:`compact`: one ordinary Messages request asks the same model for a summary; the
  history is rebuilt as the summary, the files read recently (read again, so an Edit
  may follow without a new Read), and every message the user wrote, word for word. No
  ``tool_use`` is carried over, so pairing holds on both sides of the boundary.

The loop calls these at step 1 (proactive, ``auto_compact``) and when the API answers
``prompt is too long`` (``reactive_compact_retry``); see :mod:`.context_steps`.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, replace
from typing import Any
from collections.abc import Sequence

from .abort import AbortSignal
from .events import (
    AssistantMessage, Compaction, CompactionKind, CompactionOutcome, CompactionTrigger, ContextUsage,
)
from .hooks import Hooks, PreCompactInput, call_hook
from .messages import (
    MAX_OUTPUT_TOKENS_RECOVERY_MESSAGE, STOP_HOOK_FEEDBACK_PREFIX, Message, content_blocks,
    create_user_message, ensure_tool_result_pairing, normalize_messages_for_api, prepend_user_context,
)
from .model_protocol import Model, ModelError, ModelRequest
from .permission_result import PermissionAllow
from .stream import stream_with_abort
from .tool import Tool, ToolContext, ToolError
from .tool_execution import _validate_and_plan
from .usage import StreamUsage, Usage

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
#: Files read again after a compaction, at most (the most recent first), and their size.
MAX_REREAD_FILES = 5
MAX_REREAD_TOKENS_PER_FILE = 8_000
MAX_SUMMARY_TOKENS = 8_192

CLEARED_MARKER = "[Old tool result cleared to keep the context small"
SUMMARY_HEADER = (
    "This conversation was compacted: it went on from an earlier part that outgrew the context "
    "window. The summary below covers that part; the user's own messages follow it word for word."
)
REREAD_HEADER = "<system-reminder>Read again after the compaction (as it is now):"
CONTINUE_NOTE = (
    "<system-reminder>Continue the work from where it stopped (see the summary's current work and "
    "next step), without asking the user to repeat anything.</system-reminder>"
)
SUMMARY_INSTRUCTION = """Your task now is to write a detailed summary of the conversation so far; \
it will replace the conversation, so that the work can go on without it. Do not call any tool: \
answer with text only. Use these sections:
1. Primary request and intent: everything the user asked for, in detail.
2. Key technical concepts.
3. Files and code: the files and notebook cells read, changed or created, with the important \
snippets and why they matter.
4. Errors and fixes, including what the user said about them.
5. Problem solving: what was solved and what is still being worked on.
6. All user messages (not tool results), in order.
7. Pending tasks.
8. Current work: precisely what was being done just before this summary.
9. Next step: the very next thing to do, in line with the user's latest request."""
#: The text that starts every summary request (a test's fake API recognises it by this).
SUMMARY_REQUEST_MARKER = "Your task now is to write a detailed summary of the conversation so far"


def window_for_model(model_name: str) -> int:
    """The context window of ``model_name`` from :data:`KNOWN_CONTEXT_WINDOWS`."""
    for prefix, window in KNOWN_CONTEXT_WINDOWS:
        if model_name.startswith(prefix):
            return window
    return DEFAULT_CONTEXT_WINDOW


@dataclass(frozen=True)
class ContextBudget:
    """The window and the thresholds the loop works to (all in tokens).

    ``compact_at``: the window less room for the answer and a margin (estimates are
    estimates); past it the history is summarised. ``microcompact_at``: past it old
    tool results are cleared, down to ``microcompact_target``.
    """

    window: int
    max_tokens: int = 8192

    @property
    def answer_room(self) -> int:
        return min(self.max_tokens, 20_000, self.window // 4)

    @property
    def compact_at(self) -> int:
        return self.window - self.answer_room - min(13_000, self.window // 10)

    @property
    def microcompact_at(self) -> int:
        return self.compact_at * 6 // 10

    @property
    def microcompact_target(self) -> int:
        return self.compact_at // 2

    @property
    def user_messages_room(self) -> int:
        """How much of the rebuilt history the user's own messages may take."""
        return self.window // 4


def estimate_tokens(value: Any) -> int:
    """Tokens of a message, block or list of them: JSON characters / 4, images at a
    fixed price (their base64 data is not what the API counts)."""
    images = 0

    def strip(item: Any) -> Any:
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

    text = value if isinstance(value, str) else json.dumps(strip(value), ensure_ascii=False)
    return -(-len(text) // CHARS_PER_TOKEN) + images * IMAGE_TOKENS


class PromptSize:
    """The prompt's size before a request: the last reported size plus what was added.

    ``fixed``: the system prompt and tool definitions (estimated once per run). After a
    response, :meth:`observe` keeps the messages that were sent and the tokens the API
    counted for them; :meth:`estimate` then adds only what follows them (or estimates
    the whole history, if it changed before that point).
    """

    def __init__(self, fixed: int) -> None:
        self.fixed = fixed
        self._sent: tuple[Message, ...] = ()
        self._reported = 0

    def observe(self, sent: Sequence[Message], usage: Usage) -> None:
        reported = usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens
        if reported:
            self._sent, self._reported = tuple(sent), reported

    def estimate(self, messages: Sequence[Message]) -> int:
        sent = self._sent
        if sent and len(messages) >= len(sent) and all(a is b or a == b for a, b in zip(sent, messages)):
            return self._reported + estimate_tokens(list(messages[len(sent):]))
        return self.fixed + estimate_tokens(list(messages))


# -- microcompact -----------------------------------------------------------------------

def microcompact(messages: list[Message], tools_by_name: dict[str, Tool], size: int,
                 target: int) -> tuple[list[Message], int, int]:
    """Clear old tool results until the estimate ``size`` is at most ``target``.

    Images first, then the largest; ties go to the oldest; the latest
    :data:`KEEP_RECENT_RESULTS` stay. Returns (messages, results cleared, tokens saved);
    messages that did not change are the same objects.
    """
    calls = {b["id"]: b for m in messages if m.get("role") == "assistant"
             for b in content_blocks(m) if b.get("type") == "tool_use"}
    found: list[tuple[int, int, int, dict[str, Any]]] = []  # (message, block, tokens, block)
    for i, message in enumerate(messages):
        if message.get("role") != "user" or not isinstance(message.get("content"), list):
            continue
        for j, block in enumerate(message["content"]):
            if block.get("type") == "tool_result" and not _is_cleared(block):
                found.append((i, j, estimate_tokens(block.get("content")), block))
    candidates = found[:-KEEP_RECENT_RESULTS] if KEEP_RECENT_RESULTS else found
    order = sorted(candidates, key=lambda c: (not _has_image(c[3]), -c[2], c[0], c[1]))
    cleared: dict[tuple[int, int], dict[str, Any]] = {}
    saved = 0
    for i, j, tokens, block in order:
        if size - saved <= target:
            break
        if tokens < MIN_CLEARED_TOKENS:
            continue
        marker = _cleared_marker(block, calls.get(block["tool_use_id"]), tools_by_name)
        cleared[(i, j)] = {**block, "content": marker}
        saved += tokens - estimate_tokens(marker)
    if not cleared:
        return messages, 0, 0
    out = list(messages)
    for i in sorted({i for i, _ in cleared}):
        content = [cleared.get((i, j), b) for j, b in enumerate(messages[i]["content"])]
        out[i] = {**messages[i], "content": content}
    return out, len(cleared), saved


def _is_cleared(block: dict[str, Any]) -> bool:
    content = block.get("content")
    return isinstance(content, str) and content.startswith(CLEARED_MARKER)


def _has_image(block: dict[str, Any]) -> bool:
    content = block.get("content")
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "image" for b in content)


def _cleared_marker(block: dict[str, Any], call: dict[str, Any] | None, tools_by_name: dict[str, Tool]) -> str:
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


# -- compaction -------------------------------------------------------------------------

@dataclass(frozen=True)
class CompactionEnv:
    """What a compaction uses of the run: the model and request settings, the tools
    (to read files again), the hooks, and the run's usage meter."""

    model: Model
    system: list[dict[str, Any]]
    tool_definitions: list[dict[str, Any]]
    tools_by_name: dict[str, Tool]
    context: ToolContext
    hooks: Hooks
    user_context: dict[str, str]
    budget: ContextBudget
    meter: StreamUsage
    signal: AbortSignal


@dataclass(frozen=True)
class CompactResult:
    """What :func:`compact` did: the event to show and, if it compacted, the new history."""

    event: Compaction
    messages: tuple[Message, ...] | None = None


def is_user_written(message: Message) -> bool:
    """A message the user wrote (not tool results, not the loop's own notes)."""
    if message.get("role") != "user":
        return False
    blocks = content_blocks(message)
    if not blocks or any(b.get("type") == "tool_result" for b in blocks):
        return False
    first = next((b.get("text", "") for b in blocks if b.get("type") == "text"), "")
    loop_notes = (SUMMARY_HEADER, REREAD_HEADER, CONTINUE_NOTE, STOP_HOOK_FEEDBACK_PREFIX,
                  MAX_OUTPUT_TOKENS_RECOVERY_MESSAGE)
    return not any(first.startswith(note) for note in loop_notes)


def user_messages_to_keep(messages: Sequence[Message], room: int) -> list[Message]:
    """The user's messages, oldest first, within ``room`` tokens: the newest are kept
    first, and the latest one (the prompt of the current run) always."""
    written = [m for m in messages if is_user_written(m)]
    kept: list[Message] = []
    used = 0
    for message in reversed(written):
        tokens = estimate_tokens(message.get("content"))
        if kept and used + tokens > room:
            break
        kept.append(message)
        used += tokens
    return kept[::-1]


async def compact(env: CompactionEnv, messages: Sequence[Message], trigger: CompactionTrigger,
                  tokens_before: int, instructions: str = "") -> CompactResult:
    """Summarise ``messages`` with one request to the model and rebuild the history.

    Raises ``Aborted`` on Stop (the caller ends the run); every other failure is a
    ``failed`` outcome with the history unchanged."""
    def outcome(result: CompactionOutcome, detail: str, after: int = tokens_before) -> CompactResult:
        return CompactResult(Compaction(CompactionKind.SUMMARY, trigger, result, tokens_before, after,
                                        env.budget.window, detail=detail))

    if not any(m.get("role") == "assistant" for m in messages):
        return outcome(CompactionOutcome.NOT_NEEDED, "There is no answer to summarise yet.")
    for hook in env.hooks.pre_compact:
        verdict = await call_hook(hook, PreCompactInput(trigger.value, instructions, tuple(messages)))
        if verdict is not None and (verdict.stop or verdict.decision in ("deny", "block")):
            return outcome(CompactionOutcome.VETOED, verdict.message or "A PreCompact hook vetoed the compaction.")
        if verdict is not None and verdict.message:
            instructions = f"{instructions}\n{verdict.message}".strip()
    try:
        summary = await _summarise(env, messages, instructions)
    except ModelError as exc:
        log.debug("the summary request failed", exc_info=True)
        return outcome(CompactionOutcome.FAILED, str(exc) or exc.kind)
    if not summary.strip():
        return outcome(CompactionOutcome.FAILED, "The summary request answered no text.")
    kept = user_messages_to_keep(messages, env.budget.user_messages_room)
    rereads, files = await _read_again(env, messages)
    history: list[Message] = [create_user_message([{"type": "text", "text": f"{SUMMARY_HEADER}\n\n{summary}"}])]
    if rereads:
        history.append(create_user_message(rereads))
    history.extend(kept)
    if trigger is not CompactionTrigger.MANUAL and not (messages and is_user_written(messages[-1])):
        history.append(create_user_message(CONTINUE_NOTE))  # mid-run: the model goes on
    after = PromptSize(_fixed_tokens(env)).estimate(history)
    event = Compaction(CompactionKind.SUMMARY, trigger, CompactionOutcome.COMPACTED, tokens_before, after,
                       env.budget.window, user_messages_kept=len(kept), files_reread=tuple(files),
                       summary=summary)
    return CompactResult(event, tuple(history))


def _fixed_tokens(env: CompactionEnv) -> int:
    return estimate_tokens(env.system) + estimate_tokens(env.tool_definitions)


async def _summarise(env: CompactionEnv, messages: Sequence[Message], instructions: str) -> str:
    """One ordinary request: the history (what fits), then the summary instruction.

    The system prompt and tools are the run's, so the request shares the conversation's
    cached prefix."""
    ask = SUMMARY_INSTRUCTION + (f"\n\nAlso follow these instructions:\n{instructions}" if instructions else "")
    room = env.budget.window - env.budget.answer_room - _fixed_tokens(env) - estimate_tokens(ask)
    history = _fit(list(messages), env, room)
    request = ModelRequest(
        messages=normalize_messages_for_api(prepend_user_context([*history, create_user_message(ask)],
                                                                 env.user_context)),
        system=env.system, tools=env.tool_definitions, max_tokens=min(env.budget.max_tokens, MAX_SUMMARY_TOKENS),
    )
    answer: AssistantMessage | None = None
    async for event in stream_with_abort(env.model, request, env.signal):
        env.meter.observe(event)
        if isinstance(event, AssistantMessage):
            answer = event
    return answer.text if answer is not None else ""


def _fit(messages: list[Message], env: CompactionEnv, room: int) -> list[Message]:
    """The history for the summary request, within ``room`` tokens: old tool results
    cleared first, then the oldest messages left out (pairing repaired)."""
    size = estimate_tokens(messages)
    if size > room:
        messages, _, saved = microcompact(messages, env.tools_by_name, size, room)
        size -= saved
    while size > room and len(messages) > 1:
        size -= estimate_tokens(messages.pop(0))
    messages, _ = ensure_tool_result_pairing(messages)
    if messages and messages[0].get("role") != "user":
        messages.insert(0, create_user_message("(The start of the conversation was left out to fit.)"))
    return messages


async def _read_again(env: CompactionEnv, messages: Sequence[Message]) -> tuple[list[dict[str, Any]], list[str]]:
    """Read again the files the model read most recently (through their tool, so its
    read record is fresh), as text blocks; and the names of those files."""
    seen: set[str] = set()
    blocks: list[dict[str, Any]] = []
    names: list[str] = []
    for call in _latest_calls_first(messages):
        if len(names) >= MAX_REREAD_FILES:
            break
        tool = env.tools_by_name.get(str(call.get("name")))
        again = tool.reread_input(call.get("input") or {}) if tool is not None else None
        if tool is None or again is None or (key := json.dumps(again, sort_keys=True)) in seen:
            continue
        seen.add(key)
        text = await _read(tool, again, env.context)
        if text is None or estimate_tokens(text) > MAX_REREAD_TOKENS_PER_FILE:
            continue
        what = tool.summary(again) or tool.name
        blocks.append({"type": "text", "text": f"{REREAD_HEADER} {what}\n{text}\n</system-reminder>"})
        names.append(what)
    return blocks, names


def _latest_calls_first(messages: Sequence[Message]) -> list[dict[str, Any]]:
    return [b for m in reversed(messages) if m.get("role") == "assistant"
            for b in reversed(content_blocks(m)) if b.get("type") == "tool_use"]


async def _read(tool: Tool, raw_input: dict[str, Any], context: ToolContext) -> str | None:
    """One read through the tool's own checks and the permission policy; None when it
    cannot run without asking, fails, or gives anything but text."""
    try:
        parsed, prepared, problem = await _validate_and_plan(tool, raw_input, context)
        if problem or not prepared.read_only:
            return None
        if not isinstance(await context.permissions.decide(tool, parsed, context, prepared), PermissionAllow):
            return None
        output = await tool.call(parsed, context, prepared)
    except (ToolError, OSError) as exc:  # the file is gone or unreadable now: the model may Read it itself
        log.debug("not read again: %s", exc)
        return None
    if output.is_error or not isinstance(output.content, str):
        return None
    return output.content


# -- one run's context ---------------------------------------------------------------------

_MAXIMUM = re.compile(r"tokens\s*>\s*(\d+)\s*maximum")
#: Transitions into an iteration that starts from a freshly compacted history.
COMPACTED_REASONS = ("auto_compact", "reactive_compact_retry")
PROMPT_TOO_LONG_ADVICE = (
    " Compacting the conversation did not bring it under the window: start a new conversation "
    "(`%agent new`), or compact it with an instruction to keep less (`%agent compact ...`)."
)


class RunContext:
    """The context organisation of one run: the budget, the prompt's size, and when to
    clear old tool results or summarise (the loop asks at step 1 and on ``prompt is too
    long``)."""

    def __init__(self, env: CompactionEnv) -> None:
        self.env = env
        self.size = PromptSize(_fixed_tokens(env))
        #: An automatic compaction that failed or was vetoed is not tried again this run.
        self.auto_blocked = False

    def observe(self, sent: Sequence[Message], usage: Usage) -> None:
        """A response came: the API's count for the prompt that was ``sent``."""
        self.size.observe(sent, usage)

    def learn_window(self, error: str) -> None:
        """The API said ``prompt is too long: N tokens > M maximum``: M is the real window
        (smaller than the one configured), for the summary request and the rest of the run."""
        found = _MAXIMUM.search(error)
        if found and int(found.group(1)) < self.env.budget.window:
            budget = replace(self.env.budget, window=int(found.group(1)))
            self.env = replace(self.env, budget=budget)

    def before_request(self, messages: list[Message]) -> tuple[list[Message], list[Compaction], ContextUsage]:
        """Microcompact if the prompt is past its threshold. Returns the messages to send,
        the events to show (a :class:`Compaction` if results were cleared), and the meter."""
        budget = self.env.budget
        used = self.size.estimate(messages)
        events: list[Compaction] = []
        if used > budget.microcompact_at:
            messages, cleared, saved = microcompact(messages, self.env.tools_by_name, used,
                                                    budget.microcompact_target)
            if cleared:
                events.append(Compaction(CompactionKind.MICROCOMPACT, CompactionTrigger.AUTO,
                                         CompactionOutcome.COMPACTED, used, used - saved, budget.window,
                                         results_cleared=cleared))
                used -= saved
        return messages, events, ContextUsage(used, budget.window, budget.compact_at)

    def wants_compaction(self, used: int, transition_reason: str | None) -> bool:
        """Past ``compact_at``, unless this iteration starts from a fresh compaction (it
        would only repeat it) or an automatic one already failed in this run."""
        return (used > self.env.budget.compact_at and not self.auto_blocked
                and transition_reason not in COMPACTED_REASONS)

    async def compact(self, messages: Sequence[Message], trigger: CompactionTrigger, used: int,
                      instructions: str = "") -> CompactResult:
        result = await compact(self.env, messages, trigger, used, instructions)
        if result.messages is None and trigger is CompactionTrigger.AUTO:
            self.auto_blocked = True
        return result
