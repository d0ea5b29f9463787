"""HTML of the live view's pieces, and the approval card.

Each item of a run (see ``view/runmodel.py``) is drawn as HTML into one ``ipywidgets.HTML``
(or, for assistant text, Markdown into one ``Output``), so redrawing a card is one
comm message. Collapsible parts are ``<details>``: no extra widgets, and the
browser keeps them folded.

``ipywidgets.HTML`` does not sanitize, so the markup here is ours and every string in it
that came from the model, a tool, a file or an error goes through
``jupyter_agent.render.html`` (redacted, invisible characters marked, escaped). An approval
card shows the whole of what will run or be written, in a box that scrolls, and says how
much there is beside Allow: nothing is cut from what a person approves.
"""

from __future__ import annotations

import html
import json
import logging
from pathlib import Path
from typing import Any
from collections.abc import Callable

import ipywidgets as w

from ...loop.permission_result import code_ask_parts
from ...permissions import RULE_FAMILIES, Rule
from ...tools.shell_parse import prefix_is_judged
from ...view.labels import (
    STATE_COLORS, STATE_LINES, TODO_COLORS, compaction_text, end_explanation, end_reason_text, end_title, end_tone,
    plan_title, todo_text,
)
from ...view.style import (
    ADDED_BG, BORDER, BOX_BG, BRAND_LINE, ERROR, ICONS, MUTED, NOTICE_SVG, REMOVED_BG, STATE_SVG, STYLE, TEXT,
    TODO_SVG, TONES, WARN, WARN_LINE, readable,
)
from ...redact import redact
from ...render.html import html_text, inline_html
from ...render.invisible import INVISIBLE_WARNING, has_invisible, mark_invisible
from ...view.runmodel import RunModel
from ...view.items import BlockItem, CompactionItem, NoticeItem, PlanItem, PromptItem, ThinkingItem, ToolItem, relative
from ...view.transcript import (
    cache_line, context_line, redact_and_cut, format_usage, result_parts, stopped_calls,
    stopped_waiting, time_line, tool_label,
)

log = logging.getLogger(__name__)

#: Syntax colours from JupyterLab's own editor theme, made readable as text in light and
#: dark themes (its dark theme's comment colour is 2.0:1 on a code box).
_CODE_STYLE = "<style>" + "".join(
    f"{selectors}{{color:{readable(var)}{extra}}}" for selectors, var, extra in (
        (".ja-code .k,.ja-code .kn,.ja-code .kd,.ja-code .kc,.ja-code .ow", "--jp-mirror-editor-keyword-color",
         ";font-weight:bold"),
        (".ja-code .s,.ja-code .s1,.ja-code .s2,.ja-code .sd,.ja-code .sa,.ja-code .si",
         "--jp-mirror-editor-string-color", ""),
        (".ja-code .mi,.ja-code .mf,.ja-code .m", "--jp-mirror-editor-number-color", ""),
        (".ja-code .c,.ja-code .c1,.ja-code .cm", "--jp-mirror-editor-comment-color", ";font-style:italic"),
        (".ja-code .nf,.ja-code .nc", "--jp-mirror-editor-def-color", ""),
        (".ja-code .nb,.ja-code .bp", "--jp-mirror-editor-builtin-color", ""),
        (".ja-code .o", "--jp-mirror-editor-operator-color", ""))) + "</style>"
_BOX = (f"border:1px solid {BORDER};border-left:4px solid {{color}};"
        "border-radius:4px;padding:4px 8px;margin:3px 0;font-size:var(--jp-ui-font-size1,13px)")
_PRE = ("white-space:pre-wrap;word-break:break-word;max-height:24em;overflow:auto;margin:4px 0;"
        f"padding:4px;background:{BOX_BG};color:{TEXT};font-size:12px")


def esc(text: object) -> str:
    """Untrusted text as HTML text (see :func:`jupyter_agent.render.html.html_text`)."""
    return html_text(text)


def pre(text: str) -> str:
    """A tool's input or result in a box (redacted, then shortened in the middle)."""
    return f'<pre style="{_PRE}">{esc(redact_and_cut(text))}</pre>'


def live_pre(text: str) -> str:
    """Output still arriving, in a box that keeps its end in view (a reversed column
    starts scrolled to the bottom)."""
    return (f'<pre class="ja-live" style="{_PRE};display:flex;flex-direction:column-reverse">'
            f"<span>{esc(redact_and_cut(text))}</span></pre>")


