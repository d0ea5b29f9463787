"""Every end reason of the seed's table, and the continue reasons, at the exact moment."""

from __future__ import annotations

import asyncio

from jupyter_agent import HookResult, StreamEvent, TerminalReason, ToolStart
from jupyter_agent.loop.messages import ensure_tool_result_pairing
from jupyter_agent.testing import (
    FakeMessagesAPI, http_error, prompt_too_long, response, text, tool_use,
)

from .conftest import run_query


def assert_history_valid(run) -> None:
    _, repairs = ensure_tool_result_pairing(list(run.state.messages))
    assert repairs == [], repairs


async def test_max_turns_one_runs_the_first_tools_then_stops(tools):
    calls = [tool_use("Echo", {"text": str(i)}) for i in range(8)]
    with FakeMessagesAPI([response(*calls)]) as api:
        run = run_query(api, "go", tools, max_turns=1)
        events = [e async for e in run]
        assert len(api.requests) == 1  # no second request
    assert run.terminal.reason == TerminalReason.MAX_TURNS
    assert sum(isinstance(e, ToolStart) for e in events) == 8  # one response = one turn
    assert run.state.messages[-1]["content"][0]["content"] == "echo: 0"
    assert_history_valid(run)


async def test_max_turns_two_allows_exactly_two_requests(tools):
    with FakeMessagesAPI([response(tool_use("Echo", {"text": "a"})),
                          response(tool_use("Echo", {"text": "b"}))]) as api:
        run = run_query(api, "go", tools, max_turns=2)
        terminal = await run.wait()
        assert len(api.requests) == 2
    assert terminal.reason == TerminalReason.MAX_TURNS and terminal.turn_count == 2


async def test_stop_while_streaming_answers_every_emitted_tool_use(tools):
    call = tool_use("Echo", {"text": "x"})
    slow_tail = response(call, text("and now a long explanation " * 40), delay_s=0.01)
    with FakeMessagesAPI([slow_tail, response(text("after stop"))], strict=False) as api:
        run = run_query(api, "go", tools)
        async for event in run:
            if isinstance(event, StreamEvent) and event.type == "content_block_delta" \
                    and event.delta.get("type") == "text_delta":
                run.stop()
        assert run.terminal.reason == TerminalReason.ABORTED_STREAMING
        assert_history_valid(run)
        messages = run.state.messages
        assert messages[-2]["content"][0]["id"] == call["id"]
        assert messages[-1]["content"][0]["tool_use_id"] == call["id"]
        # the history is one the API accepts: a follow-up request goes through
        from jupyter_agent import query
        from jupyter_agent.loop.tool import ToolCheckPolicy

        from .conftest import model_for

        follow = query([*messages, {"role": "user", "content": "continue"}], model=model_for(api),
                       tools=tools, permissions=ToolCheckPolicy())
        assert (await follow.wait()).reason == TerminalReason.COMPLETED
        assert api.rejections == []


async def test_stop_while_tools_run_cancels_them_with_error_results(tools, timeline):
    calls = [tool_use("Sleep", {"seconds": 10, "label": "long"}), tool_use("Echo", {"text": "quick"})]
    with FakeMessagesAPI([response(*calls)]) as api:
        run = run_query(api, "go", tools)
        stopped_at: list[float] = []

        def stop() -> None:
            if run.record.phase != "tools":  # the response still streams (a loaded machine)
                asyncio.get_running_loop().call_later(0.01, stop)
                return
            stopped_at.append(asyncio.get_running_loop().time())
            run.stop()

        async for event in run:
            if isinstance(event, ToolStart) and event.name == "Sleep":
                asyncio.get_running_loop().call_later(0.05, stop)
        assert len(api.requests) == 1
    assert run.terminal.reason == TerminalReason.ABORTED_TOOLS
    # the 10 s sleep was cancelled, not waited for (counted from the stop: the time to the
    # first response depends on the machine's load)
    assert asyncio.get_running_loop().time() - stopped_at[0] < 5
    results = {b["tool_use_id"]: b for b in run.state.messages[-1]["content"]}
    assert results[calls[0]["id"]]["is_error"] and "Interrupted" in results[calls[0]["id"]]["content"]
    assert results[calls[1]["id"]]["content"] == "echo: quick"
    assert_history_valid(run)


async def test_model_error_after_retries_ends_with_a_valid_history(tools):
    script = [response(tool_use("Echo", {"text": "1"}))] + [http_error(500)] * 3
    with FakeMessagesAPI(script) as api:
        run = run_query(api, "go", tools, model_options={"max_retries": 2})
        events = [e async for e in run]
    terminal = events[-1]
    assert terminal.reason == TerminalReason.MODEL_ERROR
    assert terminal.error and terminal.message
    assert_history_valid(run)
    assert run.state.messages[-1]["content"][0]["content"] == "echo: 1"


async def test_model_error_mid_response_fills_the_tool_uses_it_emitted(tools):
    from jupyter_agent.testing import stream_error

    call = tool_use("Sleep", {"seconds": 0.01, "label": "s"})
    failing = stream_error(after=8, base=response(call, text("more " * 30)), error_type="api_error",
                           message="Internal server error")
    with FakeMessagesAPI([failing]) as api:
        run = run_query(api, "go", tools, model_options={"max_retries": 0})
        await run.wait()
    assert run.terminal.reason == TerminalReason.MODEL_ERROR
    assert_history_valid(run)
    ids = [b["tool_use_id"] for b in run.state.messages[-1]["content"]]
    assert ids == [call["id"]]


