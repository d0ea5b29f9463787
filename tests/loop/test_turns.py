"""The four steps through the real SDK against the fake Messages API."""

from __future__ import annotations

import asyncio

import pytest

from jupyter_agent import (
    AssistantMessage, RequestStart, StreamEvent, TerminalReason, ToolResult, ToolStart, UserMessage,
)
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use

from .conftest import run_query


def last_results(request_body: dict) -> dict[str, dict]:
    """tool_result blocks of a request's last message, by id."""
    content = request_body["messages"][-1]["content"]
    return {b["tool_use_id"]: {k: v for k, v in b.items() if k != "cache_control"}
            for b in content if b.get("type") == "tool_result"}


def body(api: FakeMessagesAPI, n: int) -> dict:
    return api.requests[n].body


async def test_text_only_answer_completes_after_one_request(tools):
    with FakeMessagesAPI([response(text("Hello from the model."))]) as api:
        run = run_query(api, "hi", tools)
        events = [e async for e in run]
    terminal = events[-1]
    assert terminal.reason == TerminalReason.COMPLETED
    assert terminal.message == "Hello from the model."
    assert run.terminal is terminal and run.state.turn_count == 1
    assert [m["role"] for m in run.state.messages] == ["user", "assistant"]
    assert isinstance(events[0], RequestStart)
    deltas = [e for e in events if isinstance(e, StreamEvent) and e.type == "content_block_delta"]
    assert "".join(e.delta["text"] for e in deltas) == "Hello from the model."
    # the snapshot carried by the last delta already holds the whole text
    assert deltas[-1].snapshot["content"][0]["text"] == "Hello from the model."
    assert len(api.requests) == 1


async def test_tool_call_result_goes_back_paired_by_id(tools):
    call = tool_use("Echo", {"text": "abc"})
    with FakeMessagesAPI([response(text("Let me echo."), call), response(text("Done."))]) as api:
        run = run_query(api, "echo abc", tools)
        events = [e async for e in run]
        second = body(api, 1)
    assert run.terminal.reason == TerminalReason.COMPLETED
    assert run.state.turn_count == 2
    # step 4: assistant message before its tool results, then the next request
    roles = [m["role"] for m in second["messages"]]
    assert roles[-2:] == ["assistant", "user"]
    assert second["messages"][-2]["content"][1]["id"] == call["id"]
    result = last_results(second)[call["id"]]
    assert result["content"] == "echo: abc" and not result.get("is_error")
    kinds = [type(e) for e in events]
    assert kinds.index(ToolStart) < kinds.index(ToolResult) < kinds.index(UserMessage)
    assert sum(isinstance(e, AssistantMessage) for e in events) == 2


async def test_every_failure_is_an_error_result_with_the_same_id(tools):
    calls = [
        tool_use("NoSuchTool", {"x": 1}),
        tool_use("Echo", {"txt": "typo"}),
        tool_use("Boom", {"text": "expected"}),
        tool_use("Boom", {"text": "surprise"}),
        tool_use("Boom", {"text": "in validation"}),
        tool_use("Hang", {"seconds": 5}),
        tool_use("Quiet", {"text": ""}),
    ]
    with FakeMessagesAPI([response(*calls), response(text("ok"))]) as api:
        run = run_query(api, "try things", tools)
        terminal = await run.wait()
        results = last_results(body(api, 1))
    assert terminal.reason == TerminalReason.COMPLETED
    assert set(results) == {c["id"] for c in calls}
    unknown, typo, expected, surprise, in_validation, hang, quiet = (results[c["id"]] for c in calls)
    assert unknown["is_error"] and "No such tool available: NoSuchTool" in unknown["content"]
    assert typo["is_error"]
    assert "required parameter `text` is missing" in typo["content"]
    assert "unexpected parameter `txt`" in typo["content"]
    assert expected["is_error"] and expected["content"] == "the thing you asked for does not exist"
    assert surprise["is_error"] and "RuntimeError: kaboom" in surprise["content"]
    assert len(surprise["content"]) < 11_000 and "characters cut" in surprise["content"]
    assert in_validation["is_error"] and "FileNotFoundError" in in_validation["content"]
    assert hang["is_error"] and "timed out after 0.2 s" in hang["content"]
    assert quiet["content"] == "(Quiet completed with no output)" and not quiet.get("is_error")


