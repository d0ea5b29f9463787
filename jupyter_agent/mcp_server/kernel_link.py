"""From the Jupyter server to the kernel of a notebook: one comm per outside call.

:class:`ServerBackend` finds a notebook's kernel through the server's session manager (the
sessions JupyterLab made for its open notebooks) and sends the call over a kernel client of
its own (ZMQ, as the server's websockets do): a ``comm_open`` to ``protocol.TARGET`` with
the call as data; the kernel's one ``comm_msg`` is the answer. Its ``comm_close`` without an
answer means the kernel has no such target (jupyter-agent not loaded there). A kernel that
restarts (its iopub says ``starting``) or dies while a call waits fails the call with a
clear error: the kernel's state, and the run being undone, are gone, and a new kernel is
never used silently. A kernel on a gateway (``--GatewayClient.url``) is reached over a
websocket to the gateway instead (``gateway.py``), its restarts told by its session id.
"""

from __future__ import annotations

import asyncio
import json
import logging
import posixpath
import uuid
from pathlib import Path
from typing import Any

from .gateway import GONE, GatewayChannels, is_gateway_kernel
from .protocol import RUN_TAG_PREFIX, TARGET, VERSION, Caller, comm_of_run
from .runs import DEFAULT_WAIT_S, MAX_WAIT_S, RunHandle, RunRegistry, RunState, status_reply, still_running
from .focus import active_text
from .tools import OutsideError

log = logging.getLogger(__name__)

#: Seconds a call may wait for its kernel (an approval waits for a person: generous).
CALL_TIMEOUT_S = 30 * 60.0
#: Seconds between two checks that the kernel still lives while a call waits.
ALIVE_EVERY_S = 2.0
#: Seconds a new kernel client waits for its iopub to be connected.
READY_TIMEOUT_S = 30.0
#: Seconds ``interrupt`` waits for the interrupted run's answer (else it says "still running").
INTERRUPT_WAIT_S = 20.0
#: Seconds execute_code waits beyond its code's time limit (the user's approval) before it
#: answers "still running" with a run_id.
EXEC_APPROVAL_WAIT_S = 30.0
#: Seconds active_notebook waits for each notebook's kernel (one busy with a cell is left out).
ACTIVE_WAIT_S = 5.0
#: After a restart's %load_ext: seconds between empty runs (the page's side panel and bridge
#: connect again after a cell they see run), and the most seconds to wait for the page to be back.
PANEL_NUDGE_EVERY_S, PAGE_BACK_S = 0.5, 30.0
#: Seconds after which an interrupt is sent again while the run's cell still executes.
INTERRUPT_AGAIN_S = 5.0

RESTARTED = ("The notebook's kernel restarted while the call waited: its variables, and the outside agent's run "
             "to undo, are gone (the call may not have been carried out). Run %load_ext jupyter_agent in the "
             "notebook again, call read_cells, then retry.")
DIED = ("The notebook's kernel stopped (it died, or is restarting) while the call waited: its variables, and "
        "the outside agent's run to undo, are gone. Once it runs again, run %load_ext jupyter_agent in the notebook, "
        "call read_cells, then retry.")


def kernel_epoch(kernel: Any, comms: KernelComms | None = None) -> Any:
    """What tells this kernel process from the next one a restart starts under the same id:
    its pid; a gateway's kernel (no pid here), how many new kernel sessions ``comms`` saw."""
    if comms is not None and isinstance(comms.client, GatewayChannels):
        return comms.client.restarts
    return getattr(getattr(kernel, "provisioner", None), "pid", None)


