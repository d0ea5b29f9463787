"""What the tools of one conversation share: its kernels, notebook documents, settings.

The loop carries it without knowing it (``ToolContext.services``); a tool gets it with
:func:`tool_session`, and whoever owns the conversation ends it with :func:`close_session`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..loop.tool import ToolContext
from .document import NotebookDocument
from .kernels import KernelPool


@dataclass
class ToolSession:
    """What every call of one conversation shares besides the files read.

    The tools and the notebook package keep their state here, and the front that owns
    the conversation sets the per-run facts (``agent_cell_id``) and the settings.
    """

    #: The conversation's kernels, started on first use (see :func:`kernel_pool`).
    kernels: KernelPool | None = None
    #: str(path) -> the document the tools use instead of the file (a live or memory notebook).
    notebook_documents: dict[str, NotebookDocument] = field(default_factory=dict)
    #: str(path) -> (content hash, merged 1-based line ranges shown): Reads of a file in pages.
    read_coverage: dict[str, tuple[str, list[tuple[int, int]]]] = field(default_factory=dict)
    #: The id of the ``%%agent`` cell the request came from ("below this cell" means after it).
    agent_cell_id: str | None = None
    #: Grep: force ripgrep (True) or the Python search (False); None picks ripgrep when found.
    grep_use_ripgrep: bool | None = None
    #: NotebookRun: seconds a cell may run (None: the tool's default).
    cell_timeout_s: float | None = None


def tool_session(context: ToolContext) -> ToolSession:
    """The conversation's :class:`ToolSession` (made on first use, shared by every call)."""
    return context.services.get(ToolSession)


def kernel_pool(session: ToolSession) -> KernelPool:
    """The conversation's pool (created on first use). Its kernels talk over local ipc
    sockets: nothing listens on a TCP port, and ipykernel has no plain-TCP warning to print."""
    pool = session.kernels
    if pool is None:
        pool = session.kernels = KernelPool(transport="ipc")
    return pool


async def close_session(session: ToolSession) -> None:
    """End of a conversation: shut down its kernels."""
    pool, session.kernels = session.kernels, None
    if pool is not None:
        await pool.aclose()
