"""The static transcript: what a run did, as Markdown that needs no kernel.

At the end of a run the cell's live widget is replaced by this (``text/markdown``
plus a ``text/plain`` fallback), so a saved notebook, GitHub, nbviewer and a
headless-executed notebook all show the prompt, the answer, each tool call with
its result, and the end reason. Collapsible parts use ``<details>``, which Jupyter's
Markdown renderers (and GitHub's) keep.

The markup is ours; every piece of it that came from the model, a tool or an error
passes through ``jupyter_agent.render.markdown`` (the answer keeps its formatting, any
HTML in it is inert; names, notices and messages are literal text; inputs and results are
fenced) or, inside our ``<summary>``, ``render.html``. Redaction comes before any cut and
any escaping; text still streaming shows only what :func:`redact_partial` can judge.
"""

from __future__ import annotations

import html
import json
import re
import weakref
from typing import Any

from .review import changes_lines, changes_markdown, undo_markdown
from .labels import (
    NOTICE_LABELS, STATE_ICONS, STATE_LABELS, TODO_SIGNS, compaction_text, context_meter_text, cost_text,
    end_explanation,
    end_reason_text, end_title, plan_lines, plan_title, todo_text,
)
from ..loop.messages import cut_middle
from ..redact import redact, redact_partial
from ..render.html import inline_html
from ..render.markdown import markdown_code, markdown_fence, markdown_from_model, markdown_literal
from .runmodel import RunModel
from .items import BlockItem, CompactionItem, NoticeItem, PlanItem, PromptItem, TextItem, ThinkingItem, ToolItem

COMPACTION_ICON = "⇊"
#: Longest tool input/result kept in the transcript (the middle is cut).
MAX_RESULT_CHARS = 4000

