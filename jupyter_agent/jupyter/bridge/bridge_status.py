"""No kernel busy/idle status for the page's bridge messages (docs/bridge.md, "Kernel status").

ipykernel publishes ``busy`` and ``idle`` on IOPub around every shell message it handles,
a page's ``comm_msg`` included; JupyterLab re-renders its kernel indicators on each status
change (the favicon, the status bar, the toolbar), which made every bridge round trip
several times its idle cost. The page's bridge messages (replies, ``changed`` notices,
``bye``) are not the user's work, so :func:`quiet_bridge_status` wraps the kernel
instance's ``_publish_status`` and drops the status whose parent is a ``comm_msg`` to one
of the bridge's comms, and the status of a ``comm_open`` to a target in its ``quiet_opens``
(held by ``kernel_links.py``: an outside agent's call, ``outside_hub.py``, one comm open per
call from the Jupyter server, not the user's work either). Every other message keeps its
status: other comms (ipywidgets), the bridge's ``comm_open`` and ``comm_close``, execute
requests.

``_publish_status`` is ipykernel's, not a public API: when the kernel has none with the
expected parameters, nothing is wrapped (logged at debug) and the status is published
as before. The page disposes of each bridge message's future as soon as it is sent
(``labextension/src/bridgeSend.ts``): with no ``idle`` coming, JupyterLab would keep it.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable, Collection, Mapping
from typing import Any

log = logging.getLogger(__name__)

#: The parameters ipykernel's ``Kernel._publish_status`` has had since 6.0.
_PARAMETERS = ("status", "channel", "parent")
#: Marks the wrapper, so that it is never wrapped twice and can be taken off.
_WRAPPED = "_jupyter_agent_bridge_status"


def comm_msg_target(parent: Any) -> str | None:
    """The comm id a ``comm_msg`` (a deserialized shell message) is sent to; None for
    any other message."""
    if not isinstance(parent, Mapping):
        return None
    header = parent.get("header")
    content = parent.get("content")
    if not isinstance(header, Mapping) or header.get("msg_type") != "comm_msg" or not isinstance(content, Mapping):
        return None
    comm_id = content.get("comm_id")
    return comm_id if isinstance(comm_id, str) else None


def comm_open_target(parent: Any) -> str | None:
    """The target name a ``comm_open`` (a deserialized shell message) opens; None for any
    other message."""
    if not isinstance(parent, Mapping):
        return None
    header, content = parent.get("header"), parent.get("content")
    if not isinstance(header, Mapping) or header.get("msg_type") != "comm_open" or not isinstance(content, Mapping):
        return None
    target = content.get("target_name")
    return target if isinstance(target, str) else None


def quiet_bridge_status(kernel: Any, comm_ids: Callable[[], frozenset[str]],
                        quiet_opens: Collection[str] = frozenset()) -> bool:
    """Keep ``kernel`` from publishing status for ``comm_msg`` to the comms ``comm_ids()``
    names (read at each status: comms come and go), and for ``comm_open`` to a target in
    ``quiet_opens`` (read at each status too: ``outside_hub.py`` adds its own). Returns
    whether the hook is in place."""
    original = getattr(kernel, "_publish_status", None)
    if original is None or not callable(original) or not callable(getattr(kernel, "get_parent", None)):
        log.debug("this kernel has no _publish_status/get_parent: bridge messages keep their status")
        return False
    if getattr(original, _WRAPPED, False):
        return True
    try:
        signature = inspect.signature(original)
    except (TypeError, ValueError):
        log.debug("cannot read _publish_status's signature: bridge messages keep their status", exc_info=True)
        return False
    if tuple(signature.parameters)[:3] != _PARAMETERS:
        log.debug("_publish_status%s is not the expected one: bridge messages keep their status", signature)
        return False

    @functools.wraps(original)
    def publish_status(*args: Any, **kwargs: Any) -> Any:
        try:
            # (status, channel, parent=None), checked above
            channel = kwargs.get("channel", args[1] if len(args) > 1 else None)
            parent = kwargs.get("parent", args[2] if len(args) > 2 else None) or kernel.get_parent(channel)
            target = comm_msg_target(parent)
            quiet = (target is not None and target in comm_ids()) or comm_open_target(parent) in quiet_opens
        except Exception:  # whatever went wrong, publish as the kernel would
            log.debug("could not tell whether a status is for the bridge", exc_info=True)
            quiet = False
        return None if quiet else original(*args, **kwargs)

    setattr(publish_status, _WRAPPED, True)
    # On the instance: ipykernel calls self._publish_status, so the instance attribute wins.
    kernel._publish_status = publish_status
    return True


def restore_status(kernel: Any) -> None:
    """Take :func:`quiet_bridge_status`'s wrapper off ``kernel`` (``%unload_ext``)."""
    current = getattr(kernel, "__dict__", {}).get("_publish_status")
    if current is not None and getattr(current, _WRAPPED, False):
        del kernel._publish_status
