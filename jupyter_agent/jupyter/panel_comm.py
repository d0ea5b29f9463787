"""The kernel side of the JupyterLab side panel (``labextension/src/panel.ts``).

The panel opens a comm to :data:`TARGET`, registered at ``%load_ext`` (a kernel without
the extension closes the comm, and the panel shows a one-line hint). Over it the panel
drives this kernel's :class:`~.session.AgentSession`: the same conversation as
``%%agent`` cells and ``chat()``.

The protocol's names are defined in ``protocol.py`` (``PANEL_*``) and, for the page, in
``labextension/src/protocol.ts``. The panel opens the comm with ``{"v", "op": "hello"}``;
a panel of another version gets an ``error`` that says to reload or reinstall, and nothing
else.

Page -> kernel, ``{"v", "op": ...}``: ``hello`` (send the whole state), ``send``
(``prompt``), ``stop``, ``new`` (a new conversation), ``mode`` (``mode``), ``approve``
(``tool_use_id`` of the call, or the older ``request`` number; ``choice``: allow | always |
deny; ``feedback``), ``fix`` / ``explain`` (an error output's ``cell``, ``error`` and the
cells ``above``: ``cell_help.py``). ``send`` may carry ``context``: the cell the user is on.
Each pending approval the kernel sends carries both ``id`` and ``tool_use_id``.

Kernel -> page, ``{"v", "type": ...}``: ``state`` (everything: the session's header,
the conversation's runs with all their items, the pending approvals), ``update`` (what
changed since the last message: the header, changed items and the new order of a run's
items, the approvals), ``error`` (``text``: a refused request, said in the panel).

The runs are drawn from the same :class:`~jupyter_agent.view.runmodel.RunModel` the widgets use (items as
plain data, nothing refolded), coalesced to one message per frame by a
:class:`~.frames.FrameScheduler`, whatever the token rate. Every string passes through
:func:`redact` (before any cut) and has its invisible characters marked; assistant text is
sent as ``render.markdown.markdown_from_model`` of what ``redact_partial`` can judge so far
(the panel renders it untrusted as well); an approval is sent whole (message, diff, input),
with ``warning`` set when it holds invisible or reordering characters. Comm messages may
arrive on another thread (a JupyterLab subshell): each hops to the kernel's event loop first.

Loading stays cheap: the loop, the run model and ipywidgets load when a panel connects.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from typing import Any

from .frames import FrameScheduler
from .protocol import PANEL_OPS, PANEL_TARGET, PANEL_VERSION, version_mismatch
from ..redact import redact, redact_partial
from ..render.invisible import INVISIBLE_WARNING, has_invisible, mark_invisible
from ..render.markdown import markdown_from_model
from ..view.runmodel import relative

log = logging.getLogger(__name__)

TARGET = PANEL_TARGET
PROTOCOL_VERSION = PANEL_VERSION
#: Longest text of one tool input or result part sent to the panel (cut in the middle).
MAX_PART = 6000
#: Settings shown in the panel's header: a change (``%agent --...``, ``%config``) redraws it.
_SETTINGS = ("model", "permission_mode", "replay", "max_turns", "mcp_servers")


def _cut(text: str, limit: int = MAX_PART) -> str:
    """A tool's input or result for a tool card: redacted, then cut, then marked."""
    from ..view.transcript import redact_and_cut

    return mark_invisible(redact_and_cut(text, limit))


def _text(text: str) -> str:
    """A string the panel shows as text: redacted, invisible characters marked."""
    return mark_invisible(redact(text))


def plan_json(item: Any, key: str) -> dict[str, Any]:
    """The run's plan (a ``PlanItem``) as the panel draws it: a title, and each task's
    status (one of three words) and text (the model's: redacted, invisible marked)."""
    from ..view.labels import TODO_LABELS, plan_title, todo_text

    return {"key": key, "kind": "plan", "title": plan_title(item),
            "todos": [{"status": t["status"], "label": TODO_LABELS[t["status"]], "text": _text(todo_text(t))}
                      for t in item.todos]}


