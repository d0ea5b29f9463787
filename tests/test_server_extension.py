"""The server extension: TCP_NODELAY on kernel websockets (the bridge's latency: docs/design.md,
"The live-notebook bridge"); a gateway connection whose page's websocket closed while it was
connecting is closed once open (docs/mcp-server.md, "Kernels on a gateway"; with a real
gateway: tests/jupyter/test_mcp_gateway_browser.py)."""

from __future__ import annotations

import asyncio

from jupyter_agent.server_extension import (_jupyter_server_extension_points, patch_gateway_relay,
                                           patch_kernel_websocket)


class Handler:
    """Stands in for jupyter_server's KernelWebsocketHandler: an async ``open``."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def set_nodelay(self, value: bool) -> None:
        self.calls.append(f"nodelay={value}")

    async def open(self, kernel_id: str) -> str:
        self.calls.append(f"open {kernel_id}")
        return "opened"


def test_the_kernel_websocket_sets_nodelay_before_it_connects():
    assert patch_kernel_websocket(Handler) is True
    assert patch_kernel_websocket(Handler) is False  # once only, however often the server loads it
    handler = Handler()
    assert asyncio.run(handler.open("k1")) == "opened"
    assert handler.calls == ["nodelay=True", "open k1"]


def test_the_real_handler_is_patchable_and_the_extension_is_declared():
    from jupyter_server.services.kernels.websocket import KernelWebsocketHandler

    assert callable(getattr(KernelWebsocketHandler, "open", None))
    assert _jupyter_server_extension_points() == [{"module": "jupyter_agent.server_extension"}]


class Relay:
    """Stands in for jupyter_server's GatewayWebSocketConnection: the client's websocket
    (``websocket_handler``), the gateway's (``ws``, set once open), the pending connect
    (``ws_future``), messages sent once connected, and ``disconnect``, which cancels a pending
    connect."""

    def __init__(self, asked: str | None = None, selected: str | None = None) -> None:
        self.websocket_handler = Handler()
        self.websocket_handler.request = Request({"Sec-WebSocket-Protocol": asked} if asked else {})
        self.websocket_handler.selected_subprotocol = selected
        self.ws: Socket | None = None
        self.ws_future: asyncio.Future | None = None
        self.disconnected = False
        self.connects = 0
        self.sent: list[str] = []

    async def connect(self) -> None:
        self.connects += 1
        self.ws_future = asyncio.get_running_loop().create_future()

    def handle_incoming_message(self, message: str) -> None:
        assert self.ws_future is not None, "a message before the connect"
        self.sent.append(message)

    def disconnect(self) -> None:
        self.disconnected = True
        if self.ws is not None:
            self.ws.close()
        elif self.ws_future is not None:
            self.ws_future.cancel()


class Request:
    def __init__(self, headers: dict[str, str]) -> None:
        self.headers = headers


class Socket:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def unpatched_relay() -> type[Relay]:
    """A class of its own for one test to patch: the patch marks the class it patches, so a
    test that patched ``Relay`` itself would leave it patched for the tests after it."""
    return type("Relay", (Relay,), {})


def test_the_gateway_relay_connects_a_websocket_a_browser_fails_on_its_first_message_only():
    relay = unpatched_relay()
    assert patch_gateway_relay(relay) is True
    assert patch_gateway_relay(relay) is False

    async def scenario() -> None:
        failed = relay(asked="v1.kernel.websocket.jupyter.org")  # asked, given none: a browser fails it
        await failed.connect()
        failed.disconnect()
        assert failed.connects == 0  # no gateway connection with the page's identity, left to nobody

        tolerant = relay(asked="v1.kernel.websocket.jupyter.org")  # a client that goes on without one
        await tolerant.connect()
        tolerant.handle_incoming_message("a")
        tolerant.handle_incoming_message("b")
        await asyncio.sleep(0)  # (the connect runs, then what waited goes, in order)
        await asyncio.sleep(0)
        assert tolerant.connects == 1 and tolerant.sent == ["a", "b"]
        tolerant.handle_incoming_message("c")
        assert tolerant.sent == ["a", "b", "c"]

        page = relay()  # asked for none: connected at once, as before
        await page.connect()
        assert page.connects == 1

    asyncio.run(scenario())


def test_a_gateway_connection_whose_websocket_left_while_it_connected_is_closed_once_open():
    relay = unpatched_relay()
    patch_gateway_relay(relay)

    async def scenario() -> None:
        connecting = relay()
        await connecting.connect()
        assert connecting.ws_future is not None
        connecting.disconnect()  # the client's websocket closed before the gateway's opened
        assert connecting.disconnected and not connecting.ws_future.cancelled()
        opened = Socket()
        connecting.ws_future.set_result(opened)
        await asyncio.sleep(0)  # (the future's callbacks run on the next turn of the loop)
        assert opened.closed  # not left open with the client's session id

        failed = relay()
        await failed.connect()
        assert failed.ws_future is not None
        failed.disconnect()
        failed.ws_future.set_exception(ConnectionRefusedError())  # nothing opened: nothing to close
        await asyncio.sleep(0)
        assert failed.disconnected

        open_one = relay()
        await open_one.connect()
        assert open_one.ws_future is not None
        open_one.ws = Socket()
        open_one.ws_future.set_result(open_one.ws)
        open_one.disconnect()  # an open connection: jupyter_server's own disconnect closes it
        assert open_one.ws.closed

    asyncio.run(scenario())


def test_the_real_gateway_connection_has_what_the_patch_uses():
    from jupyter_server.gateway.connections import GatewayWebSocketConnection

    for method in ("connect", "handle_incoming_message", "disconnect"):
        assert callable(getattr(GatewayWebSocketConnection, method))
    assert {"ws", "ws_future", "disconnected", "websocket_handler"} <= set(
        GatewayWebSocketConnection.class_trait_names())
