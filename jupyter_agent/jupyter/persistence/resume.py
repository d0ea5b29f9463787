"""Saving the kernel's conversation after each turn, and ``%agent resume`` (and the side
panel's Resume) after a kernel restart or a culled server.

:class:`ConversationSaver` takes a snapshot of the conversation on the event loop when a
turn ends (a run's next request starts, or the run ends): references and shallow copies
only, so the user's cells are not held up. Redacting, encoding and the atomic write run on
one background thread, in order (``saved_conversation.py`` holds the file's format).

:func:`resume` reads the file back for this notebook into a new conversation: its history,
its session rules, its runs' undo records (``%agent runs`` lists them, ``%agent undo N``
puts them back). When the file comes from another kernel process than this one
(:data:`KERNEL_EPOCH`), the model is told, in the user context of every request of the
resumed conversation (data, not the user's words), that the kernel restarted and which
of the names it held are gone. A file that is not the user's alone (another owner, or
others may write it: ``saved_conversation.not_yours_alone``) is refused whole: its
history, rules and runs could be someone else's words.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ...changes import RunChanges, UndoReport
from ...loop.state import Terminal, TerminalReason
from ...errors import Refused
from ...loop.usage import Usage
from ...notebook.epoch import names_shown
from ...redact import redact
from ...render.terminal import terminal_text
from ..bridge.kernel_types import Shell
from .resumed_history import fill_runs
from .saved_conversation import (SavedConversation, SavedConversationError, SavedRun, conversation_key, encode, load,
                                 saved_path, write)

if TYPE_CHECKING:
    from ...conversation import Conversation
    from ...view.runmodel import RunModel
    from ..bridge.kernel_links import KernelLinks

log = logging.getLogger(__name__)

#: This kernel process: a conversation saved by another one was saved before a restart.
KERNEL_EPOCH = uuid.uuid4().hex
#: The user-context entry that tells the model about the restart.
RESTART_CONTEXT_KEY = "kernelRestart"
#: Names listed in the restart notice at most (the rest are counted).
MAX_GONE_SHOWN = 80


#: Nothing to resume, or not now (the message says why and what to do).
ResumeRefused = Refused


class SaveSettings(Protocol):
    """What saving reads of the kernel's settings (``kernel/``'s ``AgentConfig``)."""

    @property
    def cwd(self) -> str:
        """The working folder set for the kernel ("": the process's)."""

    @property
    def save_conversation(self) -> bool:
        """Whether the conversation is saved after each turn."""


class SavedRunSource(Protocol):
    """What a save reads of each run of the session (``kernel/``'s ``SessionRun``)."""

    @property
    def prompt(self) -> str: ...

    @property
    def model(self) -> RunModel: ...

    @property
    def terminal(self) -> Terminal | None: ...

    @property
    def changes(self) -> RunChanges | None: ...


class Going(Protocol):
    """The session's run still going, as a resume reads it."""

    @property
    def done(self) -> bool: ...


class SavingSession(Protocol):
    """What saving the conversation and resuming it read of the kernel's session (``kernel/``'s
    ``AgentSession``, a room this one may not import), and what a resume changes of it: its
    conversation (made by the session, the old one closed by it) and its list of runs."""

    #: the session's saver (:func:`saver_of` makes it on first use)
    saver: ConversationSaver | None
    #: the conversation, None until the first run (a resume puts another in its place)
    _conversation: Conversation | None
    #: the "no page shows this notebook" notice was shown (``bind_notebook``, for an undo)
    no_page_said: bool

    @property
    def config(self) -> SaveSettings: ...

    @property
    def shell(self) -> Shell | None: ...

    @property
    def active(self) -> Going | None: ...

    @property
    def runs(self) -> Sequence[SavedRunSource]: ...

    @property
    def reset_listeners(self) -> Sequence[Callable[[], None]]: ...

    @property
    def links(self) -> KernelLinks | None: ...

    def notebook_path(self) -> str | None: ...

    def parent_request(self) -> dict[str, Any]: ...

    def is_batch(self) -> bool: ...

    def _make_conversation(self) -> Conversation: ...

    def _close_later(self, conversation: Conversation | None) -> None: ...

    def add_runs(self, runs: Sequence[ResumedRun]) -> None:
        """Add ``runs`` to the session's runs (``%agent runs`` lists them)."""


def _user_names(shell: Shell | None) -> list[str]:
    """The kernel's top-level names, as the kernel-variables note counts them."""
    namespace = getattr(shell, "user_ns", None)
    if not isinstance(namespace, dict):
        return []
    from ...notebook.namespace import namespace_ids

    return list(namespace_ids(namespace, getattr(shell, "user_ns_hidden", None)))


def key_of(session: SavingSession, conversation: Conversation | None = None) -> str:
    """What this kernel's conversation is filed under (its notebook, else its folder)."""
    cwd = conversation.context.cwd if conversation is not None else (session.config.cwd or None)
    from pathlib import Path

    return conversation_key(session.notebook_path(), cwd or Path.cwd())


class ConversationSaver:
    """Saves the session's conversation after each turn (see the module docstring)."""

    def __init__(self, session: SavingSession) -> None:
        self.session = session
        self._writer = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="jupyter-agent-save")
        self._pending: list[concurrent.futures.Future[None]] = []
        #: why the last save failed ("" when it did not)
        self.error = ""

    def watch(self, handle: Any) -> None:
        """Save when each turn of ``handle``'s run ends, and when the run ends."""
        def on_event(event: Any) -> None:
            if type(event).__name__ == "RequestStart" and getattr(event, "request_index", 1) > 1:
                self.save(handle)

        handle.event_listeners.append(on_event)
        handle.add_done_callback(self.save)

    def save(self, handle: Any = None) -> None:
        """Snapshot now (on the loop), write in the background. Never raises."""
        try:
            if not self.session.config.save_conversation:
                return
            snapshot = self.snapshot(handle)
            if snapshot is None:
                return
            path = saved_path(snapshot.key)
            self._pending = [f for f in self._pending if not f.done()]
            self._pending.append(self._writer.submit(self._write, path, snapshot))
        except Exception as exc:  # saving must never break a run: say it in %agent, log it
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning("could not save the conversation", exc_info=True)

    def snapshot(self, handle: Any = None) -> SavedConversation | None:
        """What the file will hold, taken now: references and shallow copies only."""
        conv = self.session._conversation
        if conv is None:
            return None
        run = getattr(handle, "run", None)
        messages = list(run.state.messages) if run is not None and getattr(handle, "conversation", None) is conv \
            else list(conv.messages)
        if not messages:
            return None
        permissions = conv.permissions
        runs = []
        for h in self.session.runs:
            if getattr(h, "conversation", None) is conv or getattr(h, "resumed_into", None) is conv:
                terminal = h.terminal
                runs.append(SavedRun(h.prompt, terminal.reason.value if terminal is not None else "aborted_streaming",
                                     h.model.turn_count, h.changes, usage=h.model.total_usage,
                                     offline=h.model.offline))
        variables = _user_names(self.session.shell)
        for r in runs:
            if r.changes is not None:
                variables.extend(n for n in r.changes.variables if n not in variables)
        return SavedConversation(key=key_of(self.session, conv), messages=messages,
                                 rules=[str(rule) for rule in permissions.session_allow], runs=runs,
                                 variables=variables, kernel_epoch=KERNEL_EPOCH, saved_at=time.time())

    def _write(self, path: Any, snapshot: SavedConversation) -> None:
        try:
            write(path, encode(snapshot))
            self.error = ""
        except Exception as exc:  # a full disk, a read-only data folder: the run goes on
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning("could not save the conversation to %s", path, exc_info=True)

    def flush(self, timeout: float = 10.0) -> None:
        """Wait for the saves on their way (the kernel is shutting down)."""
        concurrent.futures.wait(list(self._pending), timeout=timeout)


