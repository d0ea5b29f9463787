"""Notebooks for the tools: one async interface, several backends, one rendering.

* :class:`NotebookDocument` — list/read cells by id, insert/replace/delete, run a cell,
  a version for staleness checks.
* :class:`FileNotebook` (``.ipynb`` on disk), :class:`MemoryNotebook` (tests); a live
  JupyterLab backend plugs in the same way.
* :func:`open_notebook` picks the document for a path: one registered in the
  conversation's :class:`ToolSession` (a live or memory notebook), else the file.
* :mod:`.render` — the model-facing ``<cell id="...">`` text; :mod:`.kernels` — one
  kernel per notebook per conversation (:func:`close_session` at the end).
* :mod:`.session` — :class:`ToolSession`, what the tools of one conversation share
  (kernels, documents, settings); a tool gets it with ``tool_session(ctx)``.
"""

from __future__ import annotations

from pathlib import Path

# First, before .document imports nbformat: importing it defers the RFC 3987 grammar that
# nbformat's jsonschema would build (docs/design.md, "Kernel start and nbformat").
from . import deferred_grammar  # noqa: F401
from .document import (
    Cell,
    EditResult,
    NotebookDocument,
    NotebookError,
    NotebookSnapshot,
    RunResult,
    StaleNotebookError,
)
from .file_backend import FileNotebook, load_notebook, validate_notebook
from .kernels import KernelPool
from .memory_backend import MemoryNotebook
from .session import PageNotebook, ToolSession, close_session, kernel_pool, tool_session

__all__ = [
    "Cell",
    "EditResult",
    "FileNotebook",
    "KernelPool",
    "MemoryNotebook",
    "NotebookDocument",
    "NotebookError",
    "NotebookSnapshot",
    "PageNotebook",
    "RunResult",
    "StaleNotebookError",
    "ToolSession",
    "close_session",
    "kernel_pool",
    "load_notebook",
    "not_found_message",
    "open_notebook",
    "register_document",
    "tool_session",
    "validate_notebook",
]


def register_document(session: ToolSession, document: NotebookDocument) -> None:
    """Make the tools use ``document`` for its path in this conversation (instead of the file)."""
    session.notebook_documents[str(document.path)] = document


def open_notebook(path: Path | str, session: ToolSession) -> NotebookDocument:
    """The document for ``path`` (already resolved): a registered one, else the file.
    A notebook that is neither, while a page's notebook is open, is refused with
    :func:`not_found_message` (which says where the open one is)."""
    registered = session.notebook_documents.get(str(path))
    if registered is not None:
        return registered
    missing = not_found_message(path, session)
    if missing is not None:
        raise NotebookError(missing)
    return FileNotebook(path, kernels=kernel_pool(session))


def not_found_message(path: Path | str, session: ToolSession) -> str | None:
    """What a tool says of notebook ``path`` when it is not the notebook open in the page
    and not on the kernel's disk either (None: no page's notebook is open, or the file is
    there). The model learns which path reaches the open notebook."""
    page = session.page_notebook
    if page is None or str(path) == page.key or Path(path).exists():
        return None
    message = (f"{path} is neither the notebook open in the page ({page.key}) nor a notebook on the "
               "kernel's disk.")
    if page.remote:
        message += (f" The kernel runs on another machine than the notebook server: the open notebook is "
                    f"reached by its path {page.key} (Read, NotebookEdit, NotebookRun, NotebookRunCells, KernelRun); "
                    "other paths are files of the kernel's machine.")
    return message


def is_notebook_path(path: Path | str) -> bool:
    return str(path).lower().endswith(".ipynb")
