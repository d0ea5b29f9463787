"""``query_loop()``: the seed article's four steps, in Python.

1. ``build_request``: ``messages_for_query`` from ``State.messages``, and the request.
2. ``collect_response``: call the model, streaming, and collect ``assistant_messages``
   and the ``tool_use`` blocks as they arrive; ``needs_follow_up`` is set from the
   blocks actually received, never from ``stop_reason``.
3. ``execute_tools`` (``run_tools``, or the ``StreamingToolExecutor`` that started them
   while the model was streaming): every ``tool_use`` gets one ``tool_result``. With no
   ``tool_use``, ``without_tools`` decides: a recovery, a Stop hook, or ``completed``.
4. ``next_turn``: ``State(messages=[*messages_for_query, *assistant_messages,
   *tool_results], turn_count=turn_count + 1, transition=Transition("next_turn"))``,
   back to 1; or the end. Every ``State`` is built by ``next_state``.

The steps fill one :class:`~.turn.Turn` (the article's per-iteration collectors). A step
that decides how the iteration ends returns the next step as a value, its last item: a
:class:`~.turn.GoOn` (round again, from this history, for this reason) or an
:class:`~.turn.End`; the steps after it do not run, and ``query_loop`` matches on it.
:class:`~.turn.Steps` runs them and makes the lessons' checkpoints, in one place. What a run
and its turns carry (``QueryParams``, ``RunRecord``, ``Turn``) is in :mod:`.turn`.

The one Python difference: an async generator cannot ``return`` a value, so the end
reason is the last thing the loop yields, a :class:`Terminal`.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from collections.abc import AsyncGenerator, Iterable, Iterator

from .abort import AbortSignal
from .compaction import PROMPT_TOO_LONG_ADVICE, TOO_LONG_ADVICE, run_context
from .events import (
    AssistantMessage, Compaction, CompactionTrigger, LoopEvent, ModelFallback, ModelRetry, Notice,
    RequestStart, StreamEvent, ToolOutcome, ToolResult, UserMessage,
)
from .hooks import HookResult, Hooks, StopHookInput, call_hook
from .messages import (
    INTERRUPTED_MESSAGE, MAX_OUTPUT_TOKENS_RECOVERY_MESSAGE, MISSING_RESULT_MESSAGE,
    STOP_HOOK_FEEDBACK_PREFIX, create_user_message, ensure_tool_result_pairing,
    normalize_messages_for_api, prepend_user_context, yield_missing_tool_result_blocks,
)
from .model_protocol import ModelError, ModelRequest, PromptTooLongError
from .orchestration import StreamingToolExecutor, run_tools
from .stream import (
    Aborted, completed_blocks, finished_part, model_moved_on, parsed_call, restart_error, stream_with_abort,
    wait_before_retry,
)
from .state import State, Terminal, TerminalReason, Transition, TransitionReason
from .tool_execution import ToolRunEnv
from .tool_sources import load_tool_sources
from .turn import End, GoOn, NextStep, QueryParams, RunLoop, RunRecord, StepItems, Steps, Turn
from .usage import Usage
from .wire import ContentBlock, Message, MessageSnapshot, ToolResultBlock, ToolUseBlock, blocks_of, is_text, \
    is_tool_use

__all__ = [
    "MAX_OUTPUT_TOKENS_RECOVERY_LIMIT", "MAX_STOP_HOOK_BLOCKS", "QueryParams", "RunRecord", "Steps", "Turn",
    "build_request", "collect_response", "execute_tools", "next_state", "next_turn", "open_loop",
    "query_loop", "without_tools",
]

MAX_OUTPUT_TOKENS_RECOVERY_LIMIT = 3
MAX_STOP_HOOK_BLOCKS = 8
PARTIAL_KEPT_NOTICE = (
    "The response broke off ({error}) after tool calls that change things had started. "
    "Kept its finished part and their results; the next request goes on from there."
)

def next_state(state: State, messages: Iterable[Message], transition: Transition | None = None) -> State:
    """The only place a ``State`` is built (step 4's, and what ``run.state`` shows).

    With a ``transition``: the State the next iteration starts from. A new turn (tool
    results went back) counts one more; each recovery counts its tries; a Stop hook
    that blocked marks the next iteration. Without one: the same iteration with the
    history so far, which is what ``run.state`` shows when the run ends there.
    """
    if transition is None:
        return State(messages=tuple(messages), turn_count=state.turn_count, transition=state.transition)
    recovering = transition.reason is TransitionReason.MAX_OUTPUT_TOKENS_RECOVERY
    return State(
        messages=tuple(messages),
        turn_count=state.turn_count + (1 if transition.reason.new_turn else 0),
        transition=transition,
        max_output_tokens_recovery_count=state.max_output_tokens_recovery_count + 1 if recovering else 0,
        stop_hook_active=transition.reason is TransitionReason.STOP_HOOK_BLOCKING,
    )


async def query_loop(params: QueryParams, record: RunRecord, signal: AbortSignal) -> AsyncGenerator[LoopEvent, None]:
    """The loop. Yields events; the last one is always a :class:`Terminal`."""
    notices, loop = await open_loop(params, record, signal)  # the tool servers' notices, then the loop
    for notice in notices:
        yield notice
    if loop is None:  # stopped before it began (its Terminal was the last notice)
        return
    steps: Steps | None = None
    try:
        while True:
            steps = Steps(Turn(record.state), loop)
            # ---- Step 1: build messages_for_query from State.messages, and the request
            #      (or compact the history: then the iteration goes round from the summary) ----
            async for event in steps.run(1, build_request):
                yield event

            # ---- Step 2: call the model (streaming); collect assistant_messages and their
            #      tool_use blocks: needs_follow_up comes from the blocks, never stop_reason ----
            async for event in steps.run(2, collect_response):
                yield event

            # ---- Step 3: run the tools; every tool_use gets exactly one tool_result
            #      (no tool_use: a recovery or a Stop hook may go on, or completed) --------
            async for event in steps.run(3, execute_tools if steps.turn.needs_follow_up else without_tools):
                yield event

            # ---- Step 4: the next State (or the end); max_turns is checked here ----------
            async for event in steps.run(4, next_turn):
                yield event
            match steps.verdict:
                case GoOn(history=history, transition=transition, announce=announce):
                    record.state = next_state(steps.turn.state, history, transition)
                    for event in (*announce, *steps.checkpoint(4)):
                        yield event
                case End(history=history) as end:
                    if history is not None:
                        record.state = next_state(steps.turn.state, history)
                    yield loop.end(end)
                    return
    finally:
        # A consumer that stops pulling (or a cancelled task) must not leave tools running.
        if steps is not None and steps.turn.executor is not None:
            steps.turn.executor.discard()


async def open_loop(params: QueryParams, record: RunRecord,
                    signal: AbortSignal) -> tuple[list[LoopEvent], RunLoop | None]:
    """Before the first turn: the tool sources (MCP servers) started or approved, and their
    notices; then the :class:`RunLoop` the turns share (None, and a :class:`Terminal` last
    among the notices, when the run was stopped while they started)."""
    tools, notices = params.tools, list[LoopEvent]()
    if params.tool_sources:  # MCP servers: started (or approved) before the first request
        loaded = await load_tool_sources(params.tool_sources, tools, params.context, params.options.can_use_tool,
                                          signal)
        if loaded is None:
            record.phase = "ended"
            return [Terminal(TerminalReason.ABORTED_STREAMING, record.state.turn_count,
                             "Stopped while the tool servers were starting.", None, record.usage)], None
        tools, notices = loaded[0], list(loaded[1])
    env = ToolRunEnv(
        tools_by_name={t.name: t for t in tools}, context=params.context,
        can_use_tool=params.options.can_use_tool, hooks=params.hooks,
    )
    definitions = [t.to_api() for t in tools if t.name not in params.unsent_tools]
    context = run_context(params.model, params.system, definitions, env, params.hooks, params.user_context,
                          record.meter, signal, context_window=params.options.context_window,
                          max_tokens=params.options.max_tokens,
                          result_budget=params.budget)
    return notices, RunLoop(params, record, signal, env, definitions, context)


async def build_request(turn: Turn, loop: RunLoop) -> StepItems:
    """Step 1: ``messages_for_query`` (pairing repaired, tool-result budget applied, old
    tool results cleared past their threshold) and the request: ``prepend_user_context``,
    then the API's message rules. Past the compaction threshold the history is summarised
    instead, and the iteration goes round from it (``auto_compact``)."""
    params = loop.params
    over_budget = spend_limit_reached(loop)
    if over_budget:  # before every request (a recovery, a compaction too), not only a new turn
        yield End(TerminalReason.MAX_BUDGET, over_budget)
        return
    messages_for_query, repairs = ensure_tool_result_pairing(list(turn.state.messages))
    if repairs:
        yield Notice("history_repaired", "Repaired the history before sending: " + "; ".join(repairs))
    turn.messages_for_query, cleared, meter = loop.context.before_request(params.budget.apply(messages_for_query))
    for event in cleared:
        yield event
    loop.record.context = meter
    if no_room := loop.context.no_room(turn.messages_for_query):
        yield no_room  # no compaction shortens the user's own words: say so, and what to do
        yield _end_without_room(no_room)
        return
    transition = turn.state.transition.reason if turn.state.transition else None
    if params.compact_now is not None or loop.context.wants_compaction(meter.used, transition):
        manual = params.compact_now is not None
        trigger = CompactionTrigger.MANUAL if manual else CompactionTrigger.AUTO
        then = None if manual else Transition(TransitionReason.AUTO_COMPACT)
        compacted, verdict = await _compact(turn, loop, trigger, then, params.compact_now or "")
        if compacted is not None:
            yield compacted
        if verdict is not None:
            yield verdict
            return
    turn.request = ModelRequest(
        messages=normalize_messages_for_api(prepend_user_context(turn.messages_for_query, params.user_context)),
        system=params.system, tools=loop.tool_definitions,
        max_tokens=loop.context.max_tokens(meter.used), thinking=params.options.thinking,
    )

async def collect_response(turn: Turn, loop: RunLoop) -> StepItems:
    """Step 2: call the model, streaming, and collect ``assistant_messages`` and the
    ``tool_use`` blocks. With streaming tools, a call may start before the response ends."""
    params, record, signal = loop.params, loop.record, loop.signal
    request = turn.request
    if request is None:
        raise RuntimeError("collect_response runs after build_request has made the request")
    executor = turn.executor = StreamingToolExecutor(loop.env, signal) if params.options.streaming_tools else None
    snapshot: MessageSnapshot | None = None
    stopped_blocks: list[int] = []
    record.requests += 1
    record.phase = "streaming"
    yield RequestStart(turn.state.turn_count, record.requests, params.model.name, len(request.messages),
                       record.context)
    try:
        async with contextlib.aclosing(stream_with_abort(params.model, request, signal)) as stream:
            async for event in stream:
                record.meter.observe(event)
                if isinstance(event, StreamEvent):
                    snapshot = event.snapshot
                    if executor and model_moved_on(event):
                        executor.release()
                    if event.type == "content_block_stop" and event.index is not None:
                        stopped_blocks.append(event.index)
                        block = event.block
                        # Start (or hold) the tool before handing the event on: a slow
                        # consumer must not delay it.
                        if executor and block and is_tool_use(block):
                            executor.add_tool(parsed_call(block))
                    yield event
                    if executor:
                        for tool_event in executor.completed_events():
                            yield tool_event
                elif isinstance(event, (ModelRetry, ModelFallback)):
                    if executor and executor.has_effects:
                        turn.restart = event  # closing the stream stops the model's own retry
                        break
                    # Nothing was changed: the partial response and the read-only
                    # calls it started are thrown away; the retry asks again.
                    snapshot, stopped_blocks = None, []
                    if executor:
                        executor.discard()
                        executor = turn.executor = StreamingToolExecutor(loop.env, signal)
                    yield event
                elif isinstance(event, Notice):  # a line for the user (the offline replay's)
                    yield event
                elif isinstance(event, AssistantMessage):
                    turn.assistant_messages.append(event.message)
                    turn.last_response = event
                    yield event
    except Aborted:
        # Stop while streaming: keep what the model finished saying, answer every
        # tool_use it emitted (with a real result if the tool already finished).
        partial = completed_blocks(snapshot, stopped_blocks)
        async for item in _close_turn(turn, partial, signal,
                                      End(TerminalReason.ABORTED_STREAMING, "Stopped while the model was responding.")):
            yield item
        return
    except PromptTooLongError as exc:
        if executor:
            executor.discard()
        async for item in _prompt_too_long(turn, loop, exc):
            yield item
        return
    except Exception as exc:  # ModelError, or anything the model layer failed to wrap
        kind = exc.kind if isinstance(exc, ModelError) else type(exc).__name__
        # The model failed, not the tools: calls already released run to their end.
        partial = finished_part(snapshot, stopped_blocks, executor)
        async for item in _close_turn(turn, partial, signal, End(TerminalReason.MODEL_ERROR, str(exc) or kind, kind),
                                      cancel=False):
            yield item
        return

    if turn.restart is not None:
        # Tools that change things started before the stream broke: keep the finished
        # blocks as this turn's response (their calls run to a result in step 3) and go
        # on from that history, instead of the model's identical retry.
        partial = finished_part(snapshot, stopped_blocks, executor)
        kept = AssistantMessage({"role": "assistant", "content": partial},
                                Usage.from_api((snapshot or {}).get("usage")), params.model.name, None)
        turn.assistant_messages = [kept.message]
        turn.last_response = kept
        yield kept
        yield Notice("partial_response_kept", PARTIAL_KEPT_NOTICE.format(error=restart_error(turn.restart)))

    if turn.last_response is not None:
        loop.context.observe(turn.messages_for_query, turn.last_response.usage)
    for message in turn.assistant_messages:
        blocks = [b for b in blocks_of(message) if is_tool_use(b)]
        if blocks:
            turn.tool_use_blocks.extend(blocks)
            turn.needs_follow_up = True


async def _prompt_too_long(turn: Turn, loop: RunLoop, exc: PromptTooLongError) -> StepItems:
    """The API refused the prompt as too long: learn its window, then compact once and
    retry (``reactive_compact_retry``). The run ends ``prompt_too_long`` when the user's
    own words leave no room, on a second refusal, or when the compaction failed."""
    transition = turn.state.transition
    if transition is None or transition.reason is not TransitionReason.REACTIVE_COMPACT_RETRY:
        context = loop.context
        refused, learned = context.learn_window(str(exc), loop.record.context.used if loop.record.context else 0)
        if learned is not None:
            loop.record.learned_window = context.budget.window
            yield learned
        if no_room := context.no_room(turn.messages_for_query):
            yield no_room
            yield _end_without_room(no_room)
            return
        compacted, verdict = await _compact(turn, loop, CompactionTrigger.REACTIVE,
                                            Transition(TransitionReason.REACTIVE_COMPACT_RETRY, str(exc)), used=refused)
        if compacted is not None:
            yield compacted
        if verdict is not None:
            yield verdict
            return
    yield End(TerminalReason.PROMPT_TOO_LONG, str(exc) + PROMPT_TOO_LONG_ADVICE, error=str(exc))


def _end_without_room(notice: Notice) -> End:
    """End ``prompt_too_long``: the user's words (or the system prompt and tools) leave no
    room in the window; the notice's kind is the end's ``error``, its text and what to do the message."""
    return End(TerminalReason.PROMPT_TOO_LONG, notice.text + TOO_LONG_ADVICE[notice.kind], error=notice.kind)


async def _compact(turn: Turn, loop: RunLoop, trigger: CompactionTrigger, transition: Transition | None,
                   instructions: str = "", used: int | None = None) -> tuple[Compaction | None, NextStep | None]:
    """Summarise ``turn.messages_for_query``: the compaction's event, and the next step if it
    decides one: round again from the new history for the reason in ``transition`` (None: the
    run ends there, as ``%agent compact`` asks). ``used``: the prompt's size, if the API
    counted it (else the loop's estimate)."""
    used = used or (loop.record.context.used if loop.record.context else 0)
    try:
        result = await loop.context.compact(turn.messages_for_query, trigger, used, instructions)
    except Aborted:
        return None, End(TerminalReason.ABORTED_STREAMING, "Stopped while the conversation was being compacted.")
    if transition is None:
        history = tuple(result.messages) if result.messages is not None else None
        return result.event, End(TerminalReason.COMPLETED, result.event.summary or result.event.detail, history=history)
    return result.event, GoOn(tuple(result.messages), transition) if result.messages is not None else None


async def execute_tools(turn: Turn, loop: RunLoop) -> StepItems:
    """Step 3: every call to its end (``run_tools``, or the executor that started them
    while the model streamed); the results, in call order, are ``turn.tool_results``."""
    loop.record.phase = "tools"
    results: dict[str, ToolResultBlock] = {}
    if turn.executor:
        turn.executor.release()  # the response is complete (or kept): every call may start
        async for update in turn.executor.remaining_events():
            yield update
        results = turn.executor.results()
    else:
        async for update in run_tools(turn.tool_use_blocks, loop.env, loop.signal):
            if isinstance(update, ToolResult):
                results[update.tool_use_id] = update.block
            yield update
    for missing in _answer_missing(turn.tool_use_blocks, results, ToolOutcome.NOT_RUN):
        yield missing  # (cannot happen, but the invariant is worth a guard)
    turn.tool_results = [results[b["id"]] for b in turn.tool_use_blocks]  # call order: stable cache bytes


async def without_tools(turn: Turn, loop: RunLoop) -> StepItems:
    """No ``tool_use`` in the response: go on if the answer hit the output limit or a
    Stop hook blocks; end if a Stop hook says so; else the run ``completed``."""
    if turn.executor:
        turn.executor.discard()
    last: Message = turn.assistant_messages[-1] if turn.assistant_messages else {"role": "assistant", "content": []}
    stop_reason = turn.last_response.stop_reason if turn.last_response else None
    history = (*turn.messages_for_query, *turn.assistant_messages)
    state = turn.state
    if stop_reason == "max_tokens" and state.max_output_tokens_recovery_count < MAX_OUTPUT_TOKENS_RECOVERY_LIMIT:
        yield GoOn((*history, create_user_message(MAX_OUTPUT_TOKENS_RECOVERY_MESSAGE)),
                   Transition(TransitionReason.MAX_OUTPUT_TOKENS_RECOVERY),
                   (Notice("max_output_tokens_recovery",
                           "The answer hit the output limit; asking the model to go on."),))
        return
    verdict = await _run_stop_hooks(loop.params.hooks, last, list(history), state.stop_hook_active)
    if verdict is not None and verdict.stop:
        yield End(TerminalReason.STOP_HOOK_PREVENTED, verdict.message or "A Stop hook ended the run.", history=history)
    elif verdict is not None and verdict.decision == "block" and loop.stop_hook_blocks < MAX_STOP_HOOK_BLOCKS:
        loop.stop_hook_blocks += 1
        feedback = create_user_message(f"{STOP_HOOK_FEEDBACK_PREFIX}{verdict.message or ''}")
        yield GoOn((*history, feedback), Transition(TransitionReason.STOP_HOOK_BLOCKING, verdict.message),
                   (UserMessage(feedback, synthetic=True),))
    else:
        yield End(TerminalReason.COMPLETED, _text_of(last), history=history)


async def next_turn(turn: Turn, loop: RunLoop) -> StepItems:
    """Step 4, after the tools: the results go into the history as one user message
    (``run.state`` shows them before anyone sees them, even if the run ends here). Then
    the end, if Stop or a hook came while the tools ran, the run spent its limit
    (``max_budget``) or would pass ``max_turns`` (seed: ``nextTurnCount``); else a new
    turn. A kept partial response waits like the retry it replaces."""
    results_message = create_user_message(turn.tool_results)
    history = (*turn.messages_for_query, *turn.assistant_messages, results_message)
    loop.record.state = next_state(turn.state, history)
    yield UserMessage(results_message)
    control, max_turns, over_budget = loop.env.control, loop.params.options.max_turns, spend_limit_reached(loop)
    if loop.signal.aborted or control.interrupted:
        yield End(TerminalReason.ABORTED_TOOLS, "Stopped while tools were running.", history=history)
    elif control.hook_stop_message is not None:
        yield End(TerminalReason.HOOK_STOPPED, control.hook_stop_message, history=history)
    elif over_budget:  # the tools of the last response have run: every tool_use has its result
        yield End(TerminalReason.MAX_BUDGET, over_budget, history=history)
    elif max_turns is not None and turn.state.turn_count + 1 > max_turns:
        yield End(TerminalReason.MAX_TURNS, f"Reached the limit of {max_turns} turn(s).", history=history)
    else:
        loop.stop_hook_blocks = 0  # a new turn
        if turn.restart is not None:
            await wait_before_retry(turn.restart, loop.signal)
            yield GoOn(history, Transition(TransitionReason.PARTIAL_RESPONSE_KEPT, restart_error(turn.restart)))
        else:
            yield GoOn(history, Transition(TransitionReason.NEXT_TURN))


def spend_limit_reached(loop: RunLoop) -> str | None:
    """Why the run must not send another request (it spent ``max_budget_usd``), or None."""
    limit, spent = loop.params.options.max_budget_usd, loop.record.usage.cost_usd
    if limit is None or spent < limit:
        return None
    return f"Reached the spend limit of ${limit:g} for one run (${spent:.4f} spent)."


def _answer_missing(blocks: list[ToolUseBlock], results: dict[str, ToolResultBlock],
                    outcome: ToolOutcome) -> Iterator[ToolResult]:
    """Each call in ``blocks`` without a result gets one (added to ``results``), and its
    :class:`ToolResult` event says ``outcome``: ``stopped`` after Stop, else ``not_run``."""
    names = {b["id"]: b["name"] for b in blocks}
    message = INTERRUPTED_MESSAGE if outcome is ToolOutcome.STOPPED else MISSING_RESULT_MESSAGE
    calls: Message = {"role": "assistant", "content": list[ContentBlock](blocks)}
    for block in list(yield_missing_tool_result_blocks([calls], results.keys(), message)):
        results[block["tool_use_id"]] = block
        yield ToolResult(block["tool_use_id"], names[block["tool_use_id"]], block, outcome=outcome)


async def _close_turn(turn: Turn, partial: list[ContentBlock], signal: AbortSignal, end: End,
                      cancel: bool = True) -> StepItems:
    """End a turn that was cut short (``end``): keep the finished part of the response and
    give each of its tool calls a result (real if the executor finished it, else an error).
    ``cancel``: Stop cancels running calls; after a model error they run to their end."""
    results: dict[str, ToolResultBlock] = {}
    executor = turn.executor
    if executor:
        if cancel:
            executor.abort_all()
        else:
            executor.release()
        async for update in executor.remaining_events():
            yield update
        results = executor.results()
    history = list(turn.messages_for_query)
    if partial:
        history.append({"role": "assistant", "content": partial})
        blocks = [b for b in partial if is_tool_use(b)]
        for missing in _answer_missing(blocks, results, ToolOutcome.STOPPED if cancel else ToolOutcome.NOT_RUN):
            yield missing
        if blocks:
            message = create_user_message([results[b["id"]] for b in blocks])
            history.append(message)
            yield UserMessage(message, synthetic=True)
    yield replace(end, history=tuple(history))


async def _run_stop_hooks(hooks: Hooks, last: Message, history: list[Message],
                         active: bool) -> HookResult | None:
    for hook in hooks.stop:
        verdict = await call_hook(hook, StopHookInput(_text_of(last), tuple(history), active))
        if verdict is not None and (verdict.stop or verdict.decision == "block"):
            return verdict
    return None


def _text_of(message: Message) -> str:
    return "".join(b["text"] for b in blocks_of(message) if is_text(b))
