"""``query_loop()``: the seed article's four steps, in Python.

1. Build ``messages_for_query`` from ``State.messages`` and call the model, streaming.
2. Collect ``assistant_messages`` and the ``tool_use`` blocks; ``needs_follow_up`` is
   set from the blocks actually received, never from ``stop_reason``.
3. Run the tools (``run_tools``, or the ``StreamingToolExecutor`` that started them
   while the model was streaming): every ``tool_use`` gets one ``tool_result``.
4. ``State(messages=[*messages_for_query, *assistant_messages, *tool_results],
   turn_count=turn_count + 1, transition=Transition("next_turn"))``, back to 1.

The one Python difference: an async generator cannot ``return`` a value, so the end
reason is the last thing the loop yields, a :class:`Terminal`.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

from ..tools.base import Tool, ToolContext
from .abort import AbortSignal
from .budget import ToolResultBudget
from .events import (
    AssistantMessage, Checkpoint, ModelFallback, ModelRetry, Notice, RequestStart,
    StreamEvent, ToolResult, UserMessage, STEP_NAMES,
)
from .hooks import Hooks, StopHookInput, call_hook
from .messages import (
    INTERRUPTED_MESSAGE, create_user_message, ensure_tool_result_pairing,
    normalize_messages_for_api, prepend_user_context, yield_missing_tool_result_blocks,
)
from .model_protocol import Model, ModelError, ModelRequest, PromptTooLongError
from .orchestration import StreamingToolExecutor, run_tools
from .stream import (
    Aborted, completed_blocks, finished_part, model_moved_on, restart_error, stream_with_abort,
    wait_before_retry, with_parsed_input,
)
from .state import State, Terminal, TerminalReason, Transition
from .tool_execution import CanUseTool, RunControl, ToolRunEnv
from .usage import Usage

MAX_OUTPUT_TOKENS_RECOVERY_LIMIT = 3
MAX_STOP_HOOK_BLOCKS = 8
PARTIAL_KEPT_NOTICE = (
    "The response broke off ({error}) after tool calls that change things had started. "
    "Kept its finished part and their results; the next request goes on from there."
)
MAX_OUTPUT_TOKENS_RECOVERY_MESSAGE = (
    "Output token limit hit. Resume directly from where you stopped, with no apology "
    "or recap. Break remaining work into smaller pieces."
)


@dataclass
class QueryParams:
    """Everything that stays fixed for one run (seed: ``QueryParams``)."""

    model: Model
    tools: list[Tool]
    context: ToolContext
    system: list[dict[str, Any]] = field(default_factory=list)
    user_context: dict[str, str] = field(default_factory=dict)
    max_turns: int | None = None
    can_use_tool: CanUseTool | None = None
    hooks: Hooks = field(default_factory=Hooks)
    streaming_tools: bool = True
    checkpoints: bool = False
    max_tokens: int = 8192
    thinking: dict[str, Any] | None = None
    budget: ToolResultBudget = field(default_factory=ToolResultBudget)
    #: query() made the model itself (from an id or the environment), so the run closes it.
    owns_model: bool = False


@dataclass
class RunRecord:
    """What the run handle can see while the loop runs."""

    state: State
    usage: Usage = field(default_factory=Usage)
    requests: int = 0
    phase: str = "idle"  # "streaming" or "tools": which abort reason applies


def _checkpoint(step: int, state: State, messages_for_query: list, assistant_messages: list,
                tool_results: list, needs_follow_up: bool, **extra: Any) -> Checkpoint:
    return Checkpoint(
        step=step, step_name=STEP_NAMES[step - 1], state=state,
        messages_for_query=tuple(messages_for_query), assistant_messages=tuple(assistant_messages),
        tool_results=tuple(tool_results), needs_follow_up=needs_follow_up,
        turn_count=state.turn_count, transition=state.transition, extra=extra,
    )


async def query_loop(params: QueryParams, record: RunRecord, signal: AbortSignal) -> AsyncIterator[Any]:
    """The loop. Yields events; the last one is always a :class:`Terminal`."""
    env = ToolRunEnv(
        tools_by_name={t.name: t for t in params.tools}, context=params.context,
        can_use_tool=params.can_use_tool, hooks=params.hooks,
    )
    tool_definitions = [t.to_api() for t in params.tools]
    stop_hook_blocks = 0

    def end(reason: TerminalReason, message: str = "", error: str | None = None) -> Terminal:
        record.phase = "ended"
        return Terminal(reason, record.state.turn_count, message, error, record.usage)

    executor: StreamingToolExecutor | None = None
    try:
        while True:
            state = record.state
            # ---- Step 1: build messages_for_query, call the model (streaming) ----------
            messages_for_query, repairs = ensure_tool_result_pairing(list(state.messages))
            if repairs:
                yield Notice("history_repaired", "Repaired the history before sending: " + "; ".join(repairs))
            messages_for_query = params.budget.apply(messages_for_query)
            request = ModelRequest(
                messages=normalize_messages_for_api(prepend_user_context(messages_for_query, params.user_context)),
                system=params.system, tools=tool_definitions,
                max_tokens=params.max_tokens, thinking=params.thinking,
            )
            if params.checkpoints:
                yield _checkpoint(1, state, messages_for_query, [], [], False, request=request)

            assistant_messages: list[dict[str, Any]] = []
            tool_use_blocks: list[dict[str, Any]] = []
            needs_follow_up = False
            executor = StreamingToolExecutor(env, signal) if params.streaming_tools else None
            last_response: AssistantMessage | None = None
            snapshot: dict[str, Any] | None = None
            stopped_blocks: list[int] = []
            record.requests += 1
            record.phase = "streaming"
            yield RequestStart(state.turn_count, record.requests, params.model.name, len(request.messages))
            # A retry or fallback after a call that changes something had started: the
            # partial response is kept (not thrown away with its effects), see below.
            restart: ModelRetry | ModelFallback | None = None
            try:
                async with contextlib.aclosing(stream_with_abort(params.model, request, signal)) as stream:
                    async for event in stream:
                        if isinstance(event, StreamEvent):
                            snapshot = event.snapshot
                            if executor and model_moved_on(event):
                                executor.release()
                            if event.type == "content_block_stop" and event.index is not None:
                                stopped_blocks.append(event.index)
                                block = event.block
                                # Start (or hold) the tool before handing the event on: a slow
                                # consumer must not delay it.
                                if executor and block and block.get("type") == "tool_use":
                                    executor.add_tool(with_parsed_input(block))
                            yield event
                            if executor:
                                for tool_event in executor.completed_events():
                                    yield tool_event
                        elif isinstance(event, (ModelRetry, ModelFallback)):
                            if executor and executor.has_effects:
                                restart = event  # closing the stream stops the model's own retry
                                break
                            # Nothing was changed: the partial response and the read-only
                            # calls it started are thrown away; the retry asks again.
                            snapshot, stopped_blocks = None, []
                            if executor:
                                executor.discard()
                                executor = StreamingToolExecutor(env, signal)
                            yield event
                        elif isinstance(event, AssistantMessage):
                            record.usage.add(event.usage)
                            if not event.usage.requests:  # a model that does not count requests
                                record.usage.requests += 1
                            assistant_messages.append(event.message)
                            last_response = event
                            yield event
            except Aborted:
                # Stop while streaming: keep what the model finished saying, answer every
                # tool_use it emitted (with a real result if the tool already finished).
                partial = completed_blocks(snapshot, stopped_blocks)
                async for item in _close_turn(record, messages_for_query, partial, executor, signal):
                    yield item
                yield end(TerminalReason.ABORTED_STREAMING, "Stopped while the model was responding.")
                return
            except PromptTooLongError as exc:
                if executor:
                    executor.discard()
                yield end(TerminalReason.PROMPT_TOO_LONG, str(exc), error=str(exc))
                return
            except Exception as exc:  # ModelError, or anything the model layer failed to wrap
                kind = exc.kind if isinstance(exc, ModelError) else type(exc).__name__
                # The model failed, not the tools: calls already released run to their end.
                partial = finished_part(snapshot, stopped_blocks, executor)
                async for item in _close_turn(record, messages_for_query, partial, executor, signal, cancel=False):
                    yield item
                yield end(TerminalReason.MODEL_ERROR, str(exc) or kind, error=kind)
                return

            if restart is not None:
                # Tools that change things started before the stream broke: keep the
                # finished blocks as this turn's response (their calls run to a result,
                # below) and go on from that history, instead of the model's identical retry.
                partial = finished_part(snapshot, stopped_blocks, executor)
                kept = AssistantMessage({"role": "assistant", "content": partial},
                                        Usage.from_api((snapshot or {}).get("usage")), params.model.name, None)
                record.usage.add(kept.usage)
                record.usage.requests += 1
                assistant_messages = [kept.message]
                last_response = kept
                yield kept
                yield Notice("partial_response_kept", PARTIAL_KEPT_NOTICE.format(error=restart_error(restart)))

            # ---- Step 2: collect the response; needs_follow_up from actual tool_use blocks ----
            for message in assistant_messages:
                blocks = [b for b in message["content"] if b.get("type") == "tool_use"]
                if blocks:
                    tool_use_blocks.extend(blocks)
                    needs_follow_up = True
            if params.checkpoints:
                yield _checkpoint(2, state, messages_for_query, assistant_messages, [], needs_follow_up,
                                  tool_use_blocks=tuple(tool_use_blocks))

            if not needs_follow_up:
                if executor:
                    executor.discard()
                last = assistant_messages[-1] if assistant_messages else {"content": []}
                stop_reason = last_response.stop_reason if last_response else None
                history = [*messages_for_query, *assistant_messages]
                if stop_reason == "max_tokens" and state.max_output_tokens_recovery_count < MAX_OUTPUT_TOKENS_RECOVERY_LIMIT:
                    record.state = State(
                        messages=(*history, create_user_message(MAX_OUTPUT_TOKENS_RECOVERY_MESSAGE)),
                        turn_count=state.turn_count,
                        transition=Transition("max_output_tokens_recovery"),
                        max_output_tokens_recovery_count=state.max_output_tokens_recovery_count + 1,
                    )
                    yield Notice("max_output_tokens_recovery", "The answer hit the output limit; asking the model to go on.")
                    continue
                verdict = await _run_stop_hooks(params.hooks, last, history, state.stop_hook_active)
                record.state = State(messages=tuple(history), turn_count=state.turn_count,
                                     transition=state.transition)
                if verdict is not None and verdict.stop:
                    yield end(TerminalReason.STOP_HOOK_PREVENTED, verdict.message or "A Stop hook ended the run.")
                    return
                if verdict is not None and verdict.decision == "block" and stop_hook_blocks < MAX_STOP_HOOK_BLOCKS:
                    stop_hook_blocks += 1
                    feedback = create_user_message(f"Stop hook feedback:\n{verdict.message or ''}")
                    record.state = State(
                        messages=(*history, feedback), turn_count=state.turn_count,
                        transition=Transition("stop_hook_blocking", verdict.message), stop_hook_active=True,
                    )
                    yield UserMessage(feedback, synthetic=True)
                    continue
                yield end(TerminalReason.COMPLETED, _text_of(last))
                return

            # ---- Step 3: run the tools; every tool_use gets exactly one tool_result -------
            record.phase = "tools"
            results: dict[str, dict[str, Any]] = {}
            if executor:
                executor.release()  # the response is complete (or kept): every call may start
                async for update in executor.remaining_events():
                    yield update
                results = executor.results()
            else:
                async for update in run_tools(tool_use_blocks, env, signal):
                    if isinstance(update, ToolResult):
                        results[update.tool_use_id] = update.block
                    yield update
            tool_results = _results_in_call_order(tool_use_blocks, results)
            if params.checkpoints:
                yield _checkpoint(3, state, messages_for_query, assistant_messages, tool_results, True)
            results_message = create_user_message(tool_results)
            history = (*messages_for_query, *assistant_messages, results_message)
            record.state = State(messages=history, turn_count=state.turn_count, transition=state.transition)
            yield UserMessage(results_message)

            if signal.aborted or env.control.interrupted:
                yield end(TerminalReason.ABORTED_TOOLS, "Stopped while tools were running.")
                return
            if env.control.hook_stop_message is not None:
                yield end(TerminalReason.HOOK_STOPPED, env.control.hook_stop_message)
                return

            # ---- Step 4: the next State; check max_turns before asking the model again ----
            next_turn_count = state.turn_count + 1
            if params.max_turns is not None and next_turn_count > params.max_turns:
                yield end(TerminalReason.MAX_TURNS, f"Reached the limit of {params.max_turns} turn(s).")
                return
            transition = Transition("next_turn")
            if restart is not None:
                transition = Transition("partial_response_kept", restart_error(restart))
                await wait_before_retry(restart, signal)
            record.state = State(messages=history, turn_count=next_turn_count, transition=transition)
            stop_hook_blocks = 0
            if params.checkpoints:
                yield _checkpoint(4, record.state, messages_for_query, assistant_messages, tool_results, True)
    finally:
        # A consumer that stops pulling (or a cancelled task) must not leave tools running.
        if executor is not None:
            executor.discard()


def _results_in_call_order(blocks: list[dict[str, Any]], results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The results in the order the calls were made (stable bytes for the cache); any
    call without a result (cannot happen, but the invariant is worth a guard) gets one."""
    missing = yield_missing_tool_result_blocks(
        [{"content": blocks}], results.keys(), INTERRUPTED_MESSAGE
    )
    filled = {b["tool_use_id"]: b for b in missing}
    return [results.get(b["id"]) or filled[b["id"]] for b in blocks]


