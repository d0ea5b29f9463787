"""The kernel side of the JupyterLab side panel (``labextension/src/panel.ts``): its comm.

The panel opens a comm to :data:`TARGET`, registered at ``%load_ext`` (a kernel without
the extension closes the comm, and the panel shows a one-line hint). Over it the panel
drives this kernel's :class:`~.session.AgentSession`: the same conversation as
``%%agent`` cells and ``chat()``.

The protocol's names are defined in ``bridge/comm_protocol.py`` (``PANEL_*``) and, for the page, in
``labextension/src/protocol.ts``. The panel opens the comm with ``{"v", "op": "hello"}``;
a panel of another version gets an ``error`` that says to reload or reinstall, and nothing
else.

Page -> kernel, ``{"v", "op": ...}``: ``hello`` (send the whole state), ``send``
(``prompt``), ``stop``, ``new`` (a new conversation), ``mode`` (``mode``), ``approve``
(``request``: the approval's id, which the page always sends; ``tool_use_id`` of its call,
which decides when given; ``choice``: allow | always | deny; ``feedback``), ``fix`` /
``explain`` (an error output's ``cell``, ``error`` and the cells ``above``:
``cell_help.py``), ``resume`` (``resume.py``). ``send`` may carry ``context``: the cell
the user is on.
Each pending approval the kernel sends carries both ``id`` and ``tool_use_id``; an outside
agent's also ``asker`` (the client's name) and ``page`` (the page whose notebook it is about:
the page shows its card under that notebook too).

Kernel -> page, ``{"v", "type": ...}``: ``state`` (everything: the session's header,
the conversation's runs with all their items, the pending approvals), ``update`` (what
changed since the last message: the header, changed items and the new order of a run's
items, the approvals), ``error`` (``text``: a refused request, said in the panel), ``note``
(``text``: what a request did, such as what a Resume brought back). The header's
``resumable`` says whether a saved conversation waits for this notebook (its Resume button).

What the ``state`` and ``update`` messages hold, one ``update`` per frame, is
``panel_runs.py``'s; the shapes of a run's items and approvals, with every string redacted
and its invisible characters marked, are ``panel_json.py``'s. Comm messages may arrive on
another thread (a JupyterLab subshell): each hops to the kernel's event loop first.

Loading stays cheap: the loop, the run model and ipywidgets load when a panel connects.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ..bridge.comm_hubs import close_comms, register_hub, unregister_hub
from .panel_runs import PanelRuns
from ..bridge.comm_protocol import PANEL_OPS, PANEL_TARGET, PANEL_VERSION, version_mismatch
from ...redact import redact
from ..bridge.kernel_types import Comm, Shell

if TYPE_CHECKING:
    from ..kernel.agent_session import AgentSession

log = logging.getLogger(__name__)

TARGET = PANEL_TARGET
PROTOCOL_VERSION = PANEL_VERSION


class PanelHub:
    """Every side panel connected to one kernel: their comms, and what they ask for."""

    def __init__(self, session: AgentSession, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.session = session
        self.loop = loop or asyncio.get_event_loop()
        self.comms: list[Comm] = []
        self.shown = PanelRuns(session, self.loop, broadcast=self._broadcast, connected=lambda: bool(self.comms))

    # -- comms (any thread) -------------------------------------------------------------
    def open(self, comm: Comm, open_msg: dict[str, Any]) -> None:
        """The comm target's handler: a panel connected (its hello is the open's data)."""
        hello = (open_msg.get("content") or {}).get("data")
        version = hello.get("v") if isinstance(hello, dict) else None
        comm.on_msg(lambda msg: self._soon(self._on_msg, comm, msg))
        comm.on_close(lambda _msg: self._soon(self._closed, comm))
        if version != PROTOCOL_VERSION:
            # A panel of another version would misread every message: tell it, send nothing else.
            self._soon(self._error, comm, _mismatch(version))
            return
        self._soon(self._opened, comm)

    def _soon(self, fn: Any, *args: Any) -> None:
        try:
            self.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the kernel's loop is closed: it is going down
            log.debug("the kernel's loop is closed; a panel message is dropped")

    # -- the loop thread ----------------------------------------------------------------
    def _opened(self, comm: Comm) -> None:
        self.comms.append(comm)
        self._send(comm, self.shown.state())

    def _closed(self, comm: Comm) -> None:
        if comm in self.comms:
            self.comms.remove(comm)

    def _send(self, comm: Comm, data: dict[str, Any]) -> None:
        try:
            comm.send({"v": PROTOCOL_VERSION, **data})
        except Exception:  # a comm closed under us: the panel reconnects when it can
            log.debug("a panel's comm is closed", exc_info=True)
            self._closed(comm)

    def _broadcast(self, data: dict[str, Any]) -> None:
        for comm in list(self.comms):
            self._send(comm, data)

    def _error(self, comm: Comm, text: str) -> None:
        self._send(comm, {"type": "error", "text": redact(text)})

    def _on_msg(self, comm: Comm, msg: dict[str, Any]) -> None:
        data = (msg.get("content") or {}).get("data")
        if not isinstance(data, dict) or data.get("op") not in PANEL_OPS:
            op = data.get("op") if isinstance(data, dict) else None
            self._error(comm, f"The panel sent an unknown request ({op!r}); nothing was done. "
                              "Reload the page if jupyter-agent was just updated.")
            return
        if data.get("v") != PROTOCOL_VERSION:
            self._error(comm, _mismatch(data.get("v")))
            return
        try:
            getattr(self, f"_op_{data['op']}")(comm, data)
        except Exception as exc:  # a refused request is said in the panel, never raised here
            log.debug("a panel request was refused", exc_info=True)
            self._error(comm, f"{type(exc).__name__}: {exc}" if not _plain(exc) else str(exc))

    # -- the panel's requests -------------------------------------------------------------
    def _op_hello(self, comm: Comm, data: dict[str, Any]) -> None:
        self._send(comm, self.shown.state())

    def _op_send(self, comm: Comm, data: dict[str, Any]) -> None:
        prompt = data.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            self._error(comm, "Write a message first.")
            return
        with self.shown.started_from_panel():
            # a panel's click means a person is here: approvals are asked in the panel
            self.session.start(prompt.strip(), batch=False, view=False, context=_prompt_context(data))

    def _op_fix(self, comm: Comm, data: dict[str, Any]) -> None:
        """Fix with agent on an error output (``cell``, ``error``, ``above``): a run that
        proposes the fix as a NotebookEdit (asked as any edit is) and runs the cell."""
        self._error_help("fix", data)

    def _op_explain(self, comm: Comm, data: dict[str, Any]) -> None:
        """Explain on an error output: the same request in plan mode (nothing is changed)."""
        self._error_help("explain", data)

    def _error_help(self, action: Any, data: dict[str, Any]) -> None:
        from ...prompts import MAX_QUOTED_SOURCE
        from .cell_help import error_help_request

        prompt, context, cell = error_help_request(action, data)
        shown_whole = len(cell.source) <= MAX_QUOTED_SOURCE  # (a longer source was quoted cut)
        with self.shown.started_from_panel():
            self.session.start(prompt, batch=False, view=False, context=context,
                               permission_mode="plan" if action == "explain" else None,
                               clicked_cell=(cell.id, cell.source) if shown_whole else None)

    def _op_compact(self, comm: Comm, data: dict[str, Any]) -> None:
        """Summarise the conversation now (the panel's Compact button, ``%agent compact``);
        ``instruction``: what the summary must keep."""
        instruction = data.get("instruction") if isinstance(data.get("instruction"), str) else ""
        with self.shown.started_from_panel():
            self.session.start(f"/compact {instruction}".strip(), batch=False, view=False, compact=instruction)

    def _op_stop(self, comm: Comm, data: dict[str, Any]) -> None:
        self.session.stop()

    def _op_new(self, comm: Comm, data: dict[str, Any]) -> None:
        self.session.new_conversation()  # the panels clear when the session says it is new

    def _op_mode(self, comm: Comm, data: dict[str, Any]) -> None:
        self.session.set_defaults(permission_mode=str(data.get("mode")))

    def _op_approve(self, comm: Comm, data: dict[str, Any]) -> None:
        entry = self.shown.pending_approval(data.get("tool_use_id"), data.get("request"))
        if entry is None or entry[0].done:
            self._error(comm, "That approval was already answered (or its run ended).")
            return
        request, choice = entry[0], data.get("choice")
        feedback = data.get("feedback") if isinstance(data.get("feedback"), str) else ""
        try:
            request.answer(str(choice), feedback)
        except ValueError as exc:  # a word the panel does not send: say so, answer nothing
            self._error(comm, str(exc))

    def _op_undo(self, comm: Comm, data: dict[str, Any]) -> None:
        """Undo an ended run (``run``: its id); the panels show what it did when it is done."""
        if not self.shown.undo(str(data.get("run"))):
            self._error(comm, "That run is no longer in this conversation.")

    def _op_resume(self, comm: Comm, data: dict[str, Any]) -> None:
        """The panel's Resume: the conversation saved for this notebook comes back (``%agent
        resume``); the panels start afresh, and this one says what came back."""
        from ..persistence.resume import ResumeRefused, resume, resume_text

        try:
            saved, gone = resume(self.session)
        except ResumeRefused as exc:
            self._error(comm, str(exc))
            return
        self._send(comm, {"type": "note", "text": resume_text(saved, gone)})

    def close(self) -> None:
        """Stop listening (``%unload_ext``); connected panels are told by the comm's close."""
        self.shown.close()
        close_comms(self.comms, "panel")


def _prompt_context(data: dict[str, Any]) -> str:
    """Where the user is, from a ``send``'s ``context`` (cell_help.py)."""
    from .cell_help import prompt_context

    return prompt_context(data.get("context"))


def _mismatch(version: Any) -> str:
    return version_mismatch("panel", version, PROTOCOL_VERSION)


def _plain(exc: Exception) -> bool:
    """Errors whose message is written for the user (said as is)."""
    from ..kernel.agent_session import AgentBusy, NoApiKey

    return isinstance(exc, (AgentBusy, NoApiKey, ValueError))


def register(shell: Shell | None, session: AgentSession, hub: PanelHub | None) -> PanelHub | None:
    """Register :data:`TARGET` on ``shell``'s kernel (``%load_ext``), answered by ``hub`` (a new
    one for ``session`` when None); the hub, for its owner to keep (``KernelServices.panel_hub``)."""
    return register_hub(shell, TARGET, hub, lambda: PanelHub(session))


def unregister(shell: Shell | None, hub: PanelHub | None) -> None:
    """Undo :func:`register` (``%unload_ext``): the target goes, ``hub`` closes its comms."""
    unregister_hub(shell, TARGET, hub)
