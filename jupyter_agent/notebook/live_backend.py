"""The notebook open in a JupyterLab page, reached over the bridge (docs/bridge.md).

:class:`LiveNotebook` implements :class:`NotebookDocument` with requests to one page
(the page whose connection started the run): reads show what the user sees, unsaved
edits included; edits go into the page's document (shown at once, one undo step each,
saved as a person's edits are); a run is the page's Shift+Enter, in the user's kernel.

The page checks ``expected_version`` (a hash of the cells' ids, types and sources) right
before it applies a change, so an edit never races with the user's typing. A read passes
the ``state`` of the last one (it moves with any change of the page's document, outputs
included): an unchanged notebook is not sent again (NotebookEdit re-reads before it edits).

:class:`GuardedNotebook` is the policy for the kernel's own notebook when no page
answers for it (VS Code, Colab, the extension missing) or when a batch executor owns it:
reads come from the file, every edit or run is refused with what to do instead, so no
agent edit is written to disk behind an editor that would overwrite it.

The bridge object is duck-typed (``request(client_id, op, ...)``), so this module imports
nothing from IPython or comm.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .cells import cell_view, cell_views
from .document import (POSITION_ID, Cell, CellRestore, EditResult, KernelInfo, NotebookDocument, NotebookError,
                       NotebookSnapshot, RunResult, StaleNotebookError, find_cell_index)
from .file_backend import FileNotebook
from .kernel_run import SHOW_RUN, RunHere, log_failure, run_result, run_result_of_code
from .namespace import changed_names

log = logging.getLogger(__name__)

#: The key of a reply's result under which the bridge puts its count of the page's changes
#: (``jupyter.bridge_page.CHANGES_SEEN``; this package does not import the bridge).
CHANGES_SEEN = "_changes_seen"
#: ... and its count of the changes that may have touched the cells' sources (``SOURCES_SEEN``).
SOURCES_SEEN = "_sources_seen"

#: Seconds past a run's time limit the kernel still waits for the page's reply: the page
#: interrupts the kernel at the limit and answers once the interrupted cell has ended.
RUN_REPLY_GRACE_S = 15.0

#: What the id of a cell run's execute request starts with, in this task and those it
#: starts: an outside agent's call sets it (``jupyter/outside/outside_hub.py``) so the Jupyter server,
#: which sees the kernel's IOPub, can tell that run's outputs as they come (its polling).
RUN_TAG: contextvars.ContextVar[str] = contextvars.ContextVar("jupyter_agent_run_tag", default="")


def _at_index(cell: Cell, index: int) -> Cell:
    """``cell`` at another index. An insert or delete moves every cell after it: at 2,000
    cells ``dataclasses.replace`` for each (which runs the frozen dataclass's ``__init__``)
    was most of NotebookEdit's own time, so the fields are copied as they are."""
    moved = object.__new__(Cell)
    moved.__dict__.update(cell.__dict__, index=index)
    return moved


class PageTooOld(NotebookError):
    """The page does not know this operation (an older jupyter-agent in the server)."""


def _step_json(step: CellRestore) -> dict[str, Any]:
    """A restore step as the page takes it (``labextension/src/restore.ts``)."""
    return {"op": step.op, "cell_id": step.cell_id, "cell_type": step.cell_type, "source": step.source,
            "outputs": [dict(o) for o in step.outputs], "execution_count": step.execution_count,
            "metadata": dict(step.metadata), "after_id": step.after_id, "index": step.index}


class LiveNotebook(NotebookDocument):
    """The open notebook of one page, edited and run through that page."""

    live = True

    def __init__(self, path: Path | str, bridge: Any, client_id: str, *, is_busy: Any = None,
                 absent: str = "", hello_wait: float = 2.0, describe_mismatch: Any = None,
                 namespace: Callable[[], dict[str, int]] | None = None, file_fallback: bool = True,
                 run_here: RunHere | None = None, history: Callable[[], Sequence[str]] | None = None,
                 successor: Callable[[], str | None] | None = None) -> None:
        self.path = Path(path)
        #: () -> this kernel's raw input history, indexed by execution count (IPython's
        #: ``input_hist_raw``): what ran under each count, for a Read's stale marks
        self.history = history
        #: () -> the client id of a page that took the place of this one once it is gone (a
        #: reload of the same notebook: ``jupyter/bridge/live_notebook.py``, ``successor``), or None
        self.successor = successor
        #: runs a cell in this kernel without the page (``jupyter/bridge/self_client.py``); used when
        #: the page says it shows such runs (``kernel_runs`` in its hello), else None
        self.run_here = run_here
        #: the page's answer to the last run made here: when it has shown the run (see
        #: ``kernel_run.py``); the next request waits for it
        self._showing: asyncio.Task[dict[str, Any]] | None = None
        self._showing_version: str | None = None
        #: read the file when no page answers (the kernel's disk holds this notebook; not
        #: so for a kernel on another machine, whose disk may hold anything at this path)
        self.file_fallback = file_fallback
        self.bridge = bridge
        self.client_id = client_id
        #: () -> True while a cell executes in this kernel: a run through the page would
        #: queue behind it forever (docs/bridge.md, the deadlock)
        self.is_busy = is_busy or (lambda: False)
        #: what every edit says when no page answers (the page is waited for once)
        self.absent_reason = absent
        self.hello_wait = hello_wait
        self.describe_mismatch = describe_mismatch or (lambda protocol: f"bridge protocol {protocol!r} differs")
        #: () -> the user's names and object ids (the page runs cells in this kernel's process)
        self.namespace: Callable[[], dict[str, int] | None] = namespace or (lambda: None)
        self._checked = False
        self.absent: str | None = None
        self._last: NotebookSnapshot | None = None
        #: the page's document state when ``_last`` was read (any change at all moves it)
        self._last_state: str | None = None
        #: the page's count of changes the kernel knew of then (``bridge_page.CHANGES_SEEN``)
        self._seen: Any = None
        #: the page's count of changes of its cells' ids, types or sources then
        self._sources_seen: Any = None

    async def answering(self) -> bool:
        """Whether the page answers (waited for once: its hello may still be on its way)."""
        self._follow_successor()
        if not self._checked:
            page = await self.bridge.wait_for_page(self.client_id, self.hello_wait)
            self._checked = True
            if page is None:
                self.absent = self.absent_reason or "No notebook page answers for this notebook."
            elif not page.compatible:
                self.absent = self.describe_mismatch(page.protocol)
        return self.absent is None

    def _follow_successor(self) -> None:
        """The page said goodbye and another page of this notebook said hello (a reload):
        go on with that one, from a whole read (its copy is the file as last saved). Only
        for a page that answered: a run whose page never did (no extension there) is refused
        as such, never handed to another person's page of the same notebook."""
        answered = self._checked and self.absent is None
        new = self.successor() if self.successor is not None and answered else None
        if new is not None and new != self.client_id:
            log.info("the page %s is gone; going on with page %s of the same notebook", self.client_id, new)
            self.client_id = new
            self._checked, self.absent = False, None
            self._last = self._last_state = self._seen = self._sources_seen = None

    async def changes_refused(self) -> str | None:
        return None if await self.answering() else (self.absent or "No notebook page answers for this notebook.")

    async def _ask(self, op: str, **arguments: Any) -> dict[str, Any]:
        if op != SHOW_RUN:
            await self._shown()
        if not await self.answering():
            raise NotebookError(self.absent or "")
        try:
            # notify: the page tells of the next change after its reply (see snapshot)
            return await self.bridge.request(self.client_id, op, notify=True, **arguments)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the bridge's refusals, as the tools' notebook errors
            if getattr(exc, "code", None) == "stale":
                raise StaleNotebookError() from None
            if getattr(exc, "code", None) == "unknown_op":
                raise PageTooOld(str(exc)) from None
            if getattr(exc, "code", None) is not None:
                raise NotebookError(str(exc)) from None
            raise

    async def _shown(self) -> None:
        """The page's answer to the last run made in this kernel, waited for (see
        ``kernel_run.py``): the next request then finds the copy of the notebook current."""
        showing, expected = self._showing, self._showing_version
        if showing is None:
            return
        self._showing = self._showing_version = None
        try:
            result = await asyncio.shield(showing)
        except asyncio.CancelledError:
            self._last = None
            raise
        except Exception as exc:  # the page did not show the run: its next read tells what it holds
            log.debug("the page did not answer show_run: %s", exc)
            self._last = None
            return
        cell = cell_view(result.get("cell") or {}, int(result.get("index") or 0), True)
        self._follow("run", cell, str(result.get("version") or ""), result.get("state"), expected, result)

    async def snapshot(self) -> NotebookSnapshot:
        await self._shown()
        if not await self.answering():
            if not self.file_fallback:
                raise NotebookError(self.absent or "")
            return await FileNotebook(self.path).snapshot()  # reading the file loses nothing
        last, known = self._last, self._last_state
        if last is not None and known and self._unchanged_since():
            return last  # no notice and no other change since: the page would say "unchanged"
        result = await self._ask("read", **({"known_state": known} if last is not None and known else {}))
        if result.get("unchanged") is True and last is not None and isinstance(result.get("state"), str):
            # the page's document has not changed at all since that read (or this backend's
            # own edit that followed it): the page names its state now, for the next read
            self._last_state = result["state"]
            self._seen, self._sources_seen = result.get(CHANGES_SEEN), result.get(SOURCES_SEEN)
            return last
        snapshot = NotebookSnapshot.of(self.path, cell_views(result.get("cells") or []),
                                       str(result.get("version") or ""), result.get("metadata") or {})
        self._last = snapshot
        state = result.get("state")
        self._last_state = state if isinstance(state, str) else None
        self._seen, self._sources_seen = result.get(CHANGES_SEEN), result.get(SOURCES_SEEN)
        return snapshot

    async def sources_snapshot(self) -> NotebookSnapshot:
        """The last read while the page has told of no change of its cells' ids, types or
        sources since (only outputs, counts or metadata moved: an ``%%agent`` cell's own
        transcript does all the time), so a run is planned and checked without asking the
        page; otherwise :meth:`snapshot`. Its outputs may be old; its version is current
        (the page refuses an edit planned on a version that is not, as before)."""
        last, page = self._last, self.bridge.pages.get(self.client_id)
        if (last is not None and page is not None and getattr(page, "notices", False) is True
                and self._sources_seen is not None and await self.answering()
                and self._sources_seen == (getattr(page, "serial", None), getattr(page, "source_changes", None))):
            return last
        return await self.snapshot()

    def _unchanged_since(self) -> bool:
        """Whether the page has said of no change since the reply that made the last read
        current (and says such things: a page that sends ``changed`` notices). Its document
        may still have changed in the instant a notice takes to come: every edit and run is
        checked by the page against the version it was planned on, so that costs a
        ``stale`` refusal at worst, never a wrong edit."""
        page = self.bridge.pages.get(self.client_id)
        return (page is not None and getattr(page, "notices", False) is True and self._seen is not None
                and self._seen == (getattr(page, "serial", None), getattr(page, "changes", None)))

    async def _real_id(self, cell_id: str, expected_version: str | None) -> str:
        """``cell-N`` -> the id of the cell at N, in the snapshot the caller saw. Any other id
        goes as it is: the page finds it, or says it is not there (one request, not two)."""
        if not POSITION_ID.match(cell_id):
            return cell_id
        last = self._last
        if last is None or (expected_version is not None and last.version != expected_version):
            last = await self.snapshot()
        return last.cells[find_cell_index(last.cells, cell_id)].id

    def _known(self, expected_version: str | None) -> dict[str, str]:
        """``known_state`` for a change checked against the last read's version: the page
        names the state its reply leaves the document in only if that read's state is
        still the document's (see :meth:`_follow`)."""
        last, state = self._last, self._last_state
        if last is None or not state or expected_version is None or expected_version != last.version:
            return {}
        return {"known_state": state}

    def _edit_result(self, result: dict[str, Any], change: str, expected_version: str | None) -> EditResult:
        cell = cell_view(result.get("cell") or {}, int(result.get("index") or 0), True)
        version = str(result.get("version") or "")
        self._follow(change, cell, version, result.get("state"), expected_version, result)
        return EditResult(cell=cell, version=version)

    def _follow(self, change: str, cell: Cell, version: str, state: Any, expected_version: str | None,
                reply: dict[str, Any]) -> None:
        """Bring the last read up to date with this backend's own change, so the next read
        (NotebookRun's after an insert, NotebookEdit's before the next edit) is the page's
        small "unchanged" answer, not the whole notebook again.

        Only when the page found its document still at the last read's state (the
        request's ``known_state``; for a run, nothing but its cell changed while it ran)
        and so named the state its reply leaves the document in: a read that names it is
        "unchanged" only while the document is exactly as this change left it (outputs
        and metadata included), and the page's ``changed`` notice says when it is not.
        Otherwise the copy follows the change without a state: its cells and version are
        the page's (a run is planned on them: ``sources_snapshot``), its outputs maybe
        not, and the next read is a whole one. A reply that does not fit the copy drops it."""
        last = self._last
        self._last = None
        if last is None or expected_version != last.version:
            return
        if change == "run" and version != expected_version:  # a run changes no source: someone else did
            return
        cells = list(last.cells)
        index = cell.index
        if change == "insert" and 0 <= index <= len(cells):
            cells.insert(index, cell)
            shift = range(index + 1, len(cells))
        elif change in ("replace", "run") and 0 <= index < len(cells) and cells[index].id == cell.id:
            cells[index] = cell
            shift = range(0)
        elif change == "delete" and 0 <= index < len(cells) and cells[index].id == cell.id:
            del cells[index]
            shift = range(index, len(cells))
        else:
            log.debug("the page's %s reply does not fit the last read; the next read is a whole one", change)
            return
        for i in shift:
            cells[i] = _at_index(cells[i], i)
        if not version.startswith(f"live-{len(cells)}-"):  # the page's count of cells differs
            log.debug("after a %s the page counts other cells than the last read; reading it again", change)
            return
        self._last = replace(last, cells=tuple(cells), version=version)
        # Without a state (something else changed too: another cell's outputs) the copy's
        # cells and version are still the page's, not its outputs: good for planning a
        # run (sources_snapshot), not for answering a read.
        self._last_state = state if isinstance(state, str) and state else None
        self._seen, self._sources_seen = reply.get(CHANGES_SEEN), reply.get(SOURCES_SEEN)

    async def insert_cell(self, index: int, cell_type: str, source: str, *,
                          expected_version: str | None = None, cell_id: str | None = None) -> EditResult:
        chosen = {} if cell_id is None else {"cell_id": cell_id}  # (an older page gives a fresh id)
        return self._edit_result(await self._ask(
            "insert", index=index, cell_type=cell_type, source=source, expected_version=expected_version,
            **chosen, **self._known(expected_version)),
            "insert", expected_version)

    async def replace_cell(self, cell_id: str, source: str, cell_type: str | None = None, *,
                           expected_version: str | None = None) -> EditResult:
        real = await self._real_id(cell_id, expected_version)
        return self._edit_result(await self._ask(
            "replace", cell_id=real, source=source, cell_type=cell_type, expected_version=expected_version,
            **self._known(expected_version)),
            "replace", expected_version)

    async def delete_cell(self, cell_id: str, *, expected_version: str | None = None) -> EditResult:
        real = await self._real_id(cell_id, expected_version)
        return self._edit_result(await self._ask("delete", cell_id=real, expected_version=expected_version,
                                                 **self._known(expected_version)),
                                 "delete", expected_version)

    async def restore_cells(self, steps: list[CellRestore], *, expected_version: str | None = None) -> str:
        """Put cells back in one request, applied by the page as one step of the notebook's
        own undo (a page of an older version, which knows no ``restore``: step by step).
        A ``move`` needs a page that says it can move a cell (``moves`` in its hello)."""
        page = self.bridge.pages.get(self.client_id)
        if any(step.op == "move" for step in steps) and page is not None and getattr(page, "moves", False) is not True:
            raise NotebookError("The page showing this notebook runs an older jupyter-agent, which cannot move a "
                                "cell in one step: reload the notebook's page, then try again. Nothing was changed.")
        try:
            result = await self._ask("restore", steps=[_step_json(step) for step in steps],
                                     expected_version=expected_version)
        except PageTooOld:
            log.debug("the page knows no restore; putting the cells back one by one")
            return await super().restore_cells(steps, expected_version=expected_version)
        self._last = None
        return str(result.get("version") or "")

    async def run_cell(self, cell_id: str, *, timeout: float, abort: asyncio.Event | None = None,
                       expected_version: str | None = None) -> RunResult:
        if self.is_busy():
            raise NotebookError(
                "A cell is executing in this kernel right now (a cell that awaits the agent, or "
                "`%%agent --wait`), and a run through the page would wait behind it forever. Cells of "
                "the open notebook run only from an agent run started by a plain %%agent cell.")
        page = self.bridge.pages.get(self.client_id)
        if self.run_here is not None and getattr(page, "kernel_runs", False) is True:
            return await self._run_here(self.run_here, cell_id, timeout, abort, expected_version)
        real = await self._real_id(cell_id, expected_version)
        before = self.namespace()
        # The time limit is kept by the page: while the cell runs this kernel's event loop is
        # busy with it (docs/bridge.md), so only the page can interrupt it in time.
        try:
            result = await asyncio.wait_for(
                self._ask("run", cell_id=real, expected_version=expected_version, timeout_s=timeout,
                          timeout=None, abort=abort, **self._known(expected_version)), timeout + RUN_REPLY_GRACE_S)
        except TimeoutError:
            raise NotebookError(
                f"The cell ran longer than {timeout:.0f} s and the page did not interrupt it. It may still be "
                "running in the page: interrupt the kernel there if it should stop.") from None
        except asyncio.CancelledError:
            if abort is not None and abort.is_set():
                cell = (self._last.find(real) if self._last else cell_view({"id": real}, 0, True))
                return RunResult(cell=cell, outputs=[], execution_count=None, status="interrupted",
                                 saved=False, note="Stopped by the user while the cell was running in the page.")
            raise
        cell = cell_view(result.get("cell") or {}, int(result.get("index") or 0), True)
        self._follow("run", cell, str(result.get("version") or ""), result.get("state"), expected_version, result)
        outputs = [o for o in result.get("outputs") or [] if isinstance(o, dict)]
        count = result.get("execution_count")
        status = str(result.get("status") or "ok")
        note = "Ran in the user's kernel, through the open notebook page."
        if status == "timeout":
            note = (f"The cell was interrupted after {timeout:.0f} s (the cell time limit), in the user's kernel, "
                    "through the open notebook page.")
        return RunResult(cell=cell, outputs=outputs, execution_count=count if isinstance(count, int) else None,
                         status=status, version=str(result.get("version") or ""), saved=True, note=note,
                         names_changed=changed_names(before, self.namespace()))


    async def kernel_info(self) -> KernelInfo | None:
        """This kernel (the agent runs in it): running, its folder, what ran under each count."""
        history = list(self.history()) if self.history is not None else None
        sources = {n: text for n, text in enumerate(history) if n > 0} if history is not None else None
        return KernelInfo(running=True, working_folder=os.getcwd(), sources=sources)

    async def run_code(self, code: str, *, timeout: float, abort: asyncio.Event | None = None) -> RunResult:
        """Run ``code`` in this kernel as a request of its own, one no cell shows (the page
        is not told of it, so it routes its outputs nowhere): nothing enters the notebook."""
        if self.is_busy():
            raise NotebookError(
                "A cell is executing in this kernel right now, and code sent to it would wait behind that "
                "cell forever. Code runs in the kernel only from an agent run started by a plain %%agent cell "
                "or the side panel.")
        if self.run_here is None:
            raise NotebookError(
                "This kernel cannot run code outside a cell (it has no connection file to reach itself). "
                "Insert a cell with NotebookEdit and run it with NotebookRun instead.")
        before = self.namespace()
        msg_id = RUN_TAG.get() + uuid.uuid4().hex
        execution = await self.run_here(code, msg_id, "", timeout=timeout, abort=abort, store_history=False)
        return run_result_of_code(code, execution, timeout, changed_names(before, self.namespace()))

    async def _run_here(self, run_here: RunHere, cell_id: str, timeout: float, abort: asyncio.Event | None,
                        expected_version: str | None) -> RunResult:
        """Run the cell in this kernel; the page shows it as it comes (``kernel_run.py``)."""
        # The copy of the notebook, current unless the page has told of a change of its
        # cells since (then read): the cell runs as approved, on the version planned on.
        snapshot = await self.sources_snapshot()
        cell = snapshot.runnable_cell(cell_id, expected_version)
        msg_id = RUN_TAG.get() + uuid.uuid4().hex
        before = self.namespace()
        # Sent before the execute request: the task runs up to its first wait at the next
        # turn of the loop, and the comm message goes out before that wait (the page's
        # hello was waited for by the snapshot above).
        showing = asyncio.ensure_future(self._ask(SHOW_RUN, cell_id=cell.id, msg_id=msg_id, timeout=None,
                                                  **self._known(snapshot.version)))
        showing.add_done_callback(log_failure)
        self._showing, self._showing_version = showing, snapshot.version
        await asyncio.sleep(0)
        execution = await run_here(cell.source, msg_id, cell.id, timeout=timeout, abort=abort)
        return run_result(cell, execution, timeout, snapshot.version, changed_names(before, self.namespace()))


class GuardedNotebook(FileNotebook):
    """The kernel's own notebook while something else owns it: readable, never changed."""

    live = False

    def __init__(self, path: Path | str, reason: str, kernels: Any = None) -> None:
        super().__init__(path, kernels=kernels)
        self.reason = reason

    async def changes_refused(self) -> str | None:
        return self.reason

    async def kernel_info(self) -> KernelInfo | None:
        return KernelInfo(running=True, working_folder=os.getcwd())  # the kernel the agent runs in

    def _refuse(self) -> None:
        raise NotebookError(self.reason)

    async def insert_cell(self, index: int, cell_type: str, source: str, *,
                          expected_version: str | None = None, cell_id: str | None = None) -> EditResult:
        self._refuse()
        raise AssertionError

    async def replace_cell(self, cell_id: str, source: str, cell_type: str | None = None, *,
                           expected_version: str | None = None) -> EditResult:
        self._refuse()
        raise AssertionError

    async def delete_cell(self, cell_id: str, *, expected_version: str | None = None) -> EditResult:
        self._refuse()
        raise AssertionError

    async def set_outputs(self, *args: Any, **kwargs: Any) -> EditResult:
        self._refuse()
        raise AssertionError

    async def run_cell(self, cell_id: str, *, timeout: float, abort: asyncio.Event | None = None,
                       expected_version: str | None = None) -> RunResult:
        self._refuse()
        raise AssertionError

    async def run_code(self, code: str, *, timeout: float, abort: asyncio.Event | None = None) -> RunResult:
        self._refuse()
        raise AssertionError
