"""An outside agent's ask about a notebook in the background: the page is told (docs/mcp-server.md).

An outside call's approval card shows in the side panel and under its notebook, both fed by
the side panel's comm (``panel_comm.py``), which follows the notebook that is current in the
page. A kernel whose :class:`~.panel_comm.PanelHub` has no comm is one no page follows: its
notebook may still be open in a page, in another tab, and that page is on this kernel's
live-notebook bridge (``bridge.py``), which reaches every open notebook's page.

So the kernel sends that page (the one the call works on) the bridge request ``ask``
(``ask_id``, ``asker``: the client's name redacted and with its invisible characters marked,
``what``: the call in a few words) and waits for its reply: the page shows a JupyterLab
notification whose button brings the notebook to the front, where the panel connects and the
card shows as for any ask (``labextension/src/bridgeAsks.ts``). Once the ask is settled
(answered, denied, stopped, or its task cancelled), ``ask_end`` with the same ``ask_id``
takes the notification away. A kernel that restarts cannot say it: the page drops its
notifications when its kernel restarts or changes, or the notebook closes.

A page whose hello does not say ``asks: true`` (an older extension), or that does not answer,
is not relied on: the call is refused as before (``outside_run.NO_PANEL``).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING, Any

from ...redact import redact
from ...render.invisible import mark_invisible

if TYPE_CHECKING:
    from ..bridge.kernel_bridge import KernelBridge

log = logging.getLogger(__name__)

#: Characters of the client's name sent (a JupyterLab notification shows at most 140 in all).
ASKER_CHARS = 40
#: ``ask_end`` requests on their way (a task nobody references may be collected while it runs).
_ENDING: set[asyncio.Task[None]] = set()


def asked_what(tool_name: str, tool_input: dict[str, Any]) -> str:
    """The call in a few words, as the notification says it ("... asks to run a cell in ...")."""
    if tool_name == "NotebookRun":
        return "run a cell"
    if tool_name == "NotebookRunCells":
        return "run cells"
    if tool_name == "KernelRun":
        return "run code in the kernel"
    if tool_name == "NotebookRestart":
        return "restart the kernel"
    if tool_name == "NotebookEdit":
        return {"insert": "insert a cell", "delete": "delete a cell",
                "move": "move a cell"}.get(str(tool_input.get("edit_mode")), "replace a cell")
    return f"use {tool_name}"


def short_name(client: str) -> str:
    """The client's name as the notification shows it: redacted, marked, cut to ``ASKER_CHARS``."""
    name = mark_invisible(redact(client))  # as the panel shows text
    return name if len(name) <= ASKER_CHARS else name[:ASKER_CHARS - 1] + "…"


class BackgroundAsk:
    """The notification one pending ask shows in its page (see the module doc)."""

    def __init__(self, bridge: KernelBridge, client_id: str, ask_id: str) -> None:
        self.bridge = bridge
        self.client_id = client_id
        self.ask_id = ask_id

    @classmethod
    async def show(cls, bridge: KernelBridge | None, client_id: str, client: str, tool_name: str,
                   tool_input: dict[str, Any]) -> BackgroundAsk | None:
        """Tell page ``client_id`` (over ``bridge``) that ``client`` asks; None when no page was
        told (none shows the notebook, an older page, no answer): nobody would see the ask."""
        from ..bridge.bridge_errors import BridgeError, PageGone

        if bridge is None or not client_id:
            return None
        page = bridge.pages.get(client_id)
        if page is None or page.gone or not page.asks or not page.compatible:
            return None
        ask_id = uuid.uuid4().hex
        try:
            await bridge.request(client_id, "ask", ask_id=ask_id, asker=short_name(client),
                                 what=asked_what(tool_name, tool_input))
        except (BridgeError, PageGone) as exc:
            log.info("the page showing the notebook was not told of an outside agent's ask: %s", exc)
            return None
        return cls(bridge, client_id, ask_id)

    def end(self) -> None:
        """The ask is settled: take the page's notification away (without waiting: this may
        run while the ask's task is being cancelled)."""
        try:
            task = asyncio.get_running_loop().create_task(self._end())
        except RuntimeError:  # no loop runs (the kernel is going down): the page drops it with the kernel
            log.debug("no loop to end an ask's notification")
            return
        _ENDING.add(task)
        task.add_done_callback(_ENDING.discard)

    async def _end(self) -> None:
        from ..bridge.bridge_errors import BridgeError, PageGone

        try:
            await self.bridge.request(self.client_id, "ask_end", ask_id=self.ask_id)
        except (BridgeError, PageGone) as exc:  # the page went: its notifications went with it
            log.debug("the page was not told an ask ended: %s", exc)
