"""``KernelLinks``: this room's kernel-wide parts for one loaded extension, held in one object.

They are the kernel's links to its pages and to itself: the live-notebook bridge
(``kernel_bridge.py``, with its quiet busy/idle for the pages' messages: ``bridge_status.py``),
which cell executes (``execution_tracker.py``: a run through the page must not wait on it) and
the kernel's client of itself (``self_client.py``). ``magic/kernel_services.py``'s
``KernelServices`` makes one and owns it (``services.links``); the lower rooms are handed it
(or the bridge alone) as an argument: :func:`~.live_notebook.bind_notebook` and
:func:`~.live_notebook.live_notebook` take it, and nothing reads it from a module global.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .execution_tracker import ExecutionTracker
from .kernel_types import Shell, kernel_of

if TYPE_CHECKING:  # (self_client.py loads the notebook package: a run's, not %load_ext's)
    from .kernel_bridge import KernelBridge
    from .self_client import SelfConnection

log = logging.getLogger(__name__)


class KernelLinks:
    """The bridge, the execution tracker and the kernel's client of itself, for ``shell``:
    started by :meth:`start` (``%load_ext``), closed by :meth:`close` (``%unload_ext``), and
    started again by the next :meth:`start` (``%reload_ext``)."""

    def __init__(self, shell: Shell | None) -> None:
        self.shell = shell
        #: the live-notebook bridge to the JupyterLab pages, while started (None without a kernel)
        self.bridge: KernelBridge | None = None
        #: whether a cell executes now, while started (None for a shell without events)
        self.tracker: ExecutionTracker | None = None
        #: comm targets whose ``comm_open`` publishes no busy/idle (``bridge_status.py``):
        #: outside agents' calls add theirs
        self.quiet_opens: set[str] = set()
        self._self_client: SelfConnection | None = None

    @property
    def self_client(self) -> SelfConnection:
        """The kernel's client of itself (made on the first cell it runs, not here)."""
        if self._self_client is None:
            from .self_client import SelfConnection

            self._self_client = SelfConnection(self.shell)
        return self._self_client

    def start(self) -> KernelBridge | None:
        """Start the tracker and the bridge (again after :meth:`close`); the bridge, or None
        where there is no kernel with comms (terminal IPython) or it did not start."""
        if self.tracker is None and self.shell is not None and hasattr(self.shell, "events"):
            self.tracker = ExecutionTracker(self.shell)
        kernel = kernel_of(self.shell)
        if kernel is None:
            return None
        if self.bridge is not None and self.bridge.started:
            self.bridge.open_broadcast()  # started twice without a close: greet pages again
            return self.bridge
        from .bridge_status import quiet_bridge_status
        from .kernel_bridge import KernelBridge

        bridge = KernelBridge()
        try:
            bridge.start()
        except Exception:  # no comm manager (an unusual kernel): the agent works on files only
            log.warning("the live-notebook bridge did not start", exc_info=True)
            return None
        quiet_bridge_status(kernel, bridge.comm_ids, self.quiet_opens)  # no busy/idle for the page's bridge messages
        bridge.kernel = kernel
        self.bridge = bridge
        return bridge

    def close(self) -> None:
        """Close the bridge (and take its status wrapper off), the kernel's client of itself,
        and the tracker: the reverse of :meth:`start`."""
        if self.bridge is not None:
            from .bridge_status import restore_status

            self.bridge.close()
            restore_status(self.bridge.kernel)
        self.bridge = None
        if self._self_client is not None:
            self._self_client.close()
        if self.tracker is not None:
            self.tracker.remove()
        self.tracker = None
