"""What a run yields, in order, to whoever iterates it (a widget, the CLI, a lesson).

A run is a stream of these events. Model events (``StreamEvent``, ``AssistantMessage``,
``ModelRetry``, ``ModelFallback``) come from the model layer; the rest from the loop.
The last event of every run is a :class:`~jupyter_agent.loop.state.Terminal`.

Stream events carry both the delta and the snapshot, as the anthropic SDK's do: the
snapshot is the assistant message *so far*, a live dict that keeps growing. Copy it
if you keep it past the next event.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Literal

from .state import State, Terminal, Transition
from .usage import Usage
from .wire import ContentBlock, JSONObject, Message, MessageSnapshot, ToolResultBlock, ToolResultContent, \
    ToolUseBlock, blocks_of, is_text, is_tool_use


@dataclass(frozen=True)
class ContextUsage:
    """How full the context is before a request (on :class:`RequestStart`): ``used``
    prompt tokens (the last response's reported usage plus an estimate of what was added
    since) out of ``window``; the history is summarised when ``used`` passes ``compact_at``."""

    used: int
    window: int
    compact_at: int

    @property
    def fraction(self) -> float:
        return self.used / self.window if self.window else 0.0


@dataclass(frozen=True)
class RequestStart:
    """The loop is about to send request number ``request_index`` (1-based) of this run;
    ``context``: how full the context window is with it (the meter)."""

    turn_count: int
    request_index: int
    model: str
    message_count: int
    context: ContextUsage | None = None


@dataclass(frozen=True)
class StreamEvent:
    """One server-sent event of a streaming response.

    ``type`` is the API's event type (``message_start``, ``content_block_start``,
    ``content_block_delta``, ``content_block_stop``, ``message_delta``,
    ``message_stop``, or an unknown type passed through). ``delta`` is the event's
    payload (for a ``content_block_delta``: ``{"type": "text_delta", "text": ...}``);
    ``snapshot`` is the message accumulated so far (``role``, ``content``, ...).
    """

    type: str
    index: int | None
    delta: JSONObject | None
    snapshot: MessageSnapshot

    @property
    def block(self) -> ContentBlock | None:
        """The content block this event is about, as accumulated so far."""
        if self.index is None:
            return None
        content = self.snapshot.get("content") or []
        return content[self.index] if 0 <= self.index < len(content) else None


@dataclass(frozen=True)
class AssistantMessage:
    """A complete response: ``message`` is ``{"role": "assistant", "content": [...]}``."""

    message: Message
    usage: Usage
    model: str
    stop_reason: str | None
    request_id: str | None = None

    @property
    def tool_uses(self) -> list[ToolUseBlock]:
        """The calls the response asks for, in order."""
        return [b for b in blocks_of(self.message) if is_tool_use(b)]

    @property
    def text(self) -> str:
        """The response's text blocks, joined."""
        return "".join(b["text"] for b in blocks_of(self.message) if is_text(b))


@dataclass(frozen=True)
class ModelRetry:
    """The model layer will send the request again; discard the partial response."""

    attempt: int
    max_retries: int
    delay_s: float
    error: str
    status: int | None = None


@dataclass(frozen=True)
class ModelFallback:
    """The model layer switched models after repeated overload; discard the partial response."""

    from_model: str
    to_model: str
    error: str


@dataclass(frozen=True)
class ToolEvent:
    """What every event about one tool call says first: which call (the ``tool_use`` id)
    of which tool. :class:`ToolStart`, :class:`ToolProgress` and :class:`ToolResult` add
    what happened."""

    tool_use_id: str
    name: str


@dataclass(frozen=True)
class ToolStart(ToolEvent):
    """A tool call passed validation and permission and is now running."""

    input: JSONObject
    #: ``time.perf_counter()`` when the tool started. The event reaches the consumer with
    #: the next stream event, which can be much later (a timeline needs the real start).
    started_at: float = field(default_factory=time.perf_counter, compare=False)


@dataclass(frozen=True)
class ToolProgress(ToolEvent):
    """Something a running tool reported (e.g. a cell's output as it arrives): what it
    is depends on the tool, so a front checks its type before it shows it."""

    data: object


class ToolOutcome(str, Enum):
    """How one tool call ended, as the loop knows it (never read from the result's words).

    ``ok``: the tool ran and succeeded. ``error``: it failed, or its input was unusable
    (unknown tool, invalid input, a timeout). ``denied``: a person, a rule, plan mode or a
    hook said no. ``stopped``: Stop cancelled it, or came before it started. ``not_run``:
    it never ran for another reason (an earlier call was denied, the response broke off).
    ``raised``: the tool ran code that raised (a ``NotebookRun`` cell; the result is the
    traceback, and :attr:`ToolResult.exception` names the exception).
    """

    OK = "ok"
    ERROR = "error"
    DENIED = "denied"
    STOPPED = "stopped"
    NOT_RUN = "not_run"
    RAISED = "raised"


