"""What a resumed run shows of itself: its part of the saved history, as run-model items.

After ``%agent resume`` (or the side panel's Resume) the runs of the saved conversation
come back as :class:`~.resume.ResumedRun` records with only their prompt. :func:`fill_runs`
gives each the items its turns made (the model's text and thinking, its tool calls with
their results, any other user message as a notice), built from the saved messages, so that
the side panel draws the resumed conversation through its usual, escaped path
(``panel_json.item_json``). The history is the file's, which may be anyone's words: it
becomes items only, never markup, and the panel's JSON redacts and marks every string.

A run's turns start at the first user message (after the previous run's) whose text holds
the run's prompt; what comes before the first run's (a compaction's summary, an older
file's history) is shown in the first run.
"""

from __future__ import annotations

import logging
from typing import Any
from collections.abc import Mapping, Sequence

from ...view.items import Item, NoticeItem, TextItem, ThinkingItem, ToolItem

log = logging.getLogger(__name__)

#: How the loop's notes in a user message begin (not the user's words: not shown).
REMINDER = "<system-reminder>"


def _blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def _user_text(message: Mapping[str, Any]) -> str:
    """The text a user message says (not a tool result's), "" for none."""
    if message.get("role") != "user":
        return ""
    return "\n".join(b["text"] for b in _blocks(message) if b.get("type") == "text" and isinstance(b.get("text"), str))


def _starts(messages: Sequence[Mapping[str, Any]], prompts: list[str]) -> list[int | None]:
    """Where each run's turns start in ``messages`` (None: its prompt was not found, e.g. a
    compaction summarised it away)."""
    starts: list[int | None] = []
    at = 0
    for prompt in prompts:
        wanted = prompt.strip()
        found = next((i for i in range(at, len(messages)) if wanted and wanted in _user_text(messages[i])), None)
        starts.append(found)
        if found is not None:
            at = found + 1
    return starts


def history_items(messages: Sequence[Mapping[str, Any]], cwd: Any = None, prompted: bool = False) -> list[Item]:
    """The items of ``messages``; ``prompted``: the first is the run's prompt message, whose
    text the run's prompt item shows. The notes the loop adds to a user message (the
    kernel's variables, in ``<system-reminder>``) are not shown; tool results settle their calls."""
    items: list[Item] = []
    tools: dict[str, ToolItem] = {}
    for n, message in enumerate(messages):
        for block in _blocks(message):
            kind = block.get("type")
            if message.get("role") == "assistant":
                if kind == "text" and block.get("text"):
                    items.append(TextItem("text", text=str(block["text"]), done=True))
                elif kind in ("thinking", "redacted_thinking"):
                    items.append(ThinkingItem("thinking", text=str(block.get("thinking", "")), done=True,
                                              redacted=kind == "redacted_thinking"))
                elif kind == "tool_use":
                    tool = ToolItem("tool", id=str(block.get("id", "")), name=str(block.get("name", "")),
                                    input=dict(block.get("input") or {}), state="not_run", cwd=cwd)
                    tools[tool.id] = tool
                    items.append(tool)
            elif kind == "tool_result":
                called = tools.get(str(block.get("tool_use_id")))
                if called is not None:
                    called.result = block.get("content")
                    called.state = "error" if block.get("is_error") else "done"
            elif kind == "text" and block.get("text") and not (prompted and n == 0):
                text = str(block["text"])
                if not text.lstrip().startswith(REMINDER):
                    items.append(NoticeItem("notice", level="info", text=f"User message: {text}"))
    return items


def fill_runs(messages: Sequence[Mapping[str, Any]], runs: list[Any]) -> None:
    """Give each resumed run (``model.items`` holding its prompt) the items of its turns."""
    prompts = [run.prompt for run in runs]
    starts = _starts(messages, prompts)
    found = [(i, s) for i, s in enumerate(starts) if s is not None]
    if not found:
        if runs and messages:
            log.debug("no resumed run's prompt is in the saved history: the panel shows the prompts only")
        return
    for n, (index, start) in enumerate(found):
        end = found[n + 1][1] if n + 1 < len(found) else len(messages)
        begin = 0 if n == 0 else start
        model = runs[index].model
        earlier = history_items(messages[begin:start], model.cwd)
        model.items[:0] = earlier
        model.items.extend(history_items(messages[start:end], model.cwd, prompted=True))


__all__ = ["fill_runs", "history_items"]