async def _close_turn(record: RunRecord, messages_for_query: list, partial: list[dict[str, Any]],
                      executor: StreamingToolExecutor | None, signal: AbortSignal,
                      cancel: bool = True) -> AsyncIterator[Any]:
    """End a turn that was cut short: keep the finished part of the response and give
    each of its tool calls a result (real if the executor finished it, else an error).
    ``cancel``: Stop cancels running calls; after a model error they run to their end."""
    results: dict[str, dict[str, Any]] = {}
    if executor:
        if cancel:
            executor.abort_all()
        else:
            executor.release()
        async for update in executor.remaining_events():
            yield update
        results = executor.results()
    history = list(messages_for_query)
    if partial:
        assistant = {"role": "assistant", "content": partial}
        history.append(assistant)
        blocks = [b for b in partial if b.get("type") == "tool_use"]
        if blocks:
            message = create_user_message(_results_in_call_order(blocks, results))
            history.append(message)
            yield UserMessage(message, synthetic=True)
    record.state = State(messages=tuple(history), turn_count=record.state.turn_count,
                         transition=record.state.transition)


async def _run_stop_hooks(hooks: Hooks, last: dict[str, Any], history: list, active: bool):
    for hook in hooks.stop:
        verdict = await call_hook(hook, StopHookInput(_text_of(last), tuple(history), active))
        if verdict is not None and (verdict.stop or verdict.decision == "block"):
            return verdict
    return None


