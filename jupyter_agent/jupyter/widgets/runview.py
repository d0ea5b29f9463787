"""The live widget of one run: header with Stop, the items as they stream, pending
approvals, and the end reason.

:class:`RunView` listens to a :class:`~jupyter_agent.view.runmodel.RunModel` and redraws through a
:class:`~.frames.FrameScheduler`: each piece is one widget, and each widget gets at
most one comm message per frame, however fast tokens arrive. Assistant text is
Markdown in an ``Output`` widget (the frontend's own Markdown renderer, as for a
Markdown cell); everything else is HTML.

Assistant text is the model's: it goes out as ``render.markdown.markdown_from_model`` of
what ``redact_partial`` can judge so far (a tail that may be the start of a secret waits
for the next frame), so its formatting renders and any HTML in it is inert text.

Widget callbacks may run on another thread (a JupyterLab subshell), so every click
handler hops to the event loop with ``loop.call_soon_threadsafe`` before touching
the run or the widgets.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import ipywidgets as w

from . import cards
from .frames import FrameScheduler
from ...redact import redact_partial
from ...render.markdown import markdown_from_model
from ...render.terminal import inert
from ...view.style import BORDER, STYLE
from ...view.runmodel import RunModel
from ...view.items import (
    BlockItem, CompactionItem, Item, NoticeItem, PlanItem, PromptItem, TextItem, ThinkingItem, ToolItem,
)


def _markdown_outputs(text: str, done: bool = True) -> tuple[dict[str, object], ...]:
    """The model's text as an output: escaped Markdown, and the same text plain (its
    control characters shown, as a console would print it)."""
    shown = redact_partial(text, done)
    return ({"output_type": "display_data", "metadata": {},
             "data": {"text/markdown": markdown_from_model(shown), "text/plain": inert(shown)}},)


def _item_html(item: Item) -> str:
    if isinstance(item, ToolItem):
        return cards.tool_html(item)
    if isinstance(item, ThinkingItem):
        return cards.thinking_html(item)
    if isinstance(item, BlockItem):
        return cards.block_html(item)
    if isinstance(item, NoticeItem):
        return cards.notice_html(item)
    if isinstance(item, PromptItem):
        return cards.prompt_html(item)
    if isinstance(item, CompactionItem):
        return cards.compaction_html(item)
    if isinstance(item, PlanItem):
        return cards.plan_html(item)
    return ""


class RunView(w.VBox):
    """The live view of one run (an ``ipywidgets.VBox``).

    ``on_stop()`` is called on the event loop when Stop is clicked; ``on_close()``
    when the widget is closed (from Python or by the frontend) while the run goes on.
    """

    def __init__(self, model: RunModel, *, on_stop: Callable[[], None] | None = None,
                 on_close: Callable[[], None] | None = None, frame_interval: float = 0.06,
                 loop: asyncio.AbstractEventLoop | None = None, show_prompt: bool = False) -> None:
        self.model = model
        self.loop = loop or asyncio.get_event_loop()
        self.frames = FrameScheduler(frame_interval, self.loop)
        self._on_stop = on_stop
        self._on_close = on_close
        self._show_prompt = show_prompt
        self._views: dict[int, w.Output | w.HTML] = {}
        self._item_layout = w.Layout()
        self._closing = False
        self.header = w.HTML(cards.header_html(model))
        # (no icon: its glyph would be part of the button's accessible name)
        self.stop_button = w.Button(description="Stop", button_style="warning",
                                    tooltip="Abort the run (every open tool call gets a result)",
                                    layout=w.Layout(width="auto", flex="0 0 auto"))
        self.stop_button.on_click(lambda _b: self.loop.call_soon_threadsafe(self._stop_clicked))
        # The labextension interrupts a cell the agent runs through the page when this is
        # clicked: the click itself waits in the kernel until that cell ends.
        self.stop_button.add_class("jupyter-agent-stop")
        self.stop_button.add_class("ja-button")  # readable colours: the stylesheet is in the footer
        self.body = w.VBox([])
        self.approvals = w.VBox([])
        #: the approval cards showing, by their request's id (``approvals`` draws them)
        self._approval_cards: dict[int, w.Widget] = {}
        self.footer = w.HTML(STYLE)  # (replaced by the end, when Stop is gone)
        self.top = top = w.HBox([self.header, self.stop_button],
                     layout=w.Layout(justify_content="space-between", align_items="center"))
        super().__init__([top, self.body, self.approvals, self.footer],
                         layout=w.Layout(border=f"1px solid {BORDER}", padding="4px"))
        if self.comm is not None:  # (always: the widget's __init__ opened it)
            self.comm.on_close(self._comm_closed)
        model.listen(self._on_model)
        self._draw_children()

    def _comm_closed(self, _msg: dict[str, object]) -> None:
        # (on the thread that got the message: the work is done on the event loop)
        self.loop.call_soon_threadsafe(self._closed_by_frontend)

    # -- model changes -> marks ------------------------------------------------------
    def _on_model(self, kind: str, item: Item | None) -> None:
        if kind == "header":
            self.frames.mark("header", self._draw_header)
        elif kind in ("add", "remove"):
            # views are made (with their content) in the next frame: one comm_open each
            self.frames.mark("children", self._draw_children)
            if kind == "add" and item is not None and id(item) in self._views:  # moved (the plan): redraw it too
                self.frames.mark(id(item), lambda: self._draw_item(item))
        elif item is not None and id(item) in self._views:
            self.frames.mark(id(item), lambda: self._draw_item(item))

    def _make_view(self, item: Item) -> w.Output | w.HTML | None:
        if isinstance(item, PromptItem) and not self._show_prompt:
            return None
        # created with their content and a shared layout: one comm_open per item
        if isinstance(item, TextItem):
            return w.Output(outputs=_markdown_outputs(item.text, item.done), layout=self._item_layout)
        return w.HTML(_item_html(item), layout=self._item_layout)

    def _draw_item(self, item: Item) -> None:
        view = self._views.get(id(item))
        if view is None:
            return
        if isinstance(view, w.Output):  # (a TextItem's)
            if isinstance(item, TextItem):
                outputs = _markdown_outputs(item.text, item.done)
                if view.outputs != outputs:
                    view.outputs = outputs
            return
        value = _item_html(item)
        if view.value != value:
            view.value = value

    def _draw_children(self) -> None:
        live = {id(i) for i in self.model.items}
        for key in [k for k in self._views if k not in live]:
            self._views.pop(key).close()  # (closing a widget leaves its shared layout open)
        views = []
        for item in self.model.items:
            view = self._views.get(id(item))
            if view is None:
                view = self._make_view(item)
                if view is None:
                    continue
                self._views[id(item)] = view
            views.append(view)
        if tuple(views) != self.body.children:
            self.body.children = tuple(views)

    def _draw_header(self) -> None:
        value = cards.header_html(self.model)
        if self.header.value != value:
            self.header.value = value

    def tick(self) -> None:
        """Redraw the header (elapsed time) in the next frame."""
        self.frames.mark("header", self._draw_header)

    # -- approvals ---------------------------------------------------------------------
    def stop_with(self, stop: Callable[[], None]) -> None:
        """Wire Stop and a close mid-run to ``stop`` (the run handle's ``stop``, made after
        the view it shows in)."""
        self._on_stop = self._on_close = stop

    def add_approval(self, card: w.Widget, request_id: int) -> None:
        """Show the card of the approval request ``request_id`` (the broker's id), below the others."""
        self._approval_cards[request_id] = card
        self.approvals.children = tuple(self._approval_cards.values())

    def approval_card(self, request_id: int) -> w.Widget | None:
        """The card showing for the request ``request_id`` (None once it is removed)."""
        return self._approval_cards.get(request_id)

    def remove_approval(self, request_id: int) -> None:
        self._approval_cards.pop(request_id, None)
        self.approvals.children = tuple(self._approval_cards.values())

    # -- stop, end, close --------------------------------------------------------------
    def _stop_clicked(self) -> None:
        if self.model.ended is not None:
            return
        self.stop_button.disabled = True
        self.stop_button.description = "Stopping…"
        self.model.set_status("stopping")
        if self._on_stop is not None:
            self._on_stop()

    def finish(self) -> None:
        """The run ended: draw everything now, show the end reason, retire Stop."""
        self.frames.flush()
        with self.stop_button.hold_sync():
            self.stop_button.disabled = True
            self.stop_button.description = "Stop"
            self.stop_button.layout.display = "none"
        self.footer.value = cards.footer_html(self.model)
        self.frames.close()

    def _closed_by_frontend(self) -> None:
        if not self._closing:
            self.close()

    def close(self) -> None:
        """Close the widget and every child; a run still going is stopped (nothing may
        wait on a card nobody can see)."""
        if self._closing:
            return
        self._closing = True
        self.frames.close()
        if self._on_close is not None and self.model.ended is None:
            self._on_close()
        for view in self._views.values():
            view.close()
        for child in (*self.approvals.children, self.header, self.stop_button, self.top,
                      self.body, self.approvals, self.footer, self._item_layout):
            child.close()
        super().close()
