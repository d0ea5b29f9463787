"""Which document the tools use for the kernel's own notebook, decided when a run starts.

* A page answers for the session that started the run (the JupyterLab extension is
  there): the tools get a :class:`LiveNotebook` for the notebook that page shows. Reads,
  edits and runs go through that page, in this kernel. Other notebooks stay files.
* No page answers, but the kernel knows its notebook (VS Code, Colab, an old JupyterLab,
  the extension disabled): editing the file would be overwritten by the editor's next
  save, so edits and runs of that notebook are refused with what to do (said once per
  kernel in the run's view, and in every refused tool result). Other files work.
* Executed headless (nbclient, papermill, ``jupyter execute``): the executor owns the
  notebook and writes it when it finishes, so the notebook being executed is guarded
  the same way. It is found by the ``%%agent`` cell's source when no path is known.

The ``%%agent`` cell's id (the execute request's ``cellId``) goes to the model, so "add
a cell below" lands below it. The bridge, the tracker and the kernel's client of itself come
in as the caller's :class:`~.kernel_links.KernelLinks` (None: the extension is not loaded).
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ...environment import started_by_gateway
from .kernel_bridge import KernelBridge, Page, mismatch_message
from .kernel_types import Shell

if TYPE_CHECKING:
    from ...notebook.session import PageNotebook, ToolSession
    from .kernel_links import KernelLinks

# The notebook package (nbformat, jsonschema) is imported only when a notebook is bound:
# a run start must stay quick where there is none (a console, a kernel without a page).

#: How long a run start waits for the page's hello (it comes with %load_ext's comm).
HELLO_WAIT_S = 2.0

NO_PAGE = (
    "Edits and runs of {path} are refused: no JupyterLab page with the jupyter-agent extension "
    "answers for this notebook (an editor such as VS Code or Colab, an older JupyterLab, or the "
    "extension disabled), and a change written to the file would be overwritten by the editor's next "
    "save. Open the notebook in JupyterLab 4.6+ or Notebook 7 with jupyter-agent installed (check "
    "`jupyter labextension list`), reload the page, and run the %%agent cell again; or let the agent "
    "work on another notebook or file.")

NO_PAGE_REMOTE = (
    "The notebook {path} is not reachable: the JupyterLab page that shows it stopped answering, and this "
    "kernel runs on another machine than the notebook server, so its disk does not have the notebook. "
    "Reload the page and run the %%agent cell again.")

BATCH = (
    "Edits and runs of {path} are refused: this notebook is being executed by a batch runner "
    "(nbclient, papermill or `jupyter execute`), which owns it and writes it when it finishes, so a "
    "change written now would be lost. Let the agent write to another notebook or file instead.")


def _kernel_cwd() -> Path:
    return Path.cwd().resolve()


def executing_notebook(cell_source: str, directory: Path) -> Path | None:
    """The notebook in ``directory`` with a cell whose source is ``cell_source`` (headless runs
    do not tell the kernel which notebook they execute)."""
    wanted = cell_source.strip()
    if not wanted:
        return None
    for path in sorted(directory.glob("*.ipynb")):
        try:
            if path.stat().st_size > 32 * 1024 * 1024:
                continue
            cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
        except (OSError, ValueError, AttributeError):
            continue
        for cell in cells if isinstance(cells, list) else []:
            source = cell.get("source") if isinstance(cell, dict) else None
            text = "".join(source) if isinstance(source, list) else source if isinstance(source, str) else ""
            if text.strip() == wanted:
                return path.resolve()
    return None


def page_notebook(page: Page, own: str | None, kernel_cwd: Path) -> PageNotebook | None:
    """Where the tools find the notebook ``page`` shows. On the kernel's disk when the
    server started this kernel for that file (in its folder, or told it its path: ``own``),
    as a local JupyterLab does. Otherwise (a kernel on another machine, through a gateway,
    whatever its disk holds) by the notebook server's path of it and the path relative to
    the server's root, the names the page gives: those reach the page, never the kernel's
    disk (docs/deploy.md)."""
    from ...notebook.session import PageNotebook, normalise_name

    if not page.path:
        return None
    local = page.notebook_path(kernel_cwd)
    if local is not None and local.is_file() and (local.parent == kernel_cwd or (own and Path(own) == local)):
        return PageNotebook(key=str(local))
    server_path = posixpath.join(page.server_root, page.path) if page.server_root else page.path
    key = normalise_name(server_path)
    return PageNotebook(key=key, names=frozenset({key, normalise_name(page.path)}), remote=True)


class BoundSession(Protocol):
    """What binding a run to its notebook reads of the kernel's session (``kernel/``'s
    ``AgentSession``, a room this one may not import)."""

    #: the "no page shows this notebook" notice was shown (once a session, not once a run)
    no_page_said: bool

    def parent_request(self) -> dict[str, Any]:
        """The request of the cell now executing (its header's ``session``: the page's id)."""

    def notebook_path(self) -> str | None:
        """The kernel's own notebook, when known."""


def kernel_is_remote(agent_session: BoundSession, bridge: KernelBridge | None) -> bool:
    """Whether this kernel runs apart from the notebook server: a gateway started it (it
    marks its kernels' environment), or the page that sent the request (to ``bridge``)
    shows a notebook that is not this kernel's own file (:func:`page_notebook`)."""
    if started_by_gateway():
        return True
    client_id = (agent_session.parent_request().get("header") or {}).get("session") or ""
    page = bridge.pages.get(client_id) if bridge is not None and client_id else None
    if page is None:
        return False
    where = page_notebook(page, agent_session.notebook_path(), _kernel_cwd())
    return where is not None and where.remote