async def test_oversized_output_is_saved_and_previewed(tools, tmp_path):
    call = tool_use("Huge", {"text": ""})
    with FakeMessagesAPI([response(call), response(text("ok"))]) as api:
        run = run_query(api, "big", tools)
        run.params.context.tool_results_dir = tmp_path
        await run.wait()
        result = last_results(body(api, 1))[call["id"]]
    assert "Output too large (25000 characters)" in result["content"]
    saved = list(tmp_path.iterdir())
    assert len(saved) == 1 and saved[0].read_text() == "line\n" * 5000
    assert str(saved[0]) in result["content"]


async def test_conversation_continues_with_earlier_turns(tools):
    from jupyter_agent import Conversation
    from jupyter_agent.loop.tool import ToolCheckPolicy

    from .conftest import model_for

    with FakeMessagesAPI([response(text("first answer")), response(text("second answer"))]) as api:
        conversation = Conversation(model=model_for(api), tools=tools)
        conversation._permissions = ToolCheckPolicy()
        await conversation.send("one").wait()
        await conversation.send("two").wait()
        second = body(api, 1)
    texts = [m["content"] if isinstance(m["content"], str) else m["content"][-1].get("text")
             for m in second["messages"]]
    assert texts[-3:] == ["one", "first answer", "two"]
    assert conversation.last_answer() == "second answer"
    assert conversation.usage.requests == 2


async def test_second_send_while_running_is_refused(tools):
    import pytest

    from jupyter_agent import Conversation

    from .conftest import model_for

    with FakeMessagesAPI([response(text("slow " * 20), delay_s=0.02)]) as api:
        conversation = Conversation(model=model_for(api), tools=tools)
        run = conversation.send("one")
        events = run.__aiter__()
        await events.__anext__()
        with pytest.raises(RuntimeError, match="still going"):
            conversation.send("two")
        async for _ in events:
            pass
    assert run.terminal.reason == TerminalReason.COMPLETED


async def test_a_runs_own_mode_and_model_apply_to_that_run_only(tools):
    import pytest

    from jupyter_agent import Conversation

    from .conftest import model_for

    with FakeMessagesAPI([response(text("planned")), response(text("plain"))]) as api:
        conversation = Conversation(model=model_for(api), tools=tools)
        with pytest.raises(ValueError, match="Unknown permission mode 'yolo'"):
            conversation.send("x", permission_mode="yolo")
        assert conversation.permission_mode == "default" and conversation.runs == []
        other = model_for(api)
        other.name = "claude-other"
        run = conversation.send("plan it", permission_mode="plan", model=other)
        # the run's own mode goes into the run; the conversation's setting is never swapped
        assert run.permission_mode == "plan" and run.model_name == "claude-other"
        assert conversation.permission_mode == "default" and conversation.permissions.mode == "default"
        await run.wait()
        assert conversation.permission_mode == "default"
        plain = conversation.send("again")
        await plain.wait()
        assert plain.model_name == "claude-test"
        assert "plan mode" in str(api.requests[0].body["system"]).lower()
        assert "plan mode" not in str(api.requests[1].body["system"]).lower()


async def test_a_runs_own_turn_limit_goes_into_that_run_and_a_busy_conversation_says_so(tools):
    from jupyter_agent import Conversation
    from jupyter_agent.conversation import ConversationBusy

    from .conftest import model_for

    with FakeMessagesAPI([response(text("slow " * 40), delay_s=0.01)]) as api:
        conversation = Conversation(model=model_for(api), tools=tools, max_turns=1)
        run = conversation.send("go", max_turns=0)  # 0: no limit for this run only
        assert run.params.options.max_turns is None and conversation.max_turns == 1
        ending = asyncio.ensure_future(run.wait())
        await asyncio.sleep(0)
        with pytest.raises(ConversationBusy, match="still going"):
            conversation.send("again")
        await ending
    assert conversation.max_turns == 1
