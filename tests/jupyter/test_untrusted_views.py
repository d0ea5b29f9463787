"""Markup in what the model, a tool or an error says stays text on every surface of a run
drawn in process: the static transcript, the live widgets (HTML and Markdown), the side
panel's payload; and a secret the model was quoting when Stop came leaves no prefix."""

from __future__ import annotations

import json
from html.parser import HTMLParser

from jupyter_agent.jupyter.panel.panel_json import item_json
from jupyter_agent.loop.events import ModelRetry, ToolResult
from jupyter_agent.loop.state import Terminal, TerminalReason
from jupyter_agent.view.runmodel import RunModel
from jupyter_agent.view.items import TextItem
from jupyter_agent.view.style import ICONS
from jupyter_agent.view.transcript import transcript_markdown, transcript_plain
from tests.test_render_untrusted import _markdown_it, live_markup

from .helpers import record_widget_messages, response_events

PAYLOAD = ('<img src=x onerror="window.pwned=1"><svg onload=alert(1)><script>alert(1)</script>'
           "<style>.jp-Notebook{display:none}</style><details open ontoggle=alert(1)>"
           "[j](javascript:alert(1)) ![i](https://evil.example/p.png)")
#: Our own markup in a transcript (around the escaped pieces).
OURS = {"details", "summary", "b", "abbr", "img", "span"}


def payload_run() -> RunModel:
    """A run whose every untrusted string carries the payload: thinking, answer, tool
    name and input, result, an unknown block, a retry's error, the end's error message."""
    model = RunModel(prompt=f"prompt {PAYLOAD}", model=f"claude {PAYLOAD}", permission_mode="default")
    for event in response_events([
        {"type": "thinking", "thinking": f"thinking {PAYLOAD}"},
        {"type": "text", "text": f"answer {PAYLOAD}\n\n```\nunclosed {PAYLOAD}"},
        {"type": "tool_use", "id": "t1", "name": f"Write{PAYLOAD}",
         "input": {"file_path": f"{PAYLOAD}.txt", "content": PAYLOAD}},
        {"type": f"srv{PAYLOAD}", "data": PAYLOAD},
    ]):
        model.handle(event)
    model.handle(ModelRetry(1, 3, 0.5, f"overloaded {PAYLOAD}"))
    model.handle(ToolResult("t1", f"Write{PAYLOAD}", {"type": "tool_result", "tool_use_id": "t1",
                                                     "content": f"result {PAYLOAD}"}, 0.1))
    model.notice(f"notice {PAYLOAD}", level="error")
    model.finish(Terminal(TerminalReason.MODEL_ERROR, 1, f"API error {PAYLOAD}", "api_error"))
    return model


class _Page(HTMLParser):
    """The elements of an HTML string, and the text of its ``<style>`` elements."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.styles: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"

    def handle_data(self, data):
        if self._in_style:
            self.styles.append(data)
            self._in_style = False


def payload_in_html(value: str) -> list[str]:
    """What of the payload is live in a widget's HTML (which no sanitizer sees). Our own
    icons (constant SVG) are ours; any other ``<svg>`` is the payload's."""
    for icon in ICONS.values():
        value = value.replace(icon, "")
    page = _Page()
    page.feed(value)
    found = [f"<{t}>" for t, _ in page.tags if t in ("script", "svg", "iframe")]
    found += [f"{t} {a}" for t, attrs in page.tags for a in attrs if a.startswith("on")]
    found += [f"img {a['src']}" for t, a in page.tags
              if t == "img" and not (a.get("src") or "").startswith("data:image/")]
    found += [s for s in page.styles if "jp-Notebook" in s]
    found += [f"open {t}" for t, a in page.tags if t == "details" and "open" in a and "ontoggle" in a]
    return found