def saver_of(session: SavingSession) -> ConversationSaver:
    """The session's saver (made on first use)."""
    saver = session.saver
    if saver is None:
        saver = session.saver = ConversationSaver(session)
    return saver


class ResumedRun:
    """A run of a resumed conversation, as ``%agent runs`` and ``%agent undo`` see it: its
    prompt, how it ended and its undo record; nothing of it runs any more."""

    done = True
    interactive = False
    view = None
    broker = None
    run = None
    undo_bar = None
    error = None
    #: None: the chat panel and the status count only runs made in this kernel
    conversation = None

    def __init__(self, saved: SavedRun, conversation: Conversation, session: SavingSession | None = None) -> None:
        from ...view.runmodel import RunModel

        self.session = session
        self.prompt = saved.prompt
        self.changes = saved.changes
        self.resumed_into = conversation
        self.display_id = f"jupyter-agent-resumed-{uuid.uuid4().hex}"
        self.model = RunModel(prompt=saved.prompt, model=conversation.model_name,
                              permission_mode=conversation.permission_mode, cwd=conversation.context.cwd)
        self.model.turn_count = saved.turns
        self.model.offline = saved.offline
        # what the run spent, as saved (an older file has none: 0 then, as before)
        self.terminal = Terminal(TerminalReason(saved.reason), saved.turns, "", None, saved.usage or Usage())
        self.model.finish(self.terminal)
        self._undo: asyncio.Task[UndoReport] | None = None

    @property
    def undo_report(self) -> UndoReport | None:
        return self.changes.undo_report if self.changes is not None else None

    def stop(self) -> None:
        """Nothing runs: nothing to stop."""

    def add_done_callback(self, callback: Any) -> None:
        callback(self)

    def undo(self) -> asyncio.Task[UndoReport]:
        """Put back what the run changed, as ``AgentRun.undo`` does."""
        if self.changes is None:
            raise RuntimeError("This run's undo record was not saved, so it cannot be undone.")
        from ...tools.undo import undo_run, undo_settled

        if not undo_settled(self._undo):  # (once, unless it failed: as AgentRun.undo)
            if self.session is not None and any(n.live for n in self.changes.notebooks.values()):
                # the open notebook's cells go back through its page, as the run made them
                # (no run has bound the page since the restart): never into the file behind it
                from ..bridge.live_notebook import bind_notebook

                bind_notebook(self.session, self.resumed_into, lambda _text: None, batch=self.session.is_batch(),
                              links=self.session.links)
            self._undo = asyncio.get_event_loop().create_task(undo_run(self.changes, self.resumed_into.context))
        return self._undo


