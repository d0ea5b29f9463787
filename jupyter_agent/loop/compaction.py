"""Compaction, and one run's context organisation (the seed's 上下文整理).

Besides its four steps the loop keeps the prompt inside the model's context window
(docs/context.md). The window, the prompt's size and microcompact (old tool results
cleared, no model call) are in :mod:`.context_window`; here:

- :func:`compact`: one ordinary Messages request asks the same model for a summary; the
  history is rebuilt as the summary, the files read recently (read again, so an Edit
  may follow without a new Read), what the tools keep of the conversation's state
  (``Tool.carry_over``: the todo list), and every message the user wrote, word for word. No
  ``tool_use`` is carried over, so pairing holds on both sides of the boundary.
- :class:`RunContext`: what the loop asks at step 1 (microcompact; past the threshold,
  compact: ``auto_compact``) and when the API answers ``prompt is too long`` (compact
  once and retry: ``reactive_compact_retry``).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, replace
from collections.abc import Sequence

from .abort import AbortSignal
from .budget import ToolResultBudget
from .context_window import (
    CHARS_PER_TOKEN, ContextBudget, PromptSize, estimate_tokens, microcompact, window_for_model,
)
from .events import (
    AssistantMessage, Compaction, CompactionKind, CompactionOutcome, CompactionTrigger, ContextNotice, ContextUsage,
    Notice,
)
from .hooks import Hooks, PreCompactInput, call_hook
from .messages import (
    MAX_OUTPUT_TOKENS_RECOVERY_MESSAGE, STOP_HOOK_FEEDBACK_PREFIX, content_blocks,
    create_user_message, ensure_tool_result_pairing, normalize_messages_for_api, prepend_user_context,
)
from .model_protocol import Model, ModelError, ModelRequest, PromptTooLongError
from .permission_result import PermissionAllow
from .stream import stream_with_abort
from .tool import AnyTool, InputT, Tool, ToolContext, ToolError
from .tool_execution import ToolRunEnv, _validate_and_plan
from .meter import StreamUsage
from .state import TransitionReason
from .usage import Usage
from .wire import JSONObject, Message, SystemBlock, TextBlock, ToolDefinition, ToolUseBlock, is_text, is_tool_result, \
    is_tool_use

__all__ = ["CompactionEnv", "CompactResult", "RunContext", "compact", "corrected", "is_user_written", "run_context",
           "user_messages_to_keep", "SUMMARY_REQUEST_MARKER", "PROMPT_TOO_LONG_ADVICE", "TOO_LONG_ADVICE",
           "USER_WORDS_TOO_LONG_TEXT", "SYSTEM_AND_TOOLS_TOO_LONG_TEXT", "WINDOW_LEARNED_TEXT"]

log = logging.getLogger(__name__)

#: Files read again after a compaction, at most (the most recent first); their room is the budget's.
MAX_REREAD_FILES = 5

SUMMARY_HEADER = (
    "This conversation was compacted: it went on from an earlier part that outgrew the context "
    "window. The summary below covers that part; the user's own messages follow it word for word."
)
REREAD_HEADER = "<system-reminder>Read again after the compaction (as it is now):"
CARRIED_HEADER = "<system-reminder>Kept from before the compaction:"
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


# -- compaction -------------------------------------------------------------------------

@dataclass(frozen=True)
class CompactionEnv:
    """What a compaction uses of the run: the model and request settings, the tools
    (to read files again), the hooks, and the run's usage meter."""

    model: Model
    system: list[SystemBlock]
    tool_definitions: list[ToolDefinition]
    tools_by_name: dict[str, AnyTool]
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
    if not blocks or any(is_tool_result(b) for b in blocks):
        return False
    first = next((b["text"] for b in blocks if is_text(b)), "")
    loop_notes = (SUMMARY_HEADER, REREAD_HEADER, CARRIED_HEADER, CONTINUE_NOTE, STOP_HOOK_FEEDBACK_PREFIX,
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
    kept = user_messages_to_keep(messages, env.budget.estimated(env.budget.user_messages_room))
    rereads, files = await _read_again(env, messages)
    history: list[Message] = [create_user_message([{"type": "text", "text": f"{SUMMARY_HEADER}\n\n{summary}"}])]
    if rereads:
        history.append(create_user_message(rereads))
    if carried := _carried_over(env):
        history.append(create_user_message(carried))
    history.extend(kept)
    if trigger is not CompactionTrigger.MANUAL and not (messages and is_user_written(messages[-1])):
        history.append(create_user_message(CONTINUE_NOTE))  # mid-run: the model goes on
    after = env.budget.counted(PromptSize(env.budget.fixed).estimate(history))
    event = Compaction(CompactionKind.SUMMARY, trigger, CompactionOutcome.COMPACTED, tokens_before, after,
                       env.budget.window, user_messages_kept=len(kept), files_reread=tuple(files),
                       summary=summary)
    return CompactResult(event, tuple(history))


def _fixed_tokens(system: list[SystemBlock], tool_definitions: list[ToolDefinition],
                  user_context: dict[str, str]) -> int:
    """What every request carries besides the history."""
    return estimate_tokens(system) + estimate_tokens(tool_definitions) + estimate_tokens(user_context)


async def _summarise(env: CompactionEnv, messages: Sequence[Message], instructions: str) -> str:
    """One ordinary request: the history (what fits), then the summary instruction.

    The system prompt and tools are the run's, so the request shares the conversation's
    cached prefix."""
    ask = SUMMARY_INSTRUCTION + (f"\n\nAlso follow these instructions:\n{instructions}" if instructions else "")
    # the summary's own room is smaller than an answer's, so the history is sent as it is
    # (its cached prefix read again) whenever it fits: half the estimates' margin is kept
    # (a full one would cut the history at every compaction: 79 % of it read from the
    # cache fell to 44 % in benchmarks/bench_compaction.py)
    budget = env.budget
    for attempt in range(2):
        max_tokens = budget.summary_tokens
        room = budget.window - max_tokens - budget.margin // 2 - budget.counted(budget.fixed + estimate_tokens(ask))
        history = _fit(list(messages), env, budget.estimated(room))
        request = ModelRequest(
            messages=normalize_messages_for_api(prepend_user_context([*history, create_user_message(ask)],
                                                                     env.user_context)),
            system=env.system, tools=env.tool_definitions, max_tokens=max_tokens,
        )
        answer: AssistantMessage | None = None
        try:
            async for event in stream_with_abort(env.model, request, env.signal):
                env.meter.observe(event)
                if isinstance(event, AssistantMessage):
                    answer = event
        except PromptTooLongError as exc:  # the API counts denser than the estimate: once more, to its count
            if attempt:
                raise
            sent = budget.fixed + estimate_tokens(history) + estimate_tokens(ask)
            budget = corrected(budget, str(exc), sent)
            log.debug("the summary request was too long; again with %s", budget)
            continue
        return answer.text if answer is not None else ""
    return ""


def corrected(budget: ContextBudget, error: str, sent: int) -> ContextBudget:
    """The budget after the API refused a prompt of ``sent`` estimated tokens: its
    ``N tokens > M maximum`` give the window (M, if smaller) and the density (N per
    estimated token, if denser); without numbers, a density a third higher."""
    found = _MAXIMUM.search(error)
    if found is None:
        return replace(budget, density=budget.density * 4 / 3)
    counted, maximum = int(found.group(1)), int(found.group(2))
    return replace(budget, window=min(budget.window, maximum),
                   density=max(budget.density, min(counted / sent if sent else 1.0, MAX_DENSITY)))


def _fit(messages: list[Message], env: CompactionEnv, room: int) -> list[Message]:
    """The history for the summary request, within ``room`` tokens: old tool results
    cleared first, then the oldest messages left out (pairing repaired). The user's
    latest message stays (first, if what came before it was left out): the summary
    must know what was asked."""
    size = estimate_tokens(messages)
    if size > room:
        messages, _, saved = microcompact(messages, env.tools_by_name, size, room, only_if_enough=False)
        size -= saved
    latest = next((m for m in reversed(messages) if is_user_written(m)), None)
    kept_aside = 0  # the latest user message's tokens, once it was taken out of the front
    while size + kept_aside > room and len(messages) > 1:
        gone = messages.pop(0)
        size -= estimate_tokens(gone)
        if gone is latest:
            kept_aside = estimate_tokens(gone)
    messages, _ = ensure_tool_result_pairing(messages)
    if kept_aside and latest is not None:
        messages.insert(0, latest)
    elif messages and messages[0].get("role") != "user":
        messages.insert(0, create_user_message("(The start of the conversation was left out to fit.)"))
    return messages


async def _read_again(env: CompactionEnv, messages: Sequence[Message]) -> tuple[list[TextBlock], list[str]]:
    """Read again the files the model read most recently (through their tool, so its
    read record is fresh), as text blocks; and the names of those files."""
    seen: set[str] = set()
    blocks: list[TextBlock] = []
    names: list[str] = []
    room = env.budget.estimated(env.budget.reread_room)  # (a file that does not fit is left to the model)
    per_file = env.budget.estimated(env.budget.reread_file_tokens)
    for call in _latest_calls_first(messages):
        if len(names) >= MAX_REREAD_FILES:
            break
        tool = env.tools_by_name.get(call["name"])
        again = tool.reread_input(call.get("input") or {}) if tool is not None else None
        if tool is None or again is None or (key := json.dumps(again, sort_keys=True)) in seen:
            continue
        seen.add(key)
        records = dict(env.context.read_file_state)
        text = await _read(tool, again, env.context)
        tokens = estimate_tokens(text) if text is not None else 0
        if text is None or tokens > per_file or tokens > room:
            # not shown to the model: the read must not count as one (read-before-edit)
            env.context.read_file_state.clear()
            env.context.read_file_state.update(records)
            continue
        room -= tokens
        what = tool.summary(again) or tool.name
        blocks.append({"type": "text", "text": f"{REREAD_HEADER} {what}\n{text}\n</system-reminder>"})
        names.append(what)
    return blocks, names


def _carried_over(env: CompactionEnv) -> list[TextBlock]:
    """What the tools keep of the conversation's state (the plan), as text blocks."""
    blocks: list[TextBlock] = []
    for tool in env.tools_by_name.values():
        try:
            text = tool.carry_over(env.context)
        except Exception:  # a tool's state failing must not stop the compaction
            log.debug("%s carries nothing over", tool.name, exc_info=True)
            continue
        if text:
            blocks.append({"type": "text", "text": f"{CARRIED_HEADER}\n{text}\n</system-reminder>"})
    return blocks


def _latest_calls_first(messages: Sequence[Message]) -> list[ToolUseBlock]:
    return [b for m in reversed(messages) if m.get("role") == "assistant"
            for b in reversed(content_blocks(m)) if is_tool_use(b)]


async def _read(tool: Tool[InputT], raw_input: JSONObject, context: ToolContext) -> str | None:
    """One read through the tool's own checks and the permission policy; None when it
    cannot run without asking, fails, or gives anything but text."""
    try:
        parsed, prepared, problem = await _validate_and_plan(tool, raw_input, context)
        if problem or parsed is None or not prepared.read_only:
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

_MAXIMUM = re.compile(r"(\d+)\s*tokens\s*>\s*(\d+)\s*maximum")
#: The densest a refusal may make the estimates (one token a character: four an estimate's token).
MAX_DENSITY = 4.0
#: Transitions into an iteration that starts from a freshly compacted history.
COMPACTED_REASONS = frozenset(r for r in TransitionReason if r.compacted)
USER_WORDS_TOO_LONG_TEXT = (
    "Your message is about {tokens:,} tokens; with the system prompt and tools (about {fixed:,}) it "
    "leaves no room to work in this model's context window of {window:,} tokens (the loop compacts at "
    "{compact_at:,}), and no compaction shortens your own words."
)
SYSTEM_AND_TOOLS_TOO_LONG_TEXT = (
    "The system prompt and the tool definitions alone are about {fixed:,} tokens: they leave no room to "
    "work in this model's context window of {window:,} tokens (the loop compacts at {compact_at:,})."
)
#: What the run's end adds to :data:`USER_WORDS_TOO_LONG_TEXT`: what to do.
USER_WORDS_ADVICE = (
    " Shorten it, or save the long text in a file and ask the agent to read it in parts, or use a "
    "model with a larger window (`context_window`, `JUPYTER_AGENT_CONTEXT_WINDOW`)."
)
SYSTEM_AND_TOOLS_ADVICE = (
    " Offer fewer tools (fewer MCP servers), a shorter system prompt, or use a model with a larger "
    "window (`context_window`, `JUPYTER_AGENT_CONTEXT_WINDOW`)."
)
#: What to do, by the notice's kind.
TOO_LONG_ADVICE = {ContextNotice.USER_WORDS_TOO_LONG.value: USER_WORDS_ADVICE,
                   ContextNotice.SYSTEM_AND_TOOLS_TOO_LONG.value: SYSTEM_AND_TOOLS_ADVICE}
WINDOW_LEARNED_TEXT = (
    "The API's context window is {learned:,} tokens ({how}), less than the {believed:,} this run assumed: "
    "the run works to {learned:,} from now on. Set `context_window={learned}` (or "
    "`JUPYTER_AGENT_CONTEXT_WINDOW`) to start there next time."
)
PROMPT_TOO_LONG_ADVICE = (
    " Compacting the conversation did not bring it under the window: start a new conversation "
    "(`%agent new`), or compact it with an instruction to keep less (`%agent compact ...`)."
)


class RunContext:
    """The context organisation of one run: the budget, the prompt's size, and when to
    clear old tool results or summarise (the loop asks at step 1 and on ``prompt is too
    long``). The budget's tool-result caps are applied to the run's tools (``tool_env``)
    and its per-message budget (``result_budget``), again when a smaller window is learned."""

    def __init__(self, env: CompactionEnv, tool_env: ToolRunEnv | None = None,
                 result_budget: ToolResultBudget | None = None) -> None:
        self.env = env
        self.size = PromptSize(env.budget.fixed)
        #: An automatic compaction that failed or was vetoed is not tried again this run.
        self.auto_blocked = False
        #: The largest prompt the API accepted in this run (its own count).
        self.accepted = 0
        self._tool_env = tool_env
        self._result_budget = result_budget
        self._message_chars = result_budget.max_chars_per_message if result_budget else 0
        self._apply(env.budget)

    @property
    def budget(self) -> ContextBudget:
        """The budgets the run works to now (the learned window and density included)."""
        return self.env.budget

    def _apply(self, budget: ContextBudget) -> None:
        self.env = replace(self.env, budget=budget)
        if self._tool_env is not None:
            self._tool_env.max_result_chars = budget.estimated(budget.tool_result_tokens) * CHARS_PER_TOKEN
        if self._result_budget is not None:
            self._result_budget.max_chars_per_message = min(
                self._message_chars, budget.estimated(budget.message_results_tokens) * CHARS_PER_TOKEN)

    def observe(self, sent: Sequence[Message], usage: Usage) -> None:
        """A response came: the API's count for the prompt that was ``sent``."""
        self.size.observe(sent, usage)
        self.accepted = max(self.accepted, usage.input_tokens + usage.cache_creation_input_tokens
                            + usage.cache_read_input_tokens)
        if abs(self.size.density - self.env.budget.density) > 0.02:  # a tokenizer denser than the estimate
            self._apply(replace(self.env.budget, density=self.size.density))

    def learn_window(self, error: str, estimate: int) -> tuple[int | None, Notice | None]:
        """The API refused a prompt the loop estimated at ``estimate`` tokens as too long.

        If it said ``N tokens > M maximum``, M is the real window; if it said no number,
        the window is taken as the largest prompt it accepted in this run, or three
        quarters of the refused one if that is larger. When that is smaller than the
        window the run worked to, the run works to it from now on (the summary request,
        the budgets, later turns). Returns the refused prompt's size (the API's N, else
        None) and a notice when the window changed."""
        found = _MAXIMUM.search(error)
        learned = int(found.group(2)) if found else max(self.accepted, estimate * 3 // 4)
        believed = self.env.budget.window
        notice = None
        if 0 < learned < believed:
            self._apply(replace(self.env.budget, window=learned))
            notice = Notice(ContextNotice.WINDOW_LEARNED.value, WINDOW_LEARNED_TEXT.format(
                learned=learned, believed=believed,
                how="the API's own figure" if found else "estimated from what it accepted and refused"))
        return (int(found.group(1)) if found else None), notice

    def no_room(self, messages: Sequence[Message]) -> Notice | None:
        """The user's latest message alone leaves no room to work in the window (no
        compaction can shorten it), or the system prompt and tools alone fill it: the
        notice that says so; else None."""
        latest = next((m for m in reversed(messages) if is_user_written(m)), None)
        tokens = estimate_tokens(latest.get("content")) if latest is not None else 0
        budget = self.env.budget
        if budget.user_words_fit(tokens):
            return None
        if budget.room == 0:  # not the user's words: what every request carries fills the window
            return Notice(ContextNotice.SYSTEM_AND_TOOLS_TOO_LONG.value, SYSTEM_AND_TOOLS_TOO_LONG_TEXT.format(
                fixed=budget.fixed_tokens, window=budget.window, compact_at=budget.compact_at))
        return Notice(ContextNotice.USER_WORDS_TOO_LONG.value, USER_WORDS_TOO_LONG_TEXT.format(
            tokens=budget.counted(tokens), fixed=budget.fixed_tokens, window=budget.window,
            compact_at=budget.compact_at))

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

    def max_tokens(self, used: int) -> int:
        """The request's ``max_tokens`` for a prompt of ``used`` tokens (the budget's rule).
        An extended-thinking budget (the run's or the model's) is fitted under it where the
        request is built (``model/request.py``, ``fitted_thinking``)."""
        return self.env.budget.request_max_tokens(used)

    def wants_compaction(self, used: int, transition_reason: TransitionReason | None) -> bool:
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


def run_context(model: Model, system: list[SystemBlock], tool_definitions: list[ToolDefinition],
                tool_env: ToolRunEnv, hooks: Hooks, user_context: dict[str, str], meter: StreamUsage,
                signal: AbortSignal, *, context_window: int | None, max_tokens: int,
                result_budget: ToolResultBudget | None = None) -> RunContext:
    """The context organisation of one run: its window (``context_window``, else the
    model's from the table of known models), the budgets derived from it, and what a
    compaction may use."""
    fixed = _fixed_tokens(system, tool_definitions, user_context)
    budget = ContextBudget(context_window or window_for_model(model.name), max_tokens, fixed)
    env = CompactionEnv(model, system, tool_definitions, tool_env.tools_by_name, tool_env.context, hooks,
                        user_context, budget, meter, signal)
    return RunContext(env, tool_env, result_budget)
