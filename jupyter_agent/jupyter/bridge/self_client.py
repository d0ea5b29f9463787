"""The kernel runs a cell of its own notebook itself: a client of this kernel, in this kernel.

A NotebookRun of the notebook open in the page whose kernel is this one used to go through
the page (``NotebookActions.runCells``): the result came back behind the page's event loop,
which a 2,000-cell notebook keeps busy building cells. Here the kernel sends the cell's
source as an ordinary ``execute_request`` to **its own** shell socket, from a client made
of its own connection info (the connection file: the ports and the session key), with
``zmq.asyncio`` sockets on the kernel's loop. The request queues with the user's own cells
in the kernel's normal order; the run's outputs come from this client's IOPub subscription
(messages whose parent is the request), until the ``idle`` status and the
``execute_reply``. The page is told beforehand which cell the request runs
(``show_run``, ``labextension/src/kernelRun.ts``) and shows the outputs in that cell as a
Shift+Enter run would; the result never waits for the page (docs/bridge.md).

* While a cell executes, this kernel's loop is busy with it, so the time limit is kept by a
  timer thread that exists only while a run is in flight: at the limit it interrupts this
  process (SIGINT, as an ``interrupt_request`` does).
* A Stop noticed while the loop is free interrupts the same way; the outputs so far are
  kept, and the run ends ``interrupted``.
* Outputs are collected as the kernel pool's client collects them
  (:class:`~jupyter_agent.notebook.kernels.OutputCollector`: streams merged, caps, secrets
  redacted), so the tool's result is the same whichever kernel ran the cell.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
import time
import uuid
from typing import Any

from ...notebook.kernel_run import RunHere
from ...notebook.kernels import INTERRUPT_GRACE_S, Execution, OutputCollector
from .kernel_types import Shell, kernel_of

log = logging.getLogger(__name__)

#: How long the IOPub subscription may take to be confirmed (the kernel's ``iopub_welcome``).
SUBSCRIBE_TIMEOUT_S = 30.0  # a loaded machine's kernel greets late (5 s was seen to fall short)


def _interrupt_this_process() -> None:
    """What a kernel does on an ``interrupt_request``: SIGINT to itself (the running cell
    gets a KeyboardInterrupt; between cells ipykernel ignores it)."""
    if hasattr(signal, "pthread_kill") and os.name == "posix":
        os.kill(os.getpid(), signal.SIGINT)
    else:  # Windows: no signal to send; raise it in the main thread when it next runs Python
        import _thread

        _thread.interrupt_main()


def _url(info: dict[str, Any], channel: str) -> str:
    port = info[f"{channel}_port"]
    if info.get("transport", "tcp") == "ipc":
        return f"ipc://{info['ip']}-{port}"
    ip = info.get("ip") or "127.0.0.1"
    return f"tcp://{'127.0.0.1' if ip in ('0.0.0.0', '*', '') else ip}:{port}"


class SelfClient:
    """Shell and IOPub sockets to this very kernel, on its event loop (one per kernel)."""

    def __init__(self, info: dict[str, Any]) -> None:
        import zmq
        import zmq.asyncio
        from jupyter_client.session import Session

        key = info.get("key") or ""
        self.session = Session(key=key.encode() if isinstance(key, str) else key,
                               signature_scheme=str(info.get("signature_scheme") or "hmac-sha256"),
                               username="jupyter-agent")
        # The process's one zmq context (ipykernel's): no second I/O thread.
        self.context = zmq.asyncio.Context.shadow(zmq.Context.instance())
        self.shell = self.context.socket(zmq.DEALER)
        self.shell.linger = 0
        self.shell.connect(_url(info, "shell"))
        self.iopub = self.context.socket(zmq.SUB)
        self.iopub.linger = 0
        # Unbounded on our side: a flood of output is never dropped by the kernel's PUB
        # socket because this reader is behind (kernels.AgentKernelClient says why).
        self.iopub.setsockopt(zmq.RCVHWM, 0)
        self.iopub.setsockopt(zmq.SUBSCRIBE, b"")
        # The kernel's XPUB socket passes on only subscriptions it has not seen, and the
        # server's client subscribed to everything (b"") already: a topic of our own makes
        # the kernel greet this client (``iopub_welcome``, sent under that topic), and
        # subscriptions take effect in order, so b"" holds by then too.
        self.topic = f"jupyter-agent-self-{uuid.uuid4().hex}".encode()
        self.iopub.setsockopt(zmq.SUBSCRIBE, self.topic)
        self.iopub.connect(_url(info, "iopub"))
        self.ready = False
        self.lock = asyncio.Lock()

    async def _recv(self, socket: Any, wait_s: float) -> dict[str, Any] | None:
        """The next message on ``socket`` within ``wait_s`` seconds (None: nothing came)."""
        if not await socket.poll(int(wait_s * 1000)):
            return None
        frames = await socket.recv_multipart(copy=True)
        _, frames = self.session.feed_identities(frames, copy=True)
        return self.session.deserialize(frames, content=True, copy=True)

    async def subscribe(self) -> None:
        """Wait until the IOPub subscription is in place (messages published before it are
        lost to this client): the kernel greets every new subscriber with ``iopub_welcome``."""
        deadline = time.monotonic() + SUBSCRIBE_TIMEOUT_S
        while not self.ready:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("this kernel did not confirm the IOPub subscription")
            msg = await self._recv(self.iopub, min(left, 0.5))
            if msg is not None and msg.get("msg_type") == "iopub_welcome":
                self.ready = True

    async def execute(self, code: str, msg_id: str, cell_id: str, *, timeout: float,
                      abort: asyncio.Event | None, store_history: bool = True) -> Execution:
        """Run ``code`` as request ``msg_id`` and collect its outputs (see the module)."""
        async with self.lock:
            await self.subscribe()
            collector = OutputCollector()
            message = self.session.msg("execute_request", {
                "code": code, "silent": False, "store_history": store_history, "user_expressions": {},
                "allow_stdin": False, "stop_on_error": False}, metadata={"cellId": cell_id})
            message["header"]["msg_id"] = msg_id
            message["msg_id"] = msg_id
            limit = threading.Timer(timeout, self._time_up, (msg_id,))
            limit.daemon = True
            self._timed_out: str | None = None
            self.session.send(self.shell, message)
            limit.start()
            status = "ok"
            try:
                while not collector.done:
                    if abort is not None and abort.is_set():
                        status = "interrupted"
                        break
                    if self._timed_out == msg_id:
                        status = "timeout"
                        break
                    await self._take(msg_id, collector, 0.1)
            except asyncio.CancelledError:
                limit.cancel()
                await asyncio.shield(self._interrupt_and_settle(msg_id, collector))
                raise
            finally:
                limit.cancel()
            if self._timed_out == msg_id:
                status = "timeout"  # the timer fired while the cell held the loop
            if status == "interrupted":
                await self._interrupt_and_settle(msg_id, collector)
            elif status == "timeout":
                await self._settle(msg_id, collector)
            return collector.execution(status)

    def _time_up(self, msg_id: str) -> None:
        """The timer thread, at the cell's time limit."""
        self._timed_out = msg_id
        _interrupt_this_process()

    async def _take(self, msg_id: str, collector: OutputCollector, wait: float) -> None:
        """What came in on either socket for ``msg_id`` (others' messages are dropped)."""
        if collector.reply is None:
            reply = await self._recv(self.shell, 0)
            parent = (reply or {}).get("parent_header") or {}
            if reply is not None and parent.get("msg_id") == msg_id and reply.get("msg_type") == "execute_reply":
                collector.reply = reply.get("content") or {}
                if collector.execution_count is None:
                    collector.execution_count = collector.reply.get("execution_count")
        if collector.idle:
            if collector.reply is None:
                await self.shell.poll(int(wait * 1000))
            return
        msg = await self._recv(self.iopub, wait)
        while msg is not None:
            if (msg.get("parent_header") or {}).get("msg_id") == msg_id:
                collector.last_message_at = time.monotonic()
                collector.add(msg)
            msg = await self._recv(self.iopub, 0)

    async def _interrupt_and_settle(self, msg_id: str, collector: OutputCollector) -> None:
        _interrupt_this_process()
        await self._settle(msg_id, collector)

    async def _settle(self, msg_id: str, collector: OutputCollector) -> None:
        end = time.monotonic() + INTERRUPT_GRACE_S
        while not collector.done and time.monotonic() < end:
            await self._take(msg_id, collector, 0.1)

    def close(self) -> None:
        for socket in (self.shell, self.iopub):
            socket.close(linger=0)


