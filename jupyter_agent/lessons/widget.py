"""The stepper as a widget: the four steps with the current one lit, Next step / Next
turn / Run to end / Back, the State table, the views with what changed highlighted,
the tool_use/tool_result pairing, approval cards, and the end reason.

Displaying a :class:`StepperView` shows the live widget *and* a static HTML copy of
the current snapshot under it (``display_id``, updated at every step). While the widget
is live a ``<style>`` inside it hides that copy; in a notebook reopened without a kernel
(where a widget shows only "model not found": docs/design.md, "Output that survives") or exported to HTML, the copy
is what stays readable.
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from typing import Any
from collections.abc import Callable

import ipywidgets as w

from ..jupyter.widgets.cards import ApprovalCard
from . import render
from .stepper import Stepper
from .timeline import build_timeline
from ..view.style import BORDER_STRONG, ERROR, STYLE, WARN

BUTTONS = ("Next step", "Next turn", "Run to end", "Back")


def _answer(request: Any, _card: Any, choice: str, feedback: str | None) -> None:
    """An approval card's click, answered on the request it shows."""
    request.answer(choice, feedback)


class _Panel(w.VBox):
    """The widget's box; its text form is what a frontend shows when the widget cannot render."""

    def __repr__(self) -> str:
        return "Lesson stepper (a live widget; the last state it showed is saved as HTML below)"


