"""The chat panel: ``jupyter_agent.chat()`` shows a multi-turn chat in the notebook.

It is a view of the same conversation as the ``%%agent`` cells (one
:class:`~.session.AgentSession` per kernel), drawn with the same renderer: the agent's
side of each turn is a :class:`~.runview.RunView`, with its approval cards. It reads
like the chats people know (jupyter-ai, notebook-intelligence): one header, the turns
inside the panel with the user's messages told apart from the agent's, the input at the
bottom (Enter sends, Shift+Enter adds a line: the page's extension does it, ``chatKeys.ts``),
one Stop; colours come from JupyterLab's theme variables, so it reads in light and dark
themes. Turns started from ``%%agent`` cells appear here too.

A widget needs a kernel to render; a saved notebook must still show the chat. The
panel is followed by its fallback output (``fallback.py``): the whole chat as Markdown,
refreshed with ``update_display`` as each turn ends, hidden by its own stylesheet while
the panel is alive and shown instead of it once the kernel is gone (a restart, a
reopened notebook: no "model not found"). Headless runs (nbclient applies the update)
and viewers without widgets show it too. Re-running ``chat()`` keeps the history: the
turns of the conversation still in the kernel, or, after a restart, the chat this cell
had saved in the notebook file, *as text*: a notebook file may come from anyone, and
Markdown read from it and shown again by this kernel would be trusted by JupyterLab, so
the restored part is the saved plain-text record in a fenced block, never re-emitted as
Markdown. Everything of the model's in the record goes through ``render.markdown``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import ipywidgets as w
from traitlets import TraitError

from ..widgets.cards import esc
from ...loop.permission_result import PERMISSION_MODES
from ..widgets.fallback import Fallback, live_class
from ..bridge.comm_protocol import CHAT_CLASS, CHAT_INPUT_CLASS, CHAT_SEND_CLASS, CHAT_SEND_MARK
from ...redact import redact
from ...render.markdown import markdown_fence, markdown_literal
from ..kernel.agent_session import AgentBusy, AgentSession, NoApiKey, get_session
from ..kernel.session_services import SessionRun
from ...view.style import BORDER, BORDER_STRONG, BOX_BG, BRAND_LINE, ERROR, ICONS, MUTED, STYLE, TEXT
from ...view.transcript import transcript_markdown, transcript_plain
from ..kernel.trait_events import Change

from ..widgets.run_handle import AgentRun

log = logging.getLogger(__name__)

#: What the chat's record holds, in order: a turn once it has ended (its run, and whether it
#: was sent from this panel), or a note (a new conversation started).
Entry = tuple[Literal["turn"], tuple[AgentRun, bool]] | tuple[Literal["note"], str]

VIEW = "application/vnd.jupyter.widget-view+json"
#: The first line of a chat's Markdown record (how a re-created panel finds the old one).
CHAT_TITLE = "**jupyter-agent chat**"
#: ... as earlier versions wrote it (with an emoji): notebooks saved then still hold it.
_OLD_CHAT_TITLE = "**\N{ROBOT FACE} jupyter-agent chat**"

_USER_STYLE = ("margin:10px 0 4px 15%;padding:6px 10px;border-radius:8px;white-space:pre-wrap;"
               f"background:{BOX_BG};color:{TEXT};border:1px solid {BORDER};border-right:3px solid {BRAND_LINE}")
_AGENT_LABEL = ('<div style="margin:6px 0 0;font-size:12px;font-weight:bold;'
                f'color:{MUTED}">{ICONS["agent"]} agent</div>')


def user_bubble_html(text: str) -> str:
    """The user's message, right of the agent's, in the theme's colours."""
    return (f'<div class="ja-user" style="{_USER_STYLE}"><div style="font-size:11px;font-weight:bold;'
            f'color:{MUTED}">{ICONS["person"]} you</div>{esc(text)}</div>')


def chat_markdown(entries: list[Entry], earlier: str = "") -> str:
    """The whole chat as Markdown (redacted): ``earlier`` (a chat saved before a
    restart), then each turn (``("turn", (handle, here))``) and note (``("note", text)``)."""
    md = [f"{CHAT_TITLE} · the chat of this notebook (saved with it)"]
    if earlier:
        md.append(earlier)
    turn = 0
    for entry in entries:
        if entry[0] == "note":
            md.append(f"---\n\n*{entry[1]}*")
            continue
        handle, here = entry[1]
        turn += 1
        where = "" if here else " (from a %%agent cell)"
        md.append(f"---\n\n**you:** {markdown_literal(handle.prompt)}\n\n"
                  + transcript_markdown(handle.model, title=f"agent · turn {turn}{where}", prompt=False))
    return redact("\n\n".join(md))


