"""The stepper: forward, back, to the end, approvals while stepping, immutable snapshots.

Real loop, real tools, the real anthropic SDK against the fake Messages API.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest

from jupyter_agent.lessons import Stepper, thaw
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "notes.txt").write_text("value = 1\n")
    return tmp_path


def _start(api, workdir, prompt="Read notes.txt", **kwargs):
    return Stepper.start(prompt, model=api.model(), cwd=workdir, **kwargs)


async def test_forward_walks_the_four_steps_then_ends(workdir):
    read = tool_use("Read", {"file_path": str(workdir / "notes.txt")})
    with FakeMessagesAPI([response(text("Reading."), read), response(text("It says value = 1."))]) as api:
        stepper = _start(api, workdir)
        assert stepper.current is None
        first = await stepper.step()
        assert (first.step, first.step_name, first.turn_count, first.transition) == (1, "build_request", 1, None)
        assert len(api.requests) == 0  # paused at step 1: the request is built, not sent
        second = await stepper.step()
        assert second.step == 2 and second.needs_follow_up
        assert second.assistant_messages[0]["content"][1]["id"] == read["id"]
        assert any("request #1" in line for line in second.events)
        third = await stepper.step()
        assert third.step == 3 and third.tool_results[0]["tool_use_id"] == read["id"]
        assert "value = 1" in json.dumps(thaw(third.tool_results))
        fourth = await stepper.step()
        assert (fourth.step, fourth.turn_count, fourth.transition) == (4, 2, "next_turn")
        assert [m["role"] for m in fourth.state_messages] == ["user", "assistant", "user"]
        assert len(api.requests) == 1
        end = await stepper.run_to_end()
        assert end.ended and end.end_reason == "completed" and stepper.terminal.reason.value == "completed"
        assert [s.step for s in stepper.snapshots] == [1, 2, 3, 4, 1, 2, None]
        assert end.end_row[0].startswith("The model's response has no tool_use")
        assert [p.status for p in end.pairs()] == ["ok"]
        assert await stepper.step() is end  # past the end nothing moves


async def test_back_shows_earlier_snapshots_and_forward_replays_them(workdir):
    read = tool_use("Read", {"file_path": str(workdir / "notes.txt")})
    with FakeMessagesAPI([response(read), response(text("done"))]) as api:
        stepper = _start(api, workdir)
        await stepper.next_turn()  # step 1 of turn 1
        snap = await stepper.next_turn()  # step 1 of turn 2
        assert (snap.step, snap.turn_count) == (1, 2) and len(api.requests) == 1
        assert stepper.back().step == 4
        assert stepper.back(2).step == 2 and stepper.position == 1
        replayed = await stepper.step()
        assert replayed is stepper.snapshots[2] and len(api.requests) == 1  # replay, no new request
        assert stepper.go(0).step == 1 and stepper.go(-1) is snap
        with pytest.raises(IndexError, match="snapshots"):
            stepper.go(99)
        end = await stepper.run_to_end()
        assert end.end_reason == "completed" and len(api.requests) == 2


async def test_past_snapshots_are_immutable_deep_copies(workdir):
    read = tool_use("Read", {"file_path": str(workdir / "notes.txt")})
    with FakeMessagesAPI([response(read), response(text("done"))]) as api:
        stepper = _start(api, workdir)
        first = await stepper.step()
        before = json.dumps(thaw(first.views()), sort_keys=True)
        await stepper.run_to_end()
        # the loop went on (the history grew), the first snapshot did not
        assert json.dumps(thaw(stepper.go(0).views()), sort_keys=True) == before
        assert len(stepper.run.state.messages) == 4 and len(first.state_messages) == 1
        with pytest.raises(TypeError, match="read-only"):
            first.messages_for_query[0]["content"] = "changed"
        with pytest.raises(TypeError, match="read-only"):
            first.messages_for_query[0].update(role="assistant")
        with pytest.raises(AttributeError):
            first.messages_for_query.append({})  # a tuple
        with pytest.raises(dataclasses.FrozenInstanceError):
            first.turn_count = 5
        copy = thaw(first.messages_for_query)
        copy[0]["content"] = "mine"  # thaw gives a copy one may change
        assert first.messages_for_query[0]["content"] != "mine"


async def test_approvals_while_stepping(workdir):
    target = workdir / "out.txt"
    write = tool_use("Write", {"file_path": str(target), "content": "hello"})
    with FakeMessagesAPI([response(write), response(text("written"))]) as api:
        stepper = _start(api, workdir, prompt="write hello")
        await stepper.step()
        await stepper.step()  # step 2: the response asked for Write
        snap = await asyncio.wait_for(stepper.step(), 10)  # returns early: the loop waits for us
        assert snap.step == 2 and not target.exists()
        [request] = stepper.pending_approvals
        assert request.tool_name == "Write" and request.input["file_path"] == str(target)
        request.allow()
        third = await asyncio.wait_for(stepper.step(), 10)
        assert third.step == 3 and target.read_text() == "hello"
        assert third.tool_results[0]["tool_use_id"] == write["id"] and not third.tool_results[0].get("is_error")
        assert [(a.tool_name, a.outcome) for a in stepper.recording.approvals] == [("Write", "allow")]
        end = await stepper.run_to_end()
        assert end.end_reason == "completed"


async def test_deny_with_feedback_while_stepping_in_code(workdir):
    target = workdir / "out.txt"
    write = tool_use("Write", {"file_path": str(target), "content": "hello"})
    with FakeMessagesAPI([response(write), response(text("ok, I will not"))]) as api:
        stepper = _start(api, workdir, prompt="write hello",
                         on_approval=lambda request: request.deny("not that file"))
        end = await asyncio.wait_for(stepper.run_to_end(), 10)
        assert end.end_reason == "completed" and not target.exists()
        [pair] = end.pairs()
        assert pair.status == "error" and "not that file" in json.dumps(pair.result)
        assert "not that file" in json.dumps(api.requests[1].body["messages"][-1])


async def test_a_run_without_checkpoints_is_refused():
    from jupyter_agent import query

    with FakeMessagesAPI([], strict=False) as api:
        run = query("hi", model=api.model())
        with pytest.raises(ValueError, match="checkpoints=True"):
            Stepper(run)
        await api.model().aclose()


async def test_close_stops_a_run_paused_between_steps(workdir):
    read = tool_use("Read", {"file_path": str(workdir / "notes.txt")})
    with FakeMessagesAPI([response(read), response(text("done"))], strict=False) as api:
        stepper = _start(api, workdir)
        await stepper.step()
        await stepper.step()
        await stepper.close()
        assert stepper.ended and stepper.current.end_reason in ("aborted_tools", "aborted_streaming")
        # every tool_use has its tool_result in the final history
        assert all(p.result is not None for p in stepper.current.pairs())


async def test_next_turn_and_run_to_end_stop_early_for_an_approval(workdir):
    target = workdir / "out.txt"
    write = tool_use("Write", {"file_path": str(target), "content": "x"})
    # A slow stream: the Write is released (and asks) at message_delta, before step 2 ends.
    with FakeMessagesAPI([response(write, delay_s=0.1), response(text("done"))]) as api:
        stepper = _start(api, workdir, prompt="write x")
        assert (await stepper.next_turn()).step == 1  # not started: the first step 1
        snap = await asyncio.wait_for(stepper.next_turn(), 10)
        assert snap.step == 2 and len(stepper.pending_approvals) == 1  # stopped inside the turn
        snap = await asyncio.wait_for(stepper.run_to_end(), 10)
        assert snap.step == 2 and not snap.ended  # still waiting: nothing moved
        stepper.pending_approvals[0].allow_always()
        end = await asyncio.wait_for(stepper.run_to_end(), 10)
        assert end.end_reason == "completed" and target.read_text() == "x"
        assert [a.outcome for a in stepper.recording.approvals] == ["always"]
