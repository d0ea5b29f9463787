"""The loop's state between iterations, and how a run ends.

Seed names: ``State.messages``, ``turnCount`` -> ``turn_count``, ``transition``,
and the ``Terminal`` reason that ``queryLoop()`` returns. Python async generators
cannot ``return`` a value, so the loop *yields* its :class:`Terminal` as the last
event and also keeps it on the run handle (``run.terminal``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from .usage import Usage
from .wire import Message


class TerminalReason(StrEnum):
    """Why the loop ended. ``completed`` means the loop ended, not that the task is done."""

    COMPLETED = "completed"
    MAX_TURNS = "max_turns"
    ABORTED_STREAMING = "aborted_streaming"
    ABORTED_TOOLS = "aborted_tools"
    MODEL_ERROR = "model_error"
    STOP_HOOK_PREVENTED = "stop_hook_prevented"
    HOOK_STOPPED = "hook_stopped"
    PROMPT_TOO_LONG = "prompt_too_long"
    MAX_BUDGET = "max_budget"


#: What each end reason means, in words a user can act on (shown by UIs and lessons).
TERMINAL_EXPLANATIONS: dict[str, str] = {
    "completed": "The model answered without asking for a tool, so the loop ended. "
    "That is the loop's end, not a promise that the task is done: read the answer.",
    "max_turns": "The turn limit was reached after the last tools ran; "
    "the model was not asked again. Raise max_turns to let it go on.",
    "aborted_streaming": "Stopped while the model was answering; every tool call it had "
    "already made got an error result.",
    "aborted_tools": "Stopped while tools were running; each unfinished tool got an error result.",
    "model_error": "The model request failed and retries did not recover it; "
    "the history was repaired so the conversation can go on.",
    "stop_hook_prevented": "A Stop hook prevented the run from continuing.",
    "hook_stopped": "A tool hook stopped the run.",
    "prompt_too_long": "The conversation is longer than the model's context, even after compacting "
    "it once; start a new one (`%agent new`) or compact it with an instruction to keep less. If your "
    "own message alone is too long for the window (error `user_words_too_long`), shorten it or put "
    "the long text in a file for the agent to read in parts.",
    "max_budget": "The run spent its limit (max_budget_usd: the user's, or the administrator's policy) "
    "after the last tools ran; the model was not asked again.",
}


class TransitionReason(StrEnum):
    """Why the loop went round again (see :class:`Transition`)."""

    NEXT_TURN = "next_turn"
    MAX_OUTPUT_TOKENS_RECOVERY = "max_output_tokens_recovery"
    STOP_HOOK_BLOCKING = "stop_hook_blocking"
    PARTIAL_RESPONSE_KEPT = "partial_response_kept"
    AUTO_COMPACT = "auto_compact"
    REACTIVE_COMPACT_RETRY = "reactive_compact_retry"

    @property
    def new_turn(self) -> bool:
        """Tool results went back to the model: the turn count grows by one."""
        return self in (TransitionReason.NEXT_TURN, TransitionReason.PARTIAL_RESPONSE_KEPT)

    @property
    def compacted(self) -> bool:
        """The iteration starts from a history the loop just summarised."""
        return self in (TransitionReason.AUTO_COMPACT, TransitionReason.REACTIVE_COMPACT_RETRY)


@dataclass(frozen=True)
class Transition:
    """Why the loop continued into the current iteration (``None`` on the first).

    ``reason`` is ``next_turn`` (tool results went back), ``max_output_tokens_recovery``,
    ``stop_hook_blocking``, ``partial_response_kept`` (a stream broke after tools that
    change things had started), ``auto_compact`` (the prompt passed its threshold and the
    history was summarised) or ``reactive_compact_retry`` (the API said the prompt is too
    long: summarised once, the request goes again). ``detail`` says more where there is
    more to say. A string naming one is taken as that reason.
    """

    reason: TransitionReason
    detail: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "reason", TransitionReason(self.reason))


@dataclass(frozen=True)
class State:
    """What one iteration hands the next: the history, the turn count, the transition.

    ``turn_count`` starts at 1 and grows by one each time a batch of tool results
    sends the loop round again (seed: ``turnCount``).
    """

    messages: tuple[Message, ...] = ()
    turn_count: int = 1
    transition: Transition | None = None
    max_output_tokens_recovery_count: int = 0
    stop_hook_active: bool = False


@dataclass(frozen=True)
class Terminal:
    """The end of a run: the last event the loop yields, also ``run.terminal``."""

    reason: TerminalReason
    turn_count: int
    message: str = ""
    error: str | None = None
    usage: Usage | None = None
    #: For an aborted run, what aborted it (``loop.abort``: ``STOP_BUTTON``,
    #: ``CELL_INTERRUPTED``...); None otherwise.
    stopped_by: str | None = None

    @property
    def explanation(self) -> str:
        return TERMINAL_EXPLANATIONS[self.reason.value]
