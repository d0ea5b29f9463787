"""Opt-in checkpoints: the four steps, each with a read-only view of the loop's state."""

from __future__ import annotations

from jupyter_agent import Checkpoint, TerminalReason
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use

from .conftest import run_query


async def test_checkpoints_walk_the_four_steps_in_order(tools):
    call = tool_use("Echo", {"text": "x"})
    with FakeMessagesAPI([response(call), response(text("done"))]) as api:
        run = run_query(api, "go", tools, checkpoints=True)
        checkpoints = [e async for e in run if isinstance(e, Checkpoint)]
    assert [c.step for c in checkpoints] == [1, 2, 3, 4, 1, 2]
    assert [c.step_name for c in checkpoints[:4]] == [
        "build_request", "collect_response", "run_tools", "next_state"]
    first, second, third, fourth = checkpoints[:4]
    assert first.turn_count == 1 and first.transition is None and not first.needs_follow_up
    assert [m["role"] for m in first.messages_for_query] == ["user"]
    assert second.needs_follow_up and second.assistant_messages[0]["content"][0]["id"] == call["id"]
    assert third.tool_results[0]["tool_use_id"] == call["id"]
    assert fourth.turn_count == 2 and fourth.transition.reason == "next_turn"
    assert len(fourth.state.messages) == 3
    assert not checkpoints[5].needs_follow_up  # the final answer asks for no tool
    assert run.terminal.reason == TerminalReason.COMPLETED


async def test_pausing_is_not_pulling(tools):
    """Between two checkpoints nothing happens: no request is sent while a lesson pauses."""
    with FakeMessagesAPI([response(tool_use("Echo", {"text": "x"})), response(text("done"))]) as api:
        run = run_query(api, "go", tools, checkpoints=True)
        events = run.__aiter__()
        seen = []
        while len(seen) < 4:
            event = await events.__anext__()
            if isinstance(event, Checkpoint):
                seen.append(event.step)
        assert len(api.requests) == 1  # paused after step 4: the second request is not sent yet
        async for _ in events:
            pass
        assert len(api.requests) == 2
