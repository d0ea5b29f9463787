"""jupyter-agent's Jupyter server extension: TCP_NODELAY on kernel websockets, no twin of a
page's connection left on a kernel gateway, and the MCP endpoint for outside agents
(``/jupyter-agent/mcp``: docs/mcp-server.md; ``JUPYTER_AGENT_MCP=0`` leaves it out).

The live-notebook bridge sends small request/reply messages between the kernel and the
page. jupyter_server never sets TCP_NODELAY on its kernel websockets, so Nagle's
algorithm holds each small frame back until the previous one is acknowledged: about
50 ms per bridge request while the kernel is idle, about 12 ms with the flag (docs/design.md,
"The live-notebook bridge").
Enabled by ``jupyter-config/server-config/jupyter_agent.json``, installed with the
package. ``JUPYTER_AGENT_NODELAY=0`` turns it off (the benchmark compares both).

**A page's connection to a gateway's kernel** (``--GatewayClient.url``) is relayed by
jupyter_server's ``GatewayWebSocketConnection``: a websocket of the server's own to the
gateway, with the page's session id, which the gateway makes the ZMQ identity of its shell
and control sockets for it; the kernel answers only the socket of an identity that connected
last. JupyterLab opens every kernel connection twice: its first websocket asks for a
subprotocol the relay does not give, so the browser fails it at once and opens another with
the same session id. The relay had already started a gateway connection for the first one,
and jupyter_server's disconnect cancels the pending connect, which opens anyway, held by
nothing, never read and never closed: two connections of one identity on the gateway. When
the orphan connected last (at the page's start, and after about one kernel restart in two,
when both connect again), nothing the page sent reached the kernel (docs/mcp-server.md,
"Kernels on a gateway"). So (:func:`patch_gateway_relay`): a websocket that asked for a
subprotocol and got none connects to the gateway on its first message (a browser fails it
before it sends any; a client that accepts it sends one at once), and a gateway connection
whose websocket closed while it connected is closed once it opens.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

_PATCHED = "_jupyter_agent_nodelay"
_PATCHED_GATEWAY = "_jupyter_agent_relay"


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "jupyter_agent.server_extension"}]


def nodelay_enabled() -> bool:
    return os.environ.get("JUPYTER_AGENT_NODELAY", "1").strip().lower() not in ("0", "false", "no", "off")


def patch_kernel_websocket(handler_class: Any) -> bool:
    """Make ``handler_class.open`` set TCP_NODELAY before it connects; True if patched now."""
    if getattr(handler_class, _PATCHED, False):
        return False
    original = handler_class.open

    async def open(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            self.set_nodelay(True)
        except Exception:  # a closed stream: the original open reports it
            log.debug("could not set TCP_NODELAY on a kernel websocket", exc_info=True)
        result = original(self, *args, **kwargs)
        if hasattr(result, "__await__"):
            result = await result
        return result

    open.__doc__ = original.__doc__
    handler_class.open = open
    setattr(handler_class, _PATCHED, True)
    return True


def patch_gateway_relay(connection_class: Any) -> bool:
    """Make ``connection_class`` (jupyter_server's ``GatewayWebSocketConnection``) open no
    gateway connection for a websocket the browser fails, and close one whose websocket went
    while it connected (the module's docstring says why); True if patched now."""
    if getattr(connection_class, _PATCHED_GATEWAY, False):
        return False
    connect, incoming, disconnect = (connection_class.connect, connection_class.handle_incoming_message,
                                     connection_class.disconnect)

    async def deferring_connect(self: Any) -> None:
        if _failed_by_browsers(self) and not getattr(self, "_jupyter_agent_heard", False):
            self._jupyter_agent_waiting = []  # (connected on its first message)
            return
        await connect(self)

    def handle_incoming_message(self: Any, message: str) -> None:
        waiting = getattr(self, "_jupyter_agent_waiting", None)
        if waiting is None:
            return incoming(self, message)
        waiting.append(message)
        if len(waiting) == 1:  # the first: connect now, then send what came meanwhile, in order
            self._jupyter_agent_heard = True
            task = asyncio.ensure_future(connect(self))
            task.add_done_callback(lambda done: _send_waiting(self, incoming, done))
        return None

    def closing_disconnect(self: Any) -> Any:
        pending = getattr(self, "ws_future", None)
        if getattr(self, "ws", None) is None and pending is not None and not pending.done():
            self.disconnected = True  # (its reader and its retries stop on this)
            pending.add_done_callback(_close_opened)
            return None
        return disconnect(self)

    for name, patched, original in (("connect", deferring_connect, connect),
                                    ("handle_incoming_message", handle_incoming_message, incoming),
                                    ("disconnect", closing_disconnect, disconnect)):
        patched.__doc__ = original.__doc__
        setattr(connection_class, name, patched)
    setattr(connection_class, _PATCHED_GATEWAY, True)
    return True


def _failed_by_browsers(connection: Any) -> bool:
    """Whether the connection's websocket asked for a subprotocol and was given none (a browser
    fails such a websocket as soon as it opens)."""
    handler = getattr(connection, "websocket_handler", None)
    request = getattr(handler, "request", None)
    if handler is None or request is None or not request.headers.get("Sec-WebSocket-Protocol"):
        return False
    return getattr(handler, "selected_subprotocol", None) is None


def _send_waiting(connection: Any, incoming: Callable[[Any, str], None], connected: asyncio.Future[None]) -> None:
    """What a deferred websocket sent, on to the gateway once its connect is done (jupyter_server
    reports a connection that failed, and drops what comes on it)."""
    if not connected.cancelled() and connected.exception() is not None:
        log.warning("could not connect a kernel websocket to the gateway", exc_info=connected.exception())
    waiting, connection._jupyter_agent_waiting = connection._jupyter_agent_waiting, None
    for message in waiting or ():
        incoming(connection, message)


def _close_opened(future: Any) -> None:
    """A gateway connection whose websocket closed while it was connecting: closed once open
    (one that failed to open has nothing to close)."""
    if future.cancelled() or future.exception() is not None:
        return
    log.info("closing a connection to the gateway whose websocket closed while it connected")
    future.result().close()


def mcp_enabled() -> bool:
    return os.environ.get("JUPYTER_AGENT_MCP", "1").strip().lower() not in ("0", "false", "no", "off")


def _load_jupyter_server_extension(serverapp: Any) -> None:
    try:
        from jupyter_server.gateway.connections import GatewayWebSocketConnection
    except ImportError:  # (a jupyter_server without gateway support: no such connections)
        log.debug("no gateway websocket connection in this jupyter_server")
    else:
        patch_gateway_relay(GatewayWebSocketConnection)
    if mcp_enabled():
        from .mcp_server.http import PATH, setup

        serverapp.jupyter_agent_mcp = setup(serverapp)
        serverapp.log.info(f"jupyter-agent: MCP endpoint for outside agents at /{PATH}")
    if not nodelay_enabled():
        serverapp.log.info("jupyter-agent: TCP_NODELAY on kernel websockets is off (JUPYTER_AGENT_NODELAY=0)")
        return
    from jupyter_server.services.kernels.websocket import KernelWebsocketHandler

    patch_kernel_websocket(KernelWebsocketHandler)
    serverapp.log.info("jupyter-agent: TCP_NODELAY on kernel websockets")
