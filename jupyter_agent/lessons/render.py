"""HTML of a snapshot: the four-step diagram, the State table, the views, the pairing
table and the end reason. Used by the live widget and as the static copy saved in the
notebook, so it uses inline styles and plain tags only (an untrusted notebook's HTML is
sanitized: no scripts, no ``<style>`` blocks survive there).

Everything a run put in a snapshot (messages, tool inputs and results, the model's text,
errors, end reasons) is untrusted: it passes through :func:`esc` (the package's HTML
escaper, ``render.html.html_text``: redacted, invisible characters marked, escaped) before
it is part of the HTML. The widget shows this HTML through
``ipywidgets.HTML`` (``innerHTML``, trusted) and the saved copy is signed with the
notebook, so an unescaped ``<img onerror>`` would run in both.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ..redact import redact
from ..render.html import html_text
from ..view.labels import end_tone
from ..view.style import BORDER_STRONG, BOX_BG, BRAND_LINE, CHANGED_BG, ERROR, LIT_BG, MUTED, SUCCESS, \
    SUCCESS_LINE, TEXT, TONES, WARN
from .article import END_TABLE, STEP_TITLES
from .frozen import thaw


class PairLike(Protocol):
    """What this module reads of a :class:`~.snapshot.Pair`."""

    @property
    def tool_use_id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def result(self) -> Any: ...


class Snapshot(Protocol):
    """What this module reads of a :class:`~.snapshot.Snapshot`. A protocol, not an
    import: a Snapshot draws itself (``_repr_html_``) through this module, and the
    package's imports run one way."""

    @property
    def index(self) -> int: ...
    @property
    def step(self) -> int | None: ...
    @property
    def title(self) -> str: ...
    @property
    def turn_count(self) -> int: ...
    @property
    def transition(self) -> str | None: ...
    @property
    def message_count(self) -> int: ...
    @property
    def needs_follow_up(self) -> bool: ...
    @property
    def ended(self) -> bool: ...
    @property
    def end_reason(self) -> str | None: ...
    @property
    def end_message(self) -> str: ...
    @property
    def events(self) -> tuple[str, ...]: ...
    @property
    def changed(self) -> Mapping[str, Any]: ...
    def pairs(self) -> Sequence[PairLike]: ...

# Colours are the theme's (view/style.py): the widget and its saved copy read in light and dark.
NEW_BG = CHANGED_BG  # what changed since the last step
LIT = BRAND_LINE
_CELL = f"border:1px solid {BORDER_STRONG};padding:3px 8px;text-align:left;vertical-align:top"
_PRE = ("white-space:pre-wrap;word-break:break-word;margin:2px 0;padding:4px;font-size:12px;"
        f"background:{BOX_BG};max-height:18em;overflow:auto")


def esc(value: Any) -> str:
    """``value`` as inert HTML text: secrets redacted, invisible characters marked, then
    every ``<>&"'`` escaped (the package's one HTML escaper)."""
    return html_text(value)