def _text_of(message: dict[str, Any]) -> str:
    return "".join(b.get("text", "") for b in message.get("content", []) if b.get("type") == "text")


def query(
    prompt: str | list[dict[str, Any]],
    *,
    model: Any = None,
    tools: list[Tool] | None = None,
    max_turns: int | None = None,
    permission_mode: str = "default",
    can_use_tool: CanUseTool | None = None,
    hooks: Any = None,
    cwd: Any = None,
    system_prompt: str | None = None,
    checkpoints: bool = False,
    streaming_tools: bool = True,
    permissions: Any = None,
    context: ToolContext | None = None,
    notebook_path: str | None = None,
    max_tokens: int = 8192,
    thinking: dict[str, Any] | None = None,
) -> "QueryRun":
    """Start the agent loop on ``prompt`` (a string, or Messages-API messages) and return
    its run handle at once. Nothing is sent until the run is iterated or awaited.

    ``model`` is a model id, a :class:`Model`, or ``None`` (``JUPYTER_AGENT_REPLAY`` for
    the offline replay, else ``JUPYTER_AGENT_MODEL``, else a current Sonnet). ``tools``
    defaults to the file and notebook tools. ``context`` shares files-read and kernels
    between runs of one conversation (``jupyter_agent.Conversation`` does this for you).
    """
    from pathlib import Path

    from ..prompts import DEFAULT_SYSTEM_PROMPT, user_context
    from .model_resolution import resolve_model
    from .run import QueryRun

    if max_turns is not None and (not isinstance(max_turns, int) or max_turns < 1):
        raise ValueError(f"max_turns must be a whole number of at least 1, not {max_turns!r}.")
    messages = _initial_messages(prompt)
    resolved_model = resolve_model(model)
    if context is None:
        context = ToolContext(cwd=Path(cwd or Path.cwd()).expanduser().resolve())
    elif cwd is not None:
        context.cwd = Path(cwd).expanduser().resolve()
    if permissions is None:
        from ..permissions import Permissions

        permissions = Permissions(mode=permission_mode, cwd=context.cwd)
    context.permissions = permissions
    system_text = system_prompt if system_prompt is not None else DEFAULT_SYSTEM_PROMPT
    note = permissions.system_prompt_note() if hasattr(permissions, "system_prompt_note") else ""
    system = [{"type": "text", "text": system_text + (f"\n\n{note}" if note else "")}]
    if tools is None:
        from ..tools import default_tools

        tools = default_tools()
    params = QueryParams(
        model=resolved_model,
        tools=list(tools),
        context=context,
        system=system,
        user_context=user_context(context.cwd, notebook_path, context.session.get("agent_cell_id")),
        max_turns=max_turns,
        can_use_tool=can_use_tool,
        hooks=Hooks.coerce(hooks),
        streaming_tools=streaming_tools,
        checkpoints=checkpoints,
        max_tokens=max_tokens,
        thinking=thinking,
        owns_model=model is None or isinstance(model, str),
    )
    return QueryRun(params, State(messages=tuple(messages)), permission_mode=getattr(permissions, "mode", permission_mode))


def _initial_messages(prompt: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(prompt, str):
        if not prompt.strip():
            raise ValueError("The prompt is empty: say what the agent should do.")
        return [create_user_message(prompt)]
    if isinstance(prompt, list) and prompt and all(isinstance(m, dict) and "role" in m for m in prompt):
        if prompt[-1].get("role") != "user":
            raise ValueError("The last message of a prompt list must have role 'user'.")
        return list(prompt)
    raise TypeError("prompt must be a string or a non-empty list of Messages-API messages "
                    "({'role': ..., 'content': ...}).")