def item_json(item: Any, key: str) -> dict[str, Any]:
    """One item of a run as the panel draws it."""
    from ..view.runmodel import (
        BlockItem, CompactionItem, NoticeItem, PlanItem, PromptItem, TextItem, ThinkingItem, ToolItem,
    )
    from ..view.labels import STATE_LABELS, compaction_text
    from ..view.transcript import result_parts

    if isinstance(item, ToolItem):
        progress = item.progress[-1] if item.progress and item.state == "running" else None
        return {"key": key, "kind": "tool", "id": item.id, "name": _text(item.name),
                "summary": _text(item.summary), "state": item.state,
                "label": STATE_LABELS.get(item.state, item.state)
                + (f" · exit code {item.exit_code}" if item.exit_code is not None else ""),
                "decision": _text(item.decision),
                "duration_s": round(item.duration_s, 2),
                "input": _cut(json.dumps(item.input, ensure_ascii=False, indent=1, default=str)) if item.input else "",
                "receiving": len(item.partial_json) if item.state == "input" else 0,
                "progress": _cut(progress if isinstance(progress, str) else json.dumps(progress, default=str))
                if progress is not None else "",
                "result": [[kind, value if kind == "image" else _cut(value)]
                           for kind, value in result_parts(item.result)]}
    if isinstance(item, TextItem):
        return {"key": key, "kind": "text", "text": markdown_from_model(redact_partial(item.text, item.done)),
                "done": item.done}
    if isinstance(item, ThinkingItem):
        return {"key": key, "kind": "thinking", "text": mark_invisible(redact_partial(item.text, item.done)),
                "done": item.done, "redacted": item.redacted}
    if isinstance(item, NoticeItem):
        return {"key": key, "kind": "notice", "level": item.level, "text": _text(item.text)}
    if isinstance(item, PromptItem):
        return {"key": key, "kind": "prompt", "text": _text(item.text)}
    if isinstance(item, CompactionItem) and item.event is not None:  # (the panel shows it as a note)
        return {"key": key, "kind": "notice", "level": "info", "text": _text(compaction_text(item.event))}
    if isinstance(item, PlanItem):
        return plan_json(item, key)
    if isinstance(item, BlockItem):
        return {"key": key, "kind": "block", "block_type": _text(item.block_type),
                "json": _cut(json.dumps(item.block, ensure_ascii=False, indent=1, default=str))}
    return {"key": key, "kind": "unknown"}


#: Tools whose ask carries code after its question (the cell, the command line).
CODE_ASKS = ("NotebookRun", "Bash")


def approval_json(request: Any, run_id: str, cwd: Any = None) -> dict[str, Any]:
    """One pending approval as the panel shows it: all of it (message, diff, input; the
    panel's box scrolls), nothing a person cannot see may be approved; ``warning`` says
    when it holds invisible or reordering characters. For ``NotebookRun`` and ``Bash``,
    ``question`` and ``code`` are the message's question and the whole cell or command
    ("" otherwise)."""
    message = relative(request.message or "", cwd)
    diff = relative(request.diff or "", cwd)
    raw_input = json.dumps(request.input, ensure_ascii=False, indent=1, default=str)
    warning = any(has_invisible(t) for t in (message, diff, raw_input))
    question, code = "", ""
    if request.tool_name in CODE_ASKS:  # the code, shown as code (as the cell's card does), exactly as it runs
        from ..loop.permission_result import ask_parts

        question, code = ask_parts(request.message or "")
        question = relative(question, cwd)
    return {"id": request.id, "tool_use_id": request.tool_use_id, "run": run_id, "tool": _text(request.tool_name),
            "message": _text(message), "question": _text(question), "code": _text(code),
            "diff": _text(diff), "input": _text(raw_input),
            "warning": INVISIBLE_WARNING if warning else "",
            "rules": [_text(r) for r in request.suggested_rules] or [_text(request.tool_name)]}


