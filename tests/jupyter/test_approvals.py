"""Approval cards: every ask is a card; clicks (from any thread) become decisions."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace

from jupyter_agent.loop.permission_result import PermissionAllow, PermissionAsk, PermissionDeny
from jupyter_agent.view.runmodel import RunModel
from jupyter_agent.view.style import ADDED_BG
from jupyter_agent.permissions import DENIED

from .helpers import record_widget_messages, response_events


def make(monkeypatch):
    record_widget_messages(monkeypatch)
    from jupyter_agent.jupyter.widgets.approvals import ApprovalCards
    from jupyter_agent.jupyter.widgets.runview import RunView

    model = RunModel()
    view = RunView(model, frame_interval=0.01)
    return model, view, ApprovalCards(view, model)


def click_from_thread(button) -> None:
    """What a JupyterLab subshell does: the widget callback runs off the loop thread."""
    t = threading.Thread(target=button.click)
    t.start()
    t.join()


async def pending_cards(view, n: int):
    for _ in range(200):
        if len(view.approvals.children) >= n:
            return list(view.approvals.children)
        await asyncio.sleep(0.01)
    raise AssertionError(f"expected {n} approval cards, saw {len(view.approvals.children)}")


EDIT = {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}
ASK = PermissionAsk("Edit wants to change a.py", diff="--- a.py\n+++ a.py\n-x = 1\n+x = 2",
                    suggested_rules=("Edit(a.py)",), tool_use_id="t1")


async def test_allow_click_allows_and_the_card_shows_tool_args_and_diff(monkeypatch):
    model, view, broker = make(monkeypatch)
    for event in response_events([{"type": "tool_use", "id": "t1", "name": "Edit", "input": EDIT}]):
        model.handle(event)
    decision = asyncio.ensure_future(broker.can_use_tool("Edit", EDIT, ASK))
    (card,) = await pending_cards(view, 1)
    assert model.tools()[0].state == "approval"
    assert "Edit" in card.info.value and "x = 2" in card.info.value and f"background:{ADDED_BG}" in card.info.value
    assert [b.description for b in (card.allow, card.always, card.deny)] == ["Allow", "Always allow", "Deny"]
    click_from_thread(card.allow)
    assert await asyncio.wait_for(decision, 2) == PermissionAllow()
    assert view.approvals.children == () and model.tools()[0].decision == "Allowed by you."


async def test_an_approval_marks_the_call_it_names_among_identical_calls(monkeypatch):
    """The ask carries its call's tool_use id: the view never guesses by name and input."""
    model, view, broker = make(monkeypatch)
    calls = [{"type": "tool_use", "id": i, "name": "Edit", "input": EDIT} for i in ("t1", "t2")]
    for event in response_events(calls):
        model.handle(event)
    decision = asyncio.ensure_future(broker.can_use_tool("Edit", EDIT, replace(ASK, tool_use_id="t2")))
    (card,) = await pending_cards(view, 1)
    assert [(t.id, t.state) for t in model.tools()] == [("t1", "pending"), ("t2", "approval")]
    click_from_thread(card.deny)
    await asyncio.wait_for(decision, 2)
    assert [(t.id, t.state) for t in model.tools()] == [("t1", "pending"), ("t2", "denied")]


async def test_deny_with_and_without_feedback(monkeypatch):
    model, view, broker = make(monkeypatch)
    first = asyncio.ensure_future(broker.can_use_tool("Edit", EDIT, ASK))
    second = asyncio.ensure_future(broker.can_use_tool("Write", {"file_path": "b.py", "content": ""},
                                                       PermissionAsk("Write b.py")))
    cards = await pending_cards(view, 2)  # several pending asks show together
    cards[0].feedback.value = "Use x = 3 instead."
    click_from_thread(cards[0].deny)
    click_from_thread(cards[1].deny)
    told = await asyncio.wait_for(first, 2)  # the model reads the feedback and goes on
    assert told == PermissionDeny(f"{DENIED.split(' STOP')[0]} To tell you how to proceed, the user said:\n"
                                  "Use x = 3 instead.")
    assert await asyncio.wait_for(second, 2) == PermissionDeny(DENIED, interrupt=True)
    assert view.approvals.children == ()


