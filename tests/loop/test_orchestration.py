"""Step 3: batching, the streaming executor, permissions at the decision point."""

from __future__ import annotations

import time

from jupyter_agent import PermissionAllow, PermissionDeny, TerminalReason, ToolResult, ToolStart
from jupyter_agent.loop.orchestration import partition_tool_calls
from jupyter_agent.loop.tool_execution import ToolRunEnv
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use
from jupyter_agent.loop.tool import PermissionPolicy, ToolContext

from .conftest import run_query


def results_of(api, n=1):
    """The last message's tool results, without the cache marker the model adds."""
    blocks = api.requests[n].body["messages"][-1]["content"]
    return {b["tool_use_id"]: {k: v for k, v in b.items() if k != "cache_control"} for b in blocks}


def test_partition_groups_consecutive_safe_calls(tools, tmp_path):
    env = ToolRunEnv({t.name: t for t in tools}, ToolContext(cwd=tmp_path))
    blocks = [tool_use("Echo", {"text": "1"}), tool_use("Sleep", {"seconds": 0}),
              tool_use("Change", {"seconds": 0}), tool_use("Echo", {"text": "2"}),
              tool_use("Echo", {"bad": 1}), tool_use("Nope", {})]
    batches = partition_tool_calls(blocks, env)
    assert [[b["name"] for b in batch] for batch in batches] == [
        ["Echo", "Sleep"], ["Change"], ["Echo"], ["Echo"], ["Nope"]]  # invalid input counts as unsafe


async def test_safe_calls_overlap_and_unsafe_calls_run_alone(tools, timeline, allow_all):
    calls = [tool_use("Sleep", {"seconds": 0.2, "label": "a"}),
             tool_use("Sleep", {"seconds": 0.2, "label": "b"}),
             tool_use("Change", {"seconds": 0.1, "label": "w"}),
             tool_use("Sleep", {"seconds": 0.1, "label": "c"})]
    for streaming in (False, True):
        timeline.spans.clear()
        with FakeMessagesAPI([response(*calls), response(text("ok"))]) as api:
            run = run_query(api, "go", tools, can_use_tool=allow_all, streaming_tools=streaming)
            assert (await run.wait()).reason == TerminalReason.COMPLETED
        assert timeline.overlapped("a", "b"), streaming
        assert not timeline.overlapped("w", "a") and not timeline.overlapped("w", "b")
        assert not timeline.overlapped("w", "c")
        assert timeline.spans["w"][0] >= max(timeline.spans["a"][1], timeline.spans["b"][1])
        assert timeline.spans["c"][0] >= timeline.spans["w"][1]


async def test_ten_safe_calls_at_most_at_once(tools, timeline):
    calls = [tool_use("Sleep", {"seconds": 0.15, "label": str(i)}) for i in range(12)]
    with FakeMessagesAPI([response(*calls), response(text("ok"))]) as api:
        run = run_query(api, "go", tools, streaming_tools=False)
        await run.wait()
    starts = sorted(s for s, _ in timeline.spans.values())
    ends = sorted(e for _, e in timeline.spans.values())
    # the 11th call cannot start before the first one ended
    assert starts[10] >= ends[0] - 0.01
    assert starts[9] < ends[0]


async def test_streaming_executor_starts_tools_before_the_response_ends(tools):
    call = tool_use("Echo", {"text": "early"})
    slow = response(call, text("still talking " * 30), delay_s=0.01)
    with FakeMessagesAPI([slow, response(text("ok"))]) as api:
        run = run_query(api, "go", tools)
        order = []
        async for event in run:
            if isinstance(event, ToolResult):
                order.append(("result", time.perf_counter()))
            elif type(event).__name__ == "AssistantMessage" and not order:
                order.append(("message_done", time.perf_counter()))
    assert order[0][0] == "result"  # the tool finished while the model was still streaming


async def test_ask_goes_to_can_use_tool_and_deny_feedback_reaches_the_model(tools):
    asked = []

    async def can_use_tool(name, input, ask):
        asked.append((name, input["label"], ask.message))
        if input["label"] == "ok":
            return PermissionAllow()
        return PermissionDeny("Use a smaller change, please.")

    calls = [tool_use("Change", {"seconds": 0, "label": "ok"}),
             tool_use("Change", {"seconds": 0, "label": "no"})]
    with FakeMessagesAPI([response(*calls), response(text("ok"))]) as api:
        run = run_query(api, "go", tools, can_use_tool=can_use_tool)
        assert (await run.wait()).reason == TerminalReason.COMPLETED
        results = results_of(api)
    assert asked == [("Change", "ok", "change ok"), ("Change", "no", "change no")]
    assert results[calls[0]["id"]]["content"] == "slept 0.0"
    assert results[calls[1]["id"]] == {"type": "tool_result", "tool_use_id": calls[1]["id"],
                                       "content": "Use a smaller change, please.", "is_error": True}


