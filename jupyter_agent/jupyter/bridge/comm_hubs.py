"""A comm target and the hub that answers it, one hub per session: registered at
``%load_ext``, removed at ``%unload_ext``. The side panel's (``panel_comm.py``) and outside
agents' (``outside_hub.py``) targets are registered this way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


def register_hub(shell: Any, session: Any, target: str, attr: str, make: Callable[[Any], Any]) -> Any | None:
    """Register ``target`` on ``shell``'s kernel, answered by the session's hub ``attr``
    (``make(session)`` the first time); None where there is no kernel (terminal IPython:
    nothing can open a comm)."""
    manager = getattr(getattr(shell, "kernel", None), "comm_manager", None)
    if manager is None:
        return None
    hub = getattr(session, attr, None)
    if hub is None:
        hub = make(session)
        setattr(session, attr, hub)
    manager.register_target(target, hub.open)
    return hub


def unregister_hub(shell: Any, session: Any, target: str, attr: str) -> None:
    """Undo :func:`register_hub`: the target goes, the hub closes its comms."""
    manager = getattr(getattr(shell, "kernel", None), "comm_manager", None)
    if manager is not None:
        try:
            manager.unregister_target(target, None)
        except Exception:  # not registered (a failed %load_ext)
            log.debug("could not unregister the comm target %s", target, exc_info=True)
    hub = getattr(session, attr, None)
    if hub is not None:
        hub.close()
        setattr(session, attr, None)
