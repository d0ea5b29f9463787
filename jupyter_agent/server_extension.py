"""jupyter-agent's Jupyter server extension: TCP_NODELAY on kernel websockets, and the
MCP endpoint for outside agents (``/jupyter-agent/mcp``: docs/mcp-server.md;
``JUPYTER_AGENT_MCP=0`` leaves it out).

The live-notebook bridge sends small request/reply messages between the kernel and the
page. jupyter_server never sets TCP_NODELAY on its kernel websockets, so Nagle's
algorithm holds each small frame back until the previous one is acknowledged: about
50 ms per bridge request while the kernel is idle, about 12 ms with the flag (docs/design.md,
"The live-notebook bridge").
Enabled by ``jupyter-config/server-config/jupyter_agent.json``, installed with the
package. ``JUPYTER_AGENT_NODELAY=0`` turns it off (the benchmark compares both).
"""

from __future__ import annotations

import logging
import os
from typing import Any

log = logging.getLogger(__name__)

_PATCHED = "_jupyter_agent_nodelay"


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


def mcp_enabled() -> bool:
    return os.environ.get("JUPYTER_AGENT_MCP", "1").strip().lower() not in ("0", "false", "no", "off")


def _load_jupyter_server_extension(serverapp: Any) -> None:
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