class StepperView:
    """A widget over a :class:`~.stepper.Stepper` (see module doc).

    The buttons call the same methods of the stepper a cell can ``await``:
    :meth:`~jupyter_agent.lessons.stepper.Stepper.step`,
    :meth:`~jupyter_agent.lessons.stepper.Stepper.next_turn`,
    :meth:`~jupyter_agent.lessons.stepper.Stepper.run_to_end`,
    :meth:`~jupyter_agent.lessons.stepper.Stepper.back`. While the loop waits for an
    approval, its card shows here with Allow / Always allow / Deny.
    """

    def __init__(self, stepper: Stepper) -> None:
        self.stepper = stepper
        self.uid = uuid.uuid4().hex[:12]
        self.display_id = f"jupyter-agent-lesson-{self.uid}"
        self.static_class = f"ja-lesson-static-{self.uid}"
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        self._task: asyncio.Task | None = None
        self._handle: Any = None
        self._cards: dict[int, ApprovalCard] = {}
        self.error: str | None = None

        self.header = w.HTML()
        self.diagram = w.HTML()
        self.buttons = {name: w.Button(description=name) for name in BUTTONS}
        self.buttons["Next step"].button_style = "primary"
        actions: dict[str, Callable[[], Any]] = {
            "Next step": self.step, "Next turn": self.next_turn, "Run to end": self.run_to_end,
            "Back": self._back_async,
        }
        for name, action in actions.items():
            self.buttons[name].on_click(functools.partial(self._clicked, action))
        self.status = w.HTML()
        self.state = w.HTML()
        self.end = w.HTML()
        self.view_panes = {name: w.HTML() for name in render.VIEW_NAMES}
        self.views = w.Accordion(children=list(self.view_panes.values()))
        self.views.add_class("ja-accordion")  # readable titles (view/style.py; the stylesheet is in `header`)
        self.pairs = w.HTML()
        self.events = w.HTML()
        self.approvals = w.VBox()
        self.box = _Panel([
            self.header, self.diagram, w.HBox(list(self.buttons.values())), self.status, self.approvals,
            self.end, self.state, self.views, w.HTML("<b>tool_use ↔ tool_result</b>"), self.pairs, self.events,
        ], layout=w.Layout(border=f"1px solid {BORDER_STRONG}", padding="6px"))
        stepper.on_change(lambda _s: self.refresh())
        self.refresh()

    # -- display -----------------------------------------------------------------------
    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.box)
        self._handle = display({"text/html": self._static_html()}, raw=True, display_id=self.display_id)

    def _static_html(self) -> str:
        snap = self.stepper.current
        if snap is None:
            body = "<i>Not started: run the stepper (Next step) to see the loop's first step.</i>"
            return f'<div class="{self.static_class}">{render.diagram_html(None)}{body}</div>'
        return render.snapshot_html(snap, len(self.stepper.snapshots), css_class=self.static_class)

    # -- actions (also callable from cells) ---------------------------------------------
    async def step(self) -> Any:
        """Next step (waits here for approvals: answer them on the cards)."""
        return await self._run(self.stepper.step(wait_for_approvals=True))

    async def next_turn(self) -> Any:
        return await self._run(self.stepper.next_turn(wait_for_approvals=True))

    async def run_to_end(self) -> Any:
        return await self._run(self.stepper.run_to_end(wait_for_approvals=True))

    def back(self, steps: int = 1) -> Any:
        return self.stepper.back(steps)

    async def _back_async(self) -> Any:
        return self.back()

    def timeline(self) -> Any:
        """The run so far as a timeline picture."""
        return build_timeline(self.stepper.recording)

    async def _run(self, coroutine: Any) -> Any:
        self._busy(True)
        try:
            return await coroutine
        except Exception as exc:  # shown in the widget; a cell awaiting it sees it too
            self.error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            self._busy(False)
            self.refresh()

    def _clicked(self, action: Callable[[], Any], _button: w.Button | None = None) -> None:
        # A click may arrive on a subshell thread (JupyterLab): hop to the kernel's loop.
        loop = self._loop or asyncio.get_event_loop()
        loop.call_soon_threadsafe(self._launch, action)

    def _launch(self, action: Callable[[], Any]) -> None:
        if self._task is not None and not self._task.done():
            return  # one action at a time
        self._task = asyncio.ensure_future(action())
        self._task.add_done_callback(lambda t: t.cancelled() or t.exception())  # shown via self.error

    def _busy(self, busy: bool) -> None:
        self._running = busy
        self._update_buttons()

    def _update_buttons(self) -> None:
        running = getattr(self, "_running", False)
        at_end = self.stepper.at_end
        with self.box.hold_sync():
            for name in ("Next step", "Next turn", "Run to end"):
                self.buttons[name].disabled = running or at_end
            self.buttons["Back"].disabled = running or self.stepper.position <= 0

    # -- drawing ---------------------------------------------------------------------------
    def refresh(self) -> None:
        """Redraw from the stepper's current snapshot (and update the static copy)."""
        snap = self.stepper.current
        hide_static = f"<style>.{self.static_class}{{display:none !important}}</style>{STYLE}"
        with self.box.hold_sync():
            self._update_buttons()
            if snap is None:
                self.header.value = (hide_static + "<b>Not started.</b> Press <b>Next step</b>: "
                                     "the loop builds its first request.")
                self.diagram.value = render.diagram_html(None)
            else:
                self.header.value = hide_static + render.header_html(snap, len(self.stepper.snapshots))
                self.diagram.value = render.diagram_html(snap.step, snap.ended, snap.end_reason)
                self.end.value = render.end_html(snap)
                self.state.value = render.state_table_html(snap)
                for i, (name, label) in enumerate(render.VIEW_NAMES.items()):
                    self.view_panes[name].value = render.view_html(snap, name)
                    new = len(snap.changed.get(name, ()))
                    changed = f"  +{new} changed" if new else ""
                    self.views.set_title(i, f"{label} ({len(getattr(snap, name))})" + changed)
                self.pairs.value = render.pairing_html(snap)
                self.events.value = render.events_html(snap)
            self.status.value = self._status_html(snap)
            self._draw_approvals()
        if self._handle is not None:
            self._handle.update({"text/html": self._static_html()}, raw=True)

    def _status_html(self, snap: Any) -> str:
        parts = []
        if snap is not None:
            flag = "needs_follow_up" in snap.changed.get("fields", ())
            style = "background:" + render.NEW_BG if flag else ""
            parts.append(f'<code>needs_follow_up</code> = <code style="{style}">{snap.needs_follow_up}</code>')
            if not self.stepper.at_end and self.stepper.position < len(self.stepper.snapshots) - 1:
                parts.append("<i>looking back: Next step replays the recorded snapshots</i>")
        if self.stepper.pending_approvals:
            parts.append(f'<b style="color:{WARN}">The loop is waiting inside step 3 for your approval.</b>')
        if self.error:
            parts.append(f'<span style="color:{ERROR}">{render.esc(self.error)}</span>')
        return " · ".join(parts)

    def _draw_approvals(self) -> None:
        pending = {r.id: r for r in self.stepper.pending_approvals}
        for rid in [rid for rid in self._cards if rid not in pending]:
            self._cards.pop(rid).close()
        for rid, request in pending.items():
            if rid not in self._cards:
                self._cards[rid] = ApprovalCard(
                    request.tool_name, request.input, request.message, request.diff,
                    tuple(request.suggested_rules),
                    on_decide=functools.partial(_answer, request))
        self.approvals.children = tuple(self._cards.values())


def show(stepper: Stepper) -> StepperView:
    """Display a widget over ``stepper`` and return it."""
    from IPython.display import display

    view = StepperView(stepper)
    display(view)
    return view