def whole_pre(text: str) -> str:
    """All of ``text`` in a box that scrolls: what an approval shows is never cut."""
    return f'<pre style="{_PRE}">{esc(text)}</pre>'


def diff_html(diff: str) -> str:
    """A unified diff with added/removed lines coloured: all of it (the box scrolls)."""
    lines = []
    for line in redact(diff).splitlines():
        background = (ADDED_BG if line.startswith("+") and not line.startswith("+++") else
                      REMOVED_BG if line.startswith("-") and not line.startswith("---") else "")
        color = MUTED if line.startswith("@@") else ""
        # (a line is a block so its background spans the box; the sign says it without colour)
        style = f"background:{background}" if background else f"color:{color}" if color else ""
        lines.append(f'<span class="ja-diff-line" style="display:block;{style}">{esc(line) or " "}</span>')
    return f'<pre style="{_PRE}">' + "".join(lines) + "</pre>"


def code_html(source: str, language: str = "python") -> str:
    """Code as code, all of it: highlighted with Pygments (which ships with IPython, and
    escapes what it highlights), coloured by JupyterLab's editor theme variables, line
    breaks kept, invisible characters marked."""
    shown = mark_invisible(redact(source))
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import get_lexer_by_name

        body = highlight(shown, get_lexer_by_name(language), HtmlFormatter(nowrap=True))
        if body.endswith("\n") and not shown.endswith("\n"):  # (Pygments ends every text with one)
            body = body[:-1]
    except Exception:  # no such lexer, or Pygments missing: plain, escaped
        log.debug("code_html: no highlighting for %s; shown plain", language, exc_info=True)
        body = html.escape(shown)
    return (f'{_CODE_STYLE}<pre class="ja-code" style="{_PRE};'
            f'font-family:var(--jp-code-font-family,monospace)">{body}</pre>')


def tool_html(tool: ToolItem) -> str:
    """A tool card: name, summary, state (with the wait and the run time apart); input
    and result folded."""
    color = STATE_COLORS.get(tool.state, MUTED)
    head = (f'<b><span style="color:{color}">{STATE_SVG.get(tool.state, "")}</span> {inline_html(tool.name)}</b> '
            f"<code>{inline_html(tool.summary)}</code> "
            f'<span style="color:{color}">{esc(tool_label(tool))}</span>')
    parts = [head]
    if tool.state == "input" and tool.partial_json:
        parts.append(f'<span style="color:{MUTED}"> receiving input ({len(tool.partial_json)} chars)</span>')
    if tool.input:
        parts.append(f"<details><summary>input</summary>"
                     f"{pre(json.dumps(tool.input, ensure_ascii=False, indent=1))}</details>")
    if tool.decision:
        parts.append(f"<div><i>{esc(tool.decision)}</i></div>")
    if tool.progress and tool.state == "running":
        last = tool.progress[-1]
        if tool.name == "Bash" and isinstance(last, str):  # the command's output as it comes, its end in view
            parts.append(live_pre(last))
        else:
            parts.append(pre(last if isinstance(last, str) else redact_and_cut(json.dumps(last, default=str), 2000)))
    results = result_parts(tool.result)
    if results:
        body = []
        for kind, value in results:
            if kind == "image":
                body.append(f'<img src="{html.escape(value)}" style="max-width:100%">')
            else:
                body.append(pre(value))
        title = {"error": "error", "denied": "why it did not run", "stopped": "why it did not finish",
                 "not_run": "why it did not run",
                 "raised": f"the cell raised {tool.exception}"}.get(tool.state, "result")
        # errors are shown open: they are what a person needs to see; so is a command's output
        open_ = " open" if tool.state in ("error", "raised") or tool.name == "Bash" else ""
        parts.append(f"<details{open_}><summary>{title}</summary>{''.join(body)}</details>")
    return f'<div style="{_BOX.format(color=STATE_LINES.get(tool.state, BORDER))}">' + "".join(parts) + "</div>"


def thinking_html(item: ThinkingItem) -> str:
    if item.redacted:
        return f'<div style="color:{MUTED}">{ICONS["thinking"]} <i>thinking (redacted by the API)</i></div>'
    if not item.done:  # the body is drawn once, at the end, so an opened fold stays open
        return f'<div style="color:{MUTED}">{ICONS["thinking"]} <i>thinking… ({len(item.text):,} chars)</i></div>'
    return (f'<details style="color:{MUTED}"><summary>{ICONS["thinking"]} thinking ({len(item.text):,} chars)</summary>'
            f"{pre(item.text)}</details>")


