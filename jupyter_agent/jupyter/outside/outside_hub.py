"""The kernel side of jupyter-agent's MCP server: an outside agent's calls, carried out here.

The Jupyter server extension (``mcp_server/``) opens a comm to :data:`TARGET`, registered at
``%load_ext``, with one call as the open's data (``mcp_server/protocol.py``); this module
answers with one message and closes the comm. Each call works on the notebook a JupyterLab
page of this kernel shows (through the live-notebook bridge: the page shows every change at
once, one undo step each, stale edits refused), as a call of the client's
:class:`~.outside_run.OutsideRun`: approvals through the panel's cards, a run that
``%agent undo`` puts back. Every string returned is redacted.

Comm messages may arrive on another thread (a JupyterLab subshell): each call hops to the
kernel's event loop, and runs there as a task (the page's answers come as comm messages too,
which a handler that waited would block).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import Refused
from ...mcp_server.protocol import OPS, TARGET, VERSION, run_tag
from ...redact import redact
from ..bridge.comm_hubs import register_hub, unregister_hub
from ..bridge.kernel_types import Comm, Shell, comm_manager_of, kernel_of

if TYPE_CHECKING:  # (the loop and pydantic load with the first call, not at %load_ext)
    from ...loop.tool import FileReadRecord
    from ...notebook.session import PageNotebook
    from ..bridge.kernel_bridge import Page
    from ..bridge.kernel_links import KernelLinks
    from ..kernel.agent_session import AgentSession

log = logging.getLogger(__name__)

#: What a read returns by default, per cell: characters of source.
READ_CHARS = 4_000
#: Characters of a variables listing at most.
VARIABLES_CHARS = 20_000


class OutsideHub:
    """Every outside client's run on this kernel, and the comm target their calls come to."""

    def __init__(self, session: AgentSession, links: KernelLinks,
                 loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.session = session
        #: the bridge to the pages (and the rest of the kernel's links), from the services' owner
        self.links = links
        self.loop = loop or asyncio.get_event_loop()
        #: (client name, connection) -> its current run (a new one once the last was undone).
        #: The connection is the client's MCP session ('' without one): two clients of the
        #: same name (two Claude Code sessions) keep their own reads and undo.
        self.runs: dict[tuple[str, str], Any] = {}
        #: (client name, connection) -> the notebooks' versions it last read (the stale-edit check)
        self.reads: dict[tuple[str, str], dict[str, FileReadRecord]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    # -- comms (any thread) ----------------------------------------------------------------
    def open(self, comm: Comm, open_msg: dict[str, Any]) -> None:
        """The comm target's handler: one call, in the open's data."""
        data = (open_msg.get("content") or {}).get("data")
        try:
            self.loop.call_soon_threadsafe(self._start, comm, data)
        except RuntimeError:  # the kernel's loop is closed: it is going down
            log.debug("the kernel's loop is closed; an outside call is dropped")

    def _start(self, comm: Comm, data: Any) -> None:
        task = self.loop.create_task(self._serve(comm, data))
        self._tasks.add(task)  # (a task nobody references may be collected while it runs)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, comm: Comm, data: Any) -> None:
        def progress(text: str) -> None:
            try:
                comm.send({"v": VERSION, "progress": redact(text)})
            except Exception:  # the server went away: the answer will not reach it either
                log.debug("could not send an outside call's progress", exc_info=True)

        from ...notebook.live_backend import RUN_TAG

        RUN_TAG.set(run_tag(str(getattr(comm, "comm_id", "") or "")))  # (this task's own context)
        if isinstance(data, dict) and data.get("op") == "watch" and data.get("v") == VERSION:
            from .outside_watch import watch_notebook

            await watch_notebook(self, comm, data)  # (kept open: a resource subscription)
            return
        try:
            reply = await self.call(data, progress)
        except Refused as exc:
            reply = {"ok": False, "error": str(exc)}
        except asyncio.CancelledError:
            reply = {"ok": False, "error": "The call was cancelled in the kernel (it is shutting down?)."}
        except KeyboardInterrupt:  # an interrupt that came as the call's cell ended: still answer
            reply = {"ok": False, "error": "The call was interrupted in the kernel (a kernel interrupt)."}
        except Exception as exc:  # a bug here must still answer the client
            log.warning("an outside call failed", exc_info=True)
            reply = {"ok": False, "error": f"The call failed in the kernel: {type(exc).__name__}: {exc}"}
        reply["v"] = VERSION
        try:
            comm.send(_redacted(reply))
            comm.close()
        except Exception:  # the server went away: nobody is waiting for the answer
            log.debug("could not answer an outside call", exc_info=True)

    # -- the loop thread -----------------------------------------------------------------
    async def call(self, data: Any, progress: Any = None) -> dict[str, Any]:
        """Carry out one call (``mcp_server/protocol.py``); returns the reply. ``progress(text)``
        tells the server how a long call goes."""
        if not isinstance(data, dict) or data.get("v") != VERSION:
            version = data.get("v") if isinstance(data, dict) else None
            raise Refused(f"This kernel's jupyter-agent speaks outside-call version {VERSION}, the server sent "
                          f"{version!r}: restart the kernel after installing the same jupyter-agent as the server.")
        op, path, args = data.get("op"), data.get("path"), data.get("args")
        client = str(data.get("client") or "an MCP client")[:200]
        connection = str(data.get("connection") or "")[:200]
        if op not in OPS or not isinstance(path, str) or not isinstance(args, dict):
            raise Refused(f"Malformed call: op {op!r}.")
        if op == "variables":  # the kernel's own: no page needed
            return {"ok": True, "content": [{"type": "text", "text": self._variables()}]}
        if op == "active":  # what the pages of this kernel say of their notebook (read-only)
            from .outside_focus import focus_of_pages

            return await focus_of_pages(self.links.bridge)
        if op == "page":  # (page_for refused if none shows it)
            self._page_for_or_greet(path)
            return {"ok": True, "content": []}
        page, where = self.page_for(path)
        run = self.run_for(client, connection)
        if op == "create":  # a new notebook, written as the agent's Write, opened in this page
            from .outside_create import CannotCreate, create_notebook

            try:
                result, said = await create_notebook(run, page, where, args, progress, self.links.bridge)
            except CannotCreate as exc:
                raise Refused(str(exc)) from None
            content = [{"type": "text", "text": said}] if said else blocks_of(result.block.get("content"))
            return {"ok": bool(said), "outcome": result.outcome.value, "content": content}
        if op == "restart":  # the user's decision only: the server restarts the kernel
            result = await run.ask_restart(where.key, self._names(), page.client_id)
            if not result.block.get("is_error"):
                self._close_page_comms()
            return {"ok": not result.block.get("is_error"), "outcome": result.outcome.value,
                    "content": blocks_of(result.block.get("content"))}
        document = self._document(run, page, where)
        if op == "exec":  # scratch code: no cell, so no stale check (the card shows the whole code)
            return await self._execute(run, where.key, args, progress, page.client_id)
        if op == "read":
            return await self._read(run, document, where.key, args)
        if op == "output":
            return await self._output(document, args)
        await self._check_read(run, document, where.key, path)
        return await self._change(run, where.key, op, args, progress, page.client_id)

    def run_for(self, client: str, connection: str = "") -> Any:
        """The client's current run on ``connection`` (a new one, shown by the panel, when it
        has none or its last was undone)."""
        from .outside_run import OutsideRun

        key = (client, connection)
        run = self.runs.get(key)
        if run is None or run.undone:
            run = self.runs[key] = OutsideRun(self.session, client, self.reads.setdefault(key, {}), self.links)
            self.session.runs.append(run)
            for listener in list(self.session.listeners):  # the panel shows it
                try:
                    listener(run)
                except Exception:  # one broken listener must not refuse the call
                    log.debug("a run listener failed on an outside run", exc_info=True)
        return run

    def _variables(self) -> str:
        """The kernel's variables as the agent is told them at run start (``kernel_context.py``:
        by identity, no code of the user's objects run)."""
        from ..kernel.kernel_context import kernel_variables

        shell = self.session.shell
        namespace = getattr(shell, "user_ns", None)
        if not isinstance(namespace, dict):
            return "(This kernel has no user namespace.)"
        lines = kernel_variables(namespace, hidden=getattr(shell, "user_ns_hidden", None), max_names=500,
                                 max_chars=VARIABLES_CHARS)
        return "Variables in the kernel (name: type, shape):\n" + "\n".join(lines) if lines else \
            "The kernel has no variables defined yet."

    def _close_page_comms(self) -> None:
        """Before the server restarts this kernel: close its comms with the pages (the side
        panel's, the widgets'), so each page part knows this kernel is gone and connects to
        the fresh one once jupyter-agent is loaded there. (A restart by the server, unlike the
        page's own, is not announced to the page.) The outside calls' comms stay: their
        answers, and the server's restart error for them, go that way."""
        manager = comm_manager_of(self.session.shell)
        for comm in list(manager.comms.values() if manager is not None else ()):
            if getattr(comm, "target_name", None) == TARGET:
                continue
            try:
                comm.close()
            except Exception:  # already closed
                log.debug("could not close a comm before a restart", exc_info=True)

    def _names(self) -> list[str] | None:
        """The user's variables, which a restart loses (names only: nothing of theirs runs)."""
        shell = self.session.shell
        namespace = getattr(shell, "user_ns", None)
        if not isinstance(namespace, dict):
            return None
        hidden = getattr(shell, "user_ns_hidden", None) or {}
        return sorted(n for n in namespace if not n.startswith("_") and n not in hidden)

    def _page_for_or_greet(self, path: str) -> None:
        """``page_for``, and when this kernel knows no page at all, greet the pages again
        before refusing. After a restart by the server the fresh kernel greets the pages once,
        when jupyter-agent is loaded in it, and a page's connection to the fresh kernel's IOPub
        may come back only after that greeting went (seen over a gateway): the server asks for
        the page until it answers, and each ask greets again."""
        try:
            self.page_for(path)
        except Refused:
            bridge = self.links.bridge
            if bridge is not None and bridge.started and not any(not p.gone for p in bridge.pages.values()):
                bridge.open_broadcast()
            raise

    def page_for(self, path: str) -> tuple[Page, PageNotebook]:
        """The page of this kernel that shows notebook ``path`` (server-relative), and where
        the tools find that notebook."""
        from ..bridge.live_notebook import _kernel_cwd, page_notebook

        bridge = self.links.bridge
        wanted = _norm(path)
        pages = [p for p in (bridge.pages.values() if bridge is not None else ()) if not p.gone and p.path]
        page = next((p for p in pages if _norm(p.path) == wanted), None)
        if page is None:
            shown = ", ".join(sorted({p.path for p in pages})) or "none"
            raise Refused(f"No JupyterLab page with jupyter-agent shows {path} on this kernel (pages here show: "
                          f"{shown}). Open the notebook in JupyterLab (or reload its page), then try again.")
        if not page.compatible:
            from ..bridge.kernel_bridge import mismatch_message

            raise Refused(mismatch_message(page.protocol))
        where = page_notebook(page, self.session.notebook_path(), _kernel_cwd())
        if where is None:
            raise Refused(f"The page showing {path} did not say where the notebook is; reload it.")
        return page, where

    def _document(self, run: Any, page: Any, where: Any) -> Any:
        """The run's live document for ``where`` as ``page`` shows it (made again when
        another page, or a reload of it, now answers for the notebook)."""
        from ...notebook import register_document
        from ...notebook.session import tool_session
        from ..bridge.live_notebook import live_notebook

        session = tool_session(run.context)
        document = session.notebook_documents.get(where.key)
        if document is None or getattr(document, "client_id", None) != page.client_id:
            document = live_notebook(self.links, page.client_id, where)
            register_document(session, document)
        if where.remote:
            session.page_notebook = where
        return document

    async def _read(self, run: Any, document: Any, key: str, args: dict[str, Any]) -> dict[str, Any]:
        """Cells ``start``.. of the page's notebook (at most ``limit``; or the one cell
        ``cell_id``), each cut to ``max_chars``; remembers the version read, for the stale check of the next edit."""
        from ...loop.tool import FileReadRecord
        from .outside_read import cells_content

        snapshot = await document.snapshot()
        start, limit = _int(args.get("start"), 0), _int(args.get("limit"), 20)
        if isinstance(args.get("cell_id"), str):  # one cell (its resource, mcp_server/resources.py)
            start, limit = self._index_of(snapshot, args["cell_id"]), 1
        chars = _int(args.get("max_chars"), READ_CHARS)
        run.context.read_file_state[key] = FileReadRecord(path=key, mtime_ns=0, content_hash=snapshot.version)
        return {"ok": True, "content": cells_content(snapshot, start, limit, chars)}

    @staticmethod
    def _index_of(snapshot: Any, cell_id: str) -> int:
        index: int | None = next((c.index for c in snapshot.cells if c.id == cell_id), None)
        if index is None:
            raise Refused(f"No cell {cell_id!r} in {snapshot.path.name} (as the page shows it now; deleted?). "
                          "Read the notebook's resource, or call read_cells, for its cells' ids.")
        return index

    async def _output(self, document: Any, args: dict[str, Any]) -> dict[str, Any]:
        """One output whole, within ``max_chars`` (``outside_read.py``). Not a read for the
        stale check: the client has not seen the cells' sources by it."""
        from .outside_read import OUTPUT_CHARS, NoSuchOutput, output_content

        snapshot = await document.snapshot()  # (outputs current: not sources_snapshot)
        try:
            blocks = output_content(snapshot, str(args.get("cell_id") or ""), _int(args.get("output_index"), 0),
                                    _int(args.get("max_chars"), OUTPUT_CHARS))
        except NoSuchOutput as exc:
            raise Refused(str(exc)) from None
        return {"ok": True, "content": blocks}

    async def _change(self, run: Any, key: str, op: str, args: dict[str, Any], progress: Any = None,
                      page: str = "") -> dict[str, Any]:
        if op == "run_range":
            return await self._run_range(run, key, args, progress, page)
        if op == "move":
            return await self._move(run, key, args, progress, page)
        if op == "run":
            name, tool_input = "NotebookRun", {"notebook_path": key, "cell_id": args.get("cell_id")}
        else:
            name = "NotebookEdit"
            tool_input = {"notebook_path": key, "edit_mode": op, "new_source": args.get("source", "")}
            cell_id = args.get("after_cell_id") if op == "insert" else args.get("cell_id")
            if cell_id is not None:
                tool_input["cell_id"] = cell_id
            if args.get("cell_type") is not None:
                tool_input["cell_type"] = args["cell_type"]
        if tool_input.get("cell_id") is not None:
            self._check_cell(run, key, str(tool_input["cell_id"]))
        from ...tools.notebook_run import NotebookRun
        from .outside_edit import OutsideNotebookEdit

        result = await run.call_tool(name, tool_input, progress, page, tools=[OutsideNotebookEdit(), NotebookRun()])
        return reply_of(result)

    async def _execute(self, run: Any, key: str, args: dict[str, Any], progress: Any, page: str) -> dict[str, Any]:
        """``execute_code``: scratch code in this kernel, as the agent's own KernelRun (its rules,
        ``KernelRun(path)``, the policy, the card with the whole code; no cell, nothing saved)."""
        from ...tools.kernel_run import KernelRun

        tool_input = {"notebook_path": key, "code": str(args.get("code") or ""),
                      "timeout": (_int(args.get("timeout_seconds"), 60) or 60) * 1000}
        result = await run.call_tool("KernelRun", tool_input, progress, page, tools=[KernelRun()])
        return reply_of(result)

    async def _move(self, run: Any, key: str, args: dict[str, Any], progress: Any, page: str) -> dict[str, Any]:
        """``move_cell``: the cell moved as it is by the page, as the agent's own NotebookEdit
        (``outside_move.py``: its rules, the policy, the card with what moves where)."""
        from .outside_move import OutsideNotebookMove

        tool_input: dict[str, Any] = {"notebook_path": key, "edit_mode": "move"}
        for field in ("cell_id", "after_cell_id", "before_cell_id"):
            if args.get(field) is not None:
                self._check_cell(run, key, str(args[field]))
                tool_input[field] = args[field]
        result = await run.call_tool("NotebookEdit", tool_input, progress, page, tools=[OutsideNotebookMove()])
        return reply_of(result)

    async def _run_range(self, run: Any, key: str, args: dict[str, Any], progress: Any, page: str) -> dict[str, Any]:
        """``run_cells``: the range's code cells in order, asked once, as the agent's own
        NotebookRunCells (its rules, ``NotebookRunCells(path)``, the policy, the card with every cell)."""
        from ...tools.notebook_run_cells import NotebookRunCells

        # every cell's outputs, as this server's run_cells has always answered
        tool_input: dict[str, Any] = {"notebook_path": key, "all_outputs": True}
        for ours, theirs in (("start_cell_id", "from_cell_id"), ("end_cell_id", "to_cell_id")):
            if args.get(ours):
                self._check_cell(run, key, str(args[ours]))
                tool_input[theirs] = args[ours]
        result = await run.call_tool("NotebookRunCells", tool_input, progress, page, tools=[NotebookRunCells()])
        return reply_of(result)

    async def _check_read(self, run: Any, document: Any, key: str, path: str) -> None:
        """Said in this server's words before the tool says it in the agent's (its Read):
        the client must have read the notebook as it is now. The tool checks again, and the
        page once more as it applies the change."""
        record = run.context.read_file_state.get(key)
        if record is None:
            raise Refused(f"Call read_cells on {path} first: an edit or run is checked against the notebook "
                          "as you last read it. Nothing was changed.")
        snapshot = await document.sources_snapshot()
        if snapshot.version != record.content_hash:
            raise Refused(f"{path} changed since your last read_cells (the user, or another agent, edited it). "
                          "Call read_cells again, then retry. Nothing was changed.")

    def _check_cell(self, run: Any, key: str, cell_id: str) -> None:
        """A position id (``cell-N``) is the agent's own shorthand: outside agents name cells
        by their stable ids (an index moves with every insert)."""
        from ...notebook.document import POSITION_ID

        if POSITION_ID.match(cell_id):
            raise Refused(f"{cell_id!r} is a position, not a cell id: use the id read_cells shows. "
                          "Nothing was changed.")

    def close(self) -> None:
        """``%unload_ext``: cancel the calls still going (each answers that it was cancelled)."""
        for task in list(self._tasks):
            task.cancel()


def reply_of(result: Any) -> dict[str, Any]:
    """A tool call's ``CallResult`` as the call's reply (a tool error is ``ok`` false)."""
    return {"ok": not result.block.get("is_error"), "outcome": result.outcome.value,
            "content": blocks_of(result.block.get("content"))}


def blocks_of(content: Any) -> list[dict[str, Any]]:
    """A ``tool_result``'s content (a string, or Anthropic text and image blocks) as reply blocks."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    out: list[dict[str, Any]] = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "image":
            source = block.get("source") or {}
            out.append({"type": "image", "data": source.get("data", ""), "mime_type": source.get("media_type", "")})
        elif block.get("type") == "text":
            out.append({"type": "text", "text": str(block.get("text") or "")})
    return out


def _redacted(reply: dict[str, Any]) -> dict[str, Any]:
    """Every text of a reply redacted (an image's bytes are not text)."""
    out = dict(reply)
    if isinstance(out.get("error"), str):
        out["error"] = redact(out["error"])
    out["content"] = [{**b, "text": redact(b["text"])} if b.get("type") == "text" else b
                      for b in out.get("content") or []]
    return out


def _norm(path: str) -> str:
    return Path("/" + path.replace("\\", "/").lstrip("/")).as_posix()


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def register(shell: Shell | None, session: AgentSession, hub: OutsideHub | None,
             links: KernelLinks) -> OutsideHub | None:
    """Register :data:`TARGET` on ``shell``'s kernel (``%load_ext``), answered by ``hub`` (a new
    one for ``session``, through ``links``' bridge, when None); the hub, for its owner to keep
    (``KernelServices.outside_hub``). The target joins ``links.quiet_opens``: the calls' opens
    publish no busy/idle (``bridge_status.py``)."""
    hub = register_hub(shell, TARGET, hub, lambda: OutsideHub(session, links))
    kernel = kernel_of(shell)
    if hub is not None and kernel is not None:
        links.quiet_opens.add(TARGET)  # the page re-renders on every busy/idle: none for these (bridge_status.py)
        from .outside_redact import install

        install(kernel)  # the outside runs' outputs leave this kernel redacted (its secrets are here)
    return hub


def unregister(shell: Shell | None, hub: OutsideHub | None, links: KernelLinks) -> None:
    """Undo :func:`register` (``%unload_ext``): the target goes, ``hub`` closes its comms."""
    unregister_hub(shell, TARGET, hub)
    links.quiet_opens.discard(TARGET)
