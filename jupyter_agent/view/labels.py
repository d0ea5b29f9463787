"""The words and signs every display of a run uses, in one place for every front (the
widgets, the notebook's transcript, the chat panel, the terminal), so they say the same:
a tool call's state as an icon, a word and a colour, and what a run's end means for the
person who started it.

A normal end (``completed``) needs no explanation; the others say what happened and,
for the ones a person must act on (``max_turns``, ``model_error``, ``prompt_too_long``),
what to do next. A model error carries the model layer's own advice (HTTP 401: "Check
ANTHROPIC_API_KEY"); :func:`model_error_advice` adds what to do for the kinds whose
message does not say it.
"""

from __future__ import annotations

from typing import Any

from ..loop.abort import CELL_INTERRUPTED
from ..loop.events import ContextNotice
from ..loop.state import TERMINAL_EXPLANATIONS, TerminalReason
from .style import BORDER_STRONG, BRAND, BRAND_LINE, ERROR, ERROR_LINE, MUTED, SUCCESS, SUCCESS_LINE, WARN, WARN_LINE

#: A tool call's state (``ToolItem.state``) in words.
STATE_LABELS = {
    "input": "receiving input",
    "pending": "queued",
    "approval": "waiting for approval",
    "running": "running",
    "done": "done",
    "error": "error",
    "denied": "denied",
    "stopped": "stopped",
    "not_run": "not run",
    "raised": "ran, raised",
}
#: ... as a text sign (the transcript and the terminal; the widgets draw ``style.STATE_SVG``).
#: No emoji: signs from Unicode's symbol blocks, in the common text fonts (DejaVu, Menlo,
#: Cascadia, Segoe UI Symbol), which show where no emoji font is installed.
STATE_ICONS = {"input": "…", "pending": "…", "approval": "?", "running": "▸", "done": "✓", "error": "✗",
               "denied": "⊘", "stopped": "■", "not_run": "–", "raised": "!"}
#: A task of the plan (``TodoWrite``) by its status, as a text sign (the transcript and the
#: terminal; the widgets draw ``style.TODO_SVG``) and in words.
TODO_SIGNS = {"completed": "✓", "in_progress": "▸", "pending": "○"}
TODO_LABELS = {"completed": "done", "in_progress": "in progress", "pending": "to do"}
#: ... and its colour in the widgets.
TODO_COLORS = {"completed": SUCCESS, "in_progress": BRAND, "pending": MUTED}
#: A notice's level in words (the transcript and the terminal).
NOTICE_LABELS = {"info": "Note:", "warning": "Warning:", "error": "Error:"}

#: The colour of each tool state in the widgets (text-readable theme colours: ``style.py``).
STATE_COLORS = {
    "input": MUTED, "pending": MUTED, "approval": WARN,
    "running": BRAND, "done": SUCCESS, "error": ERROR,
    "denied": WARN, "stopped": MUTED, "not_run": MUTED, "raised": ERROR,
}
#: ... and the line at the left of its card.
STATE_LINES = {
    "input": BORDER_STRONG, "pending": BORDER_STRONG, "approval": WARN_LINE,
    "running": BRAND_LINE, "done": SUCCESS_LINE, "error": ERROR_LINE,
    "denied": WARN_LINE, "stopped": BORDER_STRONG, "not_run": BORDER_STRONG, "raised": ERROR_LINE,
}


def plan_title(plan: Any) -> str:
    """The plan's heading: "Plan · 1 of 3 done"."""
    return f"Plan · {plan.completed} of {len(plan.todos)} done"


def todo_text(todo: dict[str, str]) -> str:
    """What a task says: the task in progress as it is being done ("Running the tests")."""
    return todo["activeForm"] if todo["status"] == "in_progress" and todo["activeForm"] else todo["content"]


def plan_lines(plan: Any) -> list[str]:
    """The plan as plain lines, a sign before each task (the terminal, ``text/plain``)."""
    return [plan_title(plan)] + [f"  {TODO_SIGNS[t['status']]} {todo_text(t)}" for t in plan.todos]


#: Ends shown as a warning: a stop, the turn limit, the spend limit.
_WARN_ENDS = (TerminalReason.MAX_TURNS, TerminalReason.MAX_BUDGET, TerminalReason.ABORTED_STREAMING,
              TerminalReason.ABORTED_TOOLS)
_STOPPED = (TerminalReason.ABORTED_STREAMING, TerminalReason.ABORTED_TOOLS)


def end_tone(reason: str | None) -> str:
    """How an end reason looks (a key of ``style.TONES``): a normal end as success, a
    stop, the turn limit or the spend limit as a warning, the others as errors."""
    if reason == TerminalReason.COMPLETED:
        return "success"
    if reason in _WARN_ENDS:
        return "warn"
    return "error"


