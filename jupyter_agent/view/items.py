"""The items a run is drawn from: the prompt, text, thinking, one per tool call, notices,
compactions, the plan, unknown blocks; and the one-line summary of a tool call.

:class:`~jupyter_agent.view.runmodel.RunModel` builds them from the loop's events; every
view (widgets, side panel, transcript, terminal) draws these, so they cannot disagree.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..loop import events as ev

@dataclass(eq=False)
class Item:
    """One visible piece of a run. ``kind`` names the renderer."""

    kind: str


@dataclass(eq=False)
class PromptItem(Item):
    text: str = ""


@dataclass(eq=False)
class TextItem(Item):
    text: str = ""
    done: bool = False


@dataclass(eq=False)
class ThinkingItem(Item):
    text: str = ""
    done: bool = False
    redacted: bool = False


@dataclass(eq=False)
class ToolItem(Item):
    """A tool call: ``state`` is ``input`` (still streaming), ``pending`` (decided, not
    started), ``approval`` (waiting for a person), ``running``, ``done``, ``error``,
    ``denied`` (by a person, a rule or a hook), ``stopped`` (Stop, or the run ended first),
    ``not_run`` (an earlier call was denied, the response broke off), or ``raised``
    (``NotebookRun``: the cell ran and raised ``exception``): the loop's
    :class:`~jupyter_agent.loop.events.ToolOutcome`, see :data:`OUTCOME_STATES`.

    ``wait_s`` is the time spent waiting for a person's click; ``duration_s`` the
    time the loop measured for the whole call, so the tool itself ran ``run_s``."""

    id: str = ""
    name: str = ""
    input: dict[str, Any] = field(default_factory=dict)
    partial_json: str = ""
    state: str = "input"
    result: Any = None
    duration_s: float = 0.0
    #: The latest report of the running tool (only the latest is kept: a command's
    #: output is reported as it grows, each report the whole screenful).
    progress: list[Any] = field(default_factory=list)
    decision: str = ""
    exception: str = ""
    #: The exit status of the command the call ran (``Bash``), once it exited.
    exit_code: int | None = None
    wait_s: float = 0.0
    waiting_since: float | None = None
    started: bool = False  # the tool itself ran (a ToolStart came)
    cwd: Path | None = None

    @property
    def summary(self) -> str:
        return tool_summary(self.name, self.input, cwd=self.cwd)

    @property
    def run_s(self) -> float:
        return max(0.0, self.duration_s - self.wait_s)


@dataclass(eq=False)
class BlockItem(Item):
    """A content block of a type this UI has no renderer for (shown generically)."""

    block_type: str = ""
    block: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class NoticeItem(Item):
    level: str = "info"
    text: str = ""


@dataclass(eq=False)
class CompactionItem(Item):
    """The context was organised (:class:`~jupyter_agent.loop.events.Compaction`): old
    tool results cleared, or the history summarised (``event.summary``: model text)."""

    event: ev.Compaction | None = None


@dataclass(eq=False)
class PlanItem(Item):
    """The model's plan: the list its latest successful ``TodoWrite`` call set (each entry
    ``content``, ``status`` pending | in_progress | completed, ``activeForm``). One per
    run, updated in place and moved to just after the call that last changed it, so the
    live views show the current list where the run is."""

    todos: list[dict[str, str]] = field(default_factory=list)

    @property
    def completed(self) -> int:
        return sum(1 for t in self.todos if t["status"] == "completed")


#: The tool whose successful calls set the run's plan (its input is the whole list).
PLAN_TOOL = "TodoWrite"
TODO_STATUSES = ("pending", "in_progress", "completed")


def plan_entries(todos: Any) -> list[dict[str, str]] | None:
    """A ``TodoWrite`` input's ``todos`` as plain entries, or None if it is not such a list
    (the loop validated the call; this only guards the view)."""
    if not isinstance(todos, list):
        return None
    entries = []
    for todo in todos:
        if not isinstance(todo, dict) or todo.get("status") not in TODO_STATUSES:
            return None
        entries.append({"content": str(todo.get("content", "")), "status": str(todo["status"]),
                        "activeForm": str(todo.get("activeForm") or todo.get("content", ""))})
    return entries


#: An item of any kind, given back as the kind it is.


_SUMMARY_KEYS = ("file_path", "notebook_path", "pattern", "path", "command", "url", "query")


def relative(text: str, cwd: Path | str | None) -> str:
    """``text`` with paths inside ``cwd`` shown relative to it (``/work/a/b.py`` -> ``b.py``)."""
    if not cwd or not isinstance(text, str):
        return text
    root = str(cwd).rstrip("/")
    if text == root:
        return "."
    return text.replace(root + "/", "") if root else text


def tool_summary(name: str, input: dict[str, Any], width: int = 80, cwd: Path | str | None = None) -> str:
    """A one-line description of a call's input (the path, the pattern...); paths inside
    ``cwd`` are shown relative to it."""
    if not isinstance(input, dict):
        return ""
    if isinstance(todos := input.get("todos"), list):  # TodoWrite: the list's size and progress
        done = sum(1 for t in todos if isinstance(t, dict) and t.get("status") == "completed")
        return f"{len(todos)} task{'s' if len(todos) != 1 else ''}, {done} done"
    parts = []
    for key in _SUMMARY_KEYS:
        if isinstance(input.get(key), str):
            parts.append(relative(input[key], cwd))
            break
    for key in ("cell_id", "edit_mode"):
        if isinstance(input.get(key), str):
            parts.append(f"{key}={input[key]}")
    if not parts and input:
        parts.append(json.dumps(input, ensure_ascii=False)[:width])
    text = " ".join(parts)
    return text if len(text) <= width else text[: width - 1] + "…"