def payload_in_markdown(markdown: str, ours: set[str] = frozenset()) -> list[str]:
    """What of the payload is live once ``markdown`` is rendered with HTML enabled
    (besides our own markup: ``OURS`` and ``ours``)."""
    rendered = _markdown_it(markdown)
    problems = [p for p in live_markup(rendered) if p.strip("<>") not in OURS | ours]
    return problems + payload_in_html(rendered)


def test_the_transcript_keeps_the_payload_inert():
    model = payload_run()
    md = transcript_markdown(model)
    assert "window.pwned=1" in md  # shown, as text
    assert payload_in_markdown(md) == []
    # the answer's unclosed fence is closed: our own markup after it is still markup
    assert "<summary>" in _markdown_it(md).split("unclosed")[-1]


async def test_the_live_widgets_keep_the_payload_inert(monkeypatch):
    log = record_widget_messages(monkeypatch)
    from jupyter_agent.jupyter.widgets.runview import RunView

    model = RunModel(prompt="p", model="m")
    view = RunView(model, frame_interval=0.01, show_prompt=True)
    for event in payload_run_events():
        if callable(event):
            event(model)
        else:
            model.handle(event)
    view.finish()
    values = [c.value for c in (view.header, view.footer, *view.body.children) if hasattr(c, "value")]
    outputs = [o["data"]["text/markdown"] for c in view.body.children for o in getattr(c, "outputs", ())]
    assert len(values) >= 5 and outputs
    for value in values:
        assert payload_in_html(value) == [], value
    for markdown in outputs:
        assert "window.pwned=1" in markdown and payload_in_markdown(markdown) == [], markdown
    assert log  # (the widgets did send their state)


def payload_run_events() -> list:
    """The events of :func:`payload_run`, to feed a live view (callables act on the model)."""
    events = list(response_events([
        {"type": "thinking", "thinking": f"thinking {PAYLOAD}"},
        {"type": "text", "text": f"answer {PAYLOAD}"},
        {"type": "tool_use", "id": "t1", "name": f"Write{PAYLOAD}",
         "input": {"file_path": f"{PAYLOAD}.txt", "content": PAYLOAD}},
        {"type": f"srv{PAYLOAD}", "data": PAYLOAD},
    ]))
    events += [ModelRetry(1, 3, 0.5, f"overloaded {PAYLOAD}"),
               ToolResult("t1", f"Write{PAYLOAD}", {"type": "tool_result", "tool_use_id": "t1",
                                                    "content": f"result {PAYLOAD}"}, 0.1),
               lambda m: m.notice(f"notice {PAYLOAD}", level="error"),
               Terminal(TerminalReason.MODEL_ERROR, 1, f"API error {PAYLOAD}", "api_error")]
    return events


def test_the_panel_gets_the_answer_as_inert_markdown():
    model = payload_run()
    texts = [item_json(i, "k")["text"] for i in model.items if isinstance(i, TextItem)]
    assert texts and all(payload_in_markdown(t) == [] for t in texts)


SECRET = "ghp_R3dT3amS3cr3tV4lu3xyzABC123"


async def test_stop_while_the_model_quotes_a_token_leaves_no_prefix(monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", SECRET)
    log = record_widget_messages(monkeypatch)
    from jupyter_agent.jupyter.widgets.runview import RunView

    model = RunModel(prompt="show me the token", model="m")
    view = RunView(model, frame_interval=0.001)
    events = response_events([{"type": "text", "text": f"Here it is: {SECRET} and that is all."}], chunk=3)
    sent = []
    for event in events:
        model.handle(event)
        view.frames.flush()
        sent.append(json.dumps(item_json(model.items[-1], "k")))
        if SECRET[:14] in model.items[-1].text:
            break  # Stop: the stream ends in the middle of the token
    model.finish(Terminal(TerminalReason.ABORTED_STREAMING, 1, "Stopped"))
    view.finish()
    everything = [json.dumps(log), transcript_markdown(model), transcript_plain(model), *sent]
    assert "Here it is:" in transcript_markdown(model)
    for shown in everything:
        assert SECRET[:6] not in shown
