"""The chat panel: ``jupyter_agent.chat()`` shows a multi-turn chat in the notebook.

It is a view of the same conversation as the ``%%agent`` cells (one
:class:`~.session.AgentSession` per kernel), drawn with the same renderer: each turn
is a :class:`~.runview.RunView`, with its approval cards and Stop. Turns started from
``%%agent`` cells appear here too (a widget can be shown in several places).
"""

from __future__ import annotations

import asyncio
from typing import Any

import ipywidgets as w

from .cards import esc
from .config import PERMISSION_MODES
from .session import AgentBusy, AgentSession, NoApiKey, get_session


def _bubble(text: str) -> w.HTML:
    return w.HTML(
        '<div style="margin:6px 0 2px auto;max-width:85%;padding:6px 10px;border-radius:10px;'
        'background:var(--jp-brand-color3,#e3f0fd);white-space:pre-wrap;width:fit-content">'
        f"🧑 {esc(text)}</div>")


def _history_html(messages: list[dict[str, Any]]) -> str:
    """Earlier turns of the conversation, compactly (they ran before this panel existed)."""
    rows = []
    for message in messages:
        content = message.get("content")
        texts = [content] if isinstance(content, str) else [
            b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
        tools = [] if isinstance(content, str) else [
            b.get("name", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "tool_use"]
        text = " ".join(t for t in texts if t).strip()
        who = "🧑" if message.get("role") == "user" else "🤖"
        if text:
            rows.append(f"<div>{who} {esc(text[:600])}{'…' if len(text) > 600 else ''}</div>")
        if tools:
            rows.append(f"<div style='color:#888'>🔧 {esc(', '.join(tools))}</div>")
    if not rows:
        return ""
    return ("<details><summary>Earlier in this conversation "
            f"({len(messages)} messages)</summary>{''.join(rows)}</details>")


class ChatPanel(w.VBox):
    """Conversation view, input box, Send, Stop, permission-mode switch, New."""

    def __init__(self, session: AgentSession | None = None) -> None:
        self.session = session or get_session()
        self.loop = asyncio.get_event_loop()
        conv = self.session.conversation
        self.mode = w.Dropdown(options=PERMISSION_MODES, value=conv.permission_mode,
                               description="Mode", layout=w.Layout(width="240px"))
        self.mode.observe(self._mode_changed, names="value")
        self.new_button = w.Button(description="New conversation", icon="plus",
                                   layout=w.Layout(width="auto"))
        self.title = w.HTML(f"<b>🤖 jupyter-agent chat</b> · <code>{esc(conv.model_name)}</code>")
        self.turns = w.VBox([], layout=w.Layout(max_height="600px", overflow_y="auto"))
        self.history = w.HTML(_history_html(conv.messages))
        self.input = w.Textarea(placeholder="Ask the agent… (Send runs it on this notebook)",
                                layout=w.Layout(width="100%", height="70px"))
        self.send_button = w.Button(description="Send", button_style="primary", icon="paper-plane")
        self.stop_button = w.Button(description="Stop", button_style="warning", icon="stop",
                                    disabled=True)
        self.status = w.HTML("")
        for button, handler in ((self.send_button, self._send), (self.stop_button, self._stop),
                                (self.new_button, self._new)):
            # clicks may arrive on another thread: do the work on the event loop
            button.on_click(lambda _b, h=handler: self.loop.call_soon_threadsafe(h))
        super().__init__([
            w.HBox([self.title, self.mode, self.new_button],
                   layout=w.Layout(justify_content="space-between", align_items="center")),
            self.history, self.turns, self.input,
            w.HBox([self.send_button, self.stop_button, self.status], layout=w.Layout(align_items="center")),
        ], layout=w.Layout(border="1px solid var(--jp-border-color2,#ddd)", padding="6px"))
        self.session.listeners.append(self._run_started)
        if self.session.active is not None and self.session.active.view is not None:
            self._run_started(self.session.active)

    # -- loop thread ---------------------------------------------------------------------
    def _send(self) -> None:
        prompt = self.input.value.strip()
        if not prompt:
            self._say("Write a message first.")
            return
        try:
            self.session.start(prompt, batch=False)
        except (AgentBusy, NoApiKey, ValueError) as exc:
            self._say(str(exc), error=True)
            return
        self.input.value = ""

    def _run_started(self, handle: Any) -> None:
        """A run of the conversation started (here or in a cell): show it as a turn."""
        if handle.view is None:
            return
        self.turns.children = (*self.turns.children, _bubble(handle.prompt), handle.view)
        self._busy(True)
        self._say("")

        def ended(h: Any) -> None:
            self._busy(False)
            reason = h.terminal.reason.value if h.terminal is not None else "error"
            self._say(f"Turn ended: <code>{esc(reason)}</code> (see the end of the turn for what it means).")

        handle.add_done_callback(ended)

    def _stop(self) -> None:
        self.session.stop()

    def _new(self) -> None:
        try:
            self.session.new_conversation()
        except AgentBusy as exc:
            self._say(str(exc), error=True)
            return
        for child in self.turns.children:
            if isinstance(child, w.HTML):
                child.close()
        self.turns.children = ()
        self.history.value = ""
        self._say("New conversation: the agent will not see the earlier turns.")

    def _mode_changed(self, change: dict[str, Any]) -> None:
        self.session.set_defaults(permission_mode=change["new"])

    def _busy(self, busy: bool) -> None:
        with self.send_button.hold_sync():
            self.send_button.disabled = busy
        self.stop_button.disabled = not busy

    def _say(self, text: str, error: bool = False) -> None:
        color = "#c5221f" if error else "#666"
        self.status.value = f'<span style="color:{color};white-space:pre-wrap">{text if not error else esc(text)}</span>'

    def close(self) -> None:
        if self._run_started in self.session.listeners:
            self.session.listeners.remove(self._run_started)
        super().close()


def chat(show: bool = True, session: AgentSession | None = None) -> ChatPanel | None:
    """Show the chat panel for this kernel's conversation (the one ``%%agent`` uses).

    ``chat()`` displays it; ``chat(show=False)`` returns the widget instead.
    """
    panel = ChatPanel(session)
    if not show:
        return panel
    from IPython.display import display

    display(panel)
    return None