def _usage_json(usage: Any, offline: bool = False) -> dict[str, Any]:
    """The run's token counts; no cost for an offline replay (nothing was paid for)."""
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "cache_read_input_tokens": usage.cache_read_input_tokens,
            "cache_creation_input_tokens": usage.cache_creation_input_tokens,
            "cost_usd": None if offline else round(usage.cost_usd, 6)}


class _Watched:
    """A run the panels show: its items' keys, and what changed since the last frame."""

    def __init__(self, handle: Any, origin: str) -> None:
        self.handle = handle
        self.origin = origin
        self.keys: dict[int, str] = {}
        self._next = itertools.count(1)
        self.dirty: dict[int, Any] = {}
        self.order_changed = True
        self.header_changed = True

    def key(self, item: Any) -> str:
        if id(item) not in self.keys:
            self.keys[id(item)] = f"{self.handle.display_id}-{next(self._next)}"
        return self.keys[id(item)]

    def header(self) -> dict[str, Any]:
        from ..view.labels import context_meter_text, end_explanation, end_reason_text, end_title
        from ..view.transcript import stopped_calls, stopped_waiting

        model = self.handle.model
        waiting = sum(1 for t in model.tools() if t.state == "approval")
        header = {"id": self.handle.display_id, "origin": self.origin, "model": model.model,
                  "permission_mode": model.permission_mode, "turns": model.turn_count,
                  "status": f"waiting for your approval ({waiting})" if waiting and model.ended is None
                  else model.status, "usage": _usage_json(model.total_usage, model.offline),
                  "ended": model.ended is not None, "reason": "", "title": "", "meaning": "", "error": "",
                  "context": context_meter_text(model.context) if model.context is not None else ""}
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
        return header

    def undo(self) -> dict[str, Any]:
        """An ended run's changes for the panel: the kernel's changed names, whether it can be
        undone (``undo``: ``available``, ``running``, ``done`` or ""), and what the undo did."""
        from ..view.review import undo_lines, variables_line

        handle, changes = self.handle, self.handle.changes
        if changes is None:
            return {"variables": "", "undo": "", "undo_lines": []}
        task = handle._undo
        state = "done" if changes.undo_report is not None else "running" if task is not None else \
            "" if changes.empty or handle.conversation is None else "available"
        report = changes.undo_report
        return {"variables": _text(variables_line(changes.variables)), "undo": state,
                "undo_lines": [_text(line) for line in undo_lines(report, handle.model.cwd)] if report else []}

    def full(self) -> dict[str, Any]:
        items = self.handle.model.items
        return {"header": self.header(), "items": [item_json(i, self.key(i)) for i in items],
                "order": [self.key(i) for i in items]}

    def changes(self) -> dict[str, Any] | None:
        if not (self.dirty or self.order_changed or self.header_changed):
            return None
        items = self.handle.model.items
        live = {id(i) for i in items}
        out: dict[str, Any] = {"header": self.header(),
                               "items": [item_json(i, self.key(i)) for k, i in self.dirty.items() if k in live]}
        if self.order_changed:
            out["order"] = [self.key(i) for i in items]
        self.dirty.clear()
        self.order_changed = self.header_changed = False
        return out