def block_html(item: BlockItem) -> str:
    dump = json.dumps(item.block, ensure_ascii=False, indent=1, default=str)
    return (f'<div style="{_BOX.format(color=BORDER)}"><details><summary>{ICONS["block"]} '
            f"<code>{inline_html(item.block_type)}</code> block</summary>{pre(dump)}</details></div>")


def notice_html(item: NoticeItem) -> str:
    color = {"warning": WARN, "error": ERROR}.get(item.level, MUTED)
    icon = NOTICE_SVG.get(item.level, NOTICE_SVG["info"])
    return f'<div style="color:{color}">{icon} {esc(item.text)}</div>'


def compaction_html(item: CompactionItem) -> str:
    """A compaction as its own line; the summary (model text, escaped) in a <details>."""
    event = item.event
    if event is None:
        return ""
    line = f'<div class="ja-compaction" style="color:{MUTED}">{ICONS["compact"]} '
    line += esc(compaction_text(event))
    if event.summary:
        line += f"<details><summary>The summary that replaced the history</summary>{pre(event.summary)}</details>"
    return line + "</div>"


def plan_html(item: PlanItem) -> str:
    """The plan as a checklist: a sign per task (done, in progress, to do), the task in
    progress as it is being done, done tasks struck through. The tasks are the model's
    text: escaped."""
    rows = []
    for todo in item.todos:
        status = todo["status"]
        text = esc(todo_text(todo))
        if status == "completed":
            text = f'<s style="color:{MUTED}">{text}</s>'
        elif status == "in_progress":
            text = f"<b>{text}</b>"
        rows.append(f'<li class="ja-todo ja-todo-{status}" style="list-style:none;margin:1px 0">'
                    f'<span style="color:{TODO_COLORS[status]}">{TODO_SVG[status]}</span> {text}</li>')
    return (f'<div class="ja-plan" style="{_BOX.format(color=BRAND_LINE)};color:{TEXT}">'
            f"<b>{ICONS['plan']} {esc(plan_title(item))}</b>"
            f'<ul style="margin:2px 0;padding-left:2px">{"".join(rows)}</ul></div>')


def prompt_html(item: PromptItem) -> str:
    return (f'<div style="border-left:3px solid {BRAND_LINE};padding:2px 8px;'
            f'margin:2px 0;white-space:pre-wrap;color:{TEXT}">'
            f"{esc(item.text)}</div>")


def header_html(model: RunModel) -> str:
    """Model, mode, turn count, tokens, cost, elapsed time (the wait for clicks apart),
    status; the prompt-cache figures in the tooltip."""
    turns = model.turn_count
    waiting = sum(1 for t in model.tools() if t.state == "approval")
    status = f"waiting for your approval ({waiting})" if waiting and model.ended is None else model.status
    if model.lost:
        status = "interrupted: the kernel went away"
    elif model.ended is not None:
        status = ""  # the footer says how it ended
    return (f'<div style="font-size:12px;color:{MUTED}" title="{esc(cache_line(model))}">'
            f"{ICONS['agent']} <b>{esc(model.model or '?')}</b> · mode <code>{esc(model.permission_mode)}</code> · "
            f"{turns} turn{'s' if turns != 1 else ''} · {format_usage(model)} · {esc(context_line(model))}"
            f"{esc(time_line(model))}{' · <i>' + esc(status) + '</i>' if status else ''}</div>")


def footer_html(model: RunModel) -> str:
    """The end: a quiet line for a normal end; the reason and what to do for the others."""
    reason, _ = end_reason_text(model.terminal)
    explanation = end_explanation(model.terminal, stopped_calls=stopped_calls(model), lost=model.lost,
                                  waiting=stopped_waiting(model))
    title = "Interrupted" if model.lost else end_title(model.terminal)
    if not explanation:
        return (f'<div class="ja-end" style="color:{MUTED};font-size:12px;margin:2px 0">'
                f'<span style="color:{TONES["success"][0]}">{ICONS["done"]}</span> {esc(title)}'
                f" <code>{esc(reason)}</code> · {esc(time_line(model))}</div>")
    color = TONES[end_tone("kernel lost" if model.lost else reason)][1]
    return (f'<div class="ja-end" style="{_BOX.format(color=color)}"><b>{esc(title)}</b> '
            f'<code>{esc("kernel lost" if model.lost else reason)}</code> — {esc(explanation)}</div>')


