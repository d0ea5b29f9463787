"""What a run looks like, as plain data: a pure function of the loop's events.

:class:`RunModel` folds the events of ``jupyter_agent.loop.events`` (and the final
:class:`~jupyter_agent.loop.state.Terminal`) into a list of *items*: the prompt,
assistant text, thinking, one item per tool call, notices, unknown blocks. The live
widgets (``widgets.py``), the static transcript (``transcript.py``) and the terminal
display of the CLI are all drawn from it, so they cannot disagree, and it is
testable without a kernel.

Listeners get ``(kind, item)`` with kind ``"add"``, ``"update"``, ``"remove"`` or
``"header"``; they decide how often to redraw (the widgets coalesce per frame).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..loop import events as ev
from ..loop.state import Terminal, TERMINAL_EXPLANATIONS
from ..loop.usage import Usage


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
    started), ``approval`` (waiting for a person), ``running``, ``done``, ``error``."""

    id: str = ""
    name: str = ""
    input: dict[str, Any] = field(default_factory=dict)
    partial_json: str = ""
    state: str = "input"
    result: Any = None
    duration_s: float = 0.0
    progress: list[Any] = field(default_factory=list)
    decision: str = ""

    @property
    def summary(self) -> str:
        return tool_summary(self.name, self.input)


@dataclass(eq=False)
class BlockItem(Item):
    """A content block of a type this UI has no renderer for (shown generically)."""

    block_type: str = ""
    block: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class NoticeItem(Item):
    level: str = "info"
    text: str = ""


_SUMMARY_KEYS = ("file_path", "notebook_path", "pattern", "path", "command", "url", "query")


def tool_summary(name: str, input: dict[str, Any], width: int = 80) -> str:
    """A one-line description of a call's input (the path, the pattern...)."""
    if not isinstance(input, dict):
        return ""
    parts = []
    for key in _SUMMARY_KEYS:
        if isinstance(input.get(key), str):
            parts.append(input[key])
            break
    for key in ("cell_id", "edit_mode"):
        if isinstance(input.get(key), str):
            parts.append(f"{key}={input[key]}")
    if not parts and input:
        parts.append(json.dumps(input, ensure_ascii=False)[:width])
    text = " ".join(parts)
    return text if len(text) <= width else text[: width - 1] + "…"


