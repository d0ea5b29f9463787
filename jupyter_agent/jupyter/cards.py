"""HTML of the live view's pieces, and the approval card.

Each item of a run (see ``runmodel.py``) is drawn as HTML into one ``ipywidgets.HTML``
(or, for assistant text, Markdown into one ``Output``), so redrawing a card is one
comm message. Collapsible parts are ``<details>``: no extra widgets, and the
browser keeps them folded. Everything shown passes through :func:`redact`.
"""

from __future__ import annotations

import html
import json
from typing import Any, Callable

import ipywidgets as w

from ..redact import redact
from .runmodel import BlockItem, NoticeItem, PromptItem, RunModel, ThinkingItem, ToolItem, end_reason_text
from .transcript import STATE_ICONS, STATE_LABELS, cut_middle, format_usage, result_parts

STATE_COLORS = {
    "input": "#888", "pending": "#888", "approval": "#d08700",
    "running": "#1a73e8", "done": "#188038", "error": "#c5221f",
}
_BOX = ("border:1px solid var(--jp-border-color2,#ddd);border-left:4px solid {color};"
        "border-radius:4px;padding:4px 8px;margin:3px 0;font-size:var(--jp-ui-font-size1,13px)")
_PRE = ("white-space:pre-wrap;word-break:break-word;max-height:24em;overflow:auto;margin:4px 0;"
        "padding:4px;background:var(--jp-layout-color2,#f5f5f5);font-size:12px")


def esc(text: Any) -> str:
    return html.escape(redact(str(text)))


def pre(text: str) -> str:
    return f'<pre style="{_PRE}">{esc(cut_middle(text))}</pre>'


def diff_html(diff: str) -> str:
    """A unified diff with added/removed lines coloured."""
    lines = []
    for line in cut_middle(diff, 12000).splitlines():
        color = ("#188038" if line.startswith("+") and not line.startswith("+++") else
                 "#c5221f" if line.startswith("-") and not line.startswith("---") else
                 "#666" if line.startswith("@@") else "")
        lines.append(f'<span style="color:{color}">{esc(line)}</span>' if color else esc(line))
    return f'<pre style="{_PRE}">' + "\n".join(lines) + "</pre>"


def tool_html(tool: ToolItem) -> str:
    """A tool card: name, summary, state; input and result folded."""
    color = STATE_COLORS.get(tool.state, "#888")
    label = STATE_LABELS.get(tool.state, tool.state)
    took = f" · {tool.duration_s:.1f} s" if tool.duration_s else ""
    head = (f"<b>{STATE_ICONS.get(tool.state, '')} {esc(tool.name)}</b> "
            f"<code>{esc(tool.summary)}</code> "
            f'<span style="color:{color}">{label}{took}</span>')
    parts = [head]
    if tool.state == "input" and tool.partial_json:
        parts.append(f'<span style="color:#888"> receiving input ({len(tool.partial_json)} chars)</span>')
    if tool.input:
        parts.append(f"<details><summary>input</summary>"
                     f"{pre(json.dumps(tool.input, ensure_ascii=False, indent=1))}</details>")
    if tool.decision:
        parts.append(f"<div><i>{esc(tool.decision)}</i></div>")
    if tool.progress and tool.state == "running":
        last = tool.progress[-1]
        parts.append(pre(last if isinstance(last, str) else cut_middle(json.dumps(last, default=str), 2000)))
    results = result_parts(tool.result)
    if results:
        body = []
        for kind, value in results:
            if kind == "image":
                body.append(f'<img src="{html.escape(value)}" style="max-width:100%">')
            else:
                body.append(pre(value))
        title = "error" if tool.state == "error" else "result"
        # errors are shown open: they are what a person needs to see
        open_ = " open" if tool.state == "error" else ""
        parts.append(f"<details{open_}><summary>{title}</summary>{''.join(body)}</details>")
    return f'<div style="{_BOX.format(color=color)}">' + "".join(parts) + "</div>"


def thinking_html(item: ThinkingItem) -> str:
    if item.redacted:
        return '<div style="color:#888">💭 <i>thinking (redacted by the API)</i></div>'
    if not item.done:  # the body is drawn once, at the end, so an opened fold stays open
        return f'<div style="color:#888">💭 <i>thinking… ({len(item.text):,} chars)</i></div>'
    return (f'<details style="color:#666"><summary>💭 thinking ({len(item.text):,} chars)</summary>'
            f"{pre(item.text)}</details>")