def describe_rule(text: str, cwd: Path | str | None = None) -> str:
    """What a permission rule allows, in words: "Edit, Write and NotebookEdit of any file
    under this folder"."""
    try:
        rule = Rule.parse(text)
    except ValueError:
        return text
    if rule.mcp_server is not None:
        return f"every tool of the MCP server {rule.mcp_server}"
    if rule.tool.startswith("mcp__") and rule.pattern is None:
        server, _, tool = rule.tool[len("mcp__"):].partition("__")
        return f"every call of the tool {tool} of the MCP server {server}"
    family = RULE_FAMILIES.get(rule.tool, (rule.tool,))
    tools = family[0] if len(family) == 1 else ", ".join(family[:-1]) + " and " + family[-1]
    if rule.pattern is None:
        return f"every {tools} call"
    if rule.tool == "Bash":  # words, not a path
        if not rule.pattern.endswith(":*"):
            return f"exactly the command {rule.pattern}"
        if prefix_is_judged(rule.pattern):
            return (f"commands that start with {rule.pattern[:-2]} and only read (a file they write asks as an "
                    "edit does; running other code, or an option the rules do not know, still asks)")
        return f"commands that start with {rule.pattern[:-2]}"
    pattern = relative(rule.pattern, cwd)
    if pattern in ("./**", "**", "."):
        return f"{tools} of any file in this folder and below"
    return f"{tools} of {pattern}"


#: The tools whose approval is a question then code to run (their ``PermissionAsk`` message):
#: what the card calls that code.
CELL_CODE_ASKS = {"NotebookRun": "the cell's code", "NotebookRunCells": "every cell's code",
                  "KernelRun": "the code"}


def asker_html(asker: str) -> str:
    """Who asks, when it is an outside agent: its name as text (escaped, invisible characters
    marked), on a line of its own, never part of the question."""
    if not asker:
        return ""
    return (f'<div class="ja-asker" style="font-size:12px">Asked by <b>{esc(asker)}</b>, '
            "an outside agent (MCP).</div>")


def approval_extent(tool_name: str, input: dict[str, Any], message: str = "", diff: str | None = None) -> str:
    """What the Allow side says about how much the card shows: all of it, and how long."""
    if tool_name in CELL_CODE_ASKS:
        shown, what = code_ask_parts(tool_name, input, message)[1], CELL_CODE_ASKS[tool_name]
    elif tool_name == "Bash":
        shown, what = code_ask_parts(tool_name, input, message)[1], "the command"
    elif diff:
        shown, what = diff, "the change"
    else:
        shown, what = json.dumps(input, ensure_ascii=False, indent=1), "the input"
    lines = shown.count("\n") + 1 if shown else 0
    scroll = " (scroll the box to read it all)" if lines > 20 else ""
    return f"Shown above: all of {what}, {lines:,} line{'s' if lines != 1 else ''}{scroll}. Nothing is folded."


def approval_html(tool_name: str, input: dict[str, Any], message: str = "", diff: str | None = None,
                  cwd: Path | str | None = None, asker: str = "") -> str:
    """What an approval card shows, whole: the question; for ``NotebookRun`` the cell's
    code, highlighted, and its position; for ``Bash`` the whole command line and its
    description; for edits the diff; the raw input folded; a
    warning when any of it holds invisible or reordering characters. ``asker``: an outside
    agent's name, on a line of its own (:func:`asker_html`)."""
    raw_input = json.dumps(input, ensure_ascii=False, indent=1)
    raw = f"<details><summary>raw input</summary>{whole_pre(raw_input)}</details>"
    where = relative(str(input.get("file_path") or input.get("notebook_path") or ""), cwd)
    warning = ""
    if any(has_invisible(t) for t in (raw_input, message, diff or "", asker)):
        warning = (f'<div class="ja-invisible" style="color:{ERROR};font-weight:bold">{ICONS["warning"]} '
                   f"{esc(INVISIBLE_WARNING)}</div>")
    warning = asker_html(asker) + warning
    if tool_name in CELL_CODE_ASKS:
        # the tool's own question names the cell as the page numbers it (NotebookRun.check_permissions)
        head, source = code_ask_parts(tool_name, input, message)
        title = f"<b>{ICONS['ask']} {esc(relative(head, cwd))}?</b>"
        code = code_html(source) if source else whole_pre("(the cell's code could not be read)")
        return title + warning + code + raw
    if tool_name == "Bash":
        # the question (the description, why no rule covers it) then the whole command as it will run
        head, command = code_ask_parts(tool_name, input, message)
        title = f"<b>{ICONS['ask']} Allow <code>Bash</code> to run this command?</b>"
        return (title + warning + f'<div style="font-size:12px">{esc(relative(head, cwd))}</div>'
                + code_html(command or str(input.get("command", "")), "bash") + raw)
    title = f"<b>{ICONS['ask']} Allow <code>{inline_html(tool_name)}</code>"
    title += f" on <code>{inline_html(where)}</code>?</b>" if where else "?</b>"
    server, _, tool = tool_name[len("mcp__"):].partition("__") if tool_name.startswith("mcp__") else ("", "", "")
    if server and tool:  # an MCP server's tool: say which server, and which of its tools
        title = (f"<b>{ICONS['ask']} Allow the tool <code>{inline_html(tool)}</code> of the MCP server "
                 f"<code>{inline_html(server)}</code>?</b>")
    elif server:  # a server of .mcp.json that would start: the exact command is the input below
        title = f"<b>{ICONS['ask']} Start the MCP server <code>{inline_html(server)}</code>?</b>"
    body = [title, warning, f'<div style="font-size:12px">{esc(relative(message, cwd))}</div>']
    if diff:
        body.append(diff_html(relative(diff, cwd)))
        body.append(raw)
    else:
        body.append(whole_pre(raw_input))
    return "".join(body)