def restart_note(gone: list[str]) -> str:
    """The user-context entry of a conversation resumed in a restarted kernel."""
    if gone:
        lost = f"These names it held are gone now: {names_shown(gone, MAX_GONE_SHOWN)}."
    else:
        lost = "No variable it held is missing now (cells may have run again since)."
    return ("The user's kernel was restarted (or its server was) after the earlier part of this conversation, "
            "which was saved and resumed: everything the kernel held is gone, imports and variables alike. "
            f"{lost} Do not assume results of earlier cells exist: run the cells you need again, in order.")


def resume(session: SavingSession) -> tuple[SavedConversation, list[str]]:
    """Replace the session's conversation with the one saved for this notebook. Returns
    what was read and the names that are gone (empty when the kernel did not restart)."""
    if session.active is not None and not session.active.done:
        raise ResumeRefused("A run is still going: stop it (Stop or `%agent stop`) before resuming.")
    path = saved_path(key_of(session, session._conversation))
    if not path.exists():
        where = session.notebook_path() or "this kernel's working folder"
        raise ResumeRefused(f"No saved conversation for {where} (looked for {path}). A conversation is saved after "
                            "each turn of a run; there was none yet, or saving was off.")
    try:
        saved = load(path)
    except SavedConversationError as exc:
        raise ResumeRefused(str(exc)) from None
    if saved.foreign:  # its history, rules and undo records could all be someone else's words
        raise ResumeRefused(f"The saved conversation {path} was not resumed: {saved.foreign}, so another user could "
                            "have written its history, rules and undo records, and nothing of it was taken. If "
                            "the file is yours, make it yours alone (`chmod go-w`); otherwise delete it, or start "
                            "afresh with `%agent new`.")
    if not saved.messages:
        raise ResumeRefused(f"The saved conversation {path} holds no usable history"
                            + (f" ({'; '.join(saved.notes)})" if saved.notes else "") + ".")
    old = session._conversation
    saved.replaced = len(old.messages) if old is not None else 0
    conv = session._make_conversation()
    conv.messages = saved.messages
    if saved.rules:
        conv.permissions.add_session_rules(saved.rules)
    gone: list[str] = []
    if saved.kernel_epoch != KERNEL_EPOCH:
        here = set(_user_names(session.shell))
        gone = [n for n in saved.variables if n not in here]
        conv.context_notes[RESTART_CONTEXT_KEY] = restart_note(gone)
    session._conversation = conv
    session._close_later(old)
    resumed = [ResumedRun(run, conv, session) for run in saved.runs]
    fill_runs(saved.messages, resumed)  # what the side panels show of them
    session.add_runs(resumed)
    conv.resumed_changes = [run.changes for run in saved.runs if run.changes is not None]  # undo tells the model
    for listener in list(session.reset_listeners):  # the side panels start afresh
        listener()
    return saved, gone


def resume_text(saved: SavedConversation, gone: list[str]) -> str:
    """What ``%agent resume`` prints (plain text; the file's words pass ``redact`` and
    ``render.terminal``)."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(saved.saved_at)) if saved.saved_at else "an unknown time"
    undoable = sum(1 for r in saved.runs if r.changes is not None and r.changes.undo_report is None)
    lines = [f"Resumed the conversation saved at {when}: {len(saved.messages)} messages, "
             f"{len(saved.rules)} session rule{'s' if len(saved.rules) != 1 else ''}, {len(saved.runs)} "
             f"run{'s' if len(saved.runs) != 1 else ''} ({undoable} can be undone: `%agent runs`, `%agent undo N`)."]
    if saved.kernel_epoch != KERNEL_EPOCH:
        lines.append("The kernel restarted since: the agent is told so" +
                     (f", and that these names are gone: {names_shown(gone, MAX_GONE_SHOWN)}." if gone else
                      " (no variable it knew of is missing)."))
    unsaved = sum(r.unsaved for r in saved.runs)
    if unsaved:
        lines.append(f"{unsaved} change(s) of those runs were not saved (they held a secret or were too large): "
                     "undo cannot put them back.")
    if saved.replaced:
        lines.append(f"The conversation this kernel had ({saved.replaced} messages) was set aside; its runs stay "
                     "in `%agent runs`.")
    for note in saved.notes:
        lines.append(f"Repaired: {note}.")
    lines.append("The next %%agent cell (or the side panel) continues it.")
    return terminal_text(redact("\n".join(lines)))


__all__ = ["ConversationSaver", "KERNEL_EPOCH", "RESTART_CONTEXT_KEY", "ResumeRefused", "ResumedRun", "key_of",
           "restart_note", "resume", "resume_text", "saver_of"]
