"""An outside agent's calls in this kernel as one run: its approvals, its changes, its undo.

An MCP client (Claude Code, Cursor...) reaches this kernel through the Jupyter server
extension (``outside_hub.py`` takes its calls). Its edits and runs are the agent's own tools,
NotebookEdit and NotebookRun, called through the loop's ``run_tool_call``: the same
permission decision (mode, rules, the administrator's policy), the same approval broker and
cards (in the side panel and under the notebook of the call: the card says who asks), the
same stale-edit check and the same record of what changed. :class:`OutsideRun` is to the
panel, ``%agent runs`` and ``%agent undo`` what an ``AgentRun`` is: a run of this kernel,
undone in one step. It has no model and never ends by itself; once undone, the client's next
call starts a new run.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ...changes import RunChanges, UndoReport
from ...loop.events import ToolProgress, ToolResult
from ...loop.permission_result import PermissionAsk, PermissionDeny
from ...loop.services import Services
from ...loop.tool import AnyTool, FileReadRecord, ToolContext, ToolOutput
from ...loop.wire import ToolUseBlock
from ...redact import redact
from ...tools.notebook_restart import NotebookRestart, variables_phrase
from ...view.runmodel import RunModel
from ..widgets.approvals import ApprovalCards

if TYPE_CHECKING:
    from ..bridge.kernel_links import KernelLinks
    from ..kernel.agent_session import AgentSession

log = logging.getLogger(__name__)

_ids = itertools.count(1)

#: An ask with nobody to see it: the approval cards of outside calls show under the notebook and
#: in the side panel, both fed by the side panel's comm, which follows the page's current notebook;
#: a page showing the notebook in the background is told instead (``outside_ask.py``), unless it
#: is an older page, or none shows it.
NO_PANEL = ("This call needs the user's approval, and no JupyterLab page with jupyter-agent follows this "
            "notebook's kernel to ask in (its side panel follows the notebook that is current in the page). "
            "Ask the user to bring the notebook to the front in JupyterLab (or to reload its page, if the page "
            "could not be told: an older jupyter-agent), then retry. Nothing was changed.")


class OutsideRun:
    """The calls of one outside client on this kernel's notebooks, as a run (see module doc)."""

    def __init__(self, session: AgentSession, client: str, reads: dict[str, FileReadRecord],
                 links: KernelLinks) -> None:
        conv = session.conversation
        self.session = session
        self.links = links  # the bridge: an ask no side panel shows is told to the page
        self.client = client
        self.display_id = f"jupyter-agent-outside-{uuid.uuid4().hex}"
        self.prompt = f"Calls of {client} (an outside agent, over MCP)"
        self.model = RunModel(prompt=self.prompt, model=f"outside: {client}",
                              permission_mode=conv.permission_mode, cwd=conv.context.cwd)
        self.model.status = "waiting for the next call"
        self.changes = RunChanges()
        self.model.changes = self.changes
        #: the run's tools' context: the conversation's permissions (its rules, mode and
        #: "Always allow"s), this run's record of changes, the client's reads (stale checks)
        self.context = ToolContext(cwd=conv.context.cwd, permissions=conv.permissions, read_file_state=reads,
                                   services=Services(self.changes))
        from ...notebook.session import tool_session

        tool_session(self.context).save_full_tracebacks = False  # (its read_output gives the whole output)
        self.broker = ApprovalCards(None, self.model, conv.permissions)
        self.conversation = None  # no conversation of the model's (its history is the client's)
        self.run = self  # (the panel keeps runs by their loop run)
        self.terminal = None
        self.error: str | None = None
        self.interactive = True
        self._undo: asyncio.Task[UndoReport] | None = None
        self._calls = 0
        #: the client's calls carried out as the agent's tools (edits, runs, restarts; not its
        #: reads): what the panel and ``%agent runs`` count for it, as turns for a model's run
        self.calls_made = 0
        self._callbacks: list[Any] = []
        #: tool_use_id -> the client id of the page its call works on (where its card shows
        #: under the notebook too), while the call is carried out
        self._pages: dict[str, str] = {}

    # -- what the fronts read of a run ----------------------------------------------------
    @property
    def done(self) -> bool:
        """No call of the client is being carried out now (so the run may be undone)."""
        return self._calls == 0

    @property
    def undone(self) -> bool:
        return self._undo is not None

    @property
    def undo_report(self) -> UndoReport | None:
        return self.changes.undo_report

    def add_done_callback(self, callback: Any) -> None:
        """``callback(run)`` after each call (an outside run does not end; between its calls
        the panel shows it as ended, with Undo this run)."""
        self._callbacks.append(callback)

    def stop(self) -> None:
        """Stop: deny the client's pending asks (the panel's and ``%agent stop``'s Stop)."""
        self.broker.cancel_all("Stopped.")
        self.broker.closed = False  # the client's next call asks again

    def undo(self) -> asyncio.Task[UndoReport]:
        """Put back the cells this run changed (one step of the notebook's own undo), except
        those changed since; later calls of the client start a new run."""
        if not self.done:
            raise RuntimeError("A call of the outside agent is being carried out: undo once it is done.")
        from ...tools.undo import undo_run, undo_settled

        if not undo_settled(self._undo):  # (once, unless it failed: as AgentRun.undo)
            self._undo = asyncio.get_event_loop().create_task(undo_run(self.changes, self.context))
        return self._undo

    # -- calls ----------------------------------------------------------------------------
    def page_of(self, tool_use_id: str | None) -> str:
        """The client id of the page whose notebook the call ``tool_use_id`` works on ("" when
        unknown): its approval card shows under that notebook as well as in the panel."""
        return self._pages.get(tool_use_id or "", "")

    async def call_tool(self, name: str, tool_input: dict[str, Any], progress: Any = None, page: str = "",
                        tools: list[AnyTool] | None = None) -> Any:
        """Call the agent's tool ``name`` as this client: a ``CallResult`` (the tool's
        ``tool_result`` block and outcome). ``progress(text)`` hears what the tool reports
        as it goes (a running cell, every second); ``page`` is the client id of the page
        that shows the notebook (its card shows under that notebook)."""
        from ...loop.tool_execution import ToolRunEnv, run_tool_call
        from ...tools.notebook_edit import NotebookEdit
        from ...tools.notebook_run import NotebookRun

        by_name: dict[str, AnyTool] = {t.name: t for t in (tools or (NotebookEdit(), NotebookRun()))}
        tool_use_id = f"outside_{next(_ids)}_{uuid.uuid4().hex[:8]}"
        def emit(event: Any) -> None:
            self.model.handle(event)
            if progress is not None and isinstance(event, ToolProgress) and isinstance(event.data, str):
                progress(event.data)

        async def ask(tool_name: str, tool_input: dict[str, Any], ask: PermissionAsk) -> Any:
            return await self._ask(tool_name, tool_input, ask, page)

        env = ToolRunEnv(tools_by_name=by_name, context=self.context, can_use_tool=ask, emit=emit)
        self._calls += 1
        if page:
            self._pages[tool_use_id] = page
        self.model.status = f"carrying out a call of {self.client}"
        # The call shows as the model's tool call would (the approval card finds it by its id).
        self.model.handle(_announce(tool_use_id, name, tool_input))
        started = time.perf_counter()
        try:
            block = ToolUseBlock(type="tool_use", id=tool_use_id, name=name, input=tool_input)
            result = await run_tool_call(block, env)
        finally:
            self._calls -= 1
            self.calls_made += 1
            self._pages.pop(tool_use_id, None)
        self.model.handle(ToolResult(tool_use_id, name, result.block, time.perf_counter() - started, result.outcome,
                                     result.exception))
        self.model.set_status("waiting for the next call")
        # On the loop's next turn: the call's answer goes out first (the caller sends it
        # without yielding), the panel's "ended" frame after it (2-3 ms of the kernel's time
        # per call, measured, that the client would otherwise wait for).
        asyncio.get_event_loop().call_soon(self._ended)
        return result

    def _ended(self) -> None:
        for callback in list(self._callbacks):
            try:
                callback(self)
            except Exception:  # one broken listener must not fail the next call
                log.debug("a listener of an outside run failed", exc_info=True)

    async def ask_restart(self, key: str, names: list[str] | None, page: str = "") -> Any:
        """The user's decision on restarting this kernel, asked as NotebookRestart (its rules,
        ``NotebookRestart(path)``, and the policy apply; the card lists what is lost): a
        ``CallResult`` whose ``tool_result`` is an error when denied. The Jupyter server
        restarts the kernel once allowed (this kernel cannot outlive its own restart)."""
        return await self.call_tool("NotebookRestart", {"notebook_path": key}, page=page,
                                    tools=[RestartApproval(names)])

    async def _ask(self, tool_name: str, tool_input: dict[str, Any], ask: PermissionAsk, page: str = "") -> Any:
        """The broker's card, saying who asks (the ask's ``asker``, shown beside the question:
        the code stays exactly what will run, whatever the client's name). With no side panel
        following this kernel, the page that shows the notebook (``page``, in the background)
        is told by a notification until the ask is settled (``outside_ask.py``); with no such
        page, the call is refused."""
        notice = None
        services = self.session.services
        hub = services.panel_hub if services is not None else None
        if hub is None or not hub.comms:
            from .outside_ask import BackgroundAsk

            notice = await BackgroundAsk.show(self.links.bridge, page, self.client, tool_name, tool_input)
            if notice is None:
                return PermissionDeny(NO_PANEL)
        try:  # (who asks: a field of its own, never in the message a front splits into question and code)
            return await self.broker.can_use_tool(tool_name, tool_input, replace(ask, asker=self.client))
        finally:
            if notice is not None:
                notice.end()

    def __repr__(self) -> str:
        return redact(f"<OutsideRun {self.client!r} changes={len(self.changes.changes())}>")