class PanelHub:
    """Every side panel connected to one kernel, and the runs they show."""

    def __init__(self, session: Any, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.session = session
        self.loop = loop or asyncio.get_event_loop()
        self.comms: list[Any] = []
        self.frames = FrameScheduler(session.config.frame_interval, self.loop)
        self.runs: dict[str, _Watched] = {}
        self.approvals: dict[int, tuple[Any, Any]] = {}  # request id -> (request, handle)
        self._approvals_changed = False
        self._session_changed = False
        self._sending = False
        session.listeners.append(self._run_started)
        session.reset_listeners.append(self._conversation_reset)
        session.config.observe(self._settings_changed, names=list(_SETTINGS))

    # -- comms (any thread) -------------------------------------------------------------
    def open(self, comm: Any, open_msg: dict[str, Any]) -> None:
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
    def _opened(self, comm: Any) -> None:
        self.comms.append(comm)
        self._send(comm, self.state())

    def _closed(self, comm: Any) -> None:
        if comm in self.comms:
            self.comms.remove(comm)

    def _send(self, comm: Any, data: dict[str, Any]) -> None:
        try:
            comm.send({"v": PROTOCOL_VERSION, **data})
        except Exception:  # a comm closed under us: the panel reconnects when it can
            log.debug("a panel's comm is closed", exc_info=True)
            self._closed(comm)

    def _broadcast(self, data: dict[str, Any]) -> None:
        for comm in list(self.comms):
            self._send(comm, data)

    def _error(self, comm: Any, text: str) -> None:
        self._send(comm, {"type": "error", "text": redact(text)})

    def _on_msg(self, comm: Any, msg: dict[str, Any]) -> None:
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

    def _op_hello(self, comm: Any, data: dict[str, Any]) -> None:
        self._send(comm, self.state())

    def _op_send(self, comm: Any, data: dict[str, Any]) -> None:
        prompt = data.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            self._error(comm, "Write a message first.")
            return
        self._sending = True
        try:
            # a panel's click means a person is here: approvals are asked in the panel
            self.session.start(prompt.strip(), batch=False, view=False, context=_prompt_context(data))
        finally:
            self._sending = False

    def _op_fix(self, comm: Any, data: dict[str, Any]) -> None:
        """Fix with agent on an error output (``cell``, ``error``, ``above``): a run that
        proposes the fix as a NotebookEdit (asked as any edit is) and runs the cell."""
        self._error_help("fix", data)

    def _op_explain(self, comm: Any, data: dict[str, Any]) -> None:
        """Explain on an error output: the same request in plan mode (nothing is changed)."""
        self._error_help("explain", data)

    def _error_help(self, action: Any, data: dict[str, Any]) -> None:
        from .cell_help import error_help_request

        prompt, context = error_help_request(action, data)
        self._sending = True
        try:
            self.session.start(prompt, batch=False, view=False, context=context,
                               permission_mode="plan" if action == "explain" else None)
        finally:
            self._sending = False

    def _op_compact(self, comm: Any, data: dict[str, Any]) -> None:
        """Summarise the conversation now (the panel's Compact button, ``%agent compact``);
        ``instruction``: what the summary must keep."""
        instruction = data.get("instruction") if isinstance(data.get("instruction"), str) else ""
        self._sending = True
        try:
            self.session.start(f"/compact {instruction}".strip(), batch=False, view=False, compact=instruction)
        finally:
            self._sending = False

    def _op_stop(self, comm: Any, data: dict[str, Any]) -> None:
        self.session.stop()

    def _op_new(self, comm: Any, data: dict[str, Any]) -> None:
        self.session.new_conversation()  # tells _conversation_reset

    def _conversation_reset(self) -> None:
        """A new conversation (from a panel, ``%agent new`` or ``chat()``): panels clear."""
        self.runs.clear()
        self.approvals.clear()
        self._broadcast(self.state())

    def _settings_changed(self, _change: Any) -> None:
        self._mark_session()

    def _op_mode(self, comm: Any, data: dict[str, Any]) -> None:
        self.session.set_defaults(permission_mode=str(data.get("mode")))

    def _op_approve(self, comm: Any, data: dict[str, Any]) -> None:
        entry = self._approval_for(data)
        if entry is None or entry[0].done:
            self._error(comm, "That approval was already answered (or its run ended).")
            return
        request, choice = entry[0], data.get("choice")
        feedback = data.get("feedback") if isinstance(data.get("feedback"), str) else ""
        try:
            request.answer(str(choice), feedback)
        except ValueError as exc:  # a word the panel does not send: say so, answer nothing
            self._error(comm, str(exc))

    def _op_undo(self, comm: Any, data: dict[str, Any]) -> None:
        """Undo an ended run (``run``: its id); the panels show what it did when it is done."""
        watched = self.runs.get(str(data.get("run")))
        if watched is None:
            self._error(comm, "That run is no longer in this conversation.")
            return
        watched.handle.undo().add_done_callback(lambda _t: self._run_ended(watched))
        self._run_ended(watched)

    def _approval_for(self, data: dict[str, Any]) -> tuple[Any, Any] | None:
        """The approval an ``approve`` message answers: by its call's ``tool_use_id``, or
        by the request's ``request`` number (what panels before ``tool_use_id`` sent)."""
        tool_use_id = data.get("tool_use_id")
        if isinstance(tool_use_id, str) and tool_use_id:
            return next((e for e in self.approvals.values() if e[0].tool_use_id == tool_use_id), None)
        request = data.get("request")
        return self.approvals.get(request) if isinstance(request, int) else None

    # -- what the panels show -------------------------------------------------------------
    def session_header(self) -> dict[str, Any]:
        from ..loop.permission_result import PERMISSION_MODES
        from ..loop.usage import Usage

        session = self.session
        conv = session.conversation
        usage = Usage()
        usage.add(conv.usage)
        active = session.active
        if active is not None and not active.done:
            usage.add(active.model.total_usage)
        replay = conv.replay or (None if conv.model_ready or isinstance(conv.model_spec, str)
                                 else _env_replay())
        return {"model": conv.model_name, "permission_mode": conv.permission_mode,
                "modes": list(PERMISSION_MODES), "replay": redact(_name(replay)) if replay else "",
                "busy": active is not None and not active.done,
                "notebook": redact(session.notebook_path() or ""), "usage": _usage_json(usage, bool(replay)),
                "turns": sum(w.handle.model.turn_count for w in self.runs.values()),
                "context": self._context_meter(), "mcp": _mcp_payload(session)}

    def _context_meter(self) -> str:
        """How full the conversation's context is, as its latest run last measured it."""
        from ..view.labels import context_meter_text

        for watched in reversed(list(self.runs.values())):
            if watched.handle.model.context is not None:
                return context_meter_text(watched.handle.model.context)
        return ""

    def state(self) -> dict[str, Any]:
        self._adopt_runs()
        return {"type": "state", "session": self.session_header(),
                "runs": [w.full() for w in self.runs.values()],
                "approvals": self.approvals_json()}

    def approvals_json(self) -> list[dict[str, Any]]:
        out = []
        for request, handle in self.approvals.values():
            if request.done:
                continue
            # paths as the cell's approval card shows them
            out.append(approval_json(request, handle.display_id, handle.model.cwd))
        return out

    def _adopt_runs(self) -> None:
        """Show every run of the current conversation (those that ran before a panel
        connected too); forget runs of an earlier conversation."""
        conv = self.session._conversation
        current = set(map(id, conv.runs)) if conv is not None else set()
        for handle in self.session.runs:
            if id(handle.run) in current and handle.display_id not in self.runs:
                self._watch(handle, "cell")
        for key in [k for k, w in self.runs.items() if id(w.handle.run) not in current]:
            del self.runs[key]

    # -- runs -----------------------------------------------------------------------------
    def _run_started(self, handle: Any) -> None:
        """A run of this kernel's conversation started (a panel, a cell or chat())."""
        if handle.display_id not in self.runs:
            self._watch(handle, "panel" if self._sending else "cell")
        self._adopt_runs()
        self._mark_session()

    def _watch(self, handle: Any, origin: str) -> None:
        watched = self.runs[handle.display_id] = _Watched(handle, origin)
        for item in handle.model.items:  # what it had before we listened (the prompt)
            watched.dirty[id(item)] = item
        handle.model.listen(lambda kind, item: self._model_changed(watched, kind, item))
        handle.add_done_callback(lambda _h: self._run_ended(watched))
        broker = getattr(handle.broker, "requests", None)
        if broker is not None:
            broker.listeners.append(lambda request: self._approval_asked(request, handle))
            for request in list(broker.pending):
                self._approval_asked(request, handle)

    def _model_changed(self, watched: _Watched, kind: str, item: Any) -> None:
        if kind in ("add", "remove"):
            watched.order_changed = True
        if kind in ("add", "update") and item is not None:
            watched.dirty[id(item)] = item
        watched.header_changed = True
        self._mark()

    def _run_ended(self, watched: _Watched) -> None:
        watched.header_changed = True
        self._mark_session()
        self.frames.flush()  # the end is shown at once

    def _approval_asked(self, request: Any, handle: Any) -> None:
        self.approvals[request.id] = (request, handle)
        self._approvals_changed = True
        request.future.add_done_callback(lambda _f: self._approval_settled(request))
        self._mark()

    def _approval_settled(self, request: Any) -> None:
        self.approvals.pop(request.id, None)
        self._approvals_changed = True
        self._mark()

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
        if not (runs or self._approvals_changed or self._session_changed) or not self.comms:
            self._approvals_changed = self._session_changed = False
            return
        update: dict[str, Any] = {"type": "update", "session": self.session_header(), "runs": runs,
                                  "run_ids": list(self.runs)}
        if self._approvals_changed:
            update["approvals"] = self.approvals_json()
        self._approvals_changed = self._session_changed = False
        self._broadcast(update)

    def close(self) -> None:
        """Stop listening (``%unload_ext``); connected panels are told by the comm's close."""
        for listeners, fn in ((self.session.listeners, self._run_started),
                              (self.session.reset_listeners, self._conversation_reset)):
            if fn in listeners:
                listeners.remove(fn)
        self.session.config.unobserve(self._settings_changed, names=list(_SETTINGS))
        self.frames.close()
        for comm in list(self.comms):
            try:
                comm.close()
            except Exception:  # already closed by the page
                log.debug("could not close a panel comm", exc_info=True)
        self.comms.clear()


def _prompt_context(data: dict[str, Any]) -> str:
    """Where the user is, from a ``send``'s ``context`` (cell_help.py)."""
    from .cell_help import prompt_context

    return prompt_context(data.get("context"))


def _mismatch(version: Any) -> str:
    return version_mismatch("panel", version, PROTOCOL_VERSION)


def _plain(exc: Exception) -> bool:
    """Errors whose message is written for the user (said as is)."""
    from .session import AgentBusy, NoApiKey

    return isinstance(exc, (AgentBusy, NoApiKey, ValueError))


def _env_replay() -> str | None:
    import os

    from ..environment import REPLAY_ENV, resolve_transcript

    replay = os.environ.get(REPLAY_ENV) or None
    try:
        return resolve_transcript(replay) if replay else None
    except FileNotFoundError:
        return replay


def _name(path: str) -> str:
    from pathlib import Path

    return Path(path).name


def register(shell: Any, session: Any) -> PanelHub | None:
    """Register :data:`TARGET` on ``shell``'s kernel (``%load_ext``); once per session."""
    kernel = getattr(shell, "kernel", None)
    manager = getattr(kernel, "comm_manager", None)
    if manager is None:
        return None  # terminal IPython: no frontend can open a panel
    hub = getattr(session, "panel_hub", None)
    if hub is None:
        hub = session.panel_hub = PanelHub(session)
    manager.register_target(TARGET, hub.open)
    return hub


def unregister(shell: Any, session: Any) -> None:
    """Undo :func:`register` (``%unload_ext``)."""
    manager = getattr(getattr(shell, "kernel", None), "comm_manager", None)
    if manager is not None:
        try:
            manager.unregister_target(TARGET, None)
        except Exception:  # not registered (a failed %load_ext)
            log.debug("could not unregister the panel target", exc_info=True)
    hub = getattr(session, "panel_hub", None)
    if hub is not None:
        hub.close()
        session.panel_hub = None


def _mcp_payload(session: Any) -> Any:
    # Imported here: the MCP side imports the loop and pydantic, which %load_ext leaves to
    # the background warm-up (jupyter/warmup.py); the first session header comes later.
    from .mcp_status import mcp_payload

    return mcp_payload(session)
