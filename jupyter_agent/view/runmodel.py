"""What a run looks like, as plain data: a pure function of the loop's events.

:class:`RunModel` folds the events of ``jupyter_agent.loop.events`` (and the final
:class:`~jupyter_agent.loop.state.Terminal`) into a list of *items*: the prompt,
assistant text, thinking, one item per tool call, notices, unknown blocks. The live
widgets (``jupyter/widgets/runview.py``, ``jupyter/widgets/cards.py``), the JupyterLab side panel
(``jupyter/panel/panel_json.py``), the static transcript (``view/transcript.py``) and the
terminal display of the CLI (``cli.py``) are all drawn from it, so they cannot disagree,
and it is testable without a kernel.

Listeners get ``(kind, item)`` with kind ``"add"``, ``"update"``, ``"remove"`` or
``"header"``; they decide how often to redraw (the widgets coalesce per frame).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, TypeVar
from collections.abc import Callable, Mapping

from ..changes import RunChanges
from ..loop import events as ev
from ..loop.state import Terminal
from ..loop.meter import StreamUsage
from ..loop.usage import Usage
from ..loop.wire import blocks_of, is_text
from .items import (PLAN_TOOL, BlockItem, CompactionItem, Item, NoticeItem, PlanItem, PromptItem, TextItem,
                    ThinkingItem, ToolItem, plan_entries)

ItemT = TypeVar("ItemT", bound=Item)


#: The tool state each outcome of the loop shows as (the loop decides; nothing here
#: reads a result's words).
OUTCOME_STATES = {
    ev.ToolOutcome.OK: "done", ev.ToolOutcome.ERROR: "error", ev.ToolOutcome.DENIED: "denied",
    ev.ToolOutcome.STOPPED: "stopped", ev.ToolOutcome.NOT_RUN: "not_run", ev.ToolOutcome.RAISED: "raised",
}


def _price(model: str, usage: Usage) -> float:
    from ..model.pricing import cost_usd  # (no anthropic import: pricing is plain Python)

    return cost_usd(model, usage)


class RunModel:
    """The state of one run as the UI shows it, built from the run's events."""

    def __init__(self, *, prompt: str = "", model: str = "", permission_mode: str = "",
                 cwd: Path | str | None = None) -> None:
        self.items: list[Item] = []
        self.model = model
        self.permission_mode = permission_mode
        self.cwd = Path(cwd) if cwd else None
        self.turn_count = 0
        self.requests = 0
        #: how full the context was before the latest request (the header's meter)
        self.context: ev.ContextUsage | None = None
        #: usage counted from the stream (``message_start``/``message_delta``), so a
        #: response cut by Stop, a model error or a retry still counts
        self.meter = StreamUsage(price=_price)
        self._final_usage: Usage | None = None
        #: seconds the run waited for a person's click (all approvals)
        self.wait_s = 0.0
        #: the kernel went away while the run was going (restart, shutdown)
        self.lost = False
        #: played from a recording (an offline replay): its tokens cost nothing, so no cost is shown
        self.offline = False
        self.started = time.monotonic()
        self.ended: float | None = None
        self.terminal: Terminal | None = None
        self.status = "starting"
        #: what the run changed (its checkpoint), when the front keeps one: the end shows it
        self.changes: RunChanges | None = None
        self._listeners: list[Callable[[str, Item | None], None]] = []
        self._current: dict[int, Item] = {}  # this response's items, by block index
        self._tools: dict[str, ToolItem] = {}
        #: the run's plan (TodoWrite), once the model has made one
        self.plan: PlanItem | None = None
        if prompt:
            self._add(PromptItem("prompt", text=prompt))

    # -- listeners -------------------------------------------------------------------
    def listen(self, fn: Callable[[str, Item | None], None]) -> None:
        self._listeners.append(fn)

    def _emit(self, kind: str, item: Item | None) -> None:
        for fn in self._listeners:
            fn(kind, item)

    def _add(self, item: ItemT) -> ItemT:
        self.items.append(item)
        self._emit("add", item)
        return item

    def _remove(self, item: Item) -> None:
        if item in self.items:
            self.items.remove(item)
            self._emit("remove", item)

    def _header(self) -> None:
        self._emit("header", None)

    @property
    def elapsed_s(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    @property
    def cost_known(self) -> bool:
        """Whether the run's model has a list price here: a local model's or an unknown id's
        cost is unknown (shown so), not $0."""
        from ..model.pricing import price_for

        return price_for(self.model or "") is not None or self.total_usage.cost_usd > 0  # priced upstream

    @property
    def window_known(self) -> bool:
        """Whether the context meter's window is the model's known one or one the user set
        (a local model's window is not known here: the meter says so instead of guessing)."""
        from ..loop.context_window import DEFAULT_CONTEXT_WINDOW, KNOWN_CONTEXT_WINDOWS

        if self.context is None or self.context.window != DEFAULT_CONTEXT_WINDOW:
            return True
        return any((self.model or "").startswith(prefix) for prefix, _ in KNOWN_CONTEXT_WINDOWS)

    @property
    def total_usage(self) -> Usage:
        """Every token this run spent so far, finished responses or not."""
        return self._final_usage if self._final_usage is not None else self.meter.total

    @property
    def usage(self) -> Usage:
        """The run's usage (the same as :attr:`total_usage`)."""
        return self.total_usage

    @property
    def live_usage(self) -> Usage:
        """The usage of the response now streaming."""
        return self.meter.current

    def tools(self) -> list[ToolItem]:
        return [i for i in self.items if isinstance(i, ToolItem)]

    def notice(self, text: str, level: str = "info") -> NoticeItem:
        """Add a note of the UI's own (e.g. an approval decision, a hint)."""
        return self._add(NoticeItem("notice", level=level, text=text))

    # -- events ----------------------------------------------------------------------
    def handle(self, event: Any) -> None:
        """Fold one event of the run into the model."""
        self.meter.observe(event)
        if isinstance(event, ev.StreamEvent):
            self._stream(event)
        elif isinstance(event, ev.AssistantMessage):
            self._assistant(event)
        elif isinstance(event, ev.RequestStart):
            self.turn_count = event.turn_count
            self.requests = event.request_index
            self.model = event.model or self.model
            self.context = event.context or self.context
            self.status = "requesting"
            self._current = {}
            self._header()
        elif isinstance(event, (ev.ModelRetry, ev.ModelFallback)):
            self._discard_partial()
            if isinstance(event, ev.ModelRetry):
                text = (f"Model request failed ({event.error}); retrying "
                        f"({event.attempt}/{event.max_retries}) in {event.delay_s:.1f} s.")
            else:
                text = f"Switched model from {event.from_model} to {event.to_model} ({event.error})."
                self.model = event.to_model
            self._add(NoticeItem("notice", level="warning", text=text))
            self._header()
        elif isinstance(event, ev.ToolStart):
            tool = self._tool(event.tool_use_id, event.name, event.input)
            tool.input = dict(event.input)
            tool.state = "running"
            tool.started = True
            self.status = "running tools"
            self._emit("update", tool)
            self._header()
        elif isinstance(event, ev.ToolProgress):
            tool = self._tool(event.tool_use_id, event.name)
            tool.progress[:] = [event.data]
            self._emit("update", tool)
        elif isinstance(event, ev.ToolResult):
            tool = self._tool(event.tool_use_id, event.name)
            tool.result = event.content
            self._settle_tool(tool, event.outcome, event.exception)
            tool.exit_code = event.exit_code
            tool.duration_s = event.duration_s
            self._emit("update", tool)
            if tool.name == PLAN_TOOL and event.outcome is ev.ToolOutcome.OK:
                self._set_plan(tool)
        elif isinstance(event, ev.UserMessage):
            self._user_message(event)
        elif isinstance(event, ev.Compaction):
            self._add(CompactionItem("compaction", event=event))
            if event.outcome is ev.CompactionOutcome.COMPACTED:  # the meter drops with it
                compact_at = self.context.compact_at if self.context else 0
                self.context = ev.ContextUsage(event.tokens_after, event.window, compact_at)
                self._header()
        elif isinstance(event, ev.Notice):
            self.offline = self.offline or event.kind == ev.OFFLINE_REPLAY
            self._add(NoticeItem("notice", level="info", text=f"{event.text}"))
        elif isinstance(event, Terminal):
            self.finish(event)
        # Checkpoints and anything unknown change nothing visible.

    def _settle_tool(self, tool: ToolItem, outcome: ev.ToolOutcome, exception: str) -> None:
        state = OUTCOME_STATES[outcome]
        if tool.state == "stopped" and state == "denied":
            state = "stopped"  # Stop answered its approval card with a deny
        tool.state, tool.exception = state, exception

    def _set_plan(self, tool: ToolItem) -> None:
        """A ``TodoWrite`` call succeeded: its list is the plan, shown right after it."""
        todos = plan_entries(tool.input.get("todos"))
        if todos is None:
            return
        plan = self.plan
        if plan is None:
            plan = self.plan = PlanItem("plan")
        else:
            self._remove(plan)
        plan.todos = todos
        at = self.items.index(tool) + 1 if tool in self.items else len(self.items)
        self.items.insert(at, plan)
        self._emit("add", plan)

    def _stream(self, event: ev.StreamEvent) -> None:
        if event.type in ("message_start", "message_delta"):
            self.status = "streaming"
            self._header()
        if event.index is None:
            return
        block = event.block or {}
        item = self._current.get(event.index)
        if event.type == "content_block_start" or item is None:
            item = self._new_block_item(block)
            self._current[event.index] = item
            if event.type == "content_block_start":
                return
        if event.type == "content_block_delta":
            self._update_block_item(item, block, event.delta or {}, done=False)
        elif event.type == "content_block_stop":
            self._update_block_item(item, block, {}, done=True)

    def _new_block_item(self, block: Mapping[str, Any]) -> Item:
        btype = block.get("type", "")
        if btype == "text":
            return self._add(TextItem("text", text=block.get("text", "")))
        if btype in ("thinking", "redacted_thinking"):
            return self._add(ThinkingItem("thinking", text=block.get("thinking", ""),
                                          redacted=btype == "redacted_thinking"))
        if btype == "tool_use":
            tool = self._tool(block.get("id", ""), block.get("name", ""), block.get("input"))
            return tool
        return self._add(BlockItem("block", block_type=btype or "unknown", block=dict(block)))

    def _update_block_item(self, item: Item, block: Mapping[str, Any], delta: Mapping[str, Any],
                           done: bool) -> None:
        if isinstance(item, TextItem):
            item.text = block.get("text", item.text + delta.get("text", ""))
            item.done = done
        elif isinstance(item, ThinkingItem):
            item.text = block.get("thinking", item.text + delta.get("thinking", ""))
            item.done = done
        elif isinstance(item, ToolItem):
            if delta.get("type") == "input_json_delta":
                item.partial_json += delta.get("partial_json", "")
            if done or isinstance(block.get("input"), dict) and block.get("input"):
                if isinstance(block.get("input"), dict):
                    item.input = dict(block["input"])
            if done and item.state == "input":
                item.state = "pending"
        elif isinstance(item, BlockItem):
            item.block = dict(block)
        self._emit("update", item)

    def _assistant(self, event: ev.AssistantMessage) -> None:
        # The complete message is the truth: reconcile with (or create, for a model
        # that does not stream) the items of this response.
        for index, block in enumerate(blocks_of(event.message)):
            item = self._current.get(index)
            if item is None:
                item = self._new_block_item(block)
                self._current[index] = item
            self._update_block_item(item, block, {}, done=True)
        self._current = {}
        self.status = "running tools" if event.tool_uses else "answered"
        self._header()

    def _discard_partial(self) -> None:
        for item in list(self._current.values()):
            self._remove(item)
            if isinstance(item, ToolItem):
                self._tools.pop(item.id, None)
        self._current = {}

    def _tool(self, tool_use_id: str, name: str, input: Any = None) -> ToolItem:
        tool = self._tools.get(tool_use_id)
        if tool is None:
            tool = ToolItem("tool", id=tool_use_id, name=name,
                            input=dict(input) if isinstance(input, dict) else {}, cwd=self.cwd)
            self._tools[tool_use_id] = tool
            self._add(tool)
        return tool

    def _user_message(self, event: ev.UserMessage) -> None:
        for block in blocks_of(event.message):  # (tool results came as ToolResult events)
            if is_text(block) and block["text"]:
                label = "Loop note to the model" if event.synthetic else "User message"
                self._add(NoticeItem("notice", level="info", text=f"{label}: {block['text']}"))

    # -- approvals and the end -------------------------------------------------------
    def tool_by_id(self, tool_use_id: str) -> ToolItem | None:
        """The tool item of the call with this ``tool_use`` id (an approval names its call)."""
        return self._tools.get(tool_use_id)

    def set_tool_state(self, tool: ToolItem, state: str, decision: str = "") -> None:
        now = time.monotonic()
        if state == "approval" and tool.waiting_since is None:
            tool.waiting_since = now
        elif tool.state == "approval" and tool.waiting_since is not None:
            waited = now - tool.waiting_since
            tool.wait_s += waited
            self.wait_s += waited
            tool.waiting_since = None
        tool.state = state
        if decision:
            tool.decision = decision
        self._emit("update", tool)
        self._header()  # the header counts the calls waiting for approval

    def set_status(self, status: str) -> None:
        self.status = status
        self._header()

    def finish(self, terminal: Terminal | None, error: str | None = None) -> None:
        """The run ended (``terminal`` None: it ended without one, e.g. a crash)."""
        if self.ended is not None:
            return
        self.ended = time.monotonic()
        self.terminal = terminal
        if terminal is not None:
            self.meter.observe(terminal)
            # the loop counted the stream as this model did: its figure is the run's
            self._final_usage = terminal.usage if isinstance(terminal.usage, Usage) else self.meter.total
            self.turn_count = terminal.turn_count or self.turn_count
        for tool in self.tools():
            if tool.state in ("input", "pending", "approval", "running"):
                if tool.state == "approval":
                    self.set_tool_state(tool, "stopped")
                tool.state = "stopped"
                tool.result = tool.result or "(no result: the run ended before this call finished)"
                self._emit("update", tool)
        self.status = f"ended: {terminal.reason}" if terminal is not None else "ended"
        if error:
            self._add(NoticeItem("notice", level="error", text=error))
        self._header()

