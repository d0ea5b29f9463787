"""``can_use_tool`` for the widgets: every "ask" becomes an approval card.

The deciding is :class:`jupyter_agent.permissions.ApprovalBroker`'s (the one broker):
each ask is an :class:`~jupyter_agent.permissions.ApprovalRequest`, which owns the
Future, the thread-safe answer (in JupyterLab a click may arrive on a subshell thread;
docs/design.md, "Comms and threads": it is resolved with ``call_soon_threadsafe`` and awaited with no polling),
the deny wording, and the release of other pending asks an "Always allow" now covers. This module is only the
face of it: a card per request on the :class:`RunView` whose buttons answer the
request, the tool card's state and the status line, and Stop (:meth:`cancel_all`). What
is pending is the broker's to know (the side panel reads the same broker): this keeps no
list of its own, and a card is found again through its view (``%agent approvals``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...loop.permission_result import PermissionAllow, PermissionAsk, PermissionDeny
from ...loop.tool import PermissionPolicy
from ...permissions import DENIED, ApprovalBroker, ApprovalRequest
from .cards import ApprovalCard
from ...view.runmodel import RunModel
from ...view.items import ToolItem
from .runview import RunView

if TYPE_CHECKING:
    from ipywidgets import Widget

CANCELLED = "Cancelled: the run was stopped."


class ApprovalCards:
    """Shows each pending :class:`ApprovalRequest` of its :class:`ApprovalBroker`
    (``requests``, the registry) as a card and settles the card when the request is answered.

    ``policy`` is the conversation's permission policy: with it, "Always allow" also
    releases the other pending cards it now allows; without one (no ``would_allow``)
    only the clicked card is allowed.
    """

    def __init__(self, view: RunView | None, model: RunModel, policy: PermissionPolicy | None = None) -> None:
        self.view = view
        self.model = model
        self.policy = policy
        self.requests = ApprovalBroker(policy, on_request=self._show)
        #: request id -> what Stop said, so the card shows it instead of "Denied by you."
        self._stopped: dict[int, str] = {}
        #: called (loop thread) when a card shows: the run waits, a good moment to bring
        #: the cell's saved fallback up to date (a save now keeps the transcript so far)
        self.on_show: Callable[[], None] | None = None
        self.closed = False

    @property
    def pending(self) -> list[ApprovalRequest]:
        """The requests whose cards are showing (or about to): the broker's."""
        return self.requests.pending

    @property
    def cards(self) -> dict[int, tuple[ApprovalRequest, Widget]]:
        """Request id -> (request, its card) for the pending requests whose card shows, in
        the order they were asked: read from the broker and the view, never stored here
        (``%agent approvals`` shows them again)."""
        if self.view is None:
            return {}
        return {r.id: (r, card) for r in self.pending if (card := self.view.approval_card(r.id)) is not None}

    async def can_use_tool(self, tool_name: str, input: dict[str, Any],
                           ask: PermissionAsk) -> PermissionAllow | PermissionDeny:
        """Show a card and wait for Allow / Always allow / Deny (or Stop)."""
        if self.closed:  # after Stop nobody is there to click: deny at once
            return PermissionDeny(DENIED, interrupt=True)
        return await self.requests(tool_name, input, ask)

    # -- loop thread: a new request ------------------------------------------------------
    def _show(self, request: ApprovalRequest) -> None:
        tool = self.model.tool_by_id(request.tool_use_id)
        if tool is not None:
            self.model.set_tool_state(tool, "approval")
        card = None
        if self.view is not None:  # without a view (the side panel) the request is answered there
            card = ApprovalCard(request.tool_name, request.input, request.message, request.diff,
                                tuple(request.suggested_rules),
                                on_decide=lambda _card, choice, feedback: request.answer(choice, feedback),
                                cwd=self.model.cwd, asker=request.ask.asker)
            self.view.add_approval(card, request.id)
        self.model.set_status("waiting for approval")
        if self.on_show is not None:
            self.on_show()
        # answered, released, stopped or cancelled: the future says so, on the loop thread
        request.future.add_done_callback(lambda _f: self._settle(request, card, tool))

    # -- loop thread: the request is done -------------------------------------------------
    def _settle(self, request: ApprovalRequest, card: ApprovalCard | None, tool: ToolItem | None) -> None:
        future = request.future
        result = None if future.cancelled() else future.result()
        text = self._decision_text(request, result)
        stopped = result is None or self._stopped.pop(request.id, None) is not None
        if card is not None and self.view is not None:
            card.settle(text)
            self.view.remove_approval(request.id)
            card.close()
        if tool is not None:
            state = "pending" if isinstance(result, PermissionAllow) else "stopped" if stopped else "denied"
            self.model.set_tool_state(tool, state, decision=text)
        if not self.pending and self.model.ended is None:
            self.model.set_status("running tools")

    def _decision_text(self, request: ApprovalRequest, result: PermissionAllow | PermissionDeny | None) -> str:
        """What the card and the tool card say about the decision."""
        if result is None:
            return CANCELLED
        if isinstance(result, PermissionAllow):
            if result.always:
                return f"Always allowed by you ({', '.join(result.always)} for this session)."
            if request.released_by:
                return f"Allowed by the rule you just added ({', '.join(request.released_by)})."
            return "Allowed by you."
        if request.feedback:
            return f"Denied by you: {request.feedback}"
        return self._stopped.get(request.id, "Denied by you.")

    def cancel_all(self, text: str = "Stopped.") -> None:
        """Deny every pending ask with interrupt (Stop pressed, widget closed, run ended);
        later asks are denied at once. Loop thread only."""
        self.closed = True
        for request in self.pending:
            self._stopped[request.id] = text
            request.deny()
