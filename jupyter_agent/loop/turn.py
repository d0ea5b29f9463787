"""What one run of the loop carries, and each of its turns.

- :class:`QueryParams`: what stays fixed for the run; :class:`RunRecord`: what the run
  handle sees while it runs; :class:`RunLoop`: what every iteration of the run shares.
- :class:`Turn`: one iteration, the seed article's per-iteration collectors;
  :data:`NextStep` (:class:`GoOn` or :class:`End`): how a step says the iteration ends;
  :class:`Steps`: runs an iteration's steps in order and keeps the one that decided;
  :func:`checkpoint`: a step of it, as a lesson's stepper shows it.

The four steps that fill a turn, and the loop that runs them, are in :mod:`.query`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field

from .abort import CELL_INTERRUPTED, STOP_BUTTON, AbortSignal
from .budget import ToolResultBudget
from .compaction import RunContext
from .events import AssistantMessage, Checkpoint, ContextUsage, LoopEvent, ModelFallback, ModelRetry, STEP_NAMES
from .hooks import Hooks
from .loop_options import LoopOptions
from .model_protocol import Model, ModelRequest
from .orchestration import StreamingToolExecutor
from .state import State, Terminal, TerminalReason, Transition, TransitionReason
from .tool import AnyTool, ToolContext, ToolSource
from .tool_execution import ToolRunEnv
from .meter import StreamUsage
from .usage import Usage
from .wire import Message, SystemBlock, ToolDefinition, ToolResultBlock, ToolUseBlock

#: The end message of a run stopped because the user interrupted the cell it was running.
CELL_INTERRUPTED_MESSAGE = ("Stopped: the cell the agent was running was interrupted (the kernel's interrupt, "
                            "or Stop), which stops the run as Stop does.")


@dataclass
class QueryParams:
    """Everything that stays fixed for one run (seed: ``QueryParams``).

    ``options`` is the run's options object itself (``query()`` passes its ``AgentOptions``,
    resolved: the window read from the environment, the spend limit bounded by the policy);
    the loop reads the fields of :class:`LoopOptions` from it. The rest is what ``query()``
    made of the other options: the model, the tools, the context, the prompt, the hooks.
    """

    model: Model
    tools: list[AnyTool]
    context: ToolContext
    options: LoopOptions = field(default_factory=LoopOptions)
    system: list[SystemBlock] = field(default_factory=list)
    user_context: dict[str, str] = field(default_factory=dict)
    hooks: Hooks = field(default_factory=Hooks)
    budget: ToolResultBudget = field(default_factory=ToolResultBudget)
    #: Compact the history now (with these instructions) and end: ``%agent compact``.
    compact_now: str | None = None
    #: query() made the model itself (from an id or the environment), so the run closes it.
    owns_model: bool = False
    #: Where more tools come from once the run starts (MCP servers), asked before the first request.
    tool_sources: list[ToolSource] = field(default_factory=list)
    #: query() made the sources for this run alone, so the run closes them at its end.
    owns_tool_sources: bool = False
    #: Tools whose definitions are not sent (no call of theirs can run in this session); a call
    #: the model makes anyway still gets the permission system's answer.
    unsent_tools: frozenset[str] = frozenset()


@dataclass
class RunRecord:
    """What the run handle can see while the loop runs."""

    state: State
    #: The run's spend, counted from the stream (``message_start`` / ``message_delta``), so
    #: a response cut by Stop, a model error or a retry counts what it cost.
    meter: StreamUsage = field(default_factory=StreamUsage)
    requests: int = 0
    phase: str = "idle"  # "streaming" or "tools": which abort reason applies
    #: How full the context was before the latest request (None before the first).
    context: ContextUsage | None = None
    #: The context window the API showed this run to have, smaller than the one the run
    #: started with (a ``prompt is too long`` refusal); None when none was learned. The
    #: conversation starts its next runs of the same model with it.
    learned_window: int | None = None

    @property
    def usage(self) -> Usage:
        """Everything this run spent so far (the response now streaming included)."""
        return self.meter.total


#: Transitions that sent tool results back to the model: they start a new turn.
NEW_TURN_REASONS = frozenset(r for r in TransitionReason if r.new_turn)
#: Transitions a step-4 checkpoint shows: a new turn, and a history the loop compacted
#: (the stepper then shows the summarised State the next iteration starts from).
CHECKPOINT_REASONS = NEW_TURN_REASONS | {r for r in TransitionReason if r.compacted}


@dataclass(frozen=True)
class GoOn:
    """A step's verdict: go round again from ``history``, for the reason in ``transition``.
    ``announce``: events that say why, yielded once the next ``State`` is built."""

    history: tuple[Message, ...]
    transition: Transition
    announce: tuple[LoopEvent, ...] = ()


@dataclass(frozen=True)
class End:
    """A step's verdict: the run ends here, for ``reason`` (``message`` says why in words,
    ``error`` names the failure); ``history``: the messages it leaves, None if unchanged."""

    reason: TerminalReason
    message: str = ""
    error: str | None = None
    history: tuple[Message, ...] | None = None


#: What a step that decides how the iteration ends hands the loop (as openai-agents'
#: ``NextStepRunAgain`` / ``NextStepFinalOutput``): ``query_loop`` matches on it.
NextStep = GoOn | End


@dataclass
class Turn:
    """One iteration of the loop: the article's per-iteration collectors, filled by the
    steps in order. How the iteration ends is not kept here: the step that decides
    returns it, a :data:`NextStep`.
    """

    state: State
    messages_for_query: list[Message] = field(default_factory=list)
    request: ModelRequest | None = None
    assistant_messages: list[Message] = field(default_factory=list)
    tool_use_blocks: list[ToolUseBlock] = field(default_factory=list)
    needs_follow_up: bool = False
    tool_results: list[ToolResultBlock] = field(default_factory=list)
    last_response: AssistantMessage | None = None
    executor: StreamingToolExecutor | None = None
    #: A retry or fallback came after a call that changes something had started: the
    #: partial response is kept (not thrown away with its effects), see collect_response.
    restart: ModelRetry | ModelFallback | None = None


@dataclass
class RunLoop:
    """What every iteration of one run shares."""

    params: QueryParams
    record: RunRecord
    signal: AbortSignal
    env: ToolRunEnv
    tool_definitions: list[ToolDefinition]
    context: RunContext
    stop_hook_blocks: int = 0  # Stop hook "block"s since the last new turn

    def end(self, end: End) -> Terminal:
        """The run's last event (what stopped an aborted run, in ``stopped_by``)."""
        self.record.phase = "ended"
        aborted = end.reason in (TerminalReason.ABORTED_STREAMING, TerminalReason.ABORTED_TOOLS)
        stopped_by = (self.signal.reason or STOP_BUTTON) if aborted else None
        message = CELL_INTERRUPTED_MESSAGE if stopped_by == CELL_INTERRUPTED else end.message
        return Terminal(end.reason, self.record.state.turn_count, message, end.error, self.record.usage,
                        stopped_by=stopped_by)


