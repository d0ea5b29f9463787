"""``KernelServices``: everything kernel-wide that ``%load_ext jupyter_agent`` starts and
``%unload_ext`` closes, in one place and one order.

They are: the execution tracker (which cell executes: a run through the page must not wait
on it), the live-notebook bridge to the JupyterLab pages and the watch that shows a reloaded
page the run still going in its cell, the side panel's comm hub, outside agents' comm hub,
and the kernel's client of itself. The session holds the one object while the extension is
loaded; ``close`` undoes ``start`` in reverse. It lives in ``magic/`` because it is the one
room that may import every other (tests/test_package_graph.py).

The parts still keep their own state where the lower rooms read it
(``bridge/kernel_bridge.py``'s bridge, ``bridge/self_client.py``'s client,
``bridge/execution_tracker.py``'s trackers); moving that state here is what is left
(docs/architecture.md, "jupyter/ in rooms").
"""

from __future__ import annotations

import logging
from typing import Any

from ..kernel.agent_session import AgentSession

log = logging.getLogger(__name__)


class KernelServices:
    """The kernel-wide parts of one loaded extension, for ``shell`` and its ``session``."""

    def __init__(self, shell: Any, session: AgentSession) -> None:
        self.shell = shell
        self.session = session

    def start(self) -> None:
        """Start every part (again after ``close``: ``%reload_ext``)."""
        from ..bridge.kernel_bridge import start_bridge, tracker_for
        from ..outside.outside_hub import register as register_outside
        from ..panel.panel_comm import register as register_panel

        tracker_for(self.shell)  # knows when a cell executes (a run through the page must not wait on it)
        bridge = start_bridge(self.shell)  # the live-notebook bridge to the JupyterLab page
        if bridge is not None:
            from ..bridge.rejoin import watch_pages

            watch_pages(bridge, self.session)  # a reloaded page is shown the run still going in its cell
        register_panel(self.shell, self.session)  # the JupyterLab side panel's comm target
        register_outside(self.shell, self.session)  # outside agents' calls, from the MCP server (docs/mcp-server.md)

    def close(self) -> None:
        """Close every part, the reverse of :meth:`start`; the kernel's client of itself too
        (made on first use, by a run that executes cells without the page)."""
        from ..bridge.kernel_bridge import forget_tracker, stop_bridge
        from ..bridge.self_client import close_self_client
        from ..outside.outside_hub import unregister as unregister_outside
        from ..panel.panel_comm import unregister as unregister_panel

        stop_bridge()
        close_self_client()
        forget_tracker(self.shell)
        unregister_panel(self.shell, self.session)
        unregister_outside(self.shell, self.session)
