"""``create_notebook``, the server's part: the new path checked, the kernel of an open notebook
asked to write it and have its page open it (``jupyter/outside/outside_create.py``: the user allows
it there, as the agent's Write), then jupyter-agent loaded in the kernel JupyterLab starts
for the new notebook, so the client's next call works on it."""

from __future__ import annotations

import asyncio
import logging
import posixpath
from typing import Any

from .protocol import Caller
from .tools import OutsideError

log = logging.getLogger(__name__)

#: Seconds to wait for JupyterLab to start a kernel session for the new notebook.
SESSION_WAIT_S = 60.0
SESSION_POLL_S = 0.2


def checked_path(path: str) -> str:
    """The new notebook's server-relative path (raises OutsideError saying what is wrong)."""
    clean = posixpath.normpath(path.replace("\\", "/")).lstrip("/")
    if not clean.endswith(".ipynb") or clean.startswith("..") or "/../" in f"/{clean}/":
        raise OutsideError(f"{path!r} is not a notebook path inside the Jupyter server's root (e.g. "
                           "'analysis/new.ipynb'). Nothing was created.")
    return clean


async def create_notebook(backend: Any, path: str, open_from: str | None, client: Caller) -> dict[str, Any]:
    """Create ``path``, asked in the page of ``open_from`` (default: the notebook the user works in)."""
    new_path = checked_path(path)
    exists = backend.app.contents_manager.exists(new_path)
    if await exists if asyncio.iscoroutine(exists) else exists:
        raise OutsideError(f"{new_path} exists already: choose another name. Nothing was created.")
    if open_from is None:
        current = [p for p in await backend.focus_pages(client) if p.get("current")]
        if not current:
            raise OutsideError("No notebook is current in a JupyterLab page with jupyter-agent to ask in: pass "
                               "open_from (a path list_notebooks gives). Nothing was created.")
        open_from = str(max(current, key=lambda p: (bool(p.get("has_focus")), float(p.get("focused_at") or 0)))
                        ["path"])
    reply = await backend.call(open_from, "create", {"new_path": new_path}, client)
    if not reply.get("ok"):
        return reply
    loop = asyncio.get_event_loop()
    deadline = loop.time() + SESSION_WAIT_S
    while loop.time() < deadline:
        if any(backend.same_path(s["path"], new_path) for s in await backend._sessions()):
            break
        await asyncio.sleep(SESSION_POLL_S)
    else:
        return {**reply, "content": [*reply.get("content", []), {"type": "text", "text": (
            "JupyterLab started no kernel for it yet: once it has one, run %load_ext jupyter_agent in it.")}]}
    _, _, new_comms, _ = await backend._reach(new_path)
    failed = await new_comms.execute_quietly("%load_ext jupyter_agent")
    back = failed is None and await backend._page_back(new_path, client)
    said = ("jupyter-agent is loaded in its kernel and the page is connected: read_cells works on it." if back else
            "jupyter-agent is loaded in its kernel, but its page did not connect yet: ask the user to run its "
            "first cell." if failed is None else
            f"Loading jupyter-agent in its kernel failed ({failed}): ask the user to run its first cell.")
    return {**reply, "content": [*reply.get("content", []), {"type": "text", "text": said}]}