class SelfConnection:
    """This kernel's client of itself, for one loaded extension (held by ``kernel_links.py``'s
    :class:`~.kernel_links.KernelLinks`): made on the first cell it runs, closed by
    :meth:`close` (``%unload_ext``); made again by a run after that."""

    def __init__(self, shell: Shell | None) -> None:
        self.shell = shell
        self._client: SelfClient | None = None

    def runner(self) -> RunHere | None:
        """``run(code, msg_id, cell_id, timeout=, abort=) -> Execution`` for this kernel, or
        None when it has no connection file to build a client from (an embedded kernel):
        then cells run through the page."""
        if kernel_of(self.shell) is None:
            return None
        try:
            from ipykernel.connect import get_connection_info

            info = get_connection_info(unpack=True)
        except Exception:  # no connection file (an embedded or unusual kernel): the page runs cells
            log.debug("no connection info for this kernel; cells run through the page", exc_info=True)
            return None
        if not isinstance(info, dict) or "shell_port" not in info or "iopub_port" not in info:
            return None

        async def run(code: str, msg_id: str, cell_id: str, *, timeout: float,
                      abort: asyncio.Event | None, store_history: bool = True) -> Execution:
            if self._client is None:
                self._client = SelfClient(info)
            return await self._client.execute(code, msg_id, cell_id, timeout=timeout, abort=abort,
                                              store_history=store_history)

        return run

    def close(self) -> None:
        """Close the client, if one was made (``%unload_ext``)."""
        if self._client is not None:
            self._client.close()
        self._client = None


def new_msg_id() -> str:
    """An execute request's id, made before the request so the page can be told it first."""
    return uuid.uuid4().hex
