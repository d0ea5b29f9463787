"""What the side panels show of the kernel's conversation, and what changed since the last
frame: the kernel side of the panel's ``state`` and ``update`` messages (the comm that
carries them is ``panel_comm.py``; the shapes of their parts, ``panel_json.py``).

:class:`PanelRuns` listens to the session (a run started, a new conversation, a setting
changed), to each run's :class:`~jupyter_agent.view.runmodel.RunModel` and to its approval
broker, and coalesces what changed to one ``update`` per frame with a
:class:`~.frames.FrameScheduler`, whatever the token rate. The pending approvals it shows
and answers are read from the runs' brokers (:class:`~jupyter_agent.permissions.ApprovalBroker`,
the one registry of them, keyed by id): the broker only tells it when to send them again.

``panel_json`` (and through it the run model and the Markdown renderer) is imported where a
message is built, not here: ``%load_ext`` imports this module to watch runs before a panel
connects, and should not pay ~40 ms for what only a connected panel needs.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..widgets.frames import FrameScheduler
from ...redact import redact

if TYPE_CHECKING:
    from ..kernel.agent_session import AgentSession

log = logging.getLogger(__name__)

#: Settings shown in the panel's header: a change (``%agent --...``, ``%config``) redraws it.
SETTINGS = ("model", "permission_mode", "replay", "max_turns", "mcp_servers")


class WatchedRun:
    """A run the panels show: its items' keys, and what changed since the last frame."""

    def __init__(self, handle: Any, origin: str) -> None:
        self.handle = handle
        self.origin = origin
        self.keys: dict[int, str] = {}
        self._next = itertools.count(1)
        self.dirty: dict[int, Any] = {}
        self.order_changed = True
        self.header_changed = True
        #: stops listening to the run's undo state (set while the panels show the run)
        self.unlisten: Callable[[], None] = lambda: None

    def key(self, item: Any) -> str:
        """The item's key in the panel (stable for the item's life)."""
        if id(item) not in self.keys:
            self.keys[id(item)] = f"{self.handle.display_id}-{next(self._next)}"
        return self.keys[id(item)]

    def header(self) -> dict[str, Any]:
        """The run's header: its status, usage and, once ended, how and what it changed."""
        from ...view.labels import context_meter_text, end_explanation, end_reason_text, end_title
        from ...view.transcript import stopped_calls, stopped_waiting
        from .panel_json import usage_json

        model = self.handle.model
        waiting = sum(1 for t in model.tools() if t.state == "approval")
        header = {"id": self.handle.display_id, "origin": self.origin, "model": model.model,
                  "permission_mode": model.permission_mode, "turns": model.turn_count,
                  "status": f"waiting for your approval ({waiting})" if waiting and model.ended is None
                  else model.status, "usage": usage_json(model.total_usage, model.offline, model.cost_known),
                  "ended": model.ended is not None, "reason": "", "title": "", "meaning": "", "error": "",
                  "context": context_meter_text(model.context, model.window_known) if model.context is not None
                  else ""}
        if model.ended is not None:
            # the widgets' own words (advice.py): a quiet title for a normal end, what
            # happened and what to do for the others
            reason, _ = end_reason_text(model.terminal)
            term = model.terminal
            meaning = end_explanation(term, stopped_calls=stopped_calls(model), lost=model.lost,
                                      waiting=stopped_waiting(model))
            header.update(reason=reason, meaning=redact(meaning),
                          title="Interrupted" if model.lost else end_title(term),
                          error=redact(getattr(term, "error", None) or self.handle.error or ""))
            header.update(self.undo())
        if _outside(self.handle):  # no model, no turns: its calls are counted instead
            header["calls"] = self.handle.calls_made
        if model.ended is None and _outside(self.handle) and self.handle.done:
            # an outside agent's run has no end: between its calls it shows as one that
            # ended well, with its changes and Undo this run (its next call reopens it)
            header.update(reason="completed", title="Calls so far", ended=True)
            header.update(self.undo())
        return header

    def undo(self) -> dict[str, Any]:
        """An ended run's changes for the panel: the kernel's changed names, whether it can be
        undone (``undo``: ``available``, ``running``, ``done`` or ""), and what the undo did
        (an undo that failed offers Undo again, under the lines that say what failed)."""
        from ...changes import UndoState
        from ...view.review import undo_lines, variables_line
        from .panel_json import shown_text

        handle, changes = self.handle, self.handle.changes
        if changes is None:
            return {"variables": "", "undo": "", "undo_lines": []}
        # (the run's changes say whether it is undone, whoever undid it: RunChanges.undo_state)
        undo_state = changes.undo_state
        state = "done" if undo_state is UndoState.DONE else "running" if undo_state is UndoState.RUNNING else \
            "" if changes.empty or (handle.conversation is None and not _outside(handle)
                                    and getattr(handle, "resumed_into", None) is None) else "available"
        report = changes.undo_report
        return {"variables": shown_text(variables_line(changes.variables)), "undo": state,
                "undo_lines": [shown_text(line) for line in undo_lines(report, handle.model.cwd)] if report else []}

    def full(self) -> dict[str, Any]:
        """All of the run: its header, every item and their order."""
        from .panel_json import item_json

        items = self.handle.model.items
        return {"header": self.header(), "items": [item_json(i, self.key(i)) for i in items],
                "order": [self.key(i) for i in items]}

    def changes(self) -> dict[str, Any] | None:
        """What changed since the last call (None: nothing), and forget it."""
        if not (self.dirty or self.order_changed or self.header_changed):
            return None
        from .panel_json import item_json

        items = self.handle.model.items
        live = {id(i) for i in items}
        out: dict[str, Any] = {"header": self.header(),
                               "items": [item_json(i, self.key(i)) for k, i in self.dirty.items() if k in live]}
        if self.order_changed:
            out["order"] = [self.key(i) for i in items]
        self.dirty.clear()
        self.order_changed = self.header_changed = False
        return out


