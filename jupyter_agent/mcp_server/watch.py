"""A watch on one notebook for resource subscriptions, the server's part: a ``watch`` comm to
the notebook's kernel, kept open while someone subscribes (``jupyter/outside/outside_watch.py`` is
the kernel's part; ``resources.py`` holds the subscriptions).

The kernel answers the open once (``ok``, or why not: no page shows the notebook, or
jupyter-agent is not loaded), then sends ``{"changed": [cell ids]}`` each time the notebook
settled after a change. A kernel that closes the comm, restarts or dies ends the watch:
``on_change(None)``, and the subscriptions open a new one on the next subscribe or read.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from typing import Any

from .protocol import TARGET, Caller
from .tools import OutsideError

log = logging.getLogger(__name__)

#: Seconds the kernel may take to answer a watch's open.
OPEN_TIMEOUT_S = 30.0
#: Who a watch's call names (it asks nothing of the user: no card shows it).
WATCHER = Caller("jupyter-agent resource subscriptions", "watch")


async def open_watch(backend: Any, path: str, on_change: Callable[[list[str] | None], None]) -> Callable[[], None]:
    """Watch notebook ``path`` through its kernel; ``on_change(cell_ids)`` for each settled
    change, ``on_change(None)`` once the watch ended without :func:`close` (the returned
    function). Raises OutsideError when the notebook cannot be watched."""
    from .kernel_link import call_data

    session, _, comms, _ = await backend._reach(path)
    await comms.connect()
    comm_id = uuid.uuid4().hex
    answer: asyncio.Future[dict[str, Any]] = asyncio.get_event_loop().create_future()
    closed = False

    def heard(kind: str, data: Any) -> None:
        nonlocal closed
        if kind == "comm_close":
            comms.listeners.pop(comm_id, None)
            if not answer.done():
                answer.set_exception(OutsideError(
                    "jupyter-agent is not loaded in this notebook's kernel: run %load_ext jupyter_agent in the "
                    "notebook (after a kernel restart too), then retry."))
            elif not closed:
                closed = True
                on_change(None)
        elif isinstance(data, dict) and not answer.done() and "ok" in data:
            answer.set_result(data)
        elif isinstance(data, dict) and isinstance(data.get("changed"), list):
            on_change([str(c) for c in data["changed"]][:10_000])

    comms.listeners[comm_id] = heard
    data = call_data("watch", session["path"], {}, WATCHER)
    comms.client.shell_channel.send(comms.client.session.msg("comm_open", {
        "comm_id": comm_id, "target_name": TARGET, "data": data}))

    def close() -> None:
        nonlocal closed
        closed = True
        if comms.listeners.pop(comm_id, None) is not None:
            try:
                message = comms.client.session.msg("comm_close", {"comm_id": comm_id, "data": {}})
                comms.client.shell_channel.send(message)
            except Exception:  # the kernel is gone: so is its watch
                log.debug("could not close a watch's comm", exc_info=True)

    try:
        reply = await asyncio.wait_for(answer, OPEN_TIMEOUT_S)
    except TimeoutError:
        close()
        raise OutsideError("The notebook's kernel did not answer (busy with a long cell?): retry later.") from None
    except BaseException:
        close()
        raise
    if not reply.get("ok"):
        close()
        raise OutsideError(str(reply.get("error") or "The notebook cannot be watched."))
    return close