def _unbind(tool_session: ToolSession) -> None:
    """Forget the documents bound for the previous run (each run decides again)."""
    tool_session.page_notebook = None
    documents = tool_session.notebook_documents
    for key in [k for k, d in documents.items() if getattr(d, "bound_by_run", False)]:
        del documents[key]


def _register(tool_session: ToolSession, document: Any) -> None:
    from ...notebook import register_document

    document.bound_by_run = True
    register_document(tool_session, document)


def bind_notebook(agent_session: BoundSession, conversation: Any, notices: Any, *, batch: bool,
                  links: KernelLinks | None) -> str:
    """Register the document the tools use for this kernel's notebook; returns the mode
    (``live``, ``waiting`` (live once the page's hello comes), ``guarded``, ``batch`` or
    ``none``). ``notices(text)`` shows a line to the user; ``links``: the loaded extension's
    bridge and the rest (None: not loaded, no page can answer)."""
    from ...notebook.session import tool_session as tool_session_of

    tool_session = tool_session_of(conversation.context)
    _unbind(tool_session)
    parent = agent_session.parent_request()
    cell_id = (parent.get("metadata") or {}).get("cellId")
    tool_session.agent_cell_id = cell_id if isinstance(cell_id, str) and cell_id else None
    own = agent_session.notebook_path()
    if batch:
        code = (parent.get("content") or {}).get("code") or ""
        path = Path(own) if own else executing_notebook(code, _kernel_cwd())
        if path is None:
            return "none"
        from ...notebook.live_backend import GuardedNotebook

        _register(tool_session, GuardedNotebook(path, BATCH.format(path=path)))
        return "batch"
    bridge = links.bridge if links is not None else None
    client_id = (parent.get("header") or {}).get("session") or ""
    if links is not None and bridge is not None and client_id:
        page = bridge.pages.get(client_id)
        if page is not None and not page.compatible:
            if not bridge.mismatch_said:
                bridge.mismatch_said = True
                notices(mismatch_message(page.protocol))
        where = page_notebook(page, own, _kernel_cwd()) if page is not None else None
        if where is None and own:
            from ...notebook.session import PageNotebook

            where = PageNotebook(key=own)
        if where is not None:
            key = where.key
            _register(tool_session, live_notebook(links, client_id, where, agent_session))
            tool_session.page_notebook = where
            if conversation.notebook_path is None:
                conversation.notebook_path = key
            return "live" if page is not None else "waiting"
    if own:
        from ...notebook.live_backend import GuardedNotebook

        reason = NO_PAGE.format(path=own)
        _register(tool_session, GuardedNotebook(own, reason))
        if not agent_session.no_page_said:
            agent_session.no_page_said = True
            notices(reason)
        return "guarded"
    return "none"


def live_notebook(links: KernelLinks, client_id: str, where: PageNotebook,
                  session: BoundSession | None = None) -> Any:
    """A :class:`LiveNotebook` for the notebook ``where`` that the page ``client_id`` shows
    (a run's, or an outside agent's: ``outside_hub.py``), through ``links``' bridge, asking
    its tracker and running cells with its client of the kernel. With the run's ``session``,
    a page of the same notebook takes the place of ``client_id`` once it is gone (``rejoin.py``)."""
    from ...notebook.live_backend import LiveNotebook

    shell, bridge, tracker = links.shell, links.bridge, links.tracker
    absent = (NO_PAGE_REMOTE if where.remote else NO_PAGE).format(path=where.key)
    then = successor(bridge, session, client_id, where.key) if session is not None and bridge is not None else None
    return LiveNotebook(
        where.key, bridge, client_id, is_busy=tracker.busy if tracker else None, absent=absent,
        hello_wait=HELLO_WAIT_S, describe_mismatch=mismatch_message,
        namespace=_namespace_of(shell), file_fallback=not where.remote, run_here=links.self_client.runner(),
        successor=then, history=_history_of(shell))


def _history_of(shell: Shell | None) -> Callable[[], list[str]] | None:
    """This kernel's raw input history by execution count (what ran under each count)."""
    manager = getattr(shell, "history_manager", None)
    if manager is None or not hasattr(manager, "input_hist_raw"):
        return None
    return lambda: list(manager.input_hist_raw)


def _namespace_of(shell: Shell | None) -> Callable[[], dict[str, int]] | None:
    """The names and object ids of the user's namespace, read in this process: a cell the
    page runs runs here (``notebook/namespace.py``)."""
    if shell is None or not hasattr(shell, "user_ns"):
        return None
    from ...notebook.namespace import namespace_ids

    return lambda: namespace_ids(shell.user_ns, getattr(shell, "user_ns_hidden", {}))


def key_of(page: Page, session: Any) -> str | None:
    """The key of the notebook ``page`` shows, as the tools know it (``PageNotebook.key``)."""
    where = page_notebook(page, session.notebook_path(), _kernel_cwd())
    return where.key if where is not None else None


def successor(bridge: KernelBridge, session: Any, client_id: str, key: str) -> Callable[[], str | None]:
    """For a run's live notebook: once the page ``client_id`` is gone (it said goodbye: a
    reload, or the tab closed), the newest other page showing the notebook ``key``."""

    def find() -> str | None:
        if client_id in bridge.pages:
            return None
        pages = [p for p in bridge.pages.values()
                 if not p.gone and p.compatible and key_of(p, session) == key]
        return max(pages, key=lambda p: p.serial).client_id if pages else None

    return find