def end_reason_text(terminal: Any) -> tuple[str, str]:
    """(reason, what it means) for display."""
    if terminal is None:
        return "not finished", "The run ended without an end reason (see the error above)."
    reason = str(getattr(terminal.reason, "value", terminal.reason))
    meaning = TERMINAL_EXPLANATIONS.get(reason, "")
    return reason, meaning


#: What to do after a model error of each kind (the model layer's message says what failed).
MODEL_ERROR_ADVICE = {
    "authentication": "Check ANTHROPIC_API_KEY: it is missing, mistyped or revoked.",
    "permission": "Check that your API key may use this model, or pick another model.",
    "not_found": "Check the model id and ANTHROPIC_BASE_URL.",
    "rate_limit": "You hit the API's rate limit: wait a minute, then run the prompt again.",
    "overloaded": "The API is overloaded: try again in a minute, or pick another model.",
    "api_error": "The API failed on its side: try again in a minute.",
    "stream_cut": "The connection broke mid-answer: check the network (and ANTHROPIC_BASE_URL), "
                  "then run the prompt again.",
    "stream_stalled": "The answer stalled: check the network, then run the prompt again.",
    "connection": "Could not reach the API: check the network and ANTHROPIC_BASE_URL.",
    "no_api_key": "Set ANTHROPIC_API_KEY, or use the offline replay model (--replay demo).",
    "missing_dependency": "Install what the message names, then restart the kernel.",
    "request_too_large": "The request is too large: start a new conversation or read less at once.",
    "replay_exhausted": "The recorded run has no more answers: run live (with ANTHROPIC_API_KEY) "
                        "to go further.",
    "replay_mismatch": "Run it again to replay the recording from its start, or run live.",
}


def cost_text(usd: float, *, offline: bool = False, known: bool = True) -> str:
    """A run's estimated cost: "≈ $0.0123"; "" for an offline replay (nothing is spent);
    "cost unknown" for a model without a list price here (a local model, a new id), never $0."""
    if offline:
        return ""
    return f"≈ ${usd:.4f}" if known else "cost unknown"


def model_error_advice(kind: str | None, message: str = "") -> str:
    """What to do after a model error of ``kind`` ("" when ``message`` already says it)."""
    if kind in ("authentication", "permission", "not_found", "connection", "stream_cut", "stream_stalled") \
            and "(docs/providers.md)" in message:
        return ""  # a cloud provider's error already says what to check there
    if kind == "no_api_key" and "ANTHROPIC_API_KEY" not in message and message:
        # another provider's credentials (docs/providers.md): its message names what to set
        return "" if "--replay demo" in message else "Or use the offline replay model (--replay demo)."
    if kind == "replay_mismatch" and "from the start" in message:
        return ""  # the replay's message says it
    advice = MODEL_ERROR_ADVICE.get(kind or "", MODEL_ERROR_ADVICE["api_error"])
    if message and (advice in message or (kind == "authentication" and "ANTHROPIC_API_KEY" in message)):
        return ""
    return advice


def _reason(terminal: Any) -> str:
    return str(getattr(terminal.reason, "value", terminal.reason))


#: The headline of each end (a StrEnum member hashes as its text, so a saved reason finds it).
_TITLES: dict[str, str] = {
    TerminalReason.COMPLETED: "Finished",
    TerminalReason.MAX_TURNS: "Turn limit reached",
    TerminalReason.ABORTED_STREAMING: "Stopped",
    TerminalReason.ABORTED_TOOLS: "Stopped",
    TerminalReason.MODEL_ERROR: "Model error",
    TerminalReason.PROMPT_TOO_LONG: "Conversation too long",
    TerminalReason.MAX_BUDGET: "Spend limit reached",
    TerminalReason.STOP_HOOK_PREVENTED: "Stopped by a hook",
    TerminalReason.HOOK_STOPPED: "Stopped by a hook",
}


def end_title(terminal: Any) -> str:
    """A short headline for the end: "Finished", "Stopped", "Model error"..."""
    if terminal is None:
        return "Interrupted"
    if getattr(terminal, "error", None) == ContextNotice.USER_WORDS_TOO_LONG.value:
        return "Message too long"
    if getattr(terminal, "error", None) == ContextNotice.SYSTEM_AND_TOOLS_TOO_LONG.value:
        return "Window too small"
    return _TITLES.get(_reason(terminal), _reason(terminal))


