"""Whether a cell is executing in this kernel (docs/bridge.md, "Running a cell through the
page", the deadlock).

A cell run through the page is an ordinary execute request, handled after the cell that
is executing now: if that cell awaits the agent (``%%agent --wait``), the run would wait
for it and it for the run, forever. :class:`ExecutionTracker` counts the cells executing
(IPython's ``pre_run_cell`` and ``post_run_cell``), so such a run is refused with a reason.
One per loaded extension, held by ``kernel_links.py``'s :class:`~.kernel_links.KernelLinks`.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from .kernel_types import Shell

log = logging.getLogger(__name__)


class ExecutionTracker:
    """Knows whether a cell is executing in this kernel (IPython's pre/post_run_cell): a
    cell run through the page would queue behind it forever (docs/bridge.md, the deadlock)."""

    def __init__(self, shell: Shell) -> None:
        self.depth = 0
        self._lock = threading.Lock()
        self.shell = shell
        shell.events.register("pre_run_cell", self._pre)
        shell.events.register("post_run_cell", self._post)

    def _pre(self, *args: Any) -> None:
        with self._lock:
            self.depth += 1

    def _post(self, *args: Any) -> None:
        with self._lock:
            self.depth = max(0, self.depth - 1)

    def busy(self) -> bool:
        """Whether a cell is executing now."""
        return self.depth > 0

    def remove(self) -> None:
        """Unregister from the shell's events (``%unload_ext``)."""
        for name, fn in (("pre_run_cell", self._pre), ("post_run_cell", self._post)):
            try:
                self.shell.events.unregister(name, fn)
            except ValueError:
                log.debug("%s was not registered", name)