@dataclass(frozen=True)
class ToolResult(ToolEvent):
    """The ``tool_result`` block for one ``tool_use`` (success or ``is_error``), and how
    the call ended (``outcome``; ``exception``: the name of what a ``raised`` call raised).

    Every ``tool_use`` gets exactly one of these, on every path (synthetic results
    after Stop or a broken response included)."""

    block: ToolResultBlock
    duration_s: float = 0.0
    #: Without one: ``ok``, or ``error`` for an ``is_error`` block.
    outcome: ToolOutcome = None  # type: ignore[assignment]  # set in __post_init__
    exception: str = ""
    #: The exit status of the command the call ran (``Bash``); None: it ran none, or was
    #: ended before it exited.
    exit_code: int | None = None

    def __post_init__(self) -> None:
        if self.outcome is None:
            object.__setattr__(self, "outcome", ToolOutcome.ERROR if self.is_error else ToolOutcome.OK)
        else:
            object.__setattr__(self, "outcome", ToolOutcome(self.outcome))

    @property
    def is_error(self) -> bool:
        return bool(self.block.get("is_error"))

    @property
    def content(self) -> ToolResultContent | None:
        """The result's content (text, or text and image blocks)."""
        return self.block.get("content")


@dataclass(frozen=True)
class UserMessage:
    """A user message the loop appended to the history (tool results, hook feedback)."""

    message: Message
    synthetic: bool = False


@dataclass(frozen=True)
class Notice:
    """A plain-language note about what the loop did (a recovery, a repaired history...)."""

    kind: str
    text: str


#: What running tools hands the loop: a call started, reported progress or ended; a
#: tool's notice for the user (a server that died) goes out as it is.
ToolUpdate = ToolStart | ToolProgress | ToolResult | Notice


#: ``Notice.kind`` of a run played from a recording: no API is called, nothing is spent.
OFFLINE_REPLAY = "offline_replay"


class ContextNotice(str, Enum):
    """``Notice.kind`` values of context organisation (a front chooses its words by them).

    ``user_words_too_long``: the user's own message, with the system prompt and tools,
    leaves no room to work in the window; the run ends ``prompt_too_long`` with this as
    the terminal's ``error``. ``system_and_tools_too_long``: the same, when the system
    prompt and the tool definitions alone fill the window. ``window_learned``: the API
    refused a prompt under the window the run assumed; the run works to the smaller
    window it learned.
    """

    USER_WORDS_TOO_LONG = "user_words_too_long"
    SYSTEM_AND_TOOLS_TOO_LONG = "system_and_tools_too_long"
    WINDOW_LEARNED = "window_learned"

class CompactionKind(str, Enum):
    """Which layer of context organisation acted: ``microcompact`` cleared old tool
    results (no model call); ``summary`` replaced the history with a summary."""

    MICROCOMPACT = "microcompact"
    SUMMARY = "summary"


class CompactionTrigger(str, Enum):
    """Why it ran: the prompt passed its threshold (``auto``), the API said the prompt
    is too long (``reactive``), or someone asked for it (``manual``: ``%agent compact``)."""

    AUTO = "auto"
    REACTIVE = "reactive"
    MANUAL = "manual"


class CompactionOutcome(str, Enum):
    """How it ended: ``compacted``; ``vetoed`` by a PreCompact hook; ``failed`` (the
    summary request failed or said nothing); ``not_needed`` (nothing to compact)."""

    COMPACTED = "compacted"
    VETOED = "vetoed"
    FAILED = "failed"
    NOT_NEEDED = "not_needed"


@dataclass(frozen=True)
class Compaction:
    """The context was organised: old tool results cleared, or the history summarised.

    Sizes are prompt tokens (estimated). ``user_messages_kept`` counts the user's own
    messages carried over word for word; ``files_reread`` the files read again so the
    read-before-edit rule still holds; ``summary`` is the model's text (untrusted:
    render it as data). ``detail`` says why it failed or was vetoed.
    """

    kind: CompactionKind
    trigger: CompactionTrigger
    outcome: CompactionOutcome
    tokens_before: int
    tokens_after: int
    window: int
    results_cleared: int = 0
    user_messages_kept: int = 0
    files_reread: tuple[str, ...] = ()
    summary: str = ""
    detail: str = ""


StepName = Literal["build_request", "collect_response", "run_tools", "next_state"]
STEP_NAMES: tuple[StepName, ...] = ("build_request", "collect_response", "run_tools", "next_state")


@dataclass(frozen=True)
class Checkpoint:
    """A read-only view of the loop at one of its four steps (opt-in: ``checkpoints=True``).

    The loop waits here until the consumer pulls the next event, so a lesson can stop
    between steps and look. ``step`` is 1..4; ``step_name`` one of :data:`STEP_NAMES`.
    """

    step: int
    step_name: StepName
    state: State
    messages_for_query: tuple[Message, ...]
    assistant_messages: tuple[Message, ...]
    tool_results: tuple[ToolResultBlock, ...]
    needs_follow_up: bool
    turn_count: int
    transition: Transition | None
    #: What this step adds: ``request`` (step 1), ``tool_use_blocks`` (step 2).
    extra: dict[str, object] = field(default_factory=dict)


#: Everything a run yields, in the order it happens. Model events (a request starting, the
#: stream, the response, a retry or fallback), tool events (started, progress, result), the
#: messages the loop added, notes for the user, compactions, the lessons' checkpoints
#: (``checkpoints=True``); the last is always the :class:`Terminal`.
LoopEvent = (RequestStart | StreamEvent | AssistantMessage | ModelRetry | ModelFallback | ToolStart | ToolProgress
             | ToolResult | UserMessage | Notice | Compaction | Checkpoint | Terminal)
