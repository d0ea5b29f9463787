"""One Jupyter kernel per notebook for a conversation: started on first run, shut down at the end.

The pool lives in the conversation's ``ToolSession`` (see :func:`.session.kernel_pool`).
Whoever owns the conversation calls :func:`.session.close_session` (or ``await pool.aclose()``)
when it ends; as a safety net, kernels still alive when the interpreter exits are killed then.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import queue
import tempfile
import time
import uuid
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zmq
from jupyter_client import AsyncKernelManager
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_core.paths import jupyter_runtime_dir

from ..redact import redact, without_secrets
from .document import NotebookDocument, NotebookError, RunResult, StaleNotebookError
from .epoch import KernelEpochs
from .namespace import NAMESPACE_EXPRESSION, changed_names, parse_namespace_reply
from .outputs import StreamText, finish_outputs

log = logging.getLogger(__name__)

_LIVE_POOLS: weakref.WeakSet[KernelPool] = weakref.WeakSet()
#: How long to wait for a kernel to settle after an interrupt before giving up on it.
INTERRUPT_GRACE_S = 5.0
#: After the execute_reply, how long a silent iopub channel is waited on for the idle status.
_IOPUB_GRACE_S = 3.0
#: How often the shell channel is looked at for the reply while outputs stream in.
_SHELL_EVERY_S = 0.25
#: Unix socket paths are limited to 108 bytes (104 on macOS), and zmq adds "-N".
_MAX_IPC_PATH = 100


class AgentKernelClient(AsyncKernelClient):
    """A kernel client whose iopub socket never drops a message.

    zmq's default high-water mark (1,000 messages) makes the kernel's PUB socket drop
    messages once we fall that far behind, and a progress bar that flushes on every
    update (tqdm: ~5,000 messages a second) gets there: measured, the last 6 % of a bar
    and the ``idle`` status were lost. An unbounded receive queue on our side keeps
    them all; they are small, and the cell's outputs are bounded as they are collected.
    """

    def connect_iopub(self, identity: bytes | None = None) -> zmq.Socket:
        sock = super().connect_iopub(identity=identity)
        url = self._make_url("iopub")
        sock.setsockopt(zmq.RCVHWM, 0)  # applies to connections made from now on
        sock.disconnect(url)
        sock.connect(url)
        return sock


@dataclass
class Execution:
    outputs: list[dict[str, Any]]
    execution_count: int | None
    status: str  # ok | error | timeout | interrupted | died
    note: str = ""


class NotebookKernel:
    """A started kernel and its client; runs one cell at a time."""

    def __init__(self, manager: AsyncKernelManager, client: Any):
        self.manager = manager
        self.client = client
        self.lock = asyncio.Lock()
        #: the kernel process's session id, from its last reply (a restarted kernel has another)
        self.session_id: str | None = None
        #: the code run under each execution count (a Read marks outputs older than a cell's source)
        self.ran: dict[int, str] = {}

    async def execute(self, code: str, *, timeout: float, abort: asyncio.Event | None = None,
                      store_history: bool = True) -> Execution:
        """Run ``code``; on timeout or abort interrupt the kernel and return what came out so far.

        Done means the kernel's ``execute_reply`` (its verdict: ok, error, aborted) and the
        ``idle`` status after the cell's outputs. A flooded iopub channel drops messages
        (zmq's high-water mark), the ``idle`` among them, so once the reply is in, a
        quiet iopub channel for :data:`_IOPUB_GRACE_S` also ends the wait, as nbclient's
        ``iopub_timeout`` does.
        """
        async with self.lock:
            # store_history=False (a scratch run): no execution count taken, no In/Out entry
            msg_id = self.client.execute(code, store_history=store_history, allow_stdin=False, stop_on_error=False)
            collector = OutputCollector()
            deadline = time.monotonic() + timeout
            status = "ok"
            next_alive_check = time.monotonic() + 1.0
            try:
                while not collector.done:
                    if abort is not None and abort.is_set():
                        status = "interrupted"
                        break
                    if time.monotonic() > deadline:
                        status = "timeout"
                        break
                    if time.monotonic() > next_alive_check:
                        next_alive_check = time.monotonic() + 1.0
                        if not await self.manager.is_alive():
                            return Execution(collector.clean_outputs, collector.execution_count, "died")
                    await self._poll(msg_id, collector, 0.1)
            except asyncio.CancelledError:
                await asyncio.shield(self._interrupt_and_settle(msg_id, collector))
                raise
            if status != "ok":
                await self._interrupt_and_settle(msg_id, collector)
            if store_history and isinstance(collector.execution_count, int):
                self.ran[collector.execution_count] = code
            return collector.execution(status)

    @property
    def identity(self) -> str | None:
        """Which kernel process this is (``epoch.py``): its process id when it runs here (known
        without asking it), else the session id of its last reply (None: not known yet)."""
        pid = getattr(getattr(self.manager, "provisioner", None), "pid", None)
        return f"pid {pid}" if isinstance(pid, int) else self.session_id

    async def namespace_ids(self, timeout: float = 10.0) -> dict[str, int] | None:
        """The kernel's top-level names and the ids of their objects (our expression, not
        the user's code: see :mod:`.namespace`), or None if the kernel does not say."""
        async with self.lock:
            try:
                reply = await self.client.execute("", silent=True, store_history=False, allow_stdin=False,
                                                  user_expressions={"ns": NAMESPACE_EXPRESSION},
                                                  reply=True, timeout=timeout)
            except Exception:  # a busy or dying kernel: the names are not known, the run goes on
                log.debug("the kernel's namespace could not be read", exc_info=True)
                return None
        session = (reply.get("header") or {}).get("session")
        self.session_id = session if isinstance(session, str) and session else self.session_id
        value = (reply.get("content") or {}).get("user_expressions", {}).get("ns")
        return parse_namespace_reply(value) if isinstance(value, dict) and value.get("status") == "ok" else None

    async def _poll(self, msg_id: str, collector: OutputCollector, wait: float) -> None:
        """Take what has come in: outputs until idle; the reply now and then, and after idle.

        The shell channel is looked at every :data:`_SHELL_EVERY_S` while outputs stream
        in, not after each output: every look costs the event loop a wakeup.
        """
        if not collector.idle:
            await self._next(msg_id, collector, wait)
        if collector.reply is None and (collector.idle or time.monotonic() >= collector.next_shell_check):
            collector.next_shell_check = time.monotonic() + _SHELL_EVERY_S
            await self._next_reply(msg_id, collector, wait if collector.idle else 0)

    async def _next(self, msg_id: str, collector: OutputCollector, wait: float) -> None:
        try:
            msg = await self.client.get_iopub_msg(timeout=wait)
        except queue.Empty:
            return
        if msg.get("parent_header", {}).get("msg_id") == msg_id:
            collector.last_message_at = time.monotonic()
            collector.add(msg)

    async def _next_reply(self, msg_id: str, collector: OutputCollector, wait: float) -> None:
        try:
            msg = await self.client.get_shell_msg(timeout=wait)
        except queue.Empty:
            return
        # Replies to earlier requests (one that timed out before its reply came) are dropped.
        if msg.get("parent_header", {}).get("msg_id") == msg_id and msg.get("msg_type") == "execute_reply":
            collector.reply = msg.get("content", {})
            if collector.execution_count is None:
                collector.execution_count = collector.reply.get("execution_count")

    async def _interrupt_and_settle(self, msg_id: str, collector: OutputCollector) -> None:
        try:
            await self.manager.interrupt_kernel()
        except Exception:  # a dead kernel: the run's result says it did not finish
            log.debug("interrupting the kernel failed", exc_info=True)
            return
        end = time.monotonic() + INTERRUPT_GRACE_S
        while not collector.done and time.monotonic() < end:
            await self._poll(msg_id, collector, 0.1)

    async def shutdown(self) -> None:
        try:
            self.client.stop_channels()
        finally:
            await self.manager.shutdown_kernel(now=False)

    def kill_now(self) -> None:
        """Synchronous last resort (interpreter exit): kill the process, remove its files."""
        try:
            self.client.stop_channels()
        except Exception:  # at exit: go on and kill the process whatever the channels did
            log.debug("stopping the kernel's channels failed", exc_info=True)
        process = getattr(getattr(self.manager, "provisioner", None), "process", None)
        if process is not None and process.poll() is None:
            process.kill()
        _release_sync(self.manager)


def output_of(kind: str, content: dict[str, Any]) -> dict[str, Any]:
    """The nbformat output of a ``display_data``, ``execute_result`` or ``error`` message,
    as nbformat's ``output_from_msg`` makes it, built by hand: that one checks each output
    against the notebook schema, about 1 ms an output (a progress bar's thousands of updates)
    and ~100 ms for the first in a process, and a kernel's messages have that shape already."""
    if kind == "error":
        return {"output_type": "error", "ename": str(content.get("ename", "")),
                "evalue": str(content.get("evalue", "")),
                "traceback": [str(line) for line in content.get("traceback") or []]}
    data, metadata = content.get("data"), content.get("metadata")
    output: dict[str, Any] = {"output_type": kind, "data": dict(data) if isinstance(data, dict) else {},
                              "metadata": dict(metadata) if isinstance(metadata, dict) else {}}
    if kind == "execute_result":
        count = content.get("execution_count")
        output["execution_count"] = count if isinstance(count, int) else None
    return output


class OutputCollector:
    """Turns iopub messages into nbformat outputs, as the notebook frontend would.

    Consecutive stream chunks build one :class:`~.outputs.StreamText`, so a progress
    bar's updates settle as they come and a flood of text stays bounded in memory.
    """

    def __init__(self) -> None:
        self.outputs: list[dict[str, Any]] = []
        self.execution_count: int | None = None
        self.idle = False
        self.error = False
        self.reply: dict[str, Any] | None = None
        self.last_message_at = time.monotonic()
        self.next_shell_check = 0.0
        self._clear_pending = False

    @property
    def done(self) -> bool:
        """The reply is in, and so is the idle status (or the iopub channel has gone quiet)."""
        if self.reply is None:
            return False
        return self.idle or time.monotonic() - self.last_message_at > _IOPUB_GRACE_S

    def add(self, msg: dict[str, Any]) -> None:
        kind, content = msg["msg_type"], msg.get("content", {})
        if kind == "status":
            self.idle = content.get("execution_state") == "idle"
            return
        if kind == "execute_input":
            self.execution_count = content.get("execution_count")
            return
        if kind == "clear_output":
            if content.get("wait"):
                self._clear_pending = True
            else:
                self.outputs.clear()
            return
        if kind == "update_display_data":
            display_id = content.get("transient", {}).get("display_id")
            for output in self.outputs:
                if display_id and output.get("_display_id") == display_id:
                    output["data"], output["metadata"] = content.get("data", {}), content.get("metadata", {})
            return
        if kind not in ("stream", "display_data", "execute_result", "error"):
            return
        if self._clear_pending:
            self.outputs.clear()
            self._clear_pending = False
        last = self.outputs[-1] if self.outputs else None
        if kind == "stream":
            name, text = str(content.get("name", "stdout")), str(content.get("text", ""))
            if last and last.get("output_type") == "stream" and last.get("name") == name:
                last["_stream"].append(text)
                return
            output = {"name": name, "output_type": "stream", "text": "", "_stream": StreamText(text, redact=redact)}
        else:
            output = output_of(kind, content)
        self.error |= kind == "error"
        display_id = content.get("transient", {}).get("display_id")
        if display_id:
            output["_display_id"] = display_id
        self.outputs.append(output)

    def execution(self, status: str) -> Execution:
        """The run as an :class:`Execution`: ``status`` ("ok" becomes "error" when the cell
        raised or was aborted), with a note when the run ended before its last output came."""
        if status == "ok" and (self.error or (self.reply or {}).get("status") in ("error", "aborted")):
            status = "error"
        note = ""
        if status in ("ok", "error") and not self.idle:
            note = ("[The kernel sent output faster than it could be received, and some was lost "
                    "(at least the end of it): what is shown may not be the cell's last output.]")
        return Execution(self.clean_outputs, self.execution_count, status, note)

    @property
    def clean_outputs(self) -> list[dict[str, Any]]:
        """The outputs as nbformat has them: coalesced, settled, capped, secrets redacted."""
        plain = []
        for output in self.outputs:
            kept = {k: v for k, v in output.items() if not k.startswith("_")}
            if "_stream" in output:
                kept["text"] = output["_stream"].value()
            plain.append(kept)
        return finish_outputs(plain, redact)


class KernelPool:
    """Kernels by notebook path. ``transport="ipc"`` suits tests; ``kernel_name`` forces a kernel.

    A kernel starts with the agent's environment minus its secrets (``ANTHROPIC_*`` and
    every ``*KEY*``/``*TOKEN*``/``*SECRET*``/``*PASSWORD*`` variable, see
    :func:`~jupyter_agent.redact.is_secret_name`); ``env`` adds variables on purpose.
    """

    def __init__(self, *, transport: str = "tcp", kernel_name: str | None = None,
                 startup_timeout: float = 60.0, env: dict[str, str] | None = None):
        self.transport = transport
        self.kernel_name = kernel_name
        self.startup_timeout = startup_timeout
        self.env = env
        self._kernels: dict[str, NotebookKernel] = {}
        self._starting: dict[str, asyncio.Lock] = {}
        #: the kernel each notebook's cells last ran in: a replaced one is an error (epoch.py)
        self.epochs = KernelEpochs()
        _LIVE_POOLS.add(self)

    def __contains__(self, path: object) -> bool:
        return str(path) in self._kernels

    async def get(self, notebook_path: Path | str, kernel_name: str | None = None) -> NotebookKernel:
        key = str(notebook_path)
        lock = self._starting.setdefault(key, asyncio.Lock())
        async with lock:
            if key not in self._kernels:
                self._kernels[key] = await self._start(Path(notebook_path), kernel_name)
            return self._kernels[key]

    async def _start(self, notebook_path: Path, kernel_name: str | None) -> NotebookKernel:
        name = self.kernel_name or kernel_name or "python3"
        if not self.kernel_name and kernel_name and not _kernel_installed(name):
            name = "python3"
        options: dict[str, Any] = {"kernel_name": name, "transport": self.transport,
                                   "client_class": f"{__name__}.AgentKernelClient"}
        if self.transport == "ipc":
            options["ip"] = _ipc_address()
        manager = AsyncKernelManager(**options)
        folder = notebook_path.parent if notebook_path.parent.is_dir() else Path.cwd()
        # The agent's credentials stay with the agent: a cell could print them into the notebook.
        env = {**without_secrets(dict(os.environ)), **(self.env or {})}
        try:
            await manager.start_kernel(cwd=str(folder), env=env)
        except Exception as exc:
            # Free its sockets now: a zmq context left with an open socket blocks the
            # garbage collector (and so the interpreter's exit) for ever.
            try:
                await manager.shutdown_kernel(now=True)
            except Exception:  # it never started: freeing its sockets below is what matters
                log.debug("shutting down a kernel that failed to start failed", exc_info=True)
            _release_sync(manager)
            raise NotebookError(f"Could not start a {manager.kernel_name!r} kernel: {exc}") from None
        client = manager.client()
        client.start_channels()
        try:
            await client.wait_for_ready(timeout=self.startup_timeout)
        except Exception as exc:
            client.stop_channels()
            await manager.shutdown_kernel(now=True)
            raise NotebookError(f"The kernel did not become ready: {exc}") from None
        return NotebookKernel(manager, client)

    async def aclose(self) -> None:
        """Shut every kernel down (call this when the conversation ends)."""
        kernels, self._kernels = list(self._kernels.values()), {}
        for kernel in kernels:
            try:
                await kernel.shutdown()
            except Exception:
                kernel.kill_now()
        _LIVE_POOLS.discard(self)

    def running(self, notebook_path: Path | str) -> NotebookKernel | None:
        """The notebook's kernel if this pool has started it (None: nothing runs for it)."""
        return self._kernels.get(str(notebook_path))

    async def restart(self, notebook_path: Path | str, kernel_name: str | None = None) -> NotebookKernel:
        """A fresh kernel for the notebook: the old one is shut down (its state is gone). The
        caller asked for it, so the next run in the fresh kernel is no error (``epoch.py``)."""
        await self.discard(notebook_path)
        self.epochs.forget(str(notebook_path))
        return await self.get(notebook_path, kernel_name)

    async def discard(self, notebook_path: Path | str) -> None:
        """Forget (and shut down) a notebook's kernel, e.g. after it died; the next run starts anew."""
        kernel = self._kernels.pop(str(notebook_path), None)
        if kernel is not None:
            try:
                await kernel.shutdown()
            except Exception:
                kernel.kill_now()

    def kill_all_now(self) -> None:
        for kernel in self._kernels.values():
            kernel.kill_now()
        self._kernels.clear()


def _ipc_address() -> str:
    """An absolute ipc socket path prefix that fits the ~100-byte limit of socket paths.

    The default ipc address is relative to the process's folder, and the kernel runs in
    the notebook's folder, so both sides need one absolute path; the runtime folder is
    used when it is short enough, else the temp folder.
    """
    name = f"jak-{uuid.uuid4().hex[:12]}-ipc"
    for folder in (jupyter_runtime_dir(), tempfile.gettempdir()):
        if len(os.path.join(folder, name)) + 2 <= _MAX_IPC_PATH:
            os.makedirs(folder, exist_ok=True)
            return os.path.join(folder, name)
    return os.path.join("/tmp", name)


def _release_sync(manager: AsyncKernelManager) -> None:
    """Close what a kernel manager holds without an event loop (failure paths, exit)."""
    for step in ("cleanup_connection_file", "cleanup_ipc_files", "_close_control_socket"):
        try:
            getattr(manager, step)()
        except Exception:  # best effort: each step frees what it can, the next still runs
            log.debug("kernel cleanup step %s failed", step, exc_info=True)
    context = getattr(manager, "context", None)
    if getattr(manager, "_created_context", False) and context is not None and not context.closed:
        context.destroy(linger=0)


def _kernel_installed(name: str) -> bool:
    try:
        KernelSpecManager().get_kernel_spec(name)
        return True
    except Exception:  # no such kernel spec (or an unreadable one): the caller says so
        log.debug("kernel spec %r not available", name, exc_info=True)
        return False


@atexit.register
def _kill_leftover_kernels() -> None:
    for pool in list(_LIVE_POOLS):
        pool.kill_all_now()


async def run_cell_in_kernel(doc: NotebookDocument, kernels: KernelPool | None, cell_id: str, *,
                             timeout: float, abort: asyncio.Event | None,
                             expected_version: str | None) -> RunResult:
    """Run one cell of a file/memory notebook in its kernel and store the outputs back."""
    if kernels is None:
        raise NotebookError("No kernel pool is attached to this notebook, so its cells cannot run.")
    snapshot = await doc.snapshot()
    cell = snapshot.runnable_cell(cell_id, expected_version)
    kernel = await kernels.get(doc.path, snapshot.kernel_name)
    before = await kernel.namespace_ids()
    kernels.epochs.check(str(doc.path), kernel.identity)  # never a silent run in a fresh kernel
    execution = await kernel.execute(cell.source, timeout=timeout, abort=abort)
    after = await kernel.namespace_ids() if execution.status != "died" else None
    names = changed_names(before, after)
    if after is not None:
        kernels.epochs.saw(str(doc.path), list(after))
    if execution.status == "died":
        await kernels.discard(doc.path)
    outputs = execution.outputs
    try:
        edited = await doc.set_outputs(cell.id, outputs, execution.execution_count,  # type: ignore[attr-defined]
                                       expected_version=snapshot.version)
    except StaleNotebookError:
        return RunResult(cell=cell, outputs=outputs, execution_count=execution.execution_count,
                         status=execution.status, saved=False, names_changed=names,
                         note="\n".join(n for n in (execution.note, "The notebook changed while the cell ran, so "
                                                     "its outputs were not saved into it.") if n))
    notes = [execution.note, f"[{edited.note}]" if getattr(edited, "note", "") else ""]
    return RunResult(cell=edited.cell, outputs=outputs, execution_count=execution.execution_count,
                     status=execution.status, version=edited.version, mtime_ns=edited.mtime_ns,
                     names_changed=names, note="\n".join(n for n in notes if n))