def end_explanation(terminal: Any, *, stopped_calls: int = 0, lost: bool = False, waiting: bool = False) -> str:
    """What happened and what to do; "" for a normal end (``completed``).

    ``stopped_calls``: the tool calls that got a "stopped" result, so Stop during
    streaming says what it did to them only when there were some. ``lost``: the kernel
    went away while the run was going. ``waiting``: it was stopped while a call waited
    for the person's approval.
    """
    if lost or terminal is None:
        return ("The kernel was shut down or restarted while this run was going, so it was "
                "interrupted here. Its tool calls that had not finished did not run.")
    reason = _reason(terminal)
    calls = f" {stopped_calls} unfinished tool call{'s' if stopped_calls != 1 else ''} got a “stopped” result."
    if reason == TerminalReason.COMPLETED:
        return ""
    if getattr(terminal, "stopped_by", None) == CELL_INTERRUPTED and reason in _STOPPED:
        return ("The cell the agent was running was interrupted (the kernel's interrupt, or Stop): that "
                "stops the run, as Stop does."
                + (calls if stopped_calls else ""))
    if reason == TerminalReason.ABORTED_STREAMING:
        return "Stopped while the model was answering." + (calls if stopped_calls else "")
    if reason == TerminalReason.ABORTED_TOOLS:
        where = "waiting for your approval" if waiting else "tools were running"
        return f"Stopped while {where}." + (calls if stopped_calls else "")
    if reason == TerminalReason.MAX_TURNS:
        return (f"{terminal.message or 'The turn limit was reached.'} The last tools ran; the model was not "
                "asked again. To go on, send another prompt, or raise the limit (--max-turns N; 0 = no limit).")
    if reason == TerminalReason.MODEL_ERROR:
        message = (terminal.message or terminal.error or "The model request failed.").strip()
        advice = model_error_advice(terminal.error, message)
        return (f"{message}{' ' + advice if advice else ''} The history was repaired, so you can "
                "send the prompt again.")
    if reason == TerminalReason.MAX_BUDGET:
        return (f"{terminal.message or 'The spend limit was reached.'} The last tools ran; the model was not "
                "asked again. Send another prompt to go on (each run has its own limit).")
    if reason == TerminalReason.PROMPT_TOO_LONG and terminal.error in (ContextNotice.USER_WORDS_TOO_LONG.value,
                                                          ContextNotice.SYSTEM_AND_TOOLS_TOO_LONG.value):
        return terminal.message or TERMINAL_EXPLANATIONS[reason]  # the loop's own words: sizes, what to do
    if reason == TerminalReason.PROMPT_TOO_LONG:
        return ("The conversation is longer than the model's context window. Start a new one "
                "(`%agent new`, or New conversation in the chat) or ask for less at once.")
    return terminal.message or TERMINAL_EXPLANATIONS.get(reason, "")


def tokens_short(tokens: int) -> str:
    """182000 -> "182k", 950 -> "950"."""
    return f"{tokens / 1000:.0f}k" if tokens >= 10_000 else f"{tokens / 1000:.1f}k" if tokens >= 1000 else str(tokens)


def compaction_text(event: Any) -> str:
    """A :class:`~jupyter_agent.loop.events.Compaction` in words: "Compacted: 182k → 31k
    tokens, kept your 6 messages, 4 files re-read" (chosen on its enums, never its text)."""
    from ..loop.events import CompactionKind, CompactionOutcome

    sizes = f"{tokens_short(event.tokens_before)} → {tokens_short(event.tokens_after)} tokens"
    if event.outcome is CompactionOutcome.VETOED:
        return f"Compaction vetoed by a PreCompact hook: {event.detail}"
    if event.outcome is CompactionOutcome.FAILED:
        return f"Compaction failed: {event.detail}"
    if event.outcome is CompactionOutcome.NOT_NEEDED:
        return f"Nothing to compact: {event.detail}"
    if event.kind is CompactionKind.MICROCOMPACT:
        n = event.results_cleared
        return f"Cleared {n} old tool result{'s' if n != 1 else ''}: {sizes}"
    n, files = event.user_messages_kept, len(event.files_reread)
    return (f"Compacted: {sizes}, kept your {n} message{'s' if n != 1 else ''}, "
            f"{files} file{'s' if files != 1 else ''} re-read")


def context_meter_text(usage: Any, window_known: bool = True) -> str:
    """A :class:`~jupyter_agent.loop.events.ContextUsage` as "context 31k / 200k (16%),
    compacts at 160k": how full the window is, and when the history will be summarised.
    ``window_known`` false (a model whose window is not known here, none set): "context 31k
    / window unknown" rather than a guessed fraction."""
    if not window_known:
        return f"context {tokens_short(usage.used)} / window unknown (set AgentConfig.context_window)"
    percent = round(100 * usage.fraction)
    meter = f"context {tokens_short(usage.used)} / {tokens_short(usage.window)} ({percent}%)"
    return f"{meter}, compacts at {tokens_short(usage.compact_at)}" if usage.compact_at else meter
