"""``KernelServices``: everything kernel-wide that ``%load_ext jupyter_agent`` starts and
``%unload_ext`` closes, held in one object, started and closed in one order.

It owns, as typed attributes:

* ``links`` (``bridge/kernel_links.py``'s :class:`~..bridge.kernel_links.KernelLinks`): the
  live-notebook bridge to the JupyterLab pages, the execution tracker (which cell executes: a
  run through the page must not wait on it) and the kernel's client of itself;
* ``panel_hub``: the side panel's comm hub (``panel/panel_comm.py``);
* ``outside_hub``: outside agents' comm hub (``outside/outside_hub.py``);

and starts the watch that shows a reloaded page the run still going in its cell. The
session owns the one object (``session.services``, made by the first ``%load_ext``, closed
and started again by ``%reload_ext``); ``kernel/agent_session.py``'s ``get_session(shell)``
finds the session of a shell. The rooms below ``magic/`` never import this module: they are
handed what they need (``links``, the bridge) as an argument, or read it through the
``Services`` protocol the session types its ``services`` with. It lives in ``magic/``
because it is the one room that may import every other (tests/test_package_graph.py).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..bridge.kernel_links import KernelLinks
from ..bridge.kernel_types import Shell
from ..kernel.agent_session import AgentSession

if TYPE_CHECKING:  # (each loads with the start, after the magics are registered)
    from ..outside.outside_hub import OutsideHub
    from ..panel.panel_comm import PanelHub

log = logging.getLogger(__name__)


class KernelServices:
    """The kernel-wide parts of one loaded extension, for ``shell`` and its ``session``."""

    def __init__(self, shell: Shell, session: AgentSession) -> None:
        self.shell = shell
        self.session = session
        #: the bridge, the execution tracker, the kernel's client of itself
        self.links = KernelLinks(shell)
        #: the side panels' comm hub, while loaded in a kernel
        self.panel_hub: PanelHub | None = None
        #: outside agents' calls over MCP (docs/mcp-server.md), while loaded in a kernel
        self.outside_hub: OutsideHub | None = None

    def start(self) -> None:
        """Start every part (again after ``close``: ``%reload_ext``)."""
        from ..outside.outside_hub import register as register_outside
        from ..panel.panel_comm import register as register_panel

        # the tracker (a run through the page must not wait on a cell executing) and the
        # live-notebook bridge to the JupyterLab page
        bridge = self.links.start()
        if bridge is not None:
            from ..bridge.rejoin import watch_pages

            watch_pages(bridge, self.session)  # a reloaded page is shown the run still going in its cell
        self.panel_hub = register_panel(self.shell, self.session, self.panel_hub)  # the side panel's comm target
        # outside agents' calls, from the MCP server (docs/mcp-server.md)
        self.outside_hub = register_outside(self.shell, self.session, self.outside_hub, self.links)

    def close(self) -> None:
        """Close every part, the reverse of :meth:`start`; the kernel's client of itself too
        (made on first use, by a run that executes cells without the page)."""
        from ..outside.outside_hub import unregister as unregister_outside
        from ..panel.panel_comm import unregister as unregister_panel

        self.links.close()
        unregister_panel(self.shell, self.panel_hub)
        self.panel_hub = None
        unregister_outside(self.shell, self.outside_hub, self.links)
        self.outside_hub = None