class KernelComms:
    """One kernel client of the server's own, its iopub read by a task; calls by comm id."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        # (a gateway's kernel: a websocket to the gateway, whose loss fails the waiting calls)
        self.client = GatewayChannels(kernel, self.fail_all) if is_gateway_kernel(kernel) else kernel.client()
        self.client.start_channels(shell=True, iopub=True, stdin=False, hb=False, control=False)
        self.waiting: dict[str, asyncio.Future[tuple[str, Any]]] = {}
        #: comm id -> what a call's progress messages go to
        self.progress: dict[str, Any] = {}
        #: comm id -> the run (``runs.RunHandle``) that sees the IOPub of the call's cell
        self.watching: dict[str, Any] = {}
        self._sending: set[asyncio.Task[Any]] = set()
        #: comm id -> ``heard(kind, data)``: a comm kept open (a resource watch: ``watch.py``)
        self.listeners: dict[str, Any] = {}
        self.ready: dict[str, asyncio.Future[None]] = {}
        #: execute request id -> its end (the kernel's ``idle`` after it), and what it raised
        self.executing: dict[str, asyncio.Future[str | None]] = {}
        self._errors: dict[str, str] = {}
        self.reader = asyncio.get_event_loop().create_task(self._read())
        self._connected = False

    async def _read(self) -> None:
        while True:
            try:
                msg = await self.client.iopub_channel.get_msg()
            except asyncio.CancelledError:
                raise
            except Exception:  # a malformed message: skip it
                log.debug("could not read a kernel's iopub message", exc_info=True)
                continue
            kind, content = msg["header"]["msg_type"], msg.get("content") or {}
            parent = str((msg.get("parent_header") or {}).get("msg_id") or "")
            watched = self.watching.get(comm_of_run(parent) or "") if parent.startswith(RUN_TAG_PREFIX) else None
            if watched is not None:  # a cell an outside call runs: its outputs so far
                try:
                    watched.saw(kind, content)
                except Exception:  # (this reader must go on: every call's answer comes this way)
                    log.warning("could not record a run's output", exc_info=True)
            if parent in self.ready and not self.ready[parent].done():
                self.ready[parent].set_result(None)
            if parent in self.executing:
                self._executed(parent, kind, content)
            try:
                self._dispatch(kind, content)
            except Exception:  # (this reader must go on: every call's answer comes this way)
                log.warning("could not handle a kernel's %s message", kind, exc_info=True)

    def _dispatch(self, kind: str, content: dict[str, Any]) -> None:
        """A call's answer, progress, or the kernel's restart."""
        if kind in ("comm_msg", "comm_close"):
            comm_id = str(content.get("comm_id") or "")
            future = self.waiting.get(comm_id)
            data = content.get("data")
            if comm_id in self.listeners:
                return self.listeners[comm_id](kind, data)
            if kind == "comm_msg" and isinstance(data, dict) and "progress" in data and "ok" not in data:
                self._report(comm_id, data["progress"])
            elif future is not None and not future.done():
                future.set_result((kind, content.get("data")))
        elif kind == "status" and content.get("execution_state") == "starting":
            self.fail_all(RESTARTED)

    def _executed(self, msg_id: str, kind: str, content: dict[str, Any]) -> None:
        if kind == "error":
            self._errors[msg_id] = f"{content.get('ename', '')}: {content.get('evalue', '')}"
        elif kind == "status" and content.get("execution_state") == "idle":
            future = self.executing[msg_id]
            if not future.done():
                future.set_result(self._errors.pop(msg_id, None))

    async def execute_quietly(self, code: str, timeout: float = READY_TIMEOUT_S) -> str | None:
        """Run ``code`` without history or execution count; what it raised, or None. After a
        restart: the new kernel is connected to first. (Not ``silent``: the page's side panel
        connects again after a cell it sees run, as after the user's own ``%load_ext``.)"""
        self._connected = False  # (a restarted kernel: its IOPub must carry our messages again)
        await self.connect()
        msg = self.client.session.msg("execute_request", {
            "code": code, "silent": False, "store_history": False, "user_expressions": {}, "allow_stdin": False,
            "stop_on_error": False})
        msg_id = msg["header"]["msg_id"]
        future = self.executing[msg_id] = asyncio.get_event_loop().create_future()
        self.client.shell_channel.send(msg)
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            return f"no answer in {timeout:.0f} s"
        finally:
            self.executing.pop(msg_id, None)
            self._errors.pop(msg_id, None)

    def _report(self, comm_id: str, text: Any) -> None:
        """A call's progress message (the kernel's words, e.g. "Cell c1 is running (4 s)")."""
        progress = self.progress.get(comm_id)
        if progress is None or not isinstance(text, str):
            return
        task = asyncio.get_event_loop().create_task(progress(text))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    @property
    def lost(self) -> str | None:
        """Why this client's connection to its kernel is gone for good (a gateway's websocket
        closed), else None."""
        return self.client.lost if isinstance(self.client, GatewayChannels) else None

    def fail_all(self, why: str) -> None:
        for future in self.waiting.values():
            if not future.done():
                future.set_exception(OutsideError(why))
        for heard in list(self.listeners.values()):  # (a restarted kernel's watches are gone)
            heard("comm_close", None)

    async def connect(self) -> None:
        """Wait until iopub carries this client's messages (a kernel_info request's status)."""
        if self._connected and not self.lost:
            return
        loop = asyncio.get_event_loop()
        deadline = loop.time() + READY_TIMEOUT_S
        while loop.time() < deadline:
            if self.lost:  # (a gateway's websocket closed, or never opened: gateway.py)
                raise OutsideError(self.lost)
            msg_id = self.client.kernel_info()
            future = self.ready[msg_id] = loop.create_future()
            try:
                await asyncio.wait_for(future, 1.0)
                self._connected = True
                return
            except TimeoutError:
                continue
            finally:
                self.ready.pop(msg_id, None)
        raise OutsideError("The notebook's kernel does not answer (busy for a long time, or dead): check it in "
                           "JupyterLab, then retry.")

    async def call(self, data: dict[str, Any], alive: Any, progress: Any = None,
                   watch: Any = None) -> dict[str, Any]:
        """Send one call; its answer. ``alive()`` says whether the kernel that got it still
        lives: raises OutsideError (restarted, died) when not. ``watch.saw(kind, content)``
        hears the IOPub messages of the cells the call runs."""
        await self.connect()
        comm_id = uuid.uuid4().hex
        future = self.waiting[comm_id] = asyncio.get_event_loop().create_future()
        if progress is not None:
            self.progress[comm_id] = progress
        if watch is not None:
            self.watching[comm_id] = watch
        msg = self.client.session.msg("comm_open", {"comm_id": comm_id, "target_name": TARGET, "data": data})
        self.client.shell_channel.send(msg)
        try:
            loop = asyncio.get_event_loop()
            deadline = loop.time() + CALL_TIMEOUT_S
            while True:
                done, _ = await asyncio.wait({future}, timeout=ALIVE_EVERY_S)
                if done:
                    break
                await alive()
                if loop.time() > deadline:
                    raise OutsideError(f"No answer from the notebook's kernel in {CALL_TIMEOUT_S / 60:.0f} minutes.")
        finally:
            self.waiting.pop(comm_id, None)
            self.progress.pop(comm_id, None)
            self.watching.pop(comm_id, None)
        kind, reply = future.result()
        if kind == "comm_close" or not isinstance(reply, dict):
            raise OutsideError("jupyter-agent is not loaded in this notebook's kernel: run %load_ext jupyter_agent "
                               "in the notebook (after a kernel restart too), then retry.")
        return reply

    def close(self) -> None:
        self.reader.cancel()
        try:
            self.client.stop_channels()
        except Exception:  # already stopped with its kernel
            log.debug("could not stop a kernel client's channels", exc_info=True)


class ServerBackend:
    """The notebooks open in one Jupyter server, and their kernels (``tools.NotebookBackend``)."""

    def __init__(self, serverapp: Any) -> None:
        self.app = serverapp
        self.comms: dict[str, KernelComms] = {}
        self.runs = RunRegistry()

    async def _sessions(self) -> list[dict[str, Any]]:
        sessions = await self.app.session_manager.list_sessions()
        return [s for s in sessions if s.get("type", "notebook") == "notebook" and s.get("kernel")]

    async def notebooks(self) -> list[dict[str, Any]]:
        return [{"path": s["path"], "kernel_id": s["kernel"]["id"],
                 "kernel_state": s["kernel"].get("execution_state", "")} for s in await self._sessions()]

    async def _reach(self, path: str) -> tuple[dict[str, Any], str, KernelComms, Any]:
        """The notebook's session, its kernel's id, the comms to it, and ``alive()`` (raises
        OutsideError once that kernel restarted or died)."""
        wanted = _norm(path)
        session = next((s for s in await self._sessions() if _norm(s["path"]) == wanted), None)
        if session is None:
            raise OutsideError(self._not_open(path))
        kernel_id = session["kernel"]["id"]
        manager = self.app.kernel_manager
        if kernel_id not in manager:
            raise OutsideError(f"The kernel of {path} is gone: start one in JupyterLab, then retry.")
        comms = self.comms.get(kernel_id)
        if comms is None or comms.kernel is not manager.get_kernel(kernel_id) or comms.lost:
            if comms is not None:
                comms.close()
            comms = self.comms[kernel_id] = KernelComms(manager.get_kernel(kernel_id))

        epoch = kernel_epoch(manager.get_kernel(kernel_id), comms)
        on_gateway = isinstance(comms.client, GatewayChannels)
        gone = GONE if on_gateway else DIED  # (a gateway's kernel: no restarter of this server's)

        async def alive() -> None:
            if comms.lost:
                raise OutsideError(comms.lost)
            if on_gateway:
                comms.client.ping()  # (its answer tells a restart: the gateway gives no pid)
            if kernel_id not in manager:
                raise OutsideError(gone)
            kernel = manager.get_kernel(kernel_id)
            if kernel_epoch(kernel, comms) != epoch:
                raise OutsideError(RESTARTED)
            result = kernel.is_alive()
            if not (await result if asyncio.iscoroutine(result) else result):
                raise OutsideError(gone)

        return session, kernel_id, comms, alive

    async def call(self, path: str, op: str, args: dict[str, Any], client: Caller,
                   progress: Any = None) -> dict[str, Any]:
        session, kernel_id, comms, alive = await self._reach(path)
        if op in ("run", "run_range", "exec"):
            return await self._run(session, kernel_id, comms, alive, op, dict(args), client, progress)
        return await comms.call(call_data(op, session["path"], args, client), alive, progress)

    async def _run(self, session: dict[str, Any], kernel_id: str, comms: KernelComms, alive: Any, op: str,
                   args: dict[str, Any], client: Caller, progress: Any) -> dict[str, Any]:
        """A cell run (or scratch code: ``exec``), in a task of its own: its answer if it ends
        within ``wait_seconds`` (scratch code: its time limit and the approval's time), else
        "still running" with its id (``runs.py``)."""
        if op == "exec":
            wait_s = min(float(args.get("timeout_seconds", 60)) + EXEC_APPROVAL_WAIT_S, MAX_WAIT_S)
        else:
            wait_s = min(float(args.pop("wait_seconds", DEFAULT_WAIT_S)), MAX_WAIT_S)
        cell_id = (str(args.get("cell_id")) if op == "run" else "(scratch code)" if op == "exec" else
                   f"cells {args.get('start_cell_id') or 'first'}..{args.get('end_cell_id') or 'last'}")
        handle = RunHandle(path=session["path"], cell_id=cell_id, kernel_id=kernel_id, owner=client,
                           progress=progress)
        self.runs.start(handle, comms.call(call_data(op, session["path"], args, client), alive, handle.report,
                                           watch=handle))
        assert handle.task is not None
        try:
            await asyncio.wait({handle.task}, timeout=wait_s)  # (not cancelled with this request)
        except asyncio.CancelledError:  # the client went away: the cell goes on (runs.py)
            handle.progress = None
            log.info("the client %r of %s went away; cell %s of %s goes on, shown in the page and the panel",
                     client.name, handle.id, handle.cell_id, handle.path)
            raise
        if not handle.task.done():
            handle.progress = None
            return still_running(handle, wait_s)
        return handle.task.result()  # (an OutsideError: said as it is)

    async def focus_pages(self, client: Caller) -> list[dict[str, Any]]:
        """What each open notebook's pages say of it (``focus``, ``jupyter/outside/outside_focus.py``),
        with ``"unasked": True`` entries for the notebooks whose kernel did not answer (busy
        with a cell, or without jupyter-agent) within ``ACTIVE_WAIT_S``."""
        pages: list[dict[str, Any]] = []
        for listed in await self._sessions():
            try:
                session, _, comms, alive = await self._reach(listed["path"])
                reply = await asyncio.wait_for(comms.call(call_data("active", session["path"], {}, client), alive),
                                               ACTIVE_WAIT_S)
                said = json.loads(reply["content"][0]["text"]) if reply.get("ok") else []
            except (TimeoutError, OutsideError, ValueError, KeyError, IndexError):
                log.debug("%s did not say its focus", listed["path"], exc_info=True)
                pages.append({"path": listed["path"], "unasked": True})
                continue
            pages.extend({**p, "path": session["path"]} for p in said if isinstance(p, dict))
        return pages

    async def active(self, client: Caller) -> dict[str, Any]:
        """``active_notebook``: the current notebook the user worked in last, its active cell."""
        pages = await self.focus_pages(client)
        text = active_text([p for p in pages if not p.get("unasked")], [p["path"] for p in pages if p.get("unasked")])
        return {"ok": True, "content": [{"type": "text", "text": text}]}

    async def create(self, path: str, open_from: str | None, client: Caller) -> dict[str, Any]:
        """``create_notebook`` (``create.py``)."""
        from .create import create_notebook

        return await create_notebook(self, path, open_from, client)

    @staticmethod
    def same_path(a: str, b: str) -> bool:
        return _norm(a) == _norm(b)

    async def run_status(self, run_id: str) -> dict[str, Any]:
        """``run_status``: where the run is, its outputs so far, its result once ended."""
        handle = self.runs.get(run_id)
        if handle is None:
            raise OutsideError(f"No run {run_id!r} in this Jupyter server (ended runs are kept an hour; a server "
                               "restart forgets them). run_cell gives a run_id when its cell runs long.")
        return status_reply(handle)

    async def interrupt(self, path: str, run_id: str | None, client: Caller) -> dict[str, Any]:
        """``interrupt``: the kernel's interrupt (as the page's Stop button), only while a cell
        ``client`` ran executes; the run's result once the cell has ended. Whose a run is: the
        caller's, its name and MCP session (the kernel keys its undo run by both too); on the
        protocol's sessionless 2026-07-28 transport, its name alone."""
        _, kernel_id, _, _ = await self._reach(path)
        if run_id is not None:
            handle = self.runs.get(run_id)
            if handle is None or handle.kernel_id != kernel_id:
                raise OutsideError(f"No run {run_id!r} on {path}. Nothing was interrupted.")
            if handle.owner != client:
                raise OutsideError(f"Run {run_id} was started by another client: only it may interrupt it. "
                                   "Nothing was interrupted.")
            mine = [handle] if handle.ended is None else []
        else:
            mine = self.runs.running(kernel_id, client)
        executing = [h for h in mine if h.state is RunState.RUNNING]
        if not executing:
            if mine:
                raise OutsideError(f"Run {mine[0].id} has not started yet (it waits for the user's approval, or for "
                                   "its turn in the kernel): nothing of it to interrupt now. Nothing was interrupted.")
            if run_id is not None:
                return status_reply(self.runs.get(run_id))  # type: ignore[arg-type]
            raise OutsideError(
                f"No cell this client ran is executing in the kernel of {path}. Interrupting a cell you did not "
                "start (the user's own, or another agent's) is the user's to do: the kernel cannot ask them while "
                "that cell holds it, so ask the user to press Stop in JupyterLab. Nothing was interrupted.")
        handle = executing[0]
        assert handle.task is not None
        loop = asyncio.get_event_loop()
        deadline = loop.time() + INTERRUPT_WAIT_S
        # While the run's own cell still executes (until its idle), interrupt again now and then:
        # a SIGINT that lands before the cell's code runs is not the cell's.
        while not handle.cell_over:  # (a SIGINT between cells would hit the kernel's own work)
            log.info("interrupting the kernel of %s for %s", path, handle.id)
            result = self.app.kernel_manager.interrupt_kernel(kernel_id)
            if asyncio.iscoroutine(result):
                await result
            await asyncio.wait({handle.task}, timeout=INTERRUPT_AGAIN_S)
            if handle.task.done() or handle.cell_over or loop.time() > deadline:
                break
        if not handle.task.done():  # the cell ended: its answer follows once the kernel formats it
            await asyncio.wait({handle.task}, timeout=max(1.0, deadline - loop.time()))
        return status_reply(handle)

    async def restart(self, path: str, client: Caller) -> dict[str, Any]:
        """``restart_kernel``: the kernel asks the user (NotebookRestart's card, naming the
        client and what is lost); once allowed, the kernel's manager restarts it (the page
        follows, as when the user restarts) and jupyter-agent is loaded in the fresh kernel,
        so the client's next call works. Denied: the kernel's answer, nothing restarted."""
        session, kernel_id, comms, alive = await self._reach(path)
        reply = await comms.call(call_data("restart", session["path"], {}, client), alive)
        if not reply.get("ok"):
            return reply
        log.info("restarting the kernel of %s for %s (allowed by the user)", path, client.name)
        result = self.app.kernel_manager.restart_kernel(kernel_id)
        if asyncio.iscoroutine(result):
            await result
        failed = await comms.execute_quietly("%load_ext jupyter_agent")
        back = failed is None and await self._page_back(path, client)
        loaded = ("jupyter-agent is loaded in the fresh kernel and the page is back on it, so your next call works"
                  if back else "jupyter-agent is loaded in the fresh kernel, but no page showed the notebook on it "
                  f"within {PAGE_BACK_S:.0f} s: ask the user to reload the notebook's page" if failed is None else
                  f"loading jupyter-agent in the fresh kernel failed ({failed}): ask the user to run "
                  "%load_ext jupyter_agent in the notebook")
        text = (f"Restarted the kernel of {session['path']} (the user allowed it): its variables are gone; {loaded}. "
                "Call read_cells, then run the cells you need again, in order.")
        return {"ok": failed is None, "content": [{"type": "text", "text": text}]}

    async def _page_back(self, path: str, client: Caller) -> bool:
        """After a restart: whether the page showing ``path`` connected to the fresh kernel
        within ``PAGE_BACK_S``. Its side panel and bridge connect again after a cell they see
        run, and the page's websocket may still be reconnecting to the new kernel's IOPub when
        the first one runs: an empty run (no history, no count) each time until it is back."""
        deadline = asyncio.get_event_loop().time() + PAGE_BACK_S
        while True:
            session, _, comms, alive = await self._reach(path)  # the fresh kernel's
            await comms.execute_quietly("")
            if (await comms.call(call_data("page", session["path"], {}, client), alive)).get("ok"):
                return True
            if asyncio.get_event_loop().time() > deadline:
                return False
            await asyncio.sleep(PANEL_NUDGE_EVERY_S)

    def _not_open(self, path: str) -> str:
        root = Path(getattr(self.app, "root_dir", ".") or ".")
        exists = (root / path.lstrip("/")).is_file() if ".." not in Path(path).parts else False
        if exists:
            return (f"{path} is not open in JupyterLab (no kernel session), or its kernel was shut down (a gateway "
                    "culls idle kernels): open it, or start its kernel (Kernel menu), run %load_ext jupyter_agent in "
                    "it, then retry. list_notebooks shows the open notebooks.")
        return f"No notebook {path!r} in this Jupyter server. list_notebooks shows the open notebooks."

    def close(self) -> None:
        self.runs.close()
        for comms in self.comms.values():
            comms.close()
        self.comms.clear()


def call_data(op: str, path: str, args: dict[str, Any], client: Caller) -> dict[str, Any]:
    """A call's comm-open data (``protocol.py``)."""
    return {"v": VERSION, "op": op, "path": path, "args": args, "client": client.name,
            "connection": client.connection}


def _norm(path: str) -> str:
    return posixpath.normpath("/" + str(path).replace("\\", "/").lstrip("/"))
