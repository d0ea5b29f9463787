"""What one run of the loop carries, and each of its turns.

- :class:`QueryParams`: what stays fixed for the run; :class:`RunRecord`: what the run
  handle sees while it runs; :class:`RunLoop`: what every iteration of the run shares.
- :class:`Turn`: one iteration, the seed article's per-iteration collectors and how the
  iteration ends (a step says so with :meth:`Turn.go_on` or :meth:`Turn.finish`);
  :func:`checkpoint`: a step of it, as a lesson's stepper shows it.

The four steps that fill a turn, and the loop that runs them, are in :mod:`.query`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .abort import CELL_INTERRUPTED, STOP_BUTTON, AbortSignal
from .budget import ToolResultBudget
from .compaction import RunContext
from .events import AssistantMessage, Checkpoint, ContextUsage, ModelFallback, ModelRetry, STEP_NAMES
from .hooks import Hooks
from .model_protocol import Model, ModelRequest
from .orchestration import StreamingToolExecutor
from .state import State, Terminal, TerminalReason, Transition
from .tool import Tool, ToolContext, ToolSource
from .tool_execution import CanUseTool, ToolRunEnv
from .usage import StreamUsage, Usage

#: The end message of a run stopped because the user interrupted the cell it was running.
CELL_INTERRUPTED_MESSAGE = ("Stopped: the cell the agent was running was interrupted (the kernel's interrupt, "
                            "or Stop), which stops the run as Stop does.")


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
    #: The model's context window in tokens (None: from the table of known models).
    context_window: int | None = None
    #: Compact the history now (with these instructions) and end: ``%agent compact``.
    compact_now: str | None = None
    #: End the run (``max_budget``) before a request once it has spent this much (USD).
    max_budget_usd: float | None = None
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
NEW_TURN_REASONS = ("next_turn", "partial_response_kept")
#: Transitions a step-4 checkpoint shows: a new turn, and a history the loop compacted
#: (the stepper then shows the summarised State the next iteration starts from).
CHECKPOINT_REASONS = (*NEW_TURN_REASONS, "auto_compact", "reactive_compact_retry")


@dataclass
class Turn:
    """One iteration of the loop: the article's collectors, and what the iteration decided.

    A step that decides how the iteration ends says so with :meth:`go_on` or
    :meth:`finish`; step 4 then builds the next ``State`` from it, or ends the run.
    """

    state: State
    messages_for_query: list[dict[str, Any]] = field(default_factory=list)
    request: ModelRequest | None = None
    assistant_messages: list[dict[str, Any]] = field(default_factory=list)
    tool_use_blocks: list[dict[str, Any]] = field(default_factory=list)
    needs_follow_up: bool = False
    tool_results: list[dict[str, Any]] = field(default_factory=list)
    last_response: AssistantMessage | None = None
    executor: StreamingToolExecutor | None = None
    #: A retry or fallback came after a call that changes something had started: the
    #: partial response is kept (not thrown away with its effects), see collect_response.
    restart: ModelRetry | ModelFallback | None = None
    # -- what the iteration decided --------------------------------------------------
    #: The history after this iteration (None: the run ends with the history unchanged).
    history: tuple[dict[str, Any], ...] | None = None
    #: Why the loop goes round again; None while undecided or when the run ends.
    transition: Transition | None = None
    #: Events that say why the loop goes round, yielded once the next State is built.
    announce: tuple[Any, ...] = ()
    #: How the run ends: (reason, message, error).
    end: tuple[TerminalReason, str, str | None] | None = None

    @property
    def decided(self) -> bool:
        """Has a step said how this iteration ends (go round again, or end the run)?"""
        return self.transition is not None or self.end is not None

    def go_on(self, history: Any, transition: Transition, *announce: Any) -> None:
        """Go round again from ``history``, for the reason in ``transition``."""
        self.history, self.transition, self.announce = tuple(history), transition, announce

    def finish(self, reason: TerminalReason, message: str = "", error: str | None = None,
               history: Any = None) -> None:
        """End the run here (``history``: the messages it leaves, if it changed them)."""
        self.end = (reason, message, error)
        if history is not None:
            self.history = tuple(history)


@dataclass
class RunLoop:
    """What every iteration of one run shares."""

    params: QueryParams
    record: RunRecord
    signal: AbortSignal
    env: ToolRunEnv
    tool_definitions: list[dict[str, Any]]
    context: RunContext
    stop_hook_blocks: int = 0  # Stop hook "block"s since the last new turn

    def end(self, reason: TerminalReason, message: str = "", error: str | None = None) -> Terminal:
        """The run's last event (what stopped an aborted run, in ``stopped_by``)."""
        self.record.phase = "ended"
        aborted = reason in (TerminalReason.ABORTED_STREAMING, TerminalReason.ABORTED_TOOLS)
        stopped_by = (self.signal.reason or STOP_BUTTON) if aborted else None
        if stopped_by == CELL_INTERRUPTED:
            message = CELL_INTERRUPTED_MESSAGE
        return Terminal(reason, self.record.state.turn_count, message, error, self.record.usage,
                        stopped_by=stopped_by)


def checkpoint(step: int, state: State, turn: Turn, **extra: Any) -> Checkpoint:
    """What step ``step`` of ``turn`` shows a lesson's stepper (``QueryParams.checkpoints``)."""
    return Checkpoint(
        step=step, step_name=STEP_NAMES[step - 1], state=state,
        messages_for_query=tuple(turn.messages_for_query),
        assistant_messages=tuple(turn.assistant_messages), tool_results=tuple(turn.tool_results),
        needs_follow_up=turn.needs_follow_up, turn_count=state.turn_count,
        transition=state.transition, extra=extra,
    )