#: The first line of a chat's plain-text record.
PLAIN_TITLE = "jupyter-agent chat"


def chat_plain(entries: list[Entry], earlier: str = "") -> str:
    """The whole chat as plain text (redacted): ``earlier`` (the plain record of a chat
    saved before a restart), then each turn and note."""
    plain = [PLAIN_TITLE] + ([earlier] if earlier else [])
    for entry in entries:
        if entry[0] == "note":
            plain.append(f"-- {entry[1]}")
        else:
            plain.append(f"> {entry[1][0].prompt}\n{transcript_plain(entry[1][0].model)}")
    return redact("\n\n".join(plain))


def saved_chat(notebook_path: str | None, cell_id: str | None) -> str:
    """The chat this cell had saved in the notebook file (before a kernel restart), as the
    plain text of its record without the title line; "" if there is none.

    Plain text on purpose: the file may come from anyone, so what it holds is data to be
    shown as text (:func:`earlier_markdown`), never Markdown to render again."""
    if not notebook_path or not cell_id:
        return ""
    try:
        import nbformat

        nb = nbformat.read(Path(notebook_path), as_version=4)
    except Exception:  # unreadable, not saved yet: nothing to restore
        log.debug("no saved chat in %s", notebook_path, exc_info=True)
        return ""
    for cell in nb.cells:
        if cell.get("id") != cell_id:
            continue
        for output in cell.get("outputs") or []:
            data = output.get("data") or {}
            md, plain = data.get("text/markdown"), data.get("text/plain")
            md = "".join(md) if isinstance(md, list) else md
            plain = "".join(plain) if isinstance(plain, list) else plain
            if isinstance(md, str) and (CHAT_TITLE in md or _OLD_CHAT_TITLE in md) and isinstance(plain, str):
                title, _, rest = plain.partition("\n")
                return rest.strip("\n") if title.strip() == PLAIN_TITLE else ""
    return ""


def earlier_markdown(plain: str) -> str:
    """A restored chat (:func:`saved_chat`) for the Markdown record: a note, then the
    text in a fenced block, where nothing is markup."""
    return ("*Earlier in this chat (saved before the kernel restarted, restored from the notebook file "
            "as text; the agent does not remember it):*\n\n" + markdown_fence(plain))


