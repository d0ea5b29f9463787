"""What the tools of one conversation share: its kernels, notebook documents, settings.

The loop carries it without knowing it (``ToolContext.services``); a tool gets it with
:func:`tool_session`, and whoever owns the conversation ends it with :func:`close_session`.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from ..loop.tool import ToolContext
from .document import NotebookDocument
from .kernels import KernelPool


@dataclass(frozen=True)
class PageNotebook:
    """The notebook open in the page that started the run, as the tools reach it.

    ``key`` is its document's path (its key in :attr:`ToolSession.notebook_documents`).
    ``names`` are the other spellings of its path that reach it, normalised
    (:func:`normalise_name`): the notebook server's path of it and the path relative to
    the server's root, as the page knows them. A path argument that is one of them goes
    to the page, never to the kernel's disk. ``remote``: the kernel's disk does not hold
    this notebook (a kernel on another machine, through a gateway).
    """

    key: str
    names: frozenset[str] = frozenset()
    remote: bool = False


def normalise_name(text: str) -> str:
    """A path as written, ``.``, ``..`` and doubled slashes collapsed (nothing looked up on disk)."""
    return posixpath.normpath(text) if text else text


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
    #: The notebook open in the page that started the run (None: no page answers for one).
    page_notebook: PageNotebook | None = None
    #: The id of the ``%%agent`` cell the request came from ("below this cell" means after it).
    agent_cell_id: str | None = None
    #: NotebookRun: seconds a cell may run (None: the tool's default).
    cell_timeout_s: float | None = None
    #: The cell a Fix with agent / Explain click quoted to the model: (notebook path, cell
    #: id, source as quoted). An edit or run of that cell counts it as read while its source
    #: is still what the model was shown (``tools.notebook_edit.notebook_for_change``).
    clicked_cell: tuple[str, str, str] | None = None
    #: A compact traceback's whole text is saved for a Read (``tools/saved_text.py``). False
    #: for an outside agent (MCP): a file on the kernel's machine is not one Read away for it,
    #: its read_output gives the whole output.
    save_full_tracebacks: bool = True


def page_notebook_named(session: ToolSession, raw: str) -> str | None:
    """The key of the page's notebook when ``raw`` is one of its other names, else None."""
    page = session.page_notebook
    if page is None or not page.names or not isinstance(raw, str):
        return None
    return page.key if normalise_name(raw) in page.names else None


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