class PanelRuns:
    """The runs of the kernel's conversation and the pending approvals that the panels show.

    ``broadcast`` sends a message to every connected panel; ``connected`` says whether there
    is one (with none, a frame's changes are dropped without building the session header:
    that would load the loop and MCP before a panel asked for them).
    """

    def __init__(self, session: AgentSession, loop: asyncio.AbstractEventLoop,
                 broadcast: Callable[[dict[str, Any]], None], connected: Callable[[], bool]) -> None:
        self.session = session
        self._broadcast = broadcast
        self._connected = connected
        self.frames = FrameScheduler(session.config.frame_interval, loop)
        self.runs: dict[str, WatchedRun] = {}
        self._approvals_changed = False
        self._session_changed = False
        self._from_panel = False
        session.listeners.append(self._run_started)
        session.reset_listeners.append(self._conversation_reset)
        session.config.observe(self._settings_changed, names=list(SETTINGS))

    @contextmanager
    def started_from_panel(self) -> Iterator[None]:
        """Runs the session starts inside this are the panel's (their ``origin``), not a cell's."""
        self._from_panel = True
        try:
            yield
        finally:
            self._from_panel = False

    def undo(self, run_id: str) -> bool:
        """Undo an ended run; the panels show what it did when it is done. False: no such run."""
        watched = self.runs.get(run_id)
        if watched is None:
            return False
        watched.handle.undo()  # (its start and end are heard from the run's changes: _watch)
        self._run_ended(watched)  # a panel that asked for a run undone meanwhile is shown that it is
        return True

    def pending_approval(self, tool_use_id: Any, request: Any) -> tuple[Any, Any] | None:
        """The (request, handle) an ``approve`` message answers: by its call's ``tool_use_id``,
        else by the request's id (``request``: the page sends it always, and it is the only
        key of an approval that names no call). Looked up in each shown run's broker."""
        by_call = isinstance(tool_use_id, str) and bool(tool_use_id)
        if not by_call and not isinstance(request, int):
            return None
        for watched in self.runs.values():
            broker = _broker(watched.handle)
            found = None if broker is None else broker.for_call(tool_use_id) if by_call else broker.get(request)
            if found is not None:
                return found, watched.handle
        return None

    # -- what the panels show -------------------------------------------------------------
    def session_header(self) -> dict[str, Any]:
        """The panel's header: the conversation's model, mode, usage, context and MCP servers."""
        from ...loop.permission_result import PERMISSION_MODES
        from ...loop.usage import Usage
        from .panel_json import usage_json

        session = self.session
        conv = session.conversation
        usage = Usage()
        usage.add(conv.usage)
        active = session.active
        if active is not None and not active.done:
            usage.add(active.model.total_usage)
        replay = conv.replay or _replay_in_use(conv)
        return {"model": conv.model_name, "permission_mode": conv.permission_mode,
                "modes": list(PERMISSION_MODES), "replay": redact(_name(replay)) if replay else "",
                "busy": active is not None and not active.done,
                "notebook": redact(session.notebook_path() or ""), "usage": usage_json(usage, bool(replay)),
                "turns": sum(w.handle.model.turn_count for w in self.runs.values()),
                "context": self._context_meter(), "mcp": _mcp_payload(session),
                "resumable": not conv.messages and not (active is not None and not active.done) and _saved(session)}

    def _context_meter(self) -> str:
        """How full the conversation's context is, as its latest run last measured it."""
        from ...view.labels import context_meter_text

        for watched in reversed(list(self.runs.values())):
            if watched.handle.model.context is not None:
                return context_meter_text(watched.handle.model.context, watched.handle.model.window_known)
        return ""

    def state(self) -> dict[str, Any]:
        """The ``state`` message: everything a panel shows."""
        self._adopt_runs()
        return {"type": "state", "session": self.session_header(),
                "runs": [w.full() for w in self.runs.values()],
                "approvals": self.approvals_json()}

    def approvals_json(self) -> list[dict[str, Any]]:
        """The approvals still waiting for an answer, in the order they were asked."""
        from .panel_json import approval_json

        waiting = [(request, watched.handle) for watched in self.runs.values()
                   if (broker := _broker(watched.handle)) is not None for request in broker.pending]
        out = []
        for request, handle in sorted(waiting, key=lambda entry: entry[0].id):  # (ids count up)
            # paths as the cell's approval card shows them; an outside agent's names who asks
            # and the page of its notebook (the card shows under that notebook too)
            asker, page = (handle.client, handle.page_of(request.tool_use_id)) if _outside(handle) else ("", "")
            out.append(approval_json(request, handle.display_id, handle.model.cwd, asker, page))
        return out

    def _adopt_runs(self) -> None:
        """Show every run of the current conversation (those that ran before a panel
        connected too); forget runs of an earlier conversation."""
        conv = self.session._conversation
        current = set(map(id, conv.runs)) if conv is not None else set()

        def resumed(handle: Any) -> bool:  # (a resumed run has no loop run: it is of the conversation it came into)
            return conv is not None and getattr(handle, "resumed_into", None) is conv

        def shown(handle: Any) -> bool:
            return id(handle.run) in current or _outside(handle) or resumed(handle)

        for handle in self.session.runs:
            if shown(handle) and handle.display_id not in self.runs:
                self._watch(handle, "outside" if _outside(handle) else "resumed" if resumed(handle) else "cell")
        for key in [k for k, w in self.runs.items() if not shown(w.handle)]:
            self.runs.pop(key).unlisten()

    # -- what the session and the runs say ------------------------------------------------
    def _run_started(self, handle: Any) -> None:
        """A run of this kernel's conversation started (a panel, a cell or chat())."""
        if handle.display_id not in self.runs:
            self._watch(handle, "outside" if _outside(handle) else "panel" if self._from_panel else "cell")
        self._adopt_runs()
        self._mark_session()

    def _conversation_reset(self) -> None:
        """A new conversation (from a panel, ``%agent new`` or ``chat()``): panels clear."""
        self._forget_runs()
        self._broadcast(self.state())

    def _settings_changed(self, _change: Any) -> None:
        self._mark_session()

    def _watch(self, handle: Any, origin: str) -> None:
        watched = self.runs[handle.display_id] = WatchedRun(handle, origin)
        for item in handle.model.items:  # what it had before we listened (the prompt)
            watched.dirty[id(item)] = item
        handle.model.listen(lambda kind, item: self._model_changed(watched, kind, item))
        handle.add_done_callback(lambda _h: self._run_ended(watched))
        if handle.changes is not None:  # undone from anywhere: the panels show it (RunChanges.undo_state)
            watched.unlisten = handle.changes.listen_undo(lambda: self._run_ended(watched))
        broker = _broker(handle)
        if broker is not None:
            broker.listeners.append(self._approval_asked)
            for request in broker.pending:  # asked before we listened: shown, and watched to its end
                self._approval_asked(request)

    def _model_changed(self, watched: WatchedRun, kind: str, item: Any) -> None:
        if kind in ("add", "remove"):
            watched.order_changed = True
        if kind in ("add", "update") and item is not None:
            watched.dirty[id(item)] = item
        watched.header_changed = True
        self._mark()

    def _run_ended(self, watched: WatchedRun) -> None:
        watched.header_changed = True
        self._mark_session()
        self.frames.flush()  # the end is shown at once

    def _approval_asked(self, request: Any) -> None:
        """A run's broker has a new request: send the approvals again, and again at its end."""
        request.future.add_done_callback(self._approvals_moved)
        self._approvals_moved()

    def _approvals_moved(self, _future: Any = None) -> None:
        self._approvals_changed = True
        self._mark()

    # -- one update per frame -------------------------------------------------------------
    def _mark_session(self) -> None:
        self._session_changed = True
        self._mark()

    def _mark(self) -> None:
        self.frames.mark("panel", self._flush)

    def _flush(self) -> None:
        """One message per frame with everything that changed."""
        runs = []
        for watched in self.runs.values():
            changes = watched.changes()
            if changes is not None:
                runs.append(changes)
        if not (runs or self._approvals_changed or self._session_changed) or not self._connected():
            self._approvals_changed = self._session_changed = False
            return
        update: dict[str, Any] = {"type": "update", "session": self.session_header(), "runs": runs,
                                  "run_ids": list(self.runs)}
        if self._approvals_changed:
            update["approvals"] = self.approvals_json()
        self._approvals_changed = self._session_changed = False
        self._broadcast(update)

    def close(self) -> None:
        """Stop listening to the session and its settings (``%unload_ext``)."""
        if self._run_started in self.session.listeners:
            self.session.listeners.remove(self._run_started)
        if self._conversation_reset in self.session.reset_listeners:
            self.session.reset_listeners.remove(self._conversation_reset)
        self.session.config.unobserve(self._settings_changed, names=list(SETTINGS))
        self._forget_runs()
        self.frames.close()

    def _forget_runs(self) -> None:
        for watched in self.runs.values():
            watched.unlisten()
        self.runs.clear()


