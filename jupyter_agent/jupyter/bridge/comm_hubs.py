"""A comm target and the hub that answers it: registered at ``%load_ext``, removed at
``%unload_ext``. The side panel's (``panel/panel_comm.py``) and outside agents'
(``outside/outside_hub.py``) targets are registered this way; the hub itself is held by its
owner (``magic/kernel_services.py``'s ``KernelServices``: ``panel_hub``, ``outside_hub``),
which passes it in and keeps what comes back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from .kernel_types import Comm, Shell, comm_manager_of

log = logging.getLogger(__name__)


class Hub(Protocol):
    """What a comm target's hub is to this module: it answers opens and closes its comms."""

    def open(self, comm: Comm, open_msg: dict[str, Any]) -> None:
        """A comm was opened to the target."""

    def close(self) -> None:
        """Close every comm of the hub's."""


H = TypeVar("H", bound=Hub)


def register_hub(shell: Shell | None, target: str, hub: H | None, make: Callable[[], H]) -> H | None:
    """Register ``target`` on ``shell``'s kernel, answered by ``hub`` (``make()`` when there is
    none yet); the hub, or None where there is no kernel (terminal IPython: nothing can open a
    comm)."""
    manager = comm_manager_of(shell)
    if manager is None:
        return None
    if hub is None:
        hub = make()
    manager.register_target(target, hub.open)
    return hub


def unregister_hub(shell: Shell | None, target: str, hub: Hub | None) -> None:
    """Undo :func:`register_hub`: the target goes, the hub closes its comms (its owner then
    drops it)."""
    manager = comm_manager_of(shell)
    if manager is not None:
        try:
            manager.unregister_target(target, None)
        except Exception:  # not registered (a failed %load_ext)
            log.debug("could not unregister the comm target %s", target, exc_info=True)
    if hub is not None:
        hub.close()


def close_comms(comms: list[Comm], what: str) -> None:
    """Close each of ``comms`` and empty the list (``%unload_ext``): one the page already
    closed is logged, not raised. ``what`` names them in the log ("bridge", "panel")."""
    for comm in list(comms):
        try:
            comm.close()
        except Exception:  # already closed by the page
            log.debug("could not close a %s comm", what, exc_info=True)
    comms.clear()
