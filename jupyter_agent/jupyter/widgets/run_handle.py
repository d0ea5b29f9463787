"""The run handle ``%%agent`` returns: the loop's run, its live widget, its transcript.

:class:`AgentRun` wraps a :class:`~jupyter_agent.loop.run.QueryRun`. A background
task on the kernel's event loop (the *driver*) is the run's one consumer: it feeds
each event to the :class:`~jupyter_agent.view.runmodel.RunModel` (and so to the widget) and records
it, so that any number of readers can still ``async for event in handle`` (they get
the events from the start, then live ones). What it records is bounded: every event
except the stream deltas, and the last :data:`STREAM_EVENTS_KEPT` stream deltas (each
carries the message so far, so the latest ones are what a late reader needs). At the end the driver replaces the
cell's widget with the static transcript via ``update_display``.

Everything the contract promises of a run works on the handle: ``await
handle.wait()``, ``handle.terminal``, ``handle.state``, ``handle.stop()``, and
``usage`` / ``model_name``: each reads the wrapped run (``handle.run``), which stays
the one source of truth; the handle adds only what a notebook needs (the replay for
many readers, the widget, the transcript, a ``wait`` a kernel interrupt reaches).
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
import logging
import threading
import uuid
from collections import deque
from typing import TYPE_CHECKING
from collections.abc import AsyncIterator, Callable, Iterator, Mapping

from ...changes import RunChanges, UndoReport
from ...loop.events import LoopEvent
from ...loop.run import QueryRun
from ...loop.state import State, Terminal
from ...loop.usage import Usage
from ...redact import redact
from ...view.runmodel import RunModel
from .fallback import Fallback, display_metadata, lead_style, live_class
from ...view.transcript import (
    UNFINISHED_AS_LOST, UNFINISHED_ELSEWHERE, transcript_bundle, transcript_markdown, transcript_plain,
)

if TYPE_CHECKING:  # (imported when used: a run without a widget loads no ipywidgets)
    from ...conversation import Conversation
    from .approvals import ApprovalCards
    from .runview import RunView
    from .undo_bar import UndoBar

log = logging.getLogger(__name__)

#: Least seconds between two refreshes of the live output's fallback.
FALLBACK_REFRESH_S = 2.0


def _without_header(markdown: str) -> str:
    """A run's transcript less its header line, whose clock changes every refresh: what
    makes the fallback worth an update (its next one carries the header of the moment)."""
    return markdown.split("\n\n", 1)[-1]


#: How many of a run's latest stream deltas the handle keeps for its readers.
STREAM_EVENTS_KEPT = 256


class EventLog:
    """A run's events for any number of readers, bounded: every event but the stream
    deltas is kept, and only the latest ``stream_kept`` deltas (a reader that falls that
    far behind skips the older ones). Each event gets a sequence number, so readers
    resume after the last one they saw."""

    def __init__(self, stream_kept: int = STREAM_EVENTS_KEPT) -> None:
        self._seq = itertools.count()
        self._kept: list[tuple[int, LoopEvent]] = []
        self._stream: deque[tuple[int, LoopEvent]] = deque(maxlen=stream_kept)

    def append(self, event: LoopEvent) -> None:
        entry = (next(self._seq), event)
        (self._stream if type(event).__name__ == "StreamEvent" else self._kept).append(entry)

    def after(self, seq: int) -> list[tuple[int, LoopEvent]]:
        """The kept events numbered above ``seq``, in order."""
        kept = self._kept[bisect.bisect_right(self._kept, seq, key=lambda e: e[0]):]
        stream = [e for e in self._stream if e[0] > seq]
        return sorted(kept + stream, key=lambda e: e[0])

    def __iter__(self) -> Iterator[LoopEvent]:
        return iter([event for _, event in self.after(-1)])

    def __len__(self) -> int:
        return len(self._kept) + len(self._stream)


class AgentRun:
    """One agent run as a notebook shows it (see module docstring)."""

    def __init__(self, run: QueryRun, model: RunModel, *, view: RunView | None = None,
                 broker: ApprovalCards | None = None,
                 prompt: str = "", interactive: bool = True, tick_s: float = 1.0,
                 on_end: Callable[[AgentRun], None] | None = None) -> None:
        self.run = run
        self.model = model
        self.view = view
        self.broker = broker
        self.prompt = prompt
        self.interactive = interactive
        self.display_id = f"jupyter-agent-{uuid.uuid4().hex}"
        #: the Conversation this run continues (set by the session)
        self.conversation: Conversation | None = None
        #: what the run changed, recorded by its tools (set by the session): what undo puts back
        self.changes: RunChanges | None = None
        self._undo: asyncio.Task[UndoReport] | None = None
        #: the "Undo this run" button shown under the transcript once the run has ended
        self.undo_bar: UndoBar | None = None
        #: what ``async for event in handle`` replays (bounded: :class:`EventLog`)
        self.events = EventLog()
        self.error: str | None = None
        self._tick_s = tick_s
        self._on_end = on_end
        self._callbacks: list[Callable[[AgentRun], None]] = []
        #: called with each event of the run, after the view has it (the conversation's saver)
        self.event_listeners: list[Callable[[LoopEvent], None]] = []
        self._changed = asyncio.Event()
        self._done = asyncio.Event()
        # The run ends once, on whichever thread gets there first: its task's end on the
        # loop, or lose() on the thread that handles the kernel's shutdown request
        # (ipykernel's control thread), which may run while the task is ending.
        self._end_claim = threading.Lock()
        self._end_claimed = False
        self._displayed = False
        self._refreshed = 0.0
        #: the plain output after the widget, seen wherever the widget is not drawn (fallback.py)
        self.fallback = Fallback(lambda: transcript_markdown(self.model, unfinished=UNFINISHED_ELSEWHERE),
                                 lambda: transcript_plain(self.model),
                                 if_lost=(UNFINISHED_ELSEWHERE, UNFINISHED_AS_LOST),
                                 change=_without_header)
        #: the %%agent cell that shows the run and its notebook's key (set by the session): a
        #: page of that notebook that comes back while the run goes on is shown it (``rejoin.py``)
        self.cell_id: str | None = None
        self.notebook_key: str | None = None
        if view is not None:
            view.add_class(live_class(self.fallback.key))
        self.task: asyncio.Task[None] | None = None
        self._ticker: asyncio.Task[None] | None = None

    # -- the contract --------------------------------------------------------------------
    @property
    def terminal(self) -> Terminal | None:
        return self.run.terminal

    @property
    def state(self) -> State:
        return self.run.state

    @property
    def usage(self) -> Usage:
        """The run's token usage and cost so far (the wrapped run's)."""
        return self.run.usage

    @property
    def model_name(self) -> str:
        return self.run.model_name

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def stop(self) -> None:
        """Abort the run (safe from any thread)."""
        self.run.stop()
        loop = self.model_loop
        if loop is not None and self.broker is not None:
            try:
                loop.call_soon_threadsafe(self.broker.cancel_all, "Stopped.")
            except RuntimeError:  # loop closed: nothing is waiting any more
                pass

    @property
    def model_loop(self) -> asyncio.AbstractEventLoop | None:
        return self.task.get_loop() if self.task is not None else None

    async def wait(self, poll_s: float = 0.1) -> Terminal:
        """Wait for the end; returns the :class:`Terminal`. Wakes every ``poll_s`` so a
        kernel interrupt of the awaiting cell is noticed (it then stops the run)."""
        waiter = asyncio.ensure_future(self._done.wait())
        try:
            while not waiter.done():
                await asyncio.wait({waiter}, timeout=poll_s)
        except (asyncio.CancelledError, KeyboardInterrupt):
            self.stop()
            raise
        finally:
            waiter.cancel()
        if self.run.terminal is None:
            raise RuntimeError(f"The run ended without an end reason: {self.error}")
        return self.run.terminal

    def __aiter__(self) -> AsyncIterator[LoopEvent]:
        return self._follow()

    async def _follow(self) -> AsyncIterator[LoopEvent]:
        seen = -1
        while True:
            while fresh := self.events.after(seen):
                for index, event in fresh:
                    seen = index
                    yield event
            if self._done.is_set():
                return
            self._changed.clear()
            await self._changed.wait()

    def undo(self) -> asyncio.Task[UndoReport]:
        """Put back every file and cell this run changed, except those changed since (they
        are left, and the report names them). Returns the task doing it, on the kernel's
        event loop: ``await run.undo()`` gives the :class:`~jupyter_agent.changes.UndoReport`.
        A run is undone once; asking again returns the same task, unless that undo failed
        (``tools/undo.py``'s ``undo_settled``): then a new one retries it."""
        if not self.done:
            raise RuntimeError("The run is still going: stop it (its Stop button or `%agent stop`) before undoing it.")
        if self.changes is None or self.conversation is None:
            raise RuntimeError("This run kept no record of its changes, so it cannot be undone.")
        from ...tools.undo import undo_run, undo_settled

        if not undo_settled(self._undo):
            self._undo = asyncio.get_event_loop().create_task(undo_run(self.changes, self.conversation.context))
            self._undo.add_done_callback(self._undone)
        return self._undo

    def _undone(self, task: asyncio.Task[UndoReport]) -> None:
        """The undo ended: its button says what it did, the transcript keeps it."""
        self._changed.set()
        if self.undo_bar is not None:
            self.undo_bar.show(task)
        if self._displayed:
            self._update_display()

    @property
    def undo_report(self) -> UndoReport | None:
        """What the undo did (None: not undone, or not finished yet)."""
        return self.changes.undo_report if self.changes is not None else None

    def __repr__(self) -> str:
        status = self.terminal.reason.value if self.terminal is not None else "running"
        return redact(f"<AgentRun {status} turns={self.model.turn_count} prompt={self.prompt[:40]!r}>")

    # -- running -------------------------------------------------------------------------
    def start(self) -> AgentRun:
        """Start the driver task on the running event loop (keep the reference: docs/design.md, "Background tasks")."""
        loop = asyncio.get_event_loop()
        self.task = loop.create_task(self._drive(), name=f"jupyter-agent {self.display_id}")
        if self.view is not None and self._tick_s:
            self._ticker = loop.create_task(self._tick())
        return self

    async def _tick(self) -> None:
        while not self._done.is_set():
            await asyncio.sleep(self._tick_s)
            if self.view is not None and not self._done.is_set():
                self.view.tick()
                self.refresh_fallback()  # (streamed text reaches the fallback too)

    async def _drive(self) -> None:
        try:
            async for event in self.run:
                self.events.append(event)
                self._changed.set()
                self.model.handle(event)
                if type(event).__name__ in ("ToolResult", "AssistantMessage", "RequestStart"):
                    self.refresh_fallback()
                for listener in self.event_listeners:
                    listener(event)
        except asyncio.CancelledError:
            # the kernel is going down, or someone cancelled the task: the loop's own
            # cleanup (answer open tool calls) ran when its generator was closed
            self.error = "The run's task was cancelled."
            raise
        except Exception as exc:  # a bug below us must still leave a readable end
            self.error = f"The run failed: {type(exc).__name__}: {exc}"
        finally:
            self._finish()

    def _claim_end(self) -> bool:
        """True for the one caller that ends the run (see ``_end_claim``)."""
        with self._end_claim:
            first, self._end_claimed = not self._end_claimed, True
        return first

    def _finish(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
        if not self._claim_end():  # lost with its kernel: finished and shown by lose()
            return
        if self.broker is not None:
            self.broker.cancel_all("The run ended.")
        terminal = self.run.terminal
        if terminal is not None and not any(isinstance(e, Terminal) for e in self.events):
            self.events.append(terminal)
        self.model.finish(terminal, self.error)
        self._ended()

    def _ended(self) -> None:
        """Show the end (widget footer, the cell's transcript) and tell the listeners."""
        if self.view is not None:
            self.view.finish()
        self._done.set()
        self._changed.set()
        if self._displayed:
            self._update_display()
        for callback in [self._on_end, *self._callbacks]:
            if callback is not None:
                try:
                    callback(self)
                except Exception:  # one broken listener must not keep the others waiting
                    log.debug("a done-callback of the run failed: %r", callback, exc_info=True)

    def add_done_callback(self, callback: Callable[[AgentRun], None]) -> None:
        """Call ``callback(handle)`` when the run has ended (at once if it has)."""
        if self._done.is_set():
            callback(self)
        else:
            self._callbacks.append(callback)

    # -- display -------------------------------------------------------------------------
    def transcript(self) -> str:
        """The run as Markdown (what the cell keeps when the run ends)."""
        return transcript_markdown(self.model)

    def _live(self) -> bool:
        return not self._done.is_set() and self.view is not None and self.view.comm is not None

    def _bundle(self) -> Mapping[str, object]:
        """Live: the widget (its fallback output follows it). Ended: the transcript (and,
        when the Undo button follows it, what hides that button once its kernel is gone)."""
        if not self._live() or self.view is None:  # (live means a view)
            bundle = transcript_bundle(self.model)
            if self.undo_bar is not None:
                bundle["text/markdown"] += "\n\n" + lead_style(self.undo_bar.key)
            return bundle
        return {
            "application/vnd.jupyter.widget-view+json": {
                "version_major": 2, "version_minor": 0, "model_id": self.view.model_id,
            },
            # (seen where the widget is not drawn: its transcript follows in the next output)
            "text/plain": "jupyter-agent run (a live widget; its transcript so far is below)",
        }

    def live_outputs(self) -> list[dict[str, object]] | None:
        """The cell's outputs while the run goes on, as nbformat JSON (the widget, then its
        fallback), or None once it ended or when it was never shown in a cell."""
        fallback = self.fallback.output()
        if not self._live() or not self._displayed or fallback is None:
            return None
        return [{"output_type": "display_data", "data": self._bundle(), "metadata": display_metadata(self.display_id)},
                fallback]

    def refresh_fallback(self, force: bool = False) -> None:
        """Bring the fallback output up to date (at most every 2 s unless ``force``);
        a notebook saved now keeps the transcript so far."""
        now = asyncio.get_event_loop().time()
        if not self._displayed or self._done.is_set() or (not force and now - self._refreshed < FALLBACK_REFRESH_S):
            return
        self._refreshed = now
        self.fallback.update()

    def lose(self, why: str = "The kernel is shutting down.") -> None:
        """The kernel is going away (shutdown, restart): the run reads as interrupted and
        the cell's live widget, which would show "model not found" once the kernel is
        gone, is replaced by the transcript so far, now."""
        if not self._claim_end():
            return
        self.model.lost = True
        self.model.finish(None, why)
        self.run.stop()
        if self.broker is not None:
            self.broker.closed = True
        self._ended()

    def _ipython_display_(self) -> None:
        from IPython.display import display

        self._displayed = True
        live = self._live()
        display(self._bundle(), raw=True, metadata=display_metadata(self.display_id), display_id=self.display_id)
        if live:
            self.fallback.show()

    def _update_display(self) -> None:
        from IPython.display import update_display

        ended = not self._live()
        if ended and self.undo_bar is None and not self.fallback.cleared and self._undoable():
            from .undo_bar import UndoBar

            self.undo_bar = UndoBar(self)
        try:
            update_display(self._bundle(), raw=True, metadata=display_metadata(self.display_id),
                           display_id=self.display_id)
        except Exception:  # no frontend (plain Python): the transcript is on the handle
            log.debug("could not update the run's display", exc_info=True)
        if ended:
            if self.undo_bar is not None:
                self.fallback.replace_with(self.undo_bar.bundle())  # the Undo button takes its place
            else:
                self.fallback.clear()

    def _undoable(self) -> bool:
        """Whether the ended run gets an Undo button: a person is there and it changed something."""
        return (self.view is not None and self.interactive and self.changes is not None
                and self.conversation is not None and not self.changes.empty)