class RestartApproval(NotebookRestart):
    """NotebookRestart's approval for the kernel of the open notebook, asked for an outside
    client: the same name (rules, policy, the card), with what is lost named; its call only
    says yes (the Jupyter server, which has the kernel's manager, restarts the kernel)."""

    def __init__(self, names: list[str] | None) -> None:
        super().__init__()
        self.names = names

    async def validate_input(self, input: Any, context: ToolContext) -> str | None:
        return self.validate_path_text(input, context)

    async def _variables(self, path: Any, input: Any, context: ToolContext) -> list[str] | None:
        return self.names

    async def call(self, input: Any, context: ToolContext, prepared: Any) -> ToolOutput:
        return ToolOutput(f"Allowed: the Jupyter server restarts the kernel of {input.notebook_path}; it loses "
                          f"{variables_phrase(self.names)}.")


def _announce(tool_use_id: str, name: str, tool_input: dict[str, Any]) -> Any:
    """The call as a run's tool call appears (a complete assistant message with its block)."""
    from ...loop.events import AssistantMessage
    from ...loop.usage import Usage

    block = ToolUseBlock(type="tool_use", id=tool_use_id, name=name, input=tool_input)
    return AssistantMessage({"role": "assistant", "content": [block]}, Usage(), "", "tool_use")

