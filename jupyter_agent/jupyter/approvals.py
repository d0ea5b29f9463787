"""``can_use_tool`` for the widgets: every "ask" becomes an approval card.

The loop awaits :meth:`ApprovalBroker.can_use_tool`; the card's buttons resolve a
Future on the event loop through ``loop.call_soon_threadsafe`` (in JupyterLab a
click may arrive on a subshell thread; DESIGN §4). The wait wakes every
``poll_s`` so that a kernel interrupt or a closed widget is noticed even when no
click ever comes. Several asks can be pending at once; each has its own card.
"""

from __future__ import annotations

import asyncio
import fnmatch
from typing import Any

from ..loop.permission_result import PermissionAllow, PermissionAsk, PermissionDeny
from .cards import ApprovalCard
from .runmodel import RunModel
from .runview import RunView

DENIED = "The user denied this call."
STOPPED = "The user stopped the run."


class _Pending:
    def __init__(self, card: ApprovalCard, future: asyncio.Future, tool_name: str,
                 input: dict[str, Any]) -> None:
        self.card, self.future, self.tool_name, self.input = card, future, tool_name, input


def rule_matches(rule: str, tool_name: str, input: dict[str, Any]) -> bool:
    """Whether a permission rule (``Tool`` or ``Tool(glob)``) covers a call."""
    if "(" not in rule:
        return rule == tool_name
    name, _, pattern = rule.partition("(")
    pattern = pattern.rstrip(")")
    if name != tool_name:
        return False
    target = next((input[k] for k in ("file_path", "notebook_path", "path", "pattern")
                   if isinstance(input.get(k), str)), None)
    # a relative pattern also matches the same relative path under any directory
    return target is not None and (fnmatch.fnmatch(target, pattern)
                                   or fnmatch.fnmatch(target, "*/" + pattern.lstrip("/")))


class ApprovalBroker:
    """Turns asks into cards on a :class:`RunView` and clicks into decisions."""

    def __init__(self, view: RunView, model: RunModel, loop: asyncio.AbstractEventLoop | None = None,
                 poll_s: float = 0.1, policy: Any = None) -> None:
        self.view = view
        self.model = model
        #: the conversation's permission policy: "Always allow" releases what it now allows
        self.policy = policy
        self._tasks: set[asyncio.Task] = set()
        self.loop = loop or asyncio.get_event_loop()
        self.poll_s = poll_s
        self.pending: list[_Pending] = []
        self.closed = False

    async def can_use_tool(self, tool_name: str, input: dict[str, Any],
                           ask: PermissionAsk) -> PermissionAllow | PermissionDeny:
        """Show a card and wait for Allow / Always allow / Deny."""
        if self.closed:
            return PermissionDeny(STOPPED, interrupt=True)
        tool = self.model.find_tool_for_approval(tool_name, input)
        if tool is not None:
            self.model.set_tool_state(tool, "approval")
        future: asyncio.Future = self.loop.create_future()
        card = ApprovalCard(tool_name, input, ask.message, ask.diff, tuple(ask.suggested_rules),
                            on_decide=self._clicked)
        entry = _Pending(card, future, tool_name, input)
        self.pending.append(entry)
        self.view.add_approval(card)
        self.model.set_status("waiting for approval")
        try:
            while not future.done():
                # wake periodically: interrupts and a closed widget must not hang here
                await asyncio.wait({future}, timeout=self.poll_s)
            decision, text = future.result()
        except asyncio.CancelledError:
            decision, text = "cancelled", "Cancelled: the run was stopped."
            raise
        finally:
            self.pending.remove(entry)
            card.settle(text if future.done() else "Cancelled: the run was stopped.")
            self.view.remove_approval(card)
            card.close()
            if tool is not None:
                self.model.set_tool_state(tool, "pending" if decision in ("allow", "always") else "error",
                                          decision=text)
            if not self.pending and self.model.ended is None:
                self.model.set_status("running tools")
        if decision == "allow":
            return PermissionAllow()
        if decision == "always":
            return PermissionAllow(always=tuple(ask.suggested_rules) or (tool_name,))
        if decision == "deny" and entry.card.feedback.value.strip():
            return PermissionDeny(message=entry.card.feedback.value.strip())
        return PermissionDeny(message=DENIED if decision == "deny" else STOPPED, interrupt=True)

    # -- called on the widget callback's thread ------------------------------------------
    def _clicked(self, card: ApprovalCard, choice: str, feedback: str) -> None:
        self.loop.call_soon_threadsafe(self._decide, card, choice, feedback)

    # -- loop thread ---------------------------------------------------------------------
    def _decide(self, card: ApprovalCard, choice: str, feedback: str) -> None:
        entry = next((p for p in self.pending if p.card is card), None)
        if entry is None or entry.future.done():
            return
        feedback = feedback.strip()
        if choice == "allow":
            text = "Allowed by you."
        elif choice == "always":
            rules = card.rules or (card.tool_name,)
            text = f"Always allowed by you ({', '.join(rules)} for this session)."
            self._release_matching(rules, entry)
        else:
            text = f"Denied by you: {feedback}" if feedback else "Denied by you."
        entry.future.set_result((choice, text))

    def _release_matching(self, rules: tuple[str, ...], source: _Pending) -> None:
        """"Always allow" also allows the other pending calls the new rules cover (asked
        of the policy itself when there is one, so the UI and the loop agree)."""
        others = [p for p in self.pending if p is not source and not p.future.done()]
        text = f"Allowed by the rule you just added ({', '.join(rules)})."
        if self.policy is None or not hasattr(self.policy, "would_allow"):
            for other in others:
                if any(rule_matches(r, other.tool_name, other.input) for r in rules):
                    other.future.set_result(("allow", text))
            return
        self.policy.add_session_rules(rules)  # the loop adds them too; adding is idempotent

        async def release() -> None:
            for other in others:
                if not other.future.done() and await self.policy.would_allow(other.tool_name, other.input):
                    if not other.future.done():
                        other.future.set_result(("allow", text))

        task = self.loop.create_task(release())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def cancel_all(self, text: str = "Stopped.") -> None:
        """Deny every pending ask (Stop pressed, widget closed). Loop thread only."""
        self.closed = True
        for entry in self.pending:
            if not entry.future.done():
                entry.future.set_result(("stopped", text))
