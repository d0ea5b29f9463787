"""Approvals: each "ask" of the policy as an awaitable :class:`ApprovalRequest` a person
answers (allow, allow-always, deny with feedback), and the :class:`ApprovalBroker` that makes
them as the loop's ``can_use_tool`` and keeps the one registry of those still waiting."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..loop.permission_result import DENIED, PermissionAllow, PermissionAsk, PermissionDeny
from ..loop.tool import PermissionPolicy
from .rules import Rule

_ids = itertools.count(1)


@dataclass
class ApprovalRequest:
    """One pending "ask": everything a person needs to decide, and how to answer.

    ``await request`` gives the decision: it wakes on the answer itself, with no polling.
    ``allow``/``allow_always``/``deny`` may be called from any thread (widget callbacks
    may run on another one): the answer reaches the Future with
    ``loop.call_soon_threadsafe``; the first answer wins. Stop does not need a wake-up
    either: the loop's abort cancels the tool's task, which cancels this wait (and the
    Future, so a UI learns of it). Once answered, ``feedback`` holds the
    deny text and ``released_by`` the rules of another request's "Always allow" that
    answered this one, so a UI can say what happened.
    """

    tool_name: str
    input: dict[str, Any]
    ask: PermissionAsk
    loop: asyncio.AbstractEventLoop
    id: int = field(default_factory=lambda: next(_ids))
    future: asyncio.Future = field(init=False)
    on_always: Callable[[ApprovalRequest, tuple[str, ...]], None] | None = None
    feedback: str | None = field(default=None, init=False)
    released_by: tuple[str, ...] = field(default=(), init=False)

    def __post_init__(self) -> None:
        self.future = self.loop.create_future()

    @property
    def tool_use_id(self) -> str:
        """The ``tool_use`` id of the call this request is about."""
        return self.ask.tool_use_id

    @property
    def message(self) -> str:
        return self.ask.message

    @property
    def diff(self) -> str | None:
        return self.ask.diff

    @property
    def suggested_rules(self) -> tuple[str, ...]:
        return self.ask.suggested_rules

    @property
    def done(self) -> bool:
        return self.future.done()

    def _resolve(self, result: PermissionAllow | PermissionDeny, *, feedback: str | None = None,
                 released_by: tuple[str, ...] = ()) -> None:
        def settle() -> None:
            if not self.future.done():
                self.feedback, self.released_by = feedback, released_by
                self.future.set_result(result)
                if isinstance(result, PermissionAllow) and result.always and self.on_always:
                    self.on_always(self, result.always)

        try:
            self.loop.call_soon_threadsafe(settle)
        except RuntimeError:  # the loop is closed: nobody awaits the answer any more
            pass

    def allow(self, updated_input: dict[str, Any] | None = None) -> None:
        self._resolve(PermissionAllow(updated_input=updated_input))

    def allow_always(self, rules: Iterable[str] | None = None) -> None:
        """Allow, and add ``rules`` (default: the suggested ones, else the tool's name) for the session."""
        chosen = tuple(rules) if rules is not None else (self.suggested_rules or (self.tool_name,))
        for rule in chosen:
            Rule.parse(rule)  # refuse a bad rule now, in the UI, not later in the loop
        self._resolve(PermissionAllow(always=chosen))

    def deny(self, feedback: str | None = None) -> None:
        """Refuse. Without feedback the turn stops (``aborted_tools``); with it the model reads it."""
        if feedback and feedback.strip():
            self._resolve(PermissionDeny(f"{DENIED.split(' STOP')[0]} To tell you how to proceed, the user said:\n"
                                         f"{feedback.strip()}"), feedback=feedback.strip())
        else:
            self._resolve(PermissionDeny(DENIED, interrupt=True))

    def answer(self, choice: str, feedback: str | None = None) -> None:
        """Answer with a button's or a prompt's word: ``allow``, ``always`` or ``deny``
        (``feedback`` goes with a deny). Any other word is refused."""
        if choice == "allow":
            self.allow()
        elif choice == "always":
            self.allow_always()
        elif choice == "deny":
            self.deny(feedback)
        else:
            raise ValueError(f"Unknown answer {choice!r}: use allow, always or deny.")

    async def wait(self) -> PermissionAllow | PermissionDeny:
        """The decision, as soon as it is given (cancelling the wait cancels the request)."""
        return await self.future

    def __await__(self):
        return self.wait().__await__()


class ApprovalBroker:
    """A ``can_use_tool`` callback that turns each ask into an :class:`ApprovalRequest`, and
    the one registry of the requests still waiting for an answer.

    ``listeners`` are called with every new request (a UI shows its card and watches
    ``request.future`` to learn the outcome, which is cancelled if the wait is); every face
    of an approval (a cell's card, the side panel, the lessons' widget, a terminal) reads
    what is pending here and keeps no list of its own. ``pending`` lists the unanswered
    ones in the order they were asked; :meth:`get` and :meth:`for_call` find one by its
    id or its call's ``tool_use_id``. A request leaves the registry the moment it is
    answered, released or cancelled (before any listener's callback on its future runs).
    When one is answered "always", the new rules go to the policy at once and every other
    pending request the policy's ``would_allow`` now covers is allowed too (without a
    policy, only the answered one is).
    """

    def __init__(self, policy: PermissionPolicy | None = None,
                 on_request: Callable[[ApprovalRequest], Any] | None = None):
        self.policy = policy
        self.listeners: list[Callable[[ApprovalRequest], Any]] = [on_request] if on_request else []
        #: request id -> the request, while it waits (dicts keep the order they were asked in)
        self._waiting: dict[int, ApprovalRequest] = {}
        #: the call's ``tool_use_id`` -> its request, for the requests that carry one
        self._by_call: dict[str, ApprovalRequest] = {}
        self._tasks: set[asyncio.Task] = set()

    @property
    def pending(self) -> list[ApprovalRequest]:
        """The requests waiting for an answer, in the order they were asked (a new list)."""
        return [r for r in self._waiting.values() if not r.done]

    def get(self, request_id: int) -> ApprovalRequest | None:
        """The waiting request of this id (None: answered, cancelled, or never this broker's)."""
        request = self._waiting.get(request_id)
        return request if request is not None and not request.done else None

    def for_call(self, tool_use_id: str) -> ApprovalRequest | None:
        """The waiting request about the call ``tool_use_id`` (None when there is none)."""
        request = self._by_call.get(tool_use_id)
        return request if request is not None and not request.done else None

    async def __call__(
        self, tool_name: str, input: dict[str, Any], ask: PermissionAsk
    ) -> PermissionAllow | PermissionDeny:
        request = ApprovalRequest(tool_name, dict(input), ask, asyncio.get_running_loop(), on_always=self._always)
        self._waiting[request.id] = request
        if request.tool_use_id:
            self._by_call[request.tool_use_id] = request
        # first of the future's callbacks: a listener's own sees the registry without it
        request.future.add_done_callback(lambda _f: self._forget(request))
        try:
            for listener in list(self.listeners):
                outcome = listener(request)
                if asyncio.iscoroutine(outcome):
                    await outcome
            return await request
        finally:
            request.future.cancel()  # no-op once answered; tells listeners a cancelled wait ended

    def _forget(self, request: ApprovalRequest) -> None:
        self._waiting.pop(request.id, None)
        if self._by_call.get(request.tool_use_id) is request:
            del self._by_call[request.tool_use_id]

    async def drain(self) -> None:
        """Wait until the releases started by "Always allow" answers have run."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _always(self, request: ApprovalRequest, rules: tuple[str, ...]) -> None:
        if self.policy is None:
            return
        # now, so the release below sees them (the loop adds them again; idempotent)
        self.policy.add_session_rules(rules)
        task = asyncio.get_running_loop().create_task(self._release_covered(request, rules))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _release_covered(self, answered: ApprovalRequest, rules: tuple[str, ...]) -> None:
        assert self.policy is not None
        for other in list(self.pending):
            if other is not answered and not other.done and await self.policy.would_allow(other.tool_name, other.input):
                other._resolve(PermissionAllow(), released_by=rules)