def block_html(item: BlockItem) -> str:
    dump = json.dumps(item.block, ensure_ascii=False, indent=1, default=str)
    return (f'<div style="{_BOX.format(color="#888")}"><details><summary>▫️ '
            f"<code>{esc(item.block_type)}</code> block</summary>{pre(dump)}</details></div>")


def notice_html(item: NoticeItem) -> str:
    color = {"warning": "#d08700", "error": "#c5221f"}.get(item.level, "#666")
    icon = {"warning": "⚠️", "error": "❌"}.get(item.level, "ℹ️")
    return f'<div style="color:{color}">{icon} {esc(item.text)}</div>'


def prompt_html(item: PromptItem) -> str:
    return (f'<div style="border-left:3px solid var(--jp-brand-color1,#1a73e8);padding:2px 8px;'
            f'margin:2px 0;white-space:pre-wrap;color:var(--jp-ui-font-color1,#333)">'
            f"{esc(item.text)}</div>")


def header_html(model: RunModel) -> str:
    """Model, mode, turn count, tokens, cost, elapsed time, status."""
    turns = model.turn_count
    waiting = sum(1 for t in model.tools() if t.state == "approval")
    status = f"waiting for your approval ({waiting})" if waiting and model.ended is None else model.status
    return (f'<div style="font-size:12px;color:var(--jp-ui-font-color2,#555)">'
            f"🤖 <b>{esc(model.model or '?')}</b> · mode <code>{esc(model.permission_mode)}</code> · "
            f"{turns} turn{'s' if turns != 1 else ''} · {format_usage(model)} · "
            f"{model.elapsed_s:.0f} s · <i>{esc(status)}</i></div>")


def footer_html(model: RunModel) -> str:
    """The end reason, said plainly, with what it means."""
    reason, meaning = end_reason_text(model.terminal)
    ok = reason in ("completed", "max_turns")
    color = "#188038" if ok else "#c5221f"
    extra = ""
    term = model.terminal
    if term is not None and term.error:
        extra = f"<div>{esc(term.error)}</div>"
    return (f'<div style="{_BOX.format(color=color)}"><b>Ended: <code>{esc(reason)}</code></b> — '
            f"{esc(meaning)}{extra}</div>")


class ApprovalCard(w.VBox):
    """One "ask": the tool, its arguments, a diff for edits, Allow / Always allow / Deny,
    and a text box whose text goes to the model with Deny.

    ``on_decide(card, choice, feedback)`` is called from the widget callback's thread;
    the receiver must hop to the event loop thread-safely.
    """

    def __init__(self, tool_name: str, input: dict[str, Any], message: str = "",
                 diff: str | None = None, rules: tuple[str, ...] = (),
                 on_decide: Callable[["ApprovalCard", str, str], None] | None = None) -> None:
        self.tool_name = tool_name
        self.rules = rules
        self._on_decide = on_decide
        body = [f"<b>✋ Allow <code>{esc(tool_name)}</code>?</b> {esc(message)}",
                pre(json.dumps(input, ensure_ascii=False, indent=1))]
        if diff:
            body.append(diff_html(diff))
        always = f" (adds {', '.join(rules)})" if rules else ""
        self.info = w.HTML("".join(body))
        self.feedback = w.Text(placeholder="Feedback for the model (sent with Deny)",
                               layout=w.Layout(width="60%"))
        self.allow = w.Button(description="Allow", button_style="success", icon="check")
        self.always = w.Button(description="Always allow", button_style="info",
                               tooltip=f"Allow this and similar calls for the session{always}")
        self.deny = w.Button(description="Deny", button_style="danger", icon="times")
        self.allow.on_click(lambda _b: self._decide("allow"))
        self.always.on_click(lambda _b: self._decide("always"))
        self.deny.on_click(lambda _b: self._decide("deny"))
        super().__init__(
            [self.info, w.HBox([self.allow, self.always, self.deny, self.feedback])],
            layout=w.Layout(border="2px solid #d08700", padding="4px", margin="4px 0"),
        )

    def _decide(self, choice: str) -> None:
        if self._on_decide is not None:
            self._on_decide(self, choice, self.feedback.value)

    def settle(self, text: str) -> None:
        """Show the decision and disable the buttons (loop thread only)."""
        with self.hold_sync():
            for button in (self.allow, self.always, self.deny):
                button.disabled = True
            self.feedback.disabled = True
        self.info.value = self.info.value + f"<div><i>{esc(text)}</i></div>"

    def close(self) -> None:
        for child in (self.allow, self.always, self.deny, self.feedback, self.info):
            child.close()
        super().close()