def short(value: Any, limit: int = 400) -> str:
    """``value`` as text (JSON unless a string), redacted, its middle cut beyond ``limit``
    (redacted before the cut: a cut secret would no longer be recognized)."""
    text = redact(value if isinstance(value, str) else json.dumps(thaw(value), ensure_ascii=False))
    if len(text) <= limit:
        return text
    return text[: limit // 2] + f" … ({len(text) - limit} chars) … " + text[-limit // 2:]


def diagram_html(step: int | None, ended: bool = False, end_reason: str | None = None) -> str:
    """The four steps in a row, the current one lit, then the end."""
    cells = []
    for n, title in STEP_TITLES.items():
        lit = n == step and not ended
        style = (f"border:2px solid {LIT if lit else BORDER_STRONG};border-radius:8px;padding:6px 10px;"
                 f"background:{LIT_BG if lit else 'transparent'};color:{TEXT};"
                 f"font-weight:{'bold' if lit else 'normal'};min-width:9em;text-align:center")
        cells.append(f'<td style="{style}" data-step="{n}" data-lit="{str(lit).lower()}">{n}. {esc(title)}</td>')
    _, end_line, end_bg = TONES[end_tone(end_reason)] if ended else (None, BORDER_STRONG, "transparent")
    end_style = (f"border:2px solid {end_line};border-radius:8px;padding:6px 10px;"
                 f"background:{end_bg};color:{TEXT};font-weight:{'bold' if ended else 'normal'};"
                 "text-align:center")
    end_cell = (f'<td style="{end_style}" data-step="end" data-lit="{str(ended).lower()}">'
                f'end{": " + esc(end_reason) if ended and end_reason else ""}</td>')
    arrow = f'<td style="padding:0 4px;color:{MUTED}">→</td>'
    return ('<table style="border-collapse:separate;border-spacing:0;margin:4px 0"><tr>' + arrow.join(cells)
            + f'<td style="padding:0 6px;color:{MUTED}">↺ back to 1 while needs_follow_up</td>' + end_cell
            + "</tr></table>")


def state_table_html(snap: Snapshot) -> str:
    """The ``State`` table: turn_count, transition, number of messages (changed cells highlighted)."""
    fields = snap.changed.get("fields", ())
    rows = [("turn_count", snap.turn_count, "turn_count"),
            ("transition", snap.transition or "None (first iteration)", "transition"),
            ("State.messages", f"{snap.message_count} messages", "message_count"),
            ("needs_follow_up", snap.needs_follow_up, "needs_follow_up")]
    body = "".join(
        f'<tr><th style="{_CELL}">{name}</th><td style="{_CELL}{";background:" + NEW_BG if key in fields else ""}">'
        f"<code>{esc(value)}</code></td></tr>" for name, value, key in rows)
    return f'<table style="border-collapse:collapse;margin:4px 0">{body}</table>'


def block_html(block: Any) -> str:
    kind = block.get("type") if isinstance(block, dict) else "text"
    if kind == "text":
        return f"<div>{esc(short(block.get('text', ''), 600))}</div>"
    if kind == "tool_use":
        return (f'<div><b>tool_use</b> <code>{esc(block.get("name"))}</code> id=<code>{esc(block.get("id"))}</code>'
                f' input=<code>{esc(short(block.get("input"), 300))}</code></div>')
    if kind == "tool_result":
        err = f' <b style="color:{ERROR}">is_error</b>' if block.get("is_error") else ""
        return (f'<div><b>tool_result</b> tool_use_id=<code>{esc(block.get("tool_use_id"))}</code>{err}: '
                f'<span style="color:{MUTED}">{esc(short(block.get("content"), 300))}</span></div>')
    if kind == "thinking":
        return f'<div style="color:{MUTED}"><i>thinking: {esc(short(block.get("thinking", ""), 200))}</i></div>'
    return f"<div><b>{esc(kind)}</b> {esc(short(block, 200))}</div>"


def message_html(message: Any, new: bool) -> str:
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or ())
    style = f"border-left:3px solid {SUCCESS_LINE if message.get('role') == 'assistant' else BORDER_STRONG};" \
            f"padding:2px 6px;margin:3px 0;{'background:' + NEW_BG if new else ''}"
    mark = f' <span style="color:{WARN}">(new)</span>' if new else ""
    return (f'<div style="{style}"><b>{esc(message.get("role"))}</b>{mark}'
            + "".join(block_html(b) for b in blocks) + "</div>")


def view_html(snap: Snapshot, name: str) -> str:
    """One view (a list of messages or blocks), new items highlighted."""
    items = getattr(snap, name)
    new = set(snap.changed.get(name, ()))
    if not items:
        return f'<div style="color:{MUTED}">(empty)</div>'
    if name == "tool_results":
        return "".join(f'<div style="padding:2px 6px;{"background:" + NEW_BG if i in new else ""}">'
                       f"{block_html(b)}</div>" for i, b in enumerate(items))
    return "".join(message_html(m, i in new) for i, m in enumerate(items))


VIEW_NAMES = {"messages_for_query": "messages_for_query", "assistant_messages": "assistant_messages",
              "tool_results": "tool_results", "state_messages": "State.messages"}