async def test_always_allow_without_a_policy_allows_only_the_clicked_card(monkeypatch):
    """The rules go back to the loop (which adds them); releasing other cards needs a policy
    to ask (see the test with the real policy below)."""
    model, view, broker = make(monkeypatch)
    for event in response_events([{"type": "tool_use", "id": "t1", "name": "Edit", "input": EDIT}]):
        model.handle(event)
    first = asyncio.ensure_future(broker.can_use_tool("Edit", EDIT, ASK))
    same_file = asyncio.ensure_future(broker.can_use_tool("Edit", {**EDIT, "new_string": "x = 5"}, ASK))
    other = asyncio.ensure_future(broker.can_use_tool("Write", {"file_path": "b.py", "content": ""},
                                                      PermissionAsk("Write b.py")))
    cards = await pending_cards(view, 3)
    click_from_thread(cards[0].always)
    assert await asyncio.wait_for(first, 2) == PermissionAllow(always=("Edit(a.py)",))
    assert model.tools()[0].decision == "Always allowed by you (Edit(a.py) for this session)."
    await asyncio.sleep(0.1)
    assert not same_file.done() and not other.done() and len(view.approvals.children) == 2
    broker.cancel_all()
    assert (await asyncio.wait_for(same_file, 2)) == PermissionDeny(DENIED, interrupt=True)
    assert (await asyncio.wait_for(other, 2)).interrupt and view.approvals.children == ()


async def test_stop_denies_what_is_pending_and_a_cancelled_wait_cleans_up(monkeypatch):
    model, view, broker = make(monkeypatch)
    waiting = asyncio.ensure_future(broker.can_use_tool("Edit", EDIT, ASK))
    cancelled = asyncio.ensure_future(broker.can_use_tool("Write", {"file_path": "c"}, PermissionAsk("w")))
    await pending_cards(view, 2)
    cancelled.cancel()  # what the loop does to a tool call when the run is aborted
    await asyncio.gather(cancelled, return_exceptions=True)
    assert len(view.approvals.children) == 1
    broker.cancel_all("Stopped.")
    result = await asyncio.wait_for(waiting, 2)
    assert isinstance(result, PermissionDeny) and result.interrupt
    assert view.approvals.children == ()
    # after Stop, a late ask is denied at once instead of waiting for nobody
    assert (await asyncio.wait_for(broker.can_use_tool("Edit", EDIT, ASK), 1)).interrupt


async def test_always_allow_asks_the_policy_what_else_it_now_allows(monkeypatch, tmp_path):
    """With the conversation's real policy, "Always allow" releases exactly the pending
    calls the policy would now allow."""
    record_widget_messages(monkeypatch)
    from jupyter_agent.jupyter.widgets.approvals import ApprovalCards
    from jupyter_agent.jupyter.widgets.runview import RunView
    from jupyter_agent.permissions import Permissions
    from jupyter_agent.tools import default_tools
    from jupyter_agent.loop.tool import ToolContext

    policy = Permissions(mode="default", cwd=tmp_path)
    context = ToolContext(cwd=tmp_path, permissions=policy)
    tools = {t.name: t for t in default_tools()}
    write_a = {"file_path": str(tmp_path / "a.txt"), "content": "1"}
    write_b = {"file_path": str(tmp_path / "sub" / "b.txt"), "content": "2"}
    outside = {"file_path": str(tmp_path.parent / "elsewhere.txt"), "content": "3"}
    asks = []
    for input in (write_a, write_b, outside):  # what the loop does before calling can_use_tool
        asks.append(await policy.check(tools["Write"], tools["Write"].Input.model_validate(input), context))
    model = RunModel()
    broker = ApprovalCards(RunView(model), model, policy=policy)
    first = asyncio.ensure_future(broker.can_use_tool("Write", write_a, asks[0]))
    second = asyncio.ensure_future(broker.can_use_tool("Write", write_b, asks[1]))
    third = asyncio.ensure_future(broker.can_use_tool("Write", outside, asks[2]))
    cards = await pending_cards(broker.view, 3)
    click_from_thread(cards[0].always)
    assert (await asyncio.wait_for(first, 2)).always == asks[0].suggested_rules
    released = await asyncio.wait_for(second, 2)
    assert released == PermissionAllow() and await policy.would_allow("Write", write_b, context)
    assert len(broker.view.approvals.children) == 1  # the released card is gone, the outside one stays
    await asyncio.sleep(0.1)
    assert not third.done()  # Edit(./**) does not cover a file outside the working directory
    broker.cancel_all()
    assert (await asyncio.wait_for(third, 2)).interrupt