def checkpoint(step: int, state: State, turn: Turn) -> Checkpoint:
    """What step ``step`` of ``turn`` shows a lesson's stepper (``QueryParams.options.checkpoints``):
    the collectors so far, and what the step adds (step 1 its request, step 2 the calls)."""
    extra: dict[str, object] = {}
    if step == 1:
        extra["request"] = turn.request
    elif step == 2:
        extra["tool_use_blocks"] = tuple(turn.tool_use_blocks)
    return Checkpoint(
        step=step, step_name=STEP_NAMES[step - 1], state=state,
        messages_for_query=tuple(turn.messages_for_query),
        assistant_messages=tuple(turn.assistant_messages), tool_results=tuple(turn.tool_results),
        needs_follow_up=turn.needs_follow_up, turn_count=state.turn_count,
        transition=state.transition, extra=extra,
    )


#: What a step yields: its events as they happen, then (if it decides how the iteration
#: ends) the next step, last.
StepItems = AsyncGenerator[LoopEvent | NextStep, None]
#: A step of the loop (``query.build_request``...): a generator over one iteration's turn.
Step = Callable[[Turn, RunLoop], StepItems]


class Steps:
    """Runs one iteration's steps in order (:meth:`run`): yields each step's events, keeps
    the next step the deciding one returned (after it, later steps do not run), and makes
    the checkpoints a lesson's stepper shows (:meth:`checkpoint`: the one place they are made)."""

    def __init__(self, turn: Turn, loop: RunLoop) -> None:
        self.turn, self.loop = turn, loop
        self.next: NextStep | None = None

    async def run(self, number: int, step: Step) -> AsyncIterator[LoopEvent]:
        """Step ``number``: its events, its verdict kept, then its checkpoint (step 4's
        comes once the next State is built). Nothing once an earlier step decided."""
        if self.next is not None:
            return
        async with contextlib.aclosing(step(self.turn, self.loop)) as items:
            async for item in items:
                if isinstance(item, (GoOn, End)):
                    self.next = item
                else:
                    yield item
        if number < 4:
            for event in self.checkpoint(number):
                yield event

    @property
    def verdict(self) -> NextStep:
        """How the iteration ends (step 4 always decides, if no step before it did)."""
        if self.next is None:
            raise RuntimeError("no step decided how this iteration ends")
        return self.next

    def checkpoint(self, number: int) -> tuple[Checkpoint, ...]:
        """Step ``number``'s checkpoint, with ``QueryParams.options.checkpoints``: after steps 1-3
        unless the step decided; after step 4 when a new turn or a compacted history follows
        (the stepper then shows the State the next iteration starts from)."""
        if not self.loop.params.options.checkpoints:
            return ()
        if number < 4:
            return () if self.next is not None else (checkpoint(number, self.turn.state, self.turn),)
        state = self.loop.record.state
        shown = state.transition is not None and state.transition.reason in CHECKPOINT_REASONS
        return (checkpoint(4, state, self.turn),) if shown else ()
