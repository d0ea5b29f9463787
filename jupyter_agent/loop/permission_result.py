"""The three answers a permission check can give.

The loop calls ``policy.decide(tool, input, context, prepared)`` (a
:class:`~.tool.PermissionPolicy`, on the call's plan) before every tool call. An ``ask``
goes to the ``can_use_tool`` callback (a UI's approval card, a terminal prompt, a test);
with none, an ``ask`` is a deny that says how to allow the call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from collections.abc import Awaitable, Callable

from .events import ToolOutcome
from .wire import JSONObject

#: What the model reads when a person says no without a word (Claude Code's wording, which
#: Claude models are trained on): stop, rather than try the same thing another way.
DENIED = ("The user doesn't want to proceed with this tool use. The tool use was rejected (if it was an edit, "
          "nothing was written). STOP what you are doing and wait for the user to tell you how to proceed.")

#: Said by the tool_result of a call refused because it asks and no one can answer (a
#: headless run): how an offline replay tells that refusal from a failure (replay/runs.py).
NO_ONE_APPROVES = "and no one can approve it in this run"

#: The permission modes, in the order a UI lists them (the one definition: the policy,
#: the magic's and the CLI's ``--permission-mode``, the config and the chat's dropdown).
PERMISSION_MODES = ("default", "acceptEdits", "plan", "bypassPermissions")


def check_permission_mode(mode: str) -> str:
    """``mode`` if it is one of :data:`PERMISSION_MODES`, else a ValueError that lists them."""
    if mode not in PERMISSION_MODES:
        raise ValueError(f"Unknown permission mode {mode!r}: use one of {', '.join(PERMISSION_MODES)}.")
    return mode


@dataclass(frozen=True)
class PermissionAllow:
    """Run the call, with ``updated_input`` instead of the model's input if given.

    ``always`` carries rules (e.g. ``"Edit(src/**)"``) the user chose to allow for the
    rest of the session ("Always allow").
    """

    updated_input: JSONObject | None = None
    always: tuple[str, ...] = ()
    behavior: Literal["allow"] = "allow"


@dataclass(frozen=True)
class PermissionDeny:
    """Refuse the call; ``message`` goes to the model as the error result.

    ``interrupt`` ends the turn (``aborted_tools``): a plain "no" from a person with no
    feedback means stop, not "try something else". ``outcome`` is what the call's
    :class:`~.events.ToolResult` says (``denied``; ``error`` for a callback's mistake).
    """

    message: str
    interrupt: bool = False
    outcome: ToolOutcome = ToolOutcome.DENIED
    behavior: Literal["deny"] = "deny"


#: In an ask's message, what separates the question from the whole content it is about
#: (``NotebookRun``: the cell's code), when there is one. The question never holds a line
#: break (:func:`code_message`, :func:`ask_with_note`), so the first one is this separator,
#: whatever a path, a rule or a name in the question says.
CONTENT_FOLLOWS = ":\n"
#: What a line break in the text of a question is shown as.
LINE_BREAK = "⏎"


def one_line(text: str) -> str:
    """``text`` with its line breaks shown as :data:`LINE_BREAK`: a question's parts (a path,
    a rule, a reason) can never move text into the content that follows it."""
    return text.replace("\r\n", LINE_BREAK).replace("\n", LINE_BREAK).replace("\r", LINE_BREAK)


def code_message(question: str, content: str) -> str:
    """An ask's message: ``question`` (on one line), :data:`CONTENT_FOLLOWS`, then ``content``
    exactly as it will run."""
    return one_line(question) + CONTENT_FOLLOWS + content


def ask_parts(message: str, content: str | None = None) -> tuple[str, str]:
    """An ask's message as its question and the content after :data:`CONTENT_FOLLOWS`
    ("" when there is none), for a front that shows the content as code. ``content``: what
    the content is known to be from elsewhere (a Bash call's command): the message is split
    right before it when it ends with it."""
    if content and message.endswith(CONTENT_FOLLOWS + content):
        return message[: len(message) - len(CONTENT_FOLLOWS + content)], content
    question, follows, rest = message.partition(CONTENT_FOLLOWS)
    return (question, rest) if follows else (message, "")


def code_ask_parts(tool_name: str, input: JSONObject, message: str) -> tuple[str, str]:
    """The question and the whole code of a ``NotebookRun`` or ``Bash`` ask, as a card shows
    them (a Bash call's command is known from its input: the message is split right before it)."""
    command = input.get("command") if tool_name == "Bash" else None
    return ask_parts(message, command if isinstance(command, str) else None)


def ask_with_note(message: str, note: str) -> str:
    """``message`` with ``note`` (why it asks) added to its question: the content after
    the question stays exactly what will run."""
    question, content = ask_parts(message)
    return f"{question} {one_line(note)}" + (CONTENT_FOLLOWS + content if content else "")


@dataclass(frozen=True)
class PermissionAsk:
    """A person must decide. ``message`` is the question, then (for ``NotebookRun``)
    :data:`CONTENT_FOLLOWS` and the whole content it is about. ``diff`` shows what an edit
    would change; ``suggested_rules`` are what "Always allow" would add. ``tool_use_id``
    names the call (the loop sets it before ``can_use_tool`` sees the ask), so a UI knows
    which call the question is about."""

    message: str
    diff: str | None = None
    suggested_rules: tuple[str, ...] = ()
    tool_use_id: str = ""
    behavior: Literal["ask"] = "ask"
    #: why it asks, in a few words for the model ("it runs code", "/x is outside the working
    #: folders"): what a refusal says when no one can answer ("": the tool's question says it)
    why: str = ""
    #: who asks when it is not the run's own model: an outside agent's name (and version), as
    #: it gave them. A field of its own, shown escaped beside the question, never inside the
    #: message (whose question and content a front splits).
    asker: str = ""


PermissionResult = PermissionAllow | PermissionDeny | PermissionAsk


#: What ``can_use_tool`` may answer: allow or deny, or a plain yes/no (now or awaited).
CanUseToolAnswer = PermissionAllow | PermissionDeny | bool
#: The approval callback: ``(tool name, input, the ask) -> answer``, sync or async.
CanUseTool = Callable[[str, JSONObject, PermissionAsk], CanUseToolAnswer | Awaitable[CanUseToolAnswer]]
