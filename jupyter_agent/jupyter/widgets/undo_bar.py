"""``%agent undo [N]`` and the **Undo this run** button: put a run's changes back and show
what was done (``tools/undo.py`` does it; ``view/review.py`` says it)."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from typing import Protocol

from ...changes import RunChanges, UndoReport, UndoState
from ...errors import Refused
from ...redact import redact
from ...render.html import inline_html
from ...view.review import undo_bundle
from ...view.runmodel import RunModel

log = logging.getLogger(__name__)


#: There is no such run, or it cannot be undone now (the message says why).
UndoRefused = Refused


class UndoableRun(Protocol):
    """What ``%agent undo`` needs of a run (``run_handle.py``'s ``AgentRun``, an outside
    agent's ``OutsideRun``)."""

    @property
    def changes(self) -> RunChanges | None: ...

    @property
    def model(self) -> RunModel: ...

    @property
    def done(self) -> bool: ...

    def undo(self) -> asyncio.Task[UndoReport]: ...


class ShownRun(UndoableRun, Protocol):
    """What the Undo button needs of the run it is under (an ``AgentRun``)."""

    @property
    def model_loop(self) -> asyncio.AbstractEventLoop | None: ...

    @property
    def undo_report(self) -> UndoReport | None: ...


class KernelRuns(Protocol):
    """What an undo needs of the kernel's session (``kernel/``'s ``AgentSession``, a room this
    one may not import): its runs, oldest first."""

    @property
    def runs(self) -> Sequence[UndoableRun]: ...


def pick_run(session: KernelRuns, number: int | None) -> tuple[int, UndoableRun]:
    """The run ``number`` of ``%agent runs`` (1-based; None: the last), and its number."""
    runs = session.runs
    if not runs:
        raise UndoRefused("No runs yet: there is nothing to undo.")
    if number is None:
        number = len(runs)
    if not 1 <= number <= len(runs):
        plural = "s" if len(runs) != 1 else ""
        raise UndoRefused(f"There is no run {number}: `%agent runs` lists {len(runs)} run{plural}.")
    handle = runs[number - 1]
    if not handle.done:
        raise UndoRefused(f"Run {number} is still going: stop it (Stop, or `%agent stop`) before undoing it.")
    if handle.changes is None:
        raise UndoRefused(f"Run {number} kept no record of its changes, so it cannot be undone.")
    return number, handle


def show_undo(session: KernelRuns, number: int | None) -> None:
    """``%agent undo [N]``: start the undo of run N (the last by default) and show its
    report here when it is done (it runs on the kernel's event loop: a live notebook's
    page is asked, and it answers after this cell)."""
    from IPython.display import display

    number, handle = pick_run(session, number)
    task = handle.undo()
    display_id = f"jupyter-agent-undo-{uuid.uuid4().hex}"
    title = f"Undo of run {number}"
    if task.done():
        display(_bundle(task, handle, title), raw=True, display_id=display_id)
        return
    display({"text/markdown": f"*{title}: putting the changes back…*", "text/plain": f"{title}…"},
            raw=True, display_id=display_id)
    task.add_done_callback(lambda done: _update(display_id, _bundle(done, handle, title)))


def _bundle(task: asyncio.Task[UndoReport], handle: UndoableRun, title: str) -> dict[str, str]:
    if task.cancelled():
        return {"text/plain": f"{title}: cancelled."}
    error = task.exception()
    if error is not None:
        text = redact(f"{title} failed: {type(error).__name__}: {error}")
        return {"text/plain": text}
    return undo_bundle(task.result(), handle.model.cwd, title)


def _update(display_id: str, bundle: dict[str, str]) -> None:
    from IPython.display import update_display

    try:
        update_display(bundle, raw=True, display_id=display_id)
    except Exception:  # no frontend (plain Python): the report is on the run (run.undo_report)
        log.debug("could not show the undo's report", exc_info=True)


class UndoBar:
    """The **Undo this run** button under an ended run's transcript, and what the undo did.

    Its view carries ``live_class(key)``; the transcript before it ends with
    ``lead_style(key)``, which hides it once its kernel is gone (``fallback.py``).
    """

    def __init__(self, handle: ShownRun) -> None:
        import ipywidgets as w

        from .fallback import live_class

        self.handle = handle
        self.key = uuid.uuid4().hex[:12]
        loop = handle.model_loop or asyncio.get_event_loop()
        # (no icon: its glyph would be part of the button's accessible name)
        self.button = w.Button(description="Undo this run", tooltip=(
            "Put back the files and cells this run changed (what changed since is left as it is)"),
            layout=w.Layout(width="auto"))
        self.button.add_class("jupyter-agent-undo")
        # a click may arrive on another thread (docs/bridge.md, threads): the undo starts on the loop
        self.button.on_click(lambda _b: loop.call_soon_threadsafe(self._clicked))
        self.report = w.HTML("")
        self.box = w.VBox([self.button, self.report], layout=w.Layout(align_items="flex-start"))
        self.box.add_class(live_class(self.key))
        if handle.changes is not None and handle.changes.undo_state is UndoState.DONE:
            self.box.layout.display = "none"

    def _clicked(self) -> None:
        if self.button.disabled:
            return
        self.button.disabled = True
        try:
            self.handle.undo()
        except RuntimeError as exc:
            self.report.value = inline_html(str(exc))

    def show(self, task: asyncio.Task[UndoReport]) -> None:
        """The undo ended (from this button or ``%agent undo``): the transcript above now
        says what it did, and the button goes; an undo that failed says why here, and the
        button stays, to try again once the cause is fixed."""
        failed = task.cancelled() or task.exception() is not None
        if not failed and not task.result().failed:
            self.button.disabled = True
            self.box.layout.display = "none"
            return
        self.report.value = inline_html(_bundle(task, self.handle, "Undo")["text/plain"] if failed else
                                        "Some changes could not be put back (the report above says why): "
                                        "fix that, then undo again.")
        self.button.disabled = False  # (after the words: a click is offered with its reason)

    def bundle(self) -> dict[str, object]:
        return {"application/vnd.jupyter.widget-view+json": {
                    "version_major": 2, "version_minor": 0, "model_id": self.box.model_id},
                "text/plain": "Undo this run (a button; needs the run's kernel)"}
