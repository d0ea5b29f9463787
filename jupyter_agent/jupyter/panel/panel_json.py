"""What the side panel is sent of a run: its items, its pending approvals and its usage, as
plain JSON (``labextension/src/panelState.ts`` reads these shapes).

The items are the :class:`~jupyter_agent.view.runmodel.RunModel`'s, the widgets' own view
model, drawn as plain data (nothing refolded). Every string passes through :func:`redact`
(before any cut) and has its invisible characters marked: the panel sets them as text.
Assistant text is sent as ``render.markdown.markdown_from_model`` of what
``redact_partial`` can judge so far (the panel renders it untrusted as well); an approval is
sent whole (message, diff, input), with ``warning`` set when it holds invisible or
reordering characters.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from ...redact import redact, redact_partial
from ...render.invisible import INVISIBLE_WARNING, has_invisible, mark_invisible
from ...render.markdown import markdown_from_model
from ...view.items import relative

log = logging.getLogger(__name__)

#: Longest text of one tool input or result part sent to the panel (cut in the middle).
MAX_PART = 6000
#: Tools whose ask carries code after its question (the cell, the command line).
CODE_ASKS = ("NotebookRun", "NotebookRunCells", "KernelRun", "Bash")


def cut_text(text: str, limit: int = MAX_PART) -> str:
    """A tool's input or result for a tool card: redacted, then cut, then marked."""
    from ...view.transcript import redact_and_cut

    return mark_invisible(redact_and_cut(text, limit))


def shown_text(text: str) -> str:
    """A string the panel shows as text: redacted, invisible characters marked."""
    return mark_invisible(redact(text))


def plan_json(item: Any, key: str) -> dict[str, Any]:
    """The run's plan (a ``PlanItem``) as the panel draws it: a title, and each task's
    status (one of three words) and text (the model's: redacted, invisible marked)."""
    from ...view.labels import TODO_LABELS, plan_title, todo_text

    return {"key": key, "kind": "plan", "title": plan_title(item),
            "todos": [{"status": t["status"], "label": TODO_LABELS[t["status"]], "text": shown_text(todo_text(t))}
                      for t in item.todos]}


def item_json(item: Any, key: str) -> dict[str, Any]:
    """One item of a run as the panel draws it."""
    from ...view.items import (
        BlockItem, CompactionItem, NoticeItem, PlanItem, PromptItem, TextItem, ThinkingItem, ToolItem,
    )
    from ...view.labels import STATE_LABELS, compaction_text
    from ...view.transcript import result_parts

    if isinstance(item, ToolItem):
        progress = item.progress[-1] if item.progress and item.state == "running" else None
        return {"key": key, "kind": "tool", "id": item.id, "name": shown_text(item.name),
                "summary": shown_text(item.summary), "state": item.state,
                "label": STATE_LABELS.get(item.state, item.state)
                + (f" · exit code {item.exit_code}" if item.exit_code is not None else ""),
                "decision": shown_text(item.decision),
                "duration_s": round(item.duration_s, 2),
                "input": cut_text(json.dumps(item.input, ensure_ascii=False, indent=1, default=str))
                if item.input else "",
                "receiving": len(item.partial_json) if item.state == "input" else 0,
                "progress": cut_text(progress if isinstance(progress, str) else json.dumps(progress, default=str))
                if progress is not None else "",
                "result": [[kind, value if kind == "image" else cut_text(value)]
                           for kind, value in result_parts(item.result)]}
    if isinstance(item, TextItem):
        return {"key": key, "kind": "text", "text": markdown_from_model(redact_partial(item.text, item.done)),
                "done": item.done}
    if isinstance(item, ThinkingItem):
        return {"key": key, "kind": "thinking", "text": mark_invisible(redact_partial(item.text, item.done)),
                "done": item.done, "redacted": item.redacted}
    if isinstance(item, NoticeItem):
        return {"key": key, "kind": "notice", "level": item.level, "text": shown_text(item.text)}
    if isinstance(item, PromptItem):
        return {"key": key, "kind": "prompt", "text": shown_text(item.text)}
    if isinstance(item, CompactionItem) and item.event is not None:  # (the panel shows it as a note)
        return {"key": key, "kind": "notice", "level": "info", "text": shown_text(compaction_text(item.event))}
    if isinstance(item, PlanItem):
        return plan_json(item, key)
    if isinstance(item, BlockItem):
        return {"key": key, "kind": "block", "block_type": shown_text(item.block_type),
                "json": cut_text(json.dumps(item.block, ensure_ascii=False, indent=1, default=str))}
    return {"key": key, "kind": "unknown"}


def approval_json(request: Any, run_id: str, cwd: Any = None, asker: str = "", page: str = "") -> dict[str, Any]:
    """One pending approval as the panel shows it: all of it (message, diff, input; the
    panel's box scrolls), nothing a person cannot see may be approved; ``warning`` says
    when it holds invisible or reordering characters. For ``NotebookRun`` and ``Bash``,
    ``question`` and ``code`` are the message's question and the whole cell or command
    ("" otherwise). An outside agent's ask (``outside_run.py``) has ``asker``, the client's
    name from its ``initialize``, and ``page``, the client id of the page whose notebook it
    is about: the page shows the card under that notebook too ("" for our own agent's)."""
    message = relative(request.message or "", cwd)
    diff = relative(request.diff or "", cwd)
    raw_input = json.dumps(request.input, ensure_ascii=False, indent=1, default=str)
    warning = any(has_invisible(t) for t in (message, diff, raw_input, asker))
    question, code = "", ""
    if request.tool_name in CODE_ASKS:  # the code, shown as code (as the cell's card does), exactly as it runs
        from ...loop.permission_result import code_ask_parts

        question, code = code_ask_parts(request.tool_name, request.input, request.message or "")
        question = relative(question, cwd)
    return {"id": request.id, "tool_use_id": request.tool_use_id, "run": run_id, "tool": shown_text(request.tool_name),
            "message": shown_text(message), "question": shown_text(question), "code": shown_text(code),
            "diff": shown_text(diff), "input": shown_text(raw_input),
            "warning": INVISIBLE_WARNING if warning else "",
            "rules": [shown_text(r) for r in request.suggested_rules] or [shown_text(request.tool_name)],
            "asker": shown_text(asker), "page": str(page)}  # (an id the page compares, never shows)


def usage_json(usage: Any, offline: bool = False, cost_known: bool = True) -> dict[str, Any]:
    """A run's or the conversation's token counts; no cost for an offline replay (nothing
    was paid for) or a model without a list price (a local model: unknown, not $0)."""
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "cache_read_input_tokens": usage.cache_read_input_tokens,
            "cache_creation_input_tokens": usage.cache_creation_input_tokens,
            "cost_usd": None if offline or not cost_known else round(usage.cost_usd, 6)}
