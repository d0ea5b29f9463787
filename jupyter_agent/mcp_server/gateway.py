"""The kernel of a notebook whose Jupyter server runs its kernels on a gateway
(``--GatewayClient.url``: Jupyter Kernel Gateway, Enterprise Gateway): one websocket of the
server's own to the gateway's ``/api/kernels/ID/channels``, in place of ZMQ.

``kernel_link.KernelComms`` uses the few parts of a kernel client it needs (``session`` to
make messages, ``shell_channel.send``, ``kernel_info()``, an async ``iopub_channel.get_msg``,
``stop_channels``); :class:`GatewayChannels` gives those over the gateway's websocket
(tornado's client, on the server's event loop). jupyter_server's own ``GatewayKernelClient``
is not used: its ``start_channels`` is a coroutine that connects with a blocking socket, and
its ``get_msg`` polls a thread's queue with ``asyncio.sleep(0)``, a busy loop that would hold a
core of the server for as long as the reader waits (docs/mcp-server.md, "Kernels on a gateway").

**A restart's mark.** A gateway says nothing of the kernel's process (its model has an id, a
name, a state, the last activity): no pid tells one process from the next that a restart
starts under the same id. What does: the session id every message of the kernel carries in
its header (``header.session``), new in each kernel process (ipykernel's ``Session``).
:attr:`GatewayChannels.kernel_session` is the one of the last ``status`` message seen on
IOPub (a kernel publishes one for every request; the gateway's own notices, a rate limit's
stderr or a ``restarting`` status, carry the gateway's session and are not counted) or of the
kernel's answer to :meth:`GatewayChannels.ping` (asked while a call waits), and
:attr:`GatewayChannels.restarts` counts its changes: that count is the kernel's epoch
(``kernel_link.kernel_epoch``). A closed websocket (the gateway stopped, or dropped the
connection) is :attr:`GatewayChannels.lost`, and the calls waiting on it fail at once. (A kernel
the gateway culls or deletes leaves the websocket open and silent: ``kernel_link``'s check that
the kernel lives, which asks the gateway, tells that one: :data:`GONE`.)
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any
from collections.abc import Callable

from jupyter_client.jsonutil import json_default
from jupyter_client.session import Session

log = logging.getLogger(__name__)

#: Seconds to wait for the gateway to accept the websocket.
CONNECT_TIMEOUT_S = 60.0

LOST = ("The connection to the notebook's kernel on the gateway closed while the call waited (the gateway stopped, "
        "or dropped the connection): the call's answer is lost, and the kernel, its variables and the outside "
        "agent's run to undo may be gone too; nothing started a new kernel. Check the notebook's kernel in "
        "JupyterLab (if it is gone, restart it and run %load_ext jupyter_agent in it), call read_cells, then retry.")
GONE = ("The gateway no longer has the notebook's kernel (it culled it for being idle, or someone shut it down) "
        "while the call waited: its variables, and the outside agent's run to undo, are gone; nothing started a new "
        "kernel. Start or restart the notebook's kernel in JupyterLab, run %load_ext jupyter_agent in it, call "
        "read_cells, then retry.")
UNREACHABLE = ("The notebook's kernel on the gateway ({url}) cannot be reached ({why}): the gateway may have culled "
               "or shut it down. Restart the notebook's kernel in JupyterLab (Kernel menu), run %load_ext "
               "jupyter_agent in it, then retry.")


def is_gateway_kernel(kernel: Any) -> bool:
    """Whether ``kernel`` (a server's kernel manager of one kernel) is a gateway's."""
    try:
        from jupyter_server.gateway.managers import GatewayKernelManager
    except ImportError:  # (a jupyter_server without gateway support: no gateway kernels)
        return False
    return isinstance(kernel, GatewayKernelManager)


class _Shell:
    """The shell channel: messages sent as the gateway's websocket takes them (JSON text with
    their ``channel``; the gateway signs them for the kernel)."""

    def __init__(self, channels: GatewayChannels) -> None:
        self._channels = channels

    def send(self, msg: dict[str, Any]) -> None:
        self._channels.send({**msg, "channel": "shell"})


class _IOPub:
    def __init__(self, queue: asyncio.Queue[dict[str, Any]]) -> None:
        self._queue = queue

    async def get_msg(self) -> dict[str, Any]:
        """The next IOPub message (waits for it; nothing more comes once the socket closed)."""
        return await self._queue.get()


class GatewayChannels:
    """One websocket to a gateway's kernel, with the kernel client's parts ``KernelComms`` uses.
    ``on_lost(why)`` is called once the websocket closes (not when :meth:`stop_channels`
    closes it)."""

    def __init__(self, kernel: Any, on_lost: Callable[[str], None] | None = None) -> None:
        self.kernel_id = str(kernel.kernel_id)
        self.session = Session(key=b"", username="jupyter-agent-mcp")  # (the gateway signs for the kernel)
        self._iopub: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.shell_channel = _Shell(self)
        self.iopub_channel = _IOPub(self._iopub)
        self.on_lost = on_lost
        #: The kernel process's session id, from its last ``status`` message (None: none seen yet).
        self.kernel_session: str | None = None
        #: How many times the kernel's session changed: a restart each (the kernel's epoch).
        self.restarts = 0
        #: Why the websocket closed (None while it is open).
        self.lost: str | None = None
        self._ws: Any = None
        self._stopping = False
        self._pending: list[str] = []  # messages sent before the websocket opened
        self._task: asyncio.Task[None] | None = None

    def start_channels(self, **_: Any) -> None:
        """Connect (in a task: messages sent meanwhile go once it is open)."""
        self._task = asyncio.get_event_loop().create_task(self._run())

    def _url(self) -> tuple[str, dict[str, Any]]:
        from jupyter_server.gateway.gateway_client import GatewayClient
        from jupyter_server.utils import url_escape, url_path_join

        gateway = GatewayClient.instance()
        url = url_path_join(gateway.ws_url or "", gateway.kernels_endpoint, url_escape(self.kernel_id), "channels")
        # (a session id of its own: the gateway replaces a connection whose session id it has seen)
        return f"{url}?session_id={url_escape(self.session.session)}", gateway.load_connection_args()

    async def _run(self) -> None:
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        url, args = self._url()
        try:
            self._ws = await asyncio.wait_for(websocket_connect(HTTPRequest(url, **args)), CONNECT_TIMEOUT_S)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # (a 404: the gateway has no such kernel; refused: the gateway is down)
            log.warning("could not connect to the gateway's kernel %s: %s", self.kernel_id, e)
            self._lose(UNREACHABLE.format(url=url.split("?")[0], why=f"{type(e).__name__}: {e}"))
            return
        for text in self._pending:
            self._ws.write_message(text)
        self._pending.clear()
        while True:
            message = await self._ws.read_message()
            if message is None:
                break
            try:
                self._received(message)
            except Exception:  # (a malformed message: skip it; the next ones still count)
                log.warning("could not read a message of the gateway's kernel %s", self.kernel_id, exc_info=True)
        if not self._stopping:
            log.warning("the gateway closed its connection to kernel %s (%s)", self.kernel_id,
                        getattr(self._ws, "close_reason", None) or "no reason given")
            self._lose(LOST)

    def _lose(self, why: str) -> None:
        self.lost = why
        if self.on_lost is not None and not self._stopping:
            self.on_lost(why)

    def _received(self, message: str | bytes) -> None:
        msg = _decode(message)
        channel, header = msg.get("channel"), msg.get("header") or {}
        if channel == "control" and header.get("msg_type") == "kernel_info_reply":
            self._saw_session(header)  # (the answer to ping(): the kernel's own)
        if channel != "iopub":
            return  # (replies on shell: the calls' answers come as comm messages on IOPub)
        if header.get("msg_type") == "status" and (msg.get("content") or {}).get("execution_state") in (
                "busy", "idle", "starting"):
            self._saw_session(header)
        self._iopub.put_nowait(msg)

    def _saw_session(self, header: dict[str, Any]) -> None:
        session = str(header.get("session") or "")
        if session and session != self.kernel_session:
            if self.kernel_session is not None:
                self.restarts += 1
                log.info("the gateway's kernel %s restarted (a new kernel session)", self.kernel_id)
            self.kernel_session = session

    def ping(self) -> None:
        """Ask the kernel for its session on the control channel (answered while a cell runs): a
        quiet kernel the gateway restarted sends nothing on IOPub this connection is sure to see
        (the new process's first messages may go before the gateway's subscription to it is
        back), so the check that a waiting call's kernel lives asks. The reply is counted when it
        comes (the next check sees it)."""
        self.send({**self.session.msg("kernel_info_request", {}), "channel": "control"})

    def send(self, msg: dict[str, Any]) -> None:
        text = json.dumps(msg, default=json_default)
        if self._ws is None:
            self._pending.append(text)
        elif self.lost is None:
            self._ws.write_message(text)

    def kernel_info(self) -> str:
        """Send a ``kernel_info_request``; its message id."""
        msg = self.session.msg("kernel_info_request", {})
        self.shell_channel.send(msg)
        return str(msg["header"]["msg_id"])

    def stop_channels(self) -> None:
        self._stopping = True
        if self._ws is not None:
            self._ws.close()
        if self._task is not None:
            self._task.cancel()


def _decode(message: str | bytes) -> dict[str, Any]:
    """A message of the gateway's websocket (no subprotocol: JSON text; with binary buffers,
    jupyter_server's binary framing, read by its own function)."""
    if isinstance(message, str):
        return dict(json.loads(message))
    from jupyter_server.services.kernels.connection.base import deserialize_binary_message

    return dict(deserialize_binary_message(message))