async def test_prompt_too_long(tools):
    with FakeMessagesAPI([prompt_too_long()]) as api:
        run = run_query(api, "go", tools)
        terminal = await run.wait()
    assert terminal.reason == TerminalReason.PROMPT_TOO_LONG
    assert "too long" in terminal.message


async def test_stop_hook_blocking_continues_then_prevented_ends(tools):
    seen = []

    def stop_hook(stop_input):
        seen.append(stop_input.stop_hook_active)
        if not stop_input.stop_hook_active:
            return HookResult(decision="block", message="You forgot the tests.")
        return HookResult(stop=True, message="enough")

    with FakeMessagesAPI([response(text("done")), response(text("done, with tests"))]) as api:
        run = run_query(api, "go", tools, hooks={"Stop": [stop_hook]})
        terminal = await run.wait()
        second = api.requests[1].body
    assert seen == [False, True]
    assert "You forgot the tests." in str(second["messages"][-1]["content"])
    assert terminal.reason == TerminalReason.STOP_HOOK_PREVENTED and terminal.message == "enough"


async def test_pre_tool_use_hook_can_stop_deny_or_rewrite(tools):
    def pre(name, input, context):
        if input.get("text") == "deny-me":
            return HookResult(decision="deny", message="not that one")
        if input.get("text") == "rewrite-me":
            return HookResult(updated_input={"text": "rewritten"})
        return None

    calls = [tool_use("Echo", {"text": "deny-me"}), tool_use("Echo", {"text": "rewrite-me"})]
    with FakeMessagesAPI([response(*calls), response(text("ok"))]) as api:
        run = run_query(api, "go", tools, hooks={"PreToolUse": [pre]})
        await run.wait()
        results = {b["tool_use_id"]: {k: v for k, v in b.items() if k != "cache_control"}
                   for b in api.requests[1].body["messages"][-1]["content"]}
    assert results[calls[0]["id"]] == {"type": "tool_result", "tool_use_id": calls[0]["id"],
                                       "content": "not that one", "is_error": True}
    assert results[calls[1]["id"]]["content"] == "echo: rewritten"


async def test_hook_stopped(tools):
    async def post(name, input, result, context):
        return HookResult(stop=True, message="post hook says stop", updated_output="redacted")

    call = tool_use("Echo", {"text": "secret"})
    with FakeMessagesAPI([response(call)]) as api:
        run = run_query(api, "go", tools, hooks={"PostToolUse": [post]})
        terminal = await run.wait()
    assert terminal.reason == TerminalReason.HOOK_STOPPED and terminal.message == "post hook says stop"
    assert run.state.messages[-1]["content"][0]["content"] == "redacted"
    assert_history_valid(run)


async def test_max_output_tokens_recovery_asks_to_resume(tools):
    with FakeMessagesAPI([response(text("part one"), stop_reason="max_tokens"),
                          response(text("part two"))]) as api:
        run = run_query(api, "go", tools)
        terminal = await run.wait()
        second = api.requests[1].body
    assert terminal.reason == TerminalReason.COMPLETED
    assert "Resume directly" in str(second["messages"][-1]["content"])
    assert terminal.message == "part two"


async def test_consumer_that_walks_away_leaves_no_running_tool(tools, timeline):
    with FakeMessagesAPI([response(tool_use("Sleep", {"seconds": 10, "label": "orphan"}))]) as api:
        run = run_query(api, "go", tools)
        async for event in run:
            if isinstance(event, ToolStart):
                break
        await asyncio.sleep(0.05)
    assert "orphan" in timeline.spans  # its finally ran: it was cancelled, not left running
    # the tool started while the response streamed, so either abort reason is right
    assert run.terminal.reason in (TerminalReason.ABORTED_STREAMING, TerminalReason.ABORTED_TOOLS)
    assert_history_valid(run)
    leftover = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]
    assert leftover == []


async def test_output_token_recovery_stops_asking_after_its_limit(tools):
    from jupyter_agent.loop.query import MAX_OUTPUT_TOKENS_RECOVERY_LIMIT

    cut = [response(text(f"part {i}"), stop_reason="max_tokens") for i in range(MAX_OUTPUT_TOKENS_RECOVERY_LIMIT + 3)]
    with FakeMessagesAPI(cut, strict=False) as api:
        run = run_query(api, "go", tools)
        terminal = await run.wait()
        sent = len(api.requests)
    assert sent == 1 + MAX_OUTPUT_TOKENS_RECOVERY_LIMIT  # the first answer, then one per recovery
    assert terminal.reason == TerminalReason.COMPLETED
    assert terminal.message == f"part {MAX_OUTPUT_TOKENS_RECOVERY_LIMIT}"


async def test_a_stop_hook_that_always_blocks_is_obeyed_only_up_to_its_limit(tools):
    from jupyter_agent.loop.query import MAX_STOP_HOOK_BLOCKS

    blocks = []

    def always_block(stop_input):
        blocks.append(stop_input.stop_hook_active)
        return HookResult(decision="block", message="not yet")

    answers = [response(text(f"answer {i}")) for i in range(MAX_STOP_HOOK_BLOCKS + 3)]
    with FakeMessagesAPI(answers, strict=False) as api:
        run = run_query(api, "go", tools, hooks={"Stop": [always_block]})
        terminal = await run.wait()
        sent = len(api.requests)
    assert sent == 1 + MAX_STOP_HOOK_BLOCKS  # each block sent the feedback once, then the run ended
    assert terminal.reason == TerminalReason.COMPLETED
    assert terminal.message == f"answer {MAX_STOP_HOOK_BLOCKS}"