class RunModel:
    """The state of one run as the UI shows it, built from the run's events."""

    def __init__(self, *, prompt: str = "", model: str = "", permission_mode: str = "") -> None:
        self.items: list[Item] = []
        self.model = model
        self.permission_mode = permission_mode
        self.turn_count = 0
        self.requests = 0
        self.usage = Usage()
        #: usage of the response now streaming (not yet in ``usage``)
        self.live_usage = Usage()
        self.started = time.monotonic()
        self.ended: float | None = None
        self.terminal: Terminal | None = None
        self.status = "starting"
        self._listeners: list[Callable[[str, Item | None], None]] = []
        self._current: dict[int, Item] = {}  # this response's items, by block index
        self._tools: dict[str, ToolItem] = {}
        if prompt:
            self._add(PromptItem("prompt", text=prompt))

    # -- listeners -------------------------------------------------------------------
    def listen(self, fn: Callable[[str, Item | None], None]) -> None:
        self._listeners.append(fn)

    def _emit(self, kind: str, item: Item | None) -> None:
        for fn in self._listeners:
            fn(kind, item)

    def _add(self, item: Item) -> Item:
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
    def total_usage(self) -> Usage:
        total = Usage()
        total.add(self.usage)
        total.add(self.live_usage)
        return total

    def tools(self) -> list[ToolItem]:
        return [i for i in self.items if isinstance(i, ToolItem)]

    def notice(self, text: str, level: str = "info") -> NoticeItem:
        """Add a note of the UI's own (e.g. an approval decision, a hint)."""
        return self._add(NoticeItem("notice", level=level, text=text))  # type: ignore[return-value]

    # -- events ----------------------------------------------------------------------
    def handle(self, event: Any) -> None:
        """Fold one event of the run into the model."""
        if isinstance(event, ev.StreamEvent):
            self._stream(event)
        elif isinstance(event, ev.AssistantMessage):
            self._assistant(event)
        elif isinstance(event, ev.RequestStart):
            self.turn_count = event.turn_count
            self.requests = event.request_index
            self.model = event.model or self.model
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
            self.status = "running tools"
            self._emit("update", tool)
            self._header()
        elif isinstance(event, ev.ToolProgress):
            tool = self._tool(event.tool_use_id, event.name)
            tool.progress.append(event.data)
            self._emit("update", tool)
        elif isinstance(event, ev.ToolResult):
            tool = self._tool(event.tool_use_id, event.name)
            tool.result = event.content
            tool.state = "error" if event.is_error else "done"
            tool.duration_s = event.duration_s
            self._emit("update", tool)
        elif isinstance(event, ev.UserMessage):
            self._user_message(event)
        elif isinstance(event, ev.Notice):
            self._add(NoticeItem("notice", level="info", text=f"{event.text}"))
        elif isinstance(event, Terminal):
            self.finish(event)
        # Checkpoints and anything unknown change nothing visible.

    def _stream(self, event: ev.StreamEvent) -> None:
        snap_usage = event.snapshot.get("usage") if isinstance(event.snapshot, dict) else None
        if event.type in ("message_start", "message_delta") and isinstance(snap_usage, dict):
            self.live_usage = Usage.from_api(snap_usage)
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

    def _new_block_item(self, block: dict[str, Any]) -> Item:
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

    def _update_block_item(self, item: Item, block: dict[str, Any], delta: dict[str, Any],
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
        for index, block in enumerate(event.message.get("content") or []):
            item = self._current.get(index)
            if item is None:
                item = self._new_block_item(block)
                self._current[index] = item
            self._update_block_item(item, block, {}, done=True)
        self._current = {}
        self.usage.add(event.usage)
        self.live_usage = Usage()
        self.status = "running tools" if event.tool_uses else "answered"
        self._header()

    def _discard_partial(self) -> None:
        for item in list(self._current.values()):
            self._remove(item)
            if isinstance(item, ToolItem):
                self._tools.pop(item.id, None)
        self._current = {}
        self.live_usage = Usage()

    def _tool(self, tool_use_id: str, name: str, input: Any = None) -> ToolItem:
        tool = self._tools.get(tool_use_id)
        if tool is None:
            tool = ToolItem("tool", id=tool_use_id, name=name,
                            input=dict(input) if isinstance(input, dict) else {})
            self._tools[tool_use_id] = tool
            self._add(tool)
        return tool

    def _user_message(self, event: ev.UserMessage) -> None:
        content = event.message.get("content")
        if isinstance(content, str):
            blocks = [{"type": "text", "text": content}]
        else:
            blocks = list(content or [])
        for block in blocks:
            if block.get("type") == "tool_result":
                tool = self._tools.get(block.get("tool_use_id", ""))
                if tool is not None and tool.state not in ("done", "error"):
                    tool.result = block.get("content")
                    tool.state = "error" if block.get("is_error") else "done"
                    self._emit("update", tool)
            elif block.get("type") == "text" and block.get("text"):
                label = "Loop note to the model" if event.synthetic else "User message"
                self._add(NoticeItem("notice", level="info", text=f"{label}: {block['text']}"))

    # -- approvals and the end -------------------------------------------------------
    def find_tool_for_approval(self, name: str, input: dict[str, Any]) -> ToolItem | None:
        """The tool item an approval request is about (``can_use_tool`` gets no id)."""
        candidates = [t for t in self.tools() if t.name == name and t.state in ("input", "pending")]
        for tool in candidates:
            if tool.input == input:
                return tool
        return candidates[0] if candidates else None

    def set_tool_state(self, tool: ToolItem, state: str, decision: str = "") -> None:
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
        if terminal is not None and isinstance(terminal.usage, Usage):
            self.usage = terminal.usage
            self.live_usage = Usage()
            self.turn_count = terminal.turn_count or self.turn_count
        for tool in self.tools():
            if tool.state in ("input", "pending", "approval", "running"):
                tool.state = "error"
                tool.result = tool.result or "(no result: the run ended)"
                self._emit("update", tool)
        self.status = f"ended: {terminal.reason}" if terminal is not None else "ended"
        if error:
            self._add(NoticeItem("notice", level="error", text=error))
        self._header()


def end_reason_text(terminal: Terminal | None) -> tuple[str, str]:
    """(reason, what it means) for display."""
    if terminal is None:
        return "not finished", "The run ended without an end reason (see the error above)."
    reason = str(getattr(terminal.reason, "value", terminal.reason))
    meaning = TERMINAL_EXPLANATIONS.get(reason, "")
    return reason, meaning
