"""Immutable snapshots of the loop at one of its four steps (what the stepper keeps).

A :class:`Snapshot` is taken from a :class:`~jupyter_agent.loop.events.Checkpoint` (or
from the run's end) as a *deep, frozen* copy: dicts become :class:`FrozenDict`, lists
become tuples. Going back to an earlier snapshot therefore shows exactly what was
there, whatever the loop did afterwards. ``thaw()`` gives plain dicts/lists back
(for JSON, or to change a copy).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .article import END_TABLE, STEP_TITLES  # noqa: F401  (re-exported: a snapshot's words)
from .frozen import FrozenDict, freeze, thaw  # noqa: F401


@dataclass(frozen=True)
class Pair:
    """One ``tool_use`` and the ``tool_result`` that answers it (``None`` while it has none)."""

    tool_use_id: str
    name: str
    input: Any
    result: Any  # the tool_result block, or None

    @property
    def status(self) -> str:
        if self.result is None:
            return "waiting"
        return "error" if self.result.get("is_error") else "ok"


@dataclass(frozen=True)
class Snapshot:
    """The loop at one step (``step`` 1..4), or at its end (``step`` None, ``step_name`` "end").

    Fields follow the article: ``state_messages`` (``State.messages``), ``turn_count``,
    ``transition``, ``messages_for_query``, ``assistant_messages``, ``tool_results``,
    ``needs_follow_up``. ``end_reason`` is set on the end snapshot. ``events`` are short
    descriptions of what the loop yielded since the previous snapshot; ``t`` is loop time
    in seconds (pauses between steps left out).
    """

    index: int
    step: int | None
    step_name: str
    turn_count: int
    transition: str | None
    state_messages: tuple
    messages_for_query: tuple
    assistant_messages: tuple
    tool_results: tuple
    needs_follow_up: bool
    end_reason: str | None = None
    end_message: str = ""
    t: float = 0.0
    events: tuple[str, ...] = ()
    extra: FrozenDict = field(default_factory=lambda: FrozenDict())
    #: what changed since the snapshot before it: view name -> indices of new items,
    #: and "fields" -> names of changed State fields (see :func:`changes`)
    changed: FrozenDict = field(default_factory=lambda: FrozenDict())

    @property
    def ended(self) -> bool:
        return self.end_reason is not None

    @property
    def title(self) -> str:
        if self.step is None:
            return f"end: {self.end_reason}"
        return f"step {self.step}: {STEP_TITLES[self.step]}"

    @property
    def end_row(self) -> tuple[str, str] | None:
        """The article's table row for this end reason (condition, what the code does)."""
        return END_TABLE.get(self.end_reason) if self.end_reason else None

    def __repr__(self) -> str:
        return (f"<Snapshot {self.index} {self.title}: turn_count={self.turn_count} "
                f"transition={self.transition} messages={self.message_count} "
                f"needs_follow_up={self.needs_follow_up}>")

    @property
    def message_count(self) -> int:
        return len(self.state_messages)

    def _repr_html_(self) -> str:
        from .render import snapshot_html

        return snapshot_html(self)

    def views(self) -> dict[str, Any]:
        """The four collections a lesson looks at, plus ``State.messages``, as plain data."""
        return {
            "State.messages": thaw(self.state_messages),
            "messages_for_query": thaw(self.messages_for_query),
            "assistant_messages": thaw(self.assistant_messages),
            "tool_results": thaw(self.tool_results),
            "needs_follow_up": self.needs_follow_up,
        }

    def pairs(self) -> list[Pair]:
        """Every ``tool_use`` seen so far with its ``tool_result`` (matched by id, not position)."""
        uses: dict[str, dict] = {}
        results: dict[str, Any] = {}
        for message in (*self.state_messages, *self.messages_for_query, *self.assistant_messages):
            content = message.get("content")
            for block in content if isinstance(content, (list, tuple)) else ():
                if block.get("type") == "tool_use":
                    uses.setdefault(block["id"], block)
                elif block.get("type") == "tool_result":
                    results.setdefault(block.get("tool_use_id"), block)
        for block in self.tool_results:
            results.setdefault(block.get("tool_use_id"), block)
        return [Pair(i, b.get("name", ""), b.get("input"), results.get(i)) for i, b in uses.items()]


LIST_VIEWS = ("state_messages", "messages_for_query", "assistant_messages", "tool_results")
STATE_FIELDS = ("turn_count", "transition", "message_count", "needs_follow_up", "step_name")


def changes(before: Snapshot | None, after: Snapshot) -> FrozenDict:
    """What ``after`` holds that ``before`` did not: new/changed items of each list view
    (by position) and the State fields whose value differs."""
    out: dict[str, Any] = {}
    for name in LIST_VIEWS:
        old, new = (getattr(before, name) if before else ()), getattr(after, name)
        out[name] = tuple(i for i, item in enumerate(new) if i >= len(old) or old[i] != item)
    out["fields"] = tuple(f for f in STATE_FIELDS if before is None or getattr(before, f) != getattr(after, f))
    return FrozenDict(out)