async def test_deny_without_feedback_ends_the_turn(tools):
    def can_use_tool(name, input, ask):
        return PermissionDeny("The user denied this call.", interrupt=True)

    calls = [tool_use("Change", {"seconds": 0, "label": "1"}), tool_use("Change", {"seconds": 0, "label": "2"})]
    with FakeMessagesAPI([response(*calls)]) as api:
        run = run_query(api, "go", tools, can_use_tool=can_use_tool)
        terminal = await run.wait()
        assert len(api.requests) == 1
    assert terminal.reason == TerminalReason.ABORTED_TOOLS
    contents = [b["content"] for b in run.state.messages[-1]["content"]]
    assert contents[0] == "The user denied this call."
    assert "denied an earlier tool call" in contents[1]


async def test_ask_with_no_one_to_ask_is_a_clear_deny(tools, caplog):
    call = tool_use("Change", {"seconds": 0, "label": "x"})
    with caplog.at_level("INFO", logger="jupyter_agent.loop.tool_execution"):
        with FakeMessagesAPI([response(call), response(text("ok"))]) as api:
            run = run_query(api, "go", tools)
            await run.wait()
            result = results_of(api)[call["id"]]
    assert result["is_error"]
    # for the model: what, why, what instead; the developer's options go to the log
    assert result["content"].startswith("Change was not run:") and "needs approval" in result["content"]
    assert "Do not call it again the same way" in result["content"] and "can_use_tool" not in result["content"]
    assert any("can_use_tool=" in r.getMessage() for r in caplog.records)


async def test_always_allow_adds_a_session_rule(tools):
    added = []

    class RecordingPolicy(PermissionPolicy):
        async def decide(self, tool, input, context, prepared):
            if "Change" in added:
                return PermissionAllow()
            return await tool.check_permissions(input, context, prepared)

        def add_session_rules(self, rules):
            added.extend(rules)

    answers = []

    def can_use_tool(name, input, ask):
        answers.append(name)
        return PermissionAllow(always=ask.suggested_rules)

    calls = [tool_use("Change", {"seconds": 0, "label": str(i)}) for i in range(3)]
    with FakeMessagesAPI([response(*calls), response(text("ok"))]) as api:
        run = run_query(api, "go", tools, can_use_tool=can_use_tool, permissions=RecordingPolicy())
        await run.wait()
    assert added == ["Change"] and answers == ["Change"]  # asked once, then the rule held


async def test_tool_start_only_after_permission(tools):
    events = []

    def can_use_tool(name, input, ask):
        events.append("asked")
        return PermissionDeny("no")

    with FakeMessagesAPI([response(tool_use("Change", {"seconds": 0})), response(text("ok"))]) as api:
        run = run_query(api, "go", tools, can_use_tool=can_use_tool)
        async for event in run:
            if isinstance(event, ToolStart):
                events.append("started")
    assert events == ["asked"]


async def test_calls_cancelled_before_their_first_step_still_get_results(tools, tmp_path):
    """Regression: a task cancelled before it ever ran used to leave its call without a
    result, and the loop waited forever."""
    import asyncio

    from jupyter_agent.loop.abort import AbortSignal
    from jupyter_agent.loop.orchestration import ToolScheduler

    signal = AbortSignal()
    scheduler = ToolScheduler(ToolRunEnv({t.name: t for t in tools}, ToolContext(cwd=tmp_path)),
                              signal, in_order=False)
    calls = [tool_use("Sleep", {"seconds": 5}), tool_use("Echo", {"text": "x"})]
    for call in calls:
        scheduler.add(call)
    signal.abort()  # before the event loop gave either task its first step

    async def collect():
        return [e async for e in scheduler.remaining_events()]

    events = await asyncio.wait_for(collect(), timeout=5)
    results = {e.tool_use_id: e.block for e in events if isinstance(e, ToolResult)}
    assert set(results) == {c["id"] for c in calls}
    assert all(r["is_error"] and "Interrupted" in r["content"] for r in results.values())


async def test_a_plain_no_from_can_use_tool_stops_the_turn_with_claude_codes_wording(tools):
    from jupyter_agent.loop.permission_result import DENIED

    with FakeMessagesAPI([response(tool_use("Change", {"seconds": 0}))]) as api:
        run = run_query(api, "go", tools, can_use_tool=lambda name, input, ask: False)
        terminal = await run.wait()
        assert len(api.requests) == 1
    assert terminal.reason == TerminalReason.ABORTED_TOOLS
    assert run.state.messages[-1]["content"][0]["content"] == DENIED
