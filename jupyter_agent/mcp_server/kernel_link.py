"""From the Jupyter server to the kernel of a notebook: one comm per outside call.

:class:`ServerBackend` finds a notebook's kernel through the server's session manager (the
sessions JupyterLab made for its open notebooks) and sends the call over a kernel client of
its own (ZMQ, as the server's websockets do): a ``comm_open`` to ``protocol.TARGET`` with
the call as data; the kernel's one ``comm_msg`` is the answer. Its ``comm_close`` without an
answer means the kernel has no such target (jupyter-agent not loaded there). A kernel that
restarts (its iopub says ``starting``) or dies while a call waits fails the call with a
clear error: the kernel's state, and the run being undone, are gone, and a new kernel is
never used silently.
"""

from __future__ import annotations

import asyncio
import logging
import posixpath
import uuid
from pathlib import Path
from typing import Any

from .protocol import TARGET, VERSION
from .tools import OutsideError

log = logging.getLogger(__name__)

#: Seconds a call may wait for its kernel (an approval waits for a person: generous).
CALL_TIMEOUT_S = 30 * 60.0
#: Seconds between two checks that the kernel still lives while a call waits.
ALIVE_EVERY_S = 2.0
#: Seconds a new kernel client waits for its iopub to be connected.
READY_TIMEOUT_S = 30.0

RESTARTED = ("The notebook's kernel restarted while the call waited: its variables, and the outside agent's run "
             "to undo, are gone (the call may not have been carried out). Run %load_ext jupyter_agent in the "
             "notebook again, call read_cells, then retry.")
DIED = ("The notebook's kernel stopped (it died, or is restarting) while the call waited: its variables, and "
        "the outside agent's run to undo, are gone. Once it runs again, run %load_ext jupyter_agent in the notebook, "
        "call read_cells, then retry.")


def kernel_epoch(kernel: Any) -> Any:
    """What tells this kernel process from the next one a restart starts under the same id."""
    return getattr(getattr(kernel, "provisioner", None), "pid", None)


class KernelComms:
    """One kernel client of the server's own, its iopub read by a task; calls by comm id."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.client = kernel.client()
        self.client.start_channels(shell=True, iopub=True, stdin=False, hb=False, control=False)
        self.waiting: dict[str, asyncio.Future[tuple[str, Any]]] = {}
        #: comm id -> what a call's progress messages go to
        self.progress: dict[str, Any] = {}
        self._sending: set[asyncio.Task[Any]] = set()
        self.ready: dict[str, asyncio.Future[None]] = {}
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
            if parent in self.ready and not self.ready[parent].done():
                self.ready[parent].set_result(None)
            if kind in ("comm_msg", "comm_close"):
                comm_id = str(content.get("comm_id") or "")
                future = self.waiting.get(comm_id)
                data = content.get("data")
                if kind == "comm_msg" and isinstance(data, dict) and "progress" in data and "ok" not in data:
                    self._report(comm_id, data["progress"])
                elif future is not None and not future.done():
                    future.set_result((kind, content.get("data")))
            elif kind == "status" and content.get("execution_state") == "starting":
                self.fail_all(RESTARTED)

    def _report(self, comm_id: str, text: Any) -> None:
        """A call's progress message (the kernel's words, e.g. "Cell c1 is running (4 s)")."""
        progress = self.progress.get(comm_id)
        if progress is None or not isinstance(text, str):
            return
        task = asyncio.get_event_loop().create_task(progress(text))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    def fail_all(self, why: str) -> None:
        for future in self.waiting.values():
            if not future.done():
                future.set_exception(OutsideError(why))

    async def connect(self) -> None:
        """Wait until iopub carries this client's messages (a kernel_info request's status)."""
        if self._connected:
            return
        loop = asyncio.get_event_loop()
        deadline = loop.time() + READY_TIMEOUT_S
        while loop.time() < deadline:
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

    async def call(self, data: dict[str, Any], alive: Any, progress: Any = None) -> dict[str, Any]:
        """Send one call; its answer. ``alive()`` says whether the kernel that got it still
        lives: raises OutsideError (restarted, died) when not."""
        await self.connect()
        comm_id = uuid.uuid4().hex
        future = self.waiting[comm_id] = asyncio.get_event_loop().create_future()
        if progress is not None:
            self.progress[comm_id] = progress
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

    async def _sessions(self) -> list[dict[str, Any]]:
        sessions = await self.app.session_manager.list_sessions()
        return [s for s in sessions if s.get("type", "notebook") == "notebook" and s.get("kernel")]

    async def notebooks(self) -> list[dict[str, Any]]:
        return [{"path": s["path"], "kernel_id": s["kernel"]["id"],
                 "kernel_state": s["kernel"].get("execution_state", "")} for s in await self._sessions()]

    async def call(self, path: str, op: str, args: dict[str, Any], client: str,
                   progress: Any = None) -> dict[str, Any]:
        wanted = _norm(path)
        session = next((s for s in await self._sessions() if _norm(s["path"]) == wanted), None)
        if session is None:
            raise OutsideError(self._not_open(path))
        kernel_id = session["kernel"]["id"]
        manager = self.app.kernel_manager
        if kernel_id not in manager:
            raise OutsideError(f"The kernel of {path} is gone: start one in JupyterLab, then retry.")
        comms = self.comms.get(kernel_id)
        if comms is None or comms.kernel is not manager.get_kernel(kernel_id):
            comms = self.comms[kernel_id] = KernelComms(manager.get_kernel(kernel_id))

        epoch = kernel_epoch(manager.get_kernel(kernel_id))

        async def alive() -> None:
            if kernel_id not in manager:
                raise OutsideError(DIED)
            kernel = manager.get_kernel(kernel_id)
            if kernel_epoch(kernel) != epoch:
                raise OutsideError(RESTARTED)
            result = kernel.is_alive()
            if not (await result if asyncio.iscoroutine(result) else result):
                raise OutsideError(DIED)

        data = {"v": VERSION, "op": op, "path": session["path"], "args": args, "client": client}
        return await comms.call(data, alive, progress)

    def _not_open(self, path: str) -> str:
        root = Path(getattr(self.app, "root_dir", ".") or ".")
        exists = (root / path.lstrip("/")).is_file() if ".." not in Path(path).parts else False
        if exists:
            return (f"{path} is not open in JupyterLab (no kernel session): open it, run %load_ext jupyter_agent in "
                    "it, then retry. list_notebooks shows the open notebooks.")
        return f"No notebook {path!r} in this Jupyter server. list_notebooks shows the open notebooks."

    def close(self) -> None:
        for comms in self.comms.values():
            comms.close()
        self.comms.clear()


def _norm(path: str) -> str:
    return posixpath.normpath("/" + str(path).replace("\\", "/").lstrip("/"))
