"""The server extension: TCP_NODELAY on kernel websockets (the bridge's latency: docs/design.md,
"The live-notebook bridge")."""

from __future__ import annotations

import asyncio

from jupyter_agent.server_extension import _jupyter_server_extension_points, patch_kernel_websocket


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