class ChatPanel(w.VBox):
    """Header (model, mode, New), the turns, the input at the bottom with Send and Stop
    (see module docstring)."""

    def __init__(self, session: AgentSession | None = None) -> None:
        self.session = session or get_session()
        self.loop = asyncio.get_event_loop()
        self.display_id = f"jupyter-agent-chat-{uuid.uuid4().hex}"
        #: what the Markdown record holds, in order: ("turn", (handle, here)) once a turn
        #: has ended, ("note", text) for a new conversation
        self.entries: list[Entry] = []
        self._displayed = False
        self._sending = False  # set while send() starts a run: its turn is "here"
        self._live: list[w.Widget] = []
        self.fallback = Fallback(self.transcript_markdown, lambda: chat_plain(self.entries, self._earlier_plain))
        conv = self.session.conversation
        self.mode = w.Dropdown(options=PERMISSION_MODES, value=conv.permission_mode,
                               description="Mode", layout=w.Layout(width="230px"))
        self.mode.observe(self._mode_changed, names="value")
        self.new_button = w.Button(description="New conversation",
                                   layout=w.Layout(width="auto"))
        self.title = w.HTML(f'{STYLE}<b style="color:{TEXT}">{ICONS["agent"]} jupyter-agent chat</b> '
                            f'<code>{esc(conv.model_name)}</code>')
        self.earlier = w.Output(layout=w.Layout(display="none"))
        self._earlier_md = ""
        self._earlier_plain = ""
        self.turns = w.VBox([])
        # In JupyterLab the page turns Enter in this input into a click on Send (the classes
        # are how it finds them: protocol.CHAT_*; ipywidgets has no key events to listen to).
        self.input = w.Textarea(placeholder="Ask the agent… (Enter sends, Shift+Enter for a new line)",
                                layout=w.Layout(width="auto", height="64px", flex="1 1 auto"),
                                _dom_classes=(CHAT_INPUT_CLASS,))
        self.send_button = w.Button(description="Send", button_style="primary",
                                    layout=w.Layout(width="90px"), _dom_classes=(CHAT_SEND_CLASS,))
        self.stop_button = w.Button(description="Stop", button_style="warning",
                                    layout=w.Layout(width="90px", display="none"))
        self.status = w.HTML("")
        for button in (self.send_button, self.stop_button):
            button.add_class("ja-button")  # readable colours (view/style.py; the stylesheet is in the title)
        # the page's Enter and Send end the input's value with the send mark (comm_protocol.py)
        self.input.observe(self._input_changed, names="value")
        for button, handler in ((self.send_button, self._send_clicked), (self.stop_button, self._stop),
                                (self.new_button, self._new)):
            button.on_click(functools.partial(self._clicked, handler))
        header = w.HBox([self.title, self.mode, self.new_button],
                        layout=w.Layout(justify_content="space-between", align_items="center",
                                        border_bottom=f"1px solid {BORDER}",
                                        padding="0 0 4px 0"))
        composer = w.HBox([self.input, w.VBox([self.send_button, self.stop_button])],
                          layout=w.Layout(align_items="flex-start", margin="8px 0 0 0"))
        super().__init__([header, self.earlier, self.turns, composer, self.status],
                         layout=w.Layout(border=f"1px solid {BORDER_STRONG}", padding="8px"),
                         _dom_classes=(CHAT_CLASS, live_class(self.fallback.key)))
        self._restore_history()
        self.session.listeners.append(self._run_started)
        self.session.shutdown_listeners.append(self._kernel_going)
        self.session.install_shutdown_hook()
        if self.session.active is not None and self.session.active.view is not None:
            self._run_started(self.session.active)

    # -- history -------------------------------------------------------------------------
    def _restore_history(self) -> None:
        """Keep what came before: this conversation's ended turns (the kernel still has
        them), else the chat this cell saved in the notebook before a restart."""
        conv = self.session.conversation
        for handle in self.session.runs:
            if isinstance(handle, AgentRun) and handle.done and handle.conversation is conv:
                self._add_turn(handle, here=True, live=False)
                self.entries.append(("turn", (handle, True)))
        if self.entries:
            return
        cell_id = (self.session.parent_request().get("metadata") or {}).get("cellId")
        earlier = saved_chat(self.session.notebook_path(), cell_id)
        if earlier:
            self._earlier_plain = earlier
            self._earlier_md = earlier_markdown(earlier)
            self.earlier.outputs = ({"output_type": "display_data", "metadata": {},
                                     "data": {"text/markdown": self._earlier_md}},)
            self.earlier.layout.display = None

    # -- sending -------------------------------------------------------------------------
    # (this hides ipywidgets' ``Widget.send``, a custom message to the front end, which only its
    # ``focus()`` and ``blur()`` call: ``panel.send(prompt)`` is the chat's, docs/notebook.md)
    def send(self, prompt: str, *, batch: bool | None = None) -> AgentRun:  # type: ignore[override]
        """Send ``prompt`` as the next turn, as the Send button does; returns the run
        (``await panel.send("...").wait()`` waits for its end). Raises what
        :meth:`AgentSession.start` raises. ``batch=None``: approval cards unless a batch
        runner (nbclient, papermill) executes the notebook."""
        self._sending = True
        try:
            run: AgentRun = self.session.start(prompt, batch=batch)
            return run
        finally:
            self._sending = False

    def _clicked(self, handler: Callable[[], None], _button: w.Button) -> None:
        # clicks may arrive on another thread: do the work on the event loop
        self.loop.call_soon_threadsafe(handler)

    # -- loop thread ---------------------------------------------------------------------
    def _input_changed(self, change: Change[str]) -> None:
        value = change["new"]
        if isinstance(value, str) and value.endswith(CHAT_SEND_MARK):
            # (may arrive on another thread: the work is done on the event loop)
            self.loop.call_soon_threadsafe(self._send_text, value.removesuffix(CHAT_SEND_MARK))

    def _send_clicked(self) -> None:
        """A click on Send that reached the kernel as a click (a front end without this
        project's page extension): the input's value as the kernel has it."""
        self._send_text(self.input.value.removesuffix(CHAT_SEND_MARK))

    def _send_text(self, text: str) -> None:
        prompt = text.strip()
        if not prompt:
            self.input.value = text
            self._say("Write a message first.")
            return
        try:
            # a click or an Enter means a person is here, whatever request the kernel saw last
            self.send(prompt, batch=False)
        except (AgentBusy, NoApiKey, ValueError) as exc:
            self.input.value = text  # what they wrote stays, without the mark
            self._say(str(exc), error=True)
            return
        self.input.value = ""

    def _add_turn(self, handle: AgentRun, *, here: bool, live: bool) -> None:
        """The user's bubble and the agent's view of ``handle``, inside the panel."""
        shown: list[w.Widget] = [w.HTML(user_bubble_html(handle.prompt)), w.HTML(_AGENT_LABEL)]
        if handle.view is not None and handle.view.comm is not None:
            if here:  # the panel's Stop is the one Stop of a turn sent from here
                handle.view.stop_button.layout.display = "none"
            shown.append(handle.view)
        else:  # ran headless, or its view is gone: the static record
            shown.append(w.Output(outputs=({"output_type": "display_data", "metadata": {}, "data": {
                "text/markdown": transcript_markdown(handle.model, header=False)}},)))
        self.turns.children = (*self.turns.children, *shown)
        if live:
            self._live = shown

    def _run_started(self, handle: SessionRun) -> None:
        """A run of the conversation started (here or in a cell): show it as a turn. An outside
        agent's calls are no turn of this chat (the side panel shows them)."""
        if not isinstance(handle, AgentRun):
            return
        here = self._sending
        self._add_turn(handle, here=here, live=True)
        self._busy(True, own_stop=here and handle.view is not None)
        self._say("")

        def ended(h: AgentRun) -> None:
            self.entries.append(("turn", (h, here)))
            self._busy(False)
            if h.terminal is None or h.terminal.reason.value != "completed":
                reason = h.terminal.reason.value if h.terminal is not None else "interrupted"
                self._say(f"The turn ended: <code>{esc(reason)}</code> (see its end above).")
            self._update_record()

        handle.add_done_callback(ended)

    def _stop(self) -> None:
        self.session.stop()

    def _new(self) -> None:
        try:
            self.session.new_conversation()
        except AgentBusy as exc:
            self._say(str(exc), error=True)
            return
        note = "New conversation: the agent does not see the turns above."
        self.turns.children = (*self.turns.children, w.HTML(
            f'<div style="margin:8px 0;text-align:center;font-size:12px;color:{MUTED};'
            f'border-top:1px dashed {BORDER}">{esc(note)}</div>'))
        if self.entries or self._earlier_md:
            self.entries.append(("note", note))
            self._update_record()
        self._say("")

    def _mode_changed(self, change: Change[str]) -> None:
        try:
            self.session.set_defaults(permission_mode=change["new"])
        except TraitError as exc:  # the administrator's policy refused it: the menu goes back
            self.mode.value = change["old"]
            self._say(str(exc), error=True)

    def _busy(self, busy: bool, own_stop: bool = False) -> None:
        with self.send_button.hold_sync():
            self.send_button.disabled = busy
        self.stop_button.disabled = not busy
        self.stop_button.layout.display = None if busy and own_stop else "none"

    def _say(self, text: str, error: bool = False) -> None:
        color = ERROR if error else MUTED
        self.status.value = (f'<span style="color:{color};white-space:pre-wrap;font-size:12px">'
                             f"{text if not error else esc(text)}</span>") if text else ""

    # -- display -------------------------------------------------------------------------
    def transcript_markdown(self) -> str:
        """The whole chat as Markdown (what a saved notebook shows without the kernel)."""
        return chat_markdown(self.entries, self._earlier_md)

    def _ipython_display_(self) -> None:
        """Two outputs: the widget, then its fallback (the chat as Markdown, seen only
        without the kernel)."""
        from IPython.display import display

        self._displayed = True
        display({VIEW: {"version_major": 2, "version_minor": 0, "model_id": self.model_id},
                 "text/plain": "jupyter-agent chat (live; the chat's transcript follows)"},
                raw=True, display_id=self.display_id)
        self.fallback.show()

    def _update_record(self) -> None:
        """The fallback follows the chat (a save keeps every ended turn)."""
        self.fallback.update()

    def _kernel_going(self, why: str) -> None:
        """The kernel shuts down (e.g. nbclient's end): the fallback has every turn."""
        self._update_record()

    def close(self) -> None:
        if self._run_started in self.session.listeners:
            self.session.listeners.remove(self._run_started)
        if self._kernel_going in self.session.shutdown_listeners:
            self.session.shutdown_listeners.remove(self._kernel_going)
        super().close()


def chat(show: bool = True, session: AgentSession | None = None) -> ChatPanel | None:
    """Show the chat panel for this kernel's conversation (the one ``%%agent`` uses).

    ``chat()`` displays it; ``chat(show=False)`` returns the widget instead (displaying
    it, e.g. as a cell's last expression, shows it with its Markdown record; use
    ``panel.send("...")`` to send a message from code).
    """
    panel = ChatPanel(session)
    if not show:
        return panel
    from IPython.display import display

    display(panel)
    return None