def views_html(snap: Snapshot, open_changed: bool = True) -> str:
    """All views as ``<details>``, the changed ones open."""
    parts = []
    for name, label in VIEW_NAMES.items():
        count = len(getattr(snap, name))
        new = len(snap.changed.get(name, ()))
        is_open = " open" if open_changed and new else ""
        badge = f' <span style="background:{NEW_BG}">+{new} changed</span>' if new else ""
        parts.append(f"<details{is_open}><summary><code>{label}</code> ({count}){badge}</summary>"
                     f"{view_html(snap, name)}</details>")
    flag = "needs_follow_up" in snap.changed.get("fields", ())
    parts.append(f'<div><code>needs_follow_up</code> = <code style="{"background:" + NEW_BG if flag else ""}">'
                 f"{snap.needs_follow_up}</code></div>")
    return "".join(parts)


def pairing_html(snap: Snapshot) -> str:
    """Each ``tool_use`` id with its ``tool_result`` (matched by id)."""
    pairs = snap.pairs()
    if not pairs:
        return f'<div style="color:{MUTED}">No tool_use yet.</div>'
    colors = {"ok": SUCCESS, "error": ERROR, "waiting": WARN}
    rows = "".join(
        f'<tr><td style="{_CELL}"><code>{esc(p.tool_use_id)}</code></td><td style="{_CELL}">{esc(p.name)}</td>'
        f'<td style="{_CELL};color:{colors.get(p.status, TEXT)}">{esc(p.status)}</td>'
        f'<td style="{_CELL}">{esc(short(p.result.get("content"), 160)) if p.result else "—"}</td></tr>'
        for p in pairs)
    head = "".join(f'<th style="{_CELL}">{h}</th>' for h in ("tool_use.id", "name", "tool_result", "content"))
    return f'<table style="border-collapse:collapse;margin:4px 0"><tr>{head}</tr>{rows}</table>'


def end_html(snap: Snapshot) -> str:
    """The end reason with its row of the article's table."""
    if not snap.ended:
        return ""
    condition, handling = END_TABLE.get(snap.end_reason or "", ("", ""))
    note = (" <i>completed means the loop ended, not that the task is done.</i>"
            if snap.end_reason == "completed" else "")
    line = TONES[end_tone(snap.end_reason)][1]
    return (f'<div style="border:2px solid {line};border-radius:6px;padding:6px 10px;margin:6px 0">'
            f'<b>Ended: <code>{esc(snap.end_reason)}</code></b>{note}'
            f'<table style="border-collapse:collapse;margin-top:4px"><tr><th style="{_CELL}">condition</th>'
            f'<th style="{_CELL}">what the code does</th></tr><tr><td style="{_CELL}">{esc(condition)}</td>'
            f'<td style="{_CELL}">{esc(handling)}</td></tr></table>'
            f'{"<div>" + esc(snap.end_message) + "</div>" if snap.end_message else ""}</div>')


def events_html(snap: Snapshot) -> str:
    if not snap.events:
        return ""
    return ("<details><summary>what the loop yielded since the last step "
            f"({len(snap.events)})</summary><ul>" + "".join(f"<li>{esc(e)}</li>" for e in snap.events)
            + "</ul></details>")


def header_html(snap: Snapshot, total: int | None = None) -> str:
    where = f" ({snap.index + 1} of {total})" if total else ""
    return f'<div style="font-size:14px;margin:4px 0"><b>Snapshot {snap.index}{where}: {esc(snap.title)}</b></div>'


def snapshot_html(snap: Snapshot, total: int | None = None, *, css_class: str = "") -> str:
    """Everything about one snapshot, as one static HTML block."""
    cls = f' class="{css_class}"' if css_class else ""
    return (f'<div{cls} style="font-family:sans-serif;font-size:13px">'
            + header_html(snap, total) + diagram_html(snap.step, snap.ended, snap.end_reason)
            + end_html(snap) + state_table_html(snap) + views_html(snap)
            + "<div><b>tool_use ↔ tool_result</b></div>" + pairing_html(snap) + events_html(snap) + "</div>")
