"""An outside agent's call is a comm open from the Jupyter server: the kernel publishes no
busy/idle for it (the page re-renders its kernel indicators on each status), while every
other message keeps its status (``jupyter/bridge/bridge_status.py``)."""

from __future__ import annotations

from typing import Any

from jupyter_agent.jupyter.bridge.bridge_status import comm_open_target, quiet_bridge_status, restore_status
from jupyter_agent.mcp_server.protocol import TARGET


class Kernel:
    """Stands in for ipykernel's Kernel: ``_publish_status(status, channel, parent)``."""

    def __init__(self) -> None:
        self.published: list[str] = []
        self.parent: dict[str, Any] = {}

    def _publish_status(self, status: str, channel: str, parent: Any = None) -> None:
        self.published.append(status)

    def get_parent(self, channel: str = "shell") -> dict[str, Any]:
        return self.parent


def message(kind: str, **content: Any) -> dict[str, Any]:
    return {"header": {"msg_type": kind}, "content": content}


def test_an_outside_calls_open_publishes_no_status():
    kernel = Kernel()
    quiet_opens: set[str] = set()
    assert quiet_bridge_status(kernel, lambda: frozenset(), quiet_opens)
    quiet_opens.add(TARGET)
    try:
        for parent, heard in [(message("comm_open", target_name=TARGET, comm_id="a"), False),
                              (message("comm_open", target_name="jupyter.widget", comm_id="b"), True),
                              (message("execute_request", code="1"), True)]:
            kernel.published.clear()
            kernel._publish_status("busy", "shell", parent)
            assert (kernel.published == ["busy"]) is heard, parent
        assert comm_open_target(message("comm_open", target_name=TARGET)) == TARGET
        assert comm_open_target(message("comm_msg", comm_id="x")) is None
    finally:
        quiet_opens.discard(TARGET)
        restore_status(kernel)
    kernel.published.clear()
    kernel._publish_status("busy", "shell", message("comm_open", target_name=TARGET))
    assert kernel.published == ["busy"]  # taken off: as ipykernel publishes it
