"""A notebook page that comes back while a run of one of its ``%%agent`` cells goes on.

A reload loads the notebook as it was last saved: the run's cell shows what the file
holds (an earlier run's "Finished", or nothing), and the page that showed the run is
gone. Two things bring the run back into the new page:

* its outputs: on the new page's hello (a page of the run's notebook), the kernel sends
  it the cell's outputs as they stand (``show_outputs``: the live widget and its fallback,
  with their display ids, so every later update of the run reaches them:
  ``labextension/src/displays.ts``). The widget is the kernel's own, so its buttons
  (Allow, Deny, Stop) answer the run as before. A page too old for ``show_outputs``
  refuses it and shows the file's outputs, as before;
* its edits and cell runs: the run's :class:`~jupyter_agent.notebook.live_backend.LiveNotebook`
  goes on with a page showing the same notebook once its own page said goodbye
  (:func:`~.live.successor`), rather than failing every later call with "stopped answering".
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from .kernel_bridge import KernelBridge, Page

log = logging.getLogger(__name__)

#: The bridge operation that sets one cell's outputs in a page.
SHOW_OUTPUTS = "show_outputs"


def watch_pages(bridge: KernelBridge, session: Any) -> None:
    """Show ``session``'s live run to each page of its notebook that says hello."""
    if not any(getattr(f, "rejoins", None) is session for f in bridge.hello_listeners):
        listener = _Rejoin(bridge, session)
        bridge.hello_listeners.append(listener)


class _Rejoin:
    """The hello listener: a callable, which knows its session (one per session)."""

    def __init__(self, bridge: KernelBridge, session: Any) -> None:
        self.bridge, self.rejoins = bridge, session

    def __call__(self, page: Page) -> None:
        handle = self.rejoins.active
        if handle is None or handle.done or not handle.cell_id or not handle.notebook_key:
            return
        # why here: live_notebook.py loads the tools (pydantic), which %load_ext leaves to the warm-up
        from .live_notebook import key_of

        if key_of(page, self.rejoins) != handle.notebook_key:
            return
        outputs = handle.live_outputs()
        if outputs is None:
            return
        try:
            task = asyncio.get_running_loop().create_task(
                self.bridge.request(page.client_id, SHOW_OUTPUTS, cell_id=handle.cell_id, outputs=outputs))
        except RuntimeError:  # no loop here (a hello outside the kernel's loop): nothing to show it with
            log.debug("no running loop to show the run to page %s", page.client_id)
            return
        task.add_done_callback(_said)


def _said(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        # an older page (unknown_op), or one gone again: it shows the file's outputs
        log.debug("a page did not show the live run: %s", task.exception())