def _broker(handle: Any) -> Any:
    """The run's :class:`~jupyter_agent.permissions.ApprovalBroker` (None: it asks nobody)."""
    return getattr(getattr(handle, "broker", None), "requests", None)


def _saved(session: AgentSession) -> bool:
    """Whether a conversation is saved for this notebook (the panel offers Resume)."""
    from ..persistence.resume import key_of
    from ..persistence.saved_conversation import saved_path

    return saved_path(key_of(session, session._conversation)).is_file()


def _outside(handle: Any) -> bool:
    """An outside agent's run (``outside_run.py``): no run of the conversation's, shown all the same."""
    from ..outside.outside_run import OutsideRun  # (here: it imports the loop, which %load_ext leaves to the warm-up)

    return isinstance(handle, OutsideRun)


def _replay_in_use(conv: Any) -> str | None:
    """The recording the conversation's model replays when no cell named one: the model
    made from ``$JUPYTER_AGENT_REPLAY`` (a run made it already: it says what it plays,
    also after an Explain or Fix click played another recording), or the one it will be."""
    if conv.model_ready:
        source = getattr(conv.model, "source", None)  # a ReplayModel's transcript (replay/model.py)
        return source if isinstance(source, str) else None
    return None if isinstance(conv.model_spec, str) else _env_replay()


def _env_replay() -> str | None:
    """The replay file ``$JUPYTER_AGENT_REPLAY`` names (as given when it is not found)."""
    import os

    from ...environment import REPLAY_ENV, resolve_transcript

    replay = os.environ.get(REPLAY_ENV) or None
    try:
        return resolve_transcript(replay) if replay else None
    except FileNotFoundError:
        return replay


def _name(path: str) -> str:
    from pathlib import Path

    return Path(path).name


def _mcp_payload(session: AgentSession) -> list[dict[str, object]]:
    # Imported here: the MCP side imports the loop and pydantic, which %load_ext leaves to
    # the background warm-up (jupyter/kernel/warmup.py); the first session header comes later.
    from ..kernel.mcp_status import mcp_payload

    return mcp_payload(session)
