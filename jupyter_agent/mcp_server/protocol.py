"""What the Jupyter server extension and a kernel say to each other for an outside agent's call.

The server opens a comm to :data:`TARGET` (registered at ``%load_ext jupyter_agent``:
``jupyter/outside/outside_hub.py``) with the call as the open's data, ``{"v", "op", "path", "args",
"client", "connection"}`` (the caller's name and MCP session: :class:`Caller`); the kernel
answers with one comm message, ``{"v", "ok", "content": [blocks], "error"}`` (blocks:
``{"type": "text", "text"}`` or ``{"type": "image", "data", "mime_type"}``), then closes
the comm; before it, a long call may send ``{"v", "progress": text}`` messages. A kernel
without the target closes the comm at once.

A cell the call runs is sent to the kernel as an ``execute_request`` whose id starts with
:func:`run_tag` of the call's comm id: the server, which reads the kernel's IOPub, knows
the run's outputs as they come (``run_status`` shows them while the cell still runs).

``restart`` only asks the user (the kernel cannot outlive its own restart): a reply with
``ok`` true is the user's Allow, and the server restarts the kernel through its manager.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The streamable-HTTP endpoint, under the Jupyter server's base URL.
PATH = "jupyter-agent/mcp"
TARGET = "jupyter_agent.outside"
VERSION = 1
#: The operations a kernel carries out (``tools.KERNEL_OPS`` maps the MCP tools onto them).
#: The environment variable with the endpoint's own token (``auth.py``; ``jupyter agent mcp``
#: sends it). Here, not in ``auth.py``: the CLI reads it without importing traitlets.
TOKEN_ENV = "JUPYTER_AGENT_MCP_TOKEN"
OPS = ("read", "output", "variables", "insert", "replace", "delete", "move", "run", "run_range", "exec", "active",
       "create", "restart", "page", "watch")
#: ``page``: whether a page with jupyter-agent shows the notebook on this kernel (no tool: the
#: server asks it after a restart, before it tells the client its next call works).
#: ``watch``: a resource subscription's comm, kept open; the kernel answers once, then sends
#: ``{"v", "changed": [cell ids]}`` as the notebook changes (``jupyter/outside/outside_watch.py``).
#: What the execute requests of an outside call's cell runs start their id with (+ comm id + "-").
RUN_TAG_PREFIX = "outside-"


@dataclass(frozen=True)
class Caller:
    """Who calls: the client's name as its ``initialize`` says it (shown on the cards) and its
    connection, the MCP session id ('' for a request of the sessionless 2026-07-28 protocol).
    Reads, runs, undo and interrupts are kept per caller: two clients of one name apart."""

    name: str
    connection: str = ""


def run_tag(comm_id: str) -> str:
    """The start of the execute request ids of the cells run by the call on comm ``comm_id``."""
    return f"{RUN_TAG_PREFIX}{comm_id}-"


def comm_of_run(msg_id: str) -> str | None:
    """The comm id of the outside call whose cell run sent request ``msg_id`` (None: not one)."""
    if not msg_id.startswith(RUN_TAG_PREFIX):
        return None
    comm_id, dash, _ = msg_id[len(RUN_TAG_PREFIX):].partition("-")
    return comm_id if dash else None
