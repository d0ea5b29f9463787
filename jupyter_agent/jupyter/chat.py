"""The chat panel: ``jupyter_agent.chat()`` shows a multi-turn chat in the notebook.

It is a view of the same conversation as the ``%%agent`` cells (one
:class:`~.session.AgentSession` per kernel), drawn with the same renderer: each running turn
is a :class:`~.runview.RunView`, with its approval cards and Stop. Turns started from
``%%agent`` cells appear here too (a widget can be shown in several places).

A widget needs a kernel to render: a saved notebook (reopened, on GitHub, nbviewer,
or executed headless) would show only "model not found". So the panel displays as two
outputs: a static Markdown transcript (``display_id``), then the live widget. As each
turn ends it leaves the widget and its Markdown joins the transcript via
``update_display``, the way an ``%%agent`` cell's widget is replaced by its transcript
(``handle.py``). Live, nothing is shown twice; saved, the transcript has every turn.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import ipywidgets as w

from .cards import esc
from .config import PERMISSION_MODES
from .redact import redact
from .session import AgentBusy, AgentSession, NoApiKey, get_session
from .transcript import transcript_markdown, transcript_plain

#: What stands for the widget where widgets cannot render (consoles, GitHub's text view).
WIDGET_PLAIN = ("jupyter-agent chat (the live panel needs a running kernel; the transcript "
                "above shows the turns it ran)")


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
            b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
            and not b.get("text", "").startswith("<system-reminder>")]  # context for the model, not said
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


def chat_transcript_bundle(entries: list[tuple[str, Any]]) -> dict[str, str]:
    """The static record of a panel: every ended turn (Markdown via ``transcript.py``, so
    redacted) and each "new conversation" note, plus a plain-text fallback.

    ``entries`` are ``("turn", (handle, here))`` (``here``: sent from this panel) and
    ``("note", text)``. Before the first turn ends the record is empty, so a fresh
    panel adds no visible output.
    """
    if not entries:
        return {"text/plain": ""}
    md = ["**🤖 jupyter-agent chat** · the turns this panel ran (saved with the notebook)"]
    plain = ["jupyter-agent chat"]
    turn = 0
    for kind, value in entries:
        if kind == "note":
            md.append(f"---\n\n*{value}*")
            plain.append(f"-- {value}")
            continue
        handle, here = value
        turn += 1
        where = "" if here else " (started outside this panel)"
        md.append(transcript_markdown(handle.model, title=f"Chat #{turn}{where}"))
        plain.append(f"> {handle.prompt}\n{transcript_plain(handle.model)}")
    return {"text/markdown": redact("\n\n".join(md)), "text/plain": redact("\n\n".join(plain))}


class ChatPanel(w.VBox):
    """Conversation view, input box, Send, Stop, permission-mode switch, New; displayed,
    also the static transcript of its ended turns (see module docstring)."""

    def __init__(self, session: AgentSession | None = None) -> None:
        self.session = session or get_session()
        self.loop = asyncio.get_event_loop()
        self.display_id = f"jupyter-agent-chat-{uuid.uuid4().hex}"
        #: what the static transcript records, in order: ("turn", (handle, here)) once a
        #: turn has ended, ("note", text) for a new conversation
        self.entries: list[tuple[str, Any]] = []
        self._displayed = False
        self._sending = False  # set while send() starts a run: its turn is "here"
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

    # -- sending -------------------------------------------------------------------------
    def send(self, prompt: str, *, batch: bool | None = None) -> Any:
        """Send ``prompt`` as the next turn, as the Send button does; returns the run
        (``await panel.send("...").wait()`` waits for its end). Raises what
        :meth:`AgentSession.start` raises. ``batch=None``: approval cards unless a batch
        runner (nbclient, papermill) executes the notebook."""
        self._sending = True
        try:
            return self.session.start(prompt, batch=batch)
        finally:
            self._sending = False

    # -- loop thread ---------------------------------------------------------------------
    def _send(self) -> None:
        prompt = self.input.value.strip()
        if not prompt:
            self._say("Write a message first.")
            return
        try:
            # a click means a person is here, whatever request the kernel saw last
            self.send(prompt, batch=False)
        except (AgentBusy, NoApiKey, ValueError) as exc:
            self._say(str(exc), error=True)
            return
        self.input.value = ""

    def _run_started(self, handle: Any) -> None:
        """A run of the conversation started (here or in a cell): show it live as a turn;
        when it ends, move it from the widget into the static transcript."""
        here = self._sending
        shown: tuple[w.Widget, ...] = ()
        if handle.view is not None:
            shown = (_bubble(handle.prompt), handle.view)
            self.turns.children = (*self.turns.children, *shown)
        self._busy(True)
        self._say("")

        def ended(h: Any) -> None:
            self.entries.append(("turn", (h, here)))
            # transcript first, then drop the live turn: no moment shows it twice or not at all
            self._update_transcript()
            if shown:
                self.turns.children = tuple(c for c in self.turns.children if c not in shown)
                shown[0].close()  # the bubble is ours; the view belongs to the run's handle
            self._busy(False)
            reason = h.terminal.reason.value if h.terminal is not None else "error"
            self._say(f"Turn ended: <code>{esc(reason)}</code> (the transcript above shows the turn).")

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
        if self.entries:
            self.entries.append(("note", "New conversation: the agent did not see the turns above."))
            self._update_transcript()
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

    # -- display -------------------------------------------------------------------------
    def transcript_bundle(self) -> dict[str, str]:
        """The static transcript as it stands (what the saved notebook keeps)."""
        return chat_transcript_bundle(self.entries)

    def _ipython_display_(self) -> None:
        """Two outputs: the static transcript (updated as turns end), then the widget."""
        from IPython.display import display

        self._displayed = True
        display(self.transcript_bundle(), raw=True, display_id=self.display_id)
        display({"application/vnd.jupyter.widget-view+json": {
            "version_major": 2, "version_minor": 0, "model_id": self.model_id},
            "text/plain": WIDGET_PLAIN}, raw=True)

    def _update_transcript(self) -> None:
        if not self._displayed:
            return  # shown inside another widget, or not at all: nothing to update
        from IPython.display import update_display

        try:
            update_display(self.transcript_bundle(), raw=True, display_id=self.display_id)
        except Exception:  # no frontend (plain Python): the record is on self.entries
            pass

    def close(self) -> None:
        if self._run_started in self.session.listeners:
            self.session.listeners.remove(self._run_started)
        super().close()


def chat(show: bool = True, session: AgentSession | None = None) -> ChatPanel | None:
    """Show the chat panel for this kernel's conversation (the one ``%%agent`` uses).

    ``chat()`` displays it; ``chat(show=False)`` returns the widget instead (displaying
    it, e.g. as a cell's last expression, also shows its static transcript; use
    ``panel.send("...")`` to send a message from code).
    """
    panel = ChatPanel(session)
    if not show:
        return panel
    from IPython.display import display

    display(panel)
    return None