def redact_and_cut(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    """``text`` redacted, then shortened to about ``limit`` characters by the loop's
    :func:`~jupyter_agent.loop.messages.cut_middle`.

    Redaction comes first, always: a key cut in two is no longer recognisable as one.
    """
    return cut_middle(redact(text), limit)


def fence(text: str, lang: str = "") -> str:
    """A fenced code block that no backtick run inside ``text`` can close early (its text
    redacted, invisible characters marked: :func:`~jupyter_agent.render.markdown.markdown_fence`)."""
    return markdown_fence(text, lang)


#: The media types a tool result's image may have to be shown as an image.
_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
_BASE64 = re.compile(r"^[A-Za-z0-9+/=\s]*$")


def image_data_uri(media_type: str, data: str) -> str | None:
    """A ``data:`` URI for an inline image of a known type and clean base64, else None
    (a media type or data that could break out of the Markdown is shown as text)."""
    if media_type in _IMAGE_TYPES and isinstance(data, str) and _BASE64.match(data):
        return f"data:{media_type};base64," + re.sub(r"\s", "", data)
    return None


def result_parts(content: Any) -> list[tuple[str, str]]:
    """A tool result's content as ``(kind, value)`` pairs: ``text`` or ``image`` (a data URI)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [("text", content)]
    parts: list[tuple[str, str]] = []
    for block in content if isinstance(content, list) else [content]:
        if not isinstance(block, dict):
            parts.append(("text", str(block)))
        elif block.get("type") == "text":
            parts.append(("text", block.get("text", "")))
        elif block.get("type") == "image":
            source = block.get("source") or {}
            uri = image_data_uri(str(source.get("media_type", "image/png")), source.get("data", "")) \
                if source.get("type") == "base64" else None
            if uri is not None:
                parts.append(("image", uri))
            elif source.get("type") == "base64":
                parts.append(("text", f"[image: {source.get('media_type')!s:.60}, not shown]"))
            else:
                parts.append(("text", f"[image: {source.get('url', 'not inline')}]"))
        elif block.get("type") == "document":  # a PDF: say what it is, never dump its base64
            source = block.get("source") or {}
            size = len(source.get("data") or "") * 3 // 4
            parts.append(("text", f"[document: {source.get('media_type', source.get('type', '?'))}"
                                  + (f", {size / 1024:,.1f} KB]" if size else "]")))
        else:
            parts.append(("text", json.dumps(block, ensure_ascii=False, indent=1)))
    return parts


def format_usage(model: RunModel) -> str:
    """One line: tokens in/out and estimated cost (cache figures: :func:`cache_line`); no
    cost for an offline replay, which spends nothing."""
    u = model.total_usage
    cost = cost_text(u.cost_usd, offline=model.offline, known=model.cost_known)
    return f"tokens in {u.input_tokens:,} · out {u.output_tokens:,}" + (f" · {cost}" if cost else "")


def cache_line(model: RunModel) -> str:
    """The details a tooltip holds: prompt-cache reads and writes, requests."""
    u = model.total_usage
    return (f"prompt cache: read {u.cache_read_input_tokens:,} tokens, wrote "
            f"{u.cache_creation_input_tokens:,} · {u.requests} request{'s' if u.requests != 1 else ''}")


def time_line(model: RunModel) -> str:
    """Elapsed time, with the time spent waiting for a person's click apart."""
    if model.wait_s >= 0.05:
        return f"{model.elapsed_s:.1f} s ({model.wait_s:.1f} s waiting for you)"
    return f"{model.elapsed_s:.1f} s"


def context_line(model: RunModel) -> str:
    """The context meter ("context 31k / 200k (16%) · ") or "" before the first request."""
    return f"{context_meter_text(model.context, model.window_known)} · " if model.context is not None else ""


def header_line(model: RunModel) -> str:
    turns = model.turn_count
    return (f"model {markdown_code(model.model or '?')} · mode `{model.permission_mode or 'default'}` · "
            f"{turns} turn{'s' if turns != 1 else ''} · {format_usage(model)} · {context_line(model)}"
            f"{time_line(model)} "
            f'· <abbr title="{html.escape(cache_line(model))}">cache</abbr>')


def tool_label(tool: ToolItem) -> str:
    """The state in words, with the exception a cell raised and the times: "ran, raised
    NameError · waited 12.0 s for you · ran 0.3 s"."""
    label = STATE_LABELS.get(tool.state, tool.state)
    if tool.state == "raised":
        label = f"ran, raised {tool.exception or 'an exception'}"
    elif tool.state == "denied" and tool.decision.startswith("Denied by you"):
        label = "denied by you"
    if tool.exit_code is not None:
        label += f" · exit code {tool.exit_code}"
    times = []
    if tool.wait_s >= 0.05:
        times.append(f"waited {tool.wait_s:.1f} s for you")
    if tool.duration_s and tool.started:
        times.append(f"ran {tool.run_s:.1f} s" if times else f"{tool.run_s:.1f} s")
    return " · ".join([label, *times])


def tool_markdown(tool: ToolItem) -> str:
    """One tool call as a collapsible Markdown section."""
    summary = (f"{STATE_ICONS.get(tool.state, '')} <b>{inline_html(tool.name)}</b> "
               f"<code>{inline_html(tool.summary)}</code> — {inline_html(tool_label(tool))}")
    # (no language: JupyterLab's JSON colours are its editor's, and its brackets are 2.9:1 on white)
    body = ["Input:", "", fence(redact_and_cut(json.dumps(tool.input, ensure_ascii=False, indent=1)))]
    if tool.decision:
        body += ["", f"*{markdown_literal(tool.decision)}*"]
    for kind, value in result_parts(tool.result):
        if kind == "image":
            body += ["", f"![image]({value})"]
        else:
            body += ["", "Error:" if tool.state in ("error", "denied", "stopped", "not_run") else "Result:", "",
                     fence(redact_and_cut(value))]
    return f"<details><summary>{summary}</summary>\n\n" + "\n".join(body) + "\n\n</details>"


def plan_markdown(plan: PlanItem) -> str:
    """The plan as lines, a sign before each task (the tasks are the model's: literal text)."""
    lines = [f"**{plan_title(plan)}**"]
    for todo in plan.todos:
        text = markdown_literal(todo_text(todo))
        if todo["status"] == "in_progress":
            text = f"**{text}** (in progress)"
        lines.append(f"{TODO_SIGNS[todo['status']]} {text}")
    return "  \n".join(lines)  # (hard line breaks: the signs are the list's marks)


def item_markdown(item: Any) -> str:
    """One item of a run as Markdown (the same order as the live view)."""
    if isinstance(item, PromptItem):
        return "\n".join(f"> {line}" if line else ">"
                         for line in ("**Prompt:** " + markdown_literal(item.text)).splitlines())
    if isinstance(item, TextItem):
        return markdown_from_model(redact_partial(item.text, item.done))
    if isinstance(item, ThinkingItem):
        text = "(redacted by the API)" if item.redacted else redact_partial(item.text, item.done)
        return f"<details><summary>Thinking</summary>\n\n{fence(text)}\n\n</details>"
    if isinstance(item, ToolItem):
        return tool_markdown(item)
    if isinstance(item, PlanItem):
        return plan_markdown(item)
    if isinstance(item, BlockItem):
        dump = redact_and_cut(json.dumps(item.block, ensure_ascii=False, indent=1))
        summary = f"<summary>{inline_html(item.block_type)} block</summary>"
        return f"<details>{summary}\n\n{fence(dump)}\n\n</details>"
    if isinstance(item, NoticeItem):
        return f"> **{NOTICE_LABELS.get(item.level, NOTICE_LABELS['info'])}** {markdown_literal(item.text)}"
    if isinstance(item, CompactionItem) and item.event is not None:
        line = f"> {COMPACTION_ICON} {markdown_literal(compaction_text(item.event))}"
        if not item.event.summary:
            return line
        # the summary is the model's text: a fenced block, redacted, never markup
        return (f"{line}\n\n<details><summary>The summary that replaced the history</summary>\n\n"
                f"{fence(redact_and_cut(item.event.summary))}\n\n</details>")
    return ""


#: A tool call's states after which nothing of it changes any more.
_FINAL_TOOL_STATES = frozenset({"done", "error", "denied", "stopped", "not_run", "raised"})
#: item -> (what its Markdown was made from, the Markdown): a finished text or tool call is
#: drawn once, not at every refresh of a long run's transcript (the fallback output is
#: refreshed every 2 s, and redrawing 50 turns took 14 ms of the kernel's loop, measured)
_drawn: weakref.WeakKeyDictionary[Any, tuple[Any, str]] = weakref.WeakKeyDictionary()


def _drawn_from(item: Any) -> Any:
    """What a finished item's Markdown depends on (compared, not hashed), or None while it
    may still change."""
    if isinstance(item, TextItem) and item.done:
        return ("text", item.text)
    if isinstance(item, ToolItem) and item.state in _FINAL_TOOL_STATES:
        return ("tool", item.state, item.name, item.input, item.decision, item.result, item.duration_s,
                item.wait_s, item.exit_code, item.exception, item.started, item.cwd)
    return None


def finished_item_markdown(item: Any) -> str:
    """:func:`item_markdown`, drawn once for an item that has finished changing."""
    source = _drawn_from(item)
    if source is None:
        return item_markdown(item)
    drawn = _drawn.get(item)
    if drawn is not None and drawn[0] == source:
        return drawn[1]
    md = item_markdown(item)
    _drawn[item] = (source, md)
    return md


def stopped_calls(model: RunModel) -> int:
    return sum(1 for t in model.tools() if t.state == "stopped")


def stopped_waiting(model: RunModel) -> bool:
    """Was the run stopped while a call waited for the person's approval?"""
    return any(t.state == "stopped" and t.wait_s > 0 and not t.started for t in model.tools())


def end_markdown(model: RunModel) -> str:
    """The end, said once: a quiet line for a normal end, the reason and what to do
    for the others."""
    reason, _ = end_reason_text(model.terminal)
    explanation = end_explanation(model.terminal, stopped_calls=stopped_calls(model), lost=model.lost,
                                  waiting=stopped_waiting(model))
    if not explanation:
        return f"✓ *{end_title(model.terminal)}* (`{reason}`) · {time_line(model)}"
    title = "Interrupted" if model.lost else end_title(model.terminal)
    # (title and reason are ours; an error's message came from the API, or from whatever
    # answers at ANTHROPIC_BASE_URL)
    return f"**{title}** (`{'kernel lost' if model.lost else reason}`) — {markdown_literal(explanation)}"


#: How the transcript of a run still going ends where it stands in for the live widget (the
#: fallback output, see ``jupyter/widgets/fallback.py``). It is seen wherever the widget is not drawn:
#: a kernel that is gone, but also a page reloaded on a notebook that is not trusted, another
#: person's view of a shared notebook, the seconds before a reloaded page restores its widgets.
#: Written while the run goes on, it cannot know which: it says what is known, and how to
#: reach the run if it is still going. Once the kernel is really gone it reads
#: :data:`UNFINISHED_AS_LOST`: written by the kernel when it is told it goes away
#: (``AgentRun.lose``), swapped in by the page when it sees its kernel restart or die.
UNFINISHED_ELSEWHERE = ("▸ **Still running** when this was written: this is its transcript so far. If its "
                        "kernel is still running, so is the run: `%agent approvals` in a cell of this "
                        "notebook shows what waits for you, with its buttons. If the kernel was restarted "
                        "since, the run was interrupted then.")

#: How the transcript of a run ends once its kernel is gone (see above).
UNFINISHED_AS_LOST = ("**Interrupted** (`kernel lost`) — the kernel stopped or restarted before this "
                      "run ended: this is its transcript up to then. Calls that had not finished did not run.")


def transcript_markdown(model: RunModel, title: str = "jupyter-agent", *, header: bool = True,
                        unfinished: str = "*… still running (this is the transcript so far)*",
                        prompt: bool = True) -> str:
    """The whole run as Markdown, secrets redacted (so far, ending with ``unfinished``,
    if it is still going). ``prompt=False`` leaves the prompt out (the chat shows it)."""
    parts = [f"**{title}** · {header_line(model)}"] if header else []
    items = [i for i in model.items if prompt or not isinstance(i, PromptItem)]
    parts += [md for md in (finished_item_markdown(i) for i in items) if md.strip()]
    parts.append(end_markdown(model) if model.ended is not None else unfinished)
    if model.ended is not None and model.changes is not None and (review := changes_markdown(model.changes, model.cwd)):
        parts.append(review)
        if model.changes.undo_report is not None:
            report = model.changes.undo_report
            parts.append(undo_markdown(report, model.cwd, "Undone in part" if report.failed else "Undone"))
    return redact("\n\n".join(parts))


def transcript_plain(model: RunModel) -> str:
    """A short plain-text fallback (for consoles and ``text/plain``)."""
    reason, _ = end_reason_text(model.terminal)
    reason = "interrupted (kernel lost)" if model.lost else reason if model.ended is not None else "running"
    lines = [f"jupyter-agent run: {reason} after {model.turn_count} turn(s), {format_usage(model)}"]
    for item in model.items:
        text = redact_partial(item.text, item.done) if isinstance(item, TextItem) else ""
        if text.strip():
            lines.append(text.strip())
        elif isinstance(item, ToolItem):
            lines.append(f"[{item.name} {item.summary}: {tool_label(item)}]")
        elif isinstance(item, PlanItem):
            lines += plan_lines(item)
    if model.ended is not None and model.changes is not None:
        lines += changes_lines(model.changes, model.cwd)
    return redact("\n".join(lines))


def transcript_bundle(model: RunModel) -> dict[str, str]:
    """The display bundle that replaces the live widget when the run ends."""
    return {"text/markdown": transcript_markdown(model), "text/plain": transcript_plain(model)}