class ApprovalCard(w.VBox):
    """One "ask": the tool, its arguments, a diff for edits, Allow / Always allow / Deny,
    and a text box whose text goes to the model with Deny.

    ``on_decide(card, choice, feedback)`` is called from the widget callback's thread;
    the receiver must hop to the event loop thread-safely.
    """

    def __init__(self, tool_name: str, input: dict[str, Any], message: str = "",
                 diff: str | None = None, rules: tuple[str, ...] = (),
                 on_decide: Callable[[ApprovalCard, str, str], None] | None = None,
                 cwd: Path | str | None = None, asker: str = "") -> None:
        self.tool_name = tool_name
        self.rules = rules or (tool_name,)
        self._on_decide = on_decide
        self.info = w.HTML(STYLE + approval_html(tool_name, input, message, diff, cwd, asker))
        # continuous_update=False: the note reaches the kernel once, when the box loses focus
        # (a click on Deny blurs it first), so it goes before the click. Sent per keystroke,
        # ipywidgets holds the later values back while one is in flight, and the click (another
        # widget's message) could overtake them: a busy kernel got a cut note (docs/bridge.md).
        self.feedback = w.Text(placeholder="Feedback for the model (sent with Deny)", continuous_update=False,
                               layout=w.Layout(width="40%", min_width="180px"))
        # No icons on the buttons: a Font Awesome glyph would be part of the accessible
        # name ("\uf00c Allow"); each button's name is its word.
        self.allow = w.Button(description="Allow", button_style="success")
        rules_text = ", ".join(self.rules)
        self.always = w.Button(description="Always allow", button_style="info",
                               tooltip=f"Adds the rule {rules_text} for this session "
                               "(`%agent rules` lists and removes rules)",
                               layout=w.Layout(width="136px", min_width="136px"))
        # (the button's description is part of the public contract: the rule goes beside it)
        self.always_label = w.HTML(
            f'<span style="font-size:12px;color:{TEXT}">→ adds <code>{esc(rules_text)}</code>: '
            f"{esc('; '.join(describe_rule(r, cwd) for r in self.rules))}, for this session</span>")
        self.deny = w.Button(description="Deny", button_style="danger")
        for button in (self.allow, self.always, self.deny):
            button.add_class("ja-button")  # readable colours (view/style.py; the stylesheet is in `info`)
        self.extent = w.HTML(f'<span class="ja-extent" style="font-size:12px;color:{MUTED}">'
                             f"{esc(approval_extent(tool_name, input, message, diff))}</span>")
        self.allow.on_click(lambda _b: self._decide("allow"))
        self.always.on_click(lambda _b: self._decide("always"))
        self.deny.on_click(lambda _b: self._decide("deny"))
        super().__init__(
            [self.info, self.extent,
             w.HBox([self.allow, self.always, self.always_label], layout=w.Layout(align_items="center")),
             w.HBox([self.deny, self.feedback], layout=w.Layout(align_items="center"))],
            layout=w.Layout(border=f"2px solid {WARN_LINE}", padding="4px", margin="4px 0"),
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
        for child in (self.allow, self.always, self.always_label, self.deny, self.feedback, self.info, self.extent):
            child.close()
        super().close()
