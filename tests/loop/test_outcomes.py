"""Every way a tool call ends is a value on its ``ToolResult`` (``outcome``), set by the
loop; the fronts show that value and never read the result's words."""

from __future__ import annotations

import asyncio

import pytest

from jupyter_agent import HookResult, StreamEvent, TerminalReason, ToolResult
from jupyter_agent.loop import permission_result, tool_execution
from jupyter_agent.loop.events import ToolOutcome
from jupyter_agent.loop.permission_result import PermissionAllow, PermissionAsk, PermissionDeny
from jupyter_agent.loop.tool import Tool, ToolOutput
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use
from jupyter_agent.view.runmodel import RunModel

from .conftest import EchoInput, run_query


async def _outcomes(run) -> tuple[dict[str, ToolResult], RunModel]:
    """Run to the end: each call's ToolResult by id, and the view drawn from the events."""
    model = RunModel(prompt="go")
    results: dict[str, ToolResult] = {}
    async for event in run:
        model.handle(event)
        if isinstance(event, ToolResult):
            assert event.tool_use_id not in results  # exactly one result per call
            results[event.tool_use_id] = event
    return results, model


def _state(model: RunModel, tool_use_id: str) -> str:
    return next(t.state for t in model.tools() if t.id == tool_use_id)


async def test_ok_error_and_unknown_tool_outcomes(tools):
    calls = [tool_use("Echo", {"text": "hi"}), tool_use("Boom", {"text": "expected"}),
             tool_use("NoSuchTool", {}), tool_use("Echo", {"wrong": 1})]
    with FakeMessagesAPI([response(*calls), response(text("ok"))]) as api:
        results, model = await _outcomes(run_query(api, "go", tools))
    ok, failed, unknown, invalid = (results[c["id"]] for c in calls)
    assert ok.outcome is ToolOutcome.OK and ok.outcome.value == "ok"
    assert [r.outcome.value for r in (failed, unknown, invalid)] == ["error"] * 3
    assert [_state(model, c["id"]) for c in calls] == ["done", "error", "error", "error"]


async def test_a_person_denying_a_call_gives_outcome_denied_through_the_real_sdk(tools):
    asked: list[PermissionAsk] = []

    def deny(name: str, input: dict, ask: PermissionAsk) -> PermissionDeny:  # the 3-argument callback
        asked.append(ask)
        return PermissionDeny(permission_result.DENIED, interrupt=True)

    change, after = tool_use("Change", {"seconds": 0, "label": "x"}), tool_use("Echo", {"text": "later"})
    with FakeMessagesAPI([response(change, after)]) as api:
        run = run_query(api, "go", tools, can_use_tool=deny)
        results, model = await _outcomes(run)
    assert results[change["id"]].outcome.value == "denied"
    # the call after a denied one never ran: not_run, not "denied"
    assert results[after["id"]].outcome is ToolOutcome.NOT_RUN
    assert (_state(model, change["id"]), _state(model, after["id"])) == ("denied", "not_run")
    assert asked[0].tool_use_id == change["id"]  # the ask names its call
    assert run.terminal.reason == TerminalReason.ABORTED_TOOLS


async def test_a_hook_denying_is_denied_and_no_one_to_ask_is_denied(tools):
    def hook(name, input, context):
        return HookResult(decision="deny", message="no echo today") if name == "Echo" else None

    echo, change = tool_use("Echo", {"text": "x"}), tool_use("Change", {"seconds": 0, "label": "y"})
    with FakeMessagesAPI([response(echo, change), response(text("ok"))]) as api:
        results, model = await _outcomes(run_query(api, "go", tools, hooks={"PreToolUse": [hook]}))
    assert results[echo["id"]].outcome is ToolOutcome.DENIED  # a hook
    assert results[change["id"]].outcome is ToolOutcome.DENIED  # asks, and no can_use_tool is given
    assert _state(model, echo["id"]) == _state(model, change["id"]) == "denied"


async def test_a_callback_returning_nonsense_is_an_error_not_a_denial(tools):
    change = tool_use("Change", {"seconds": 0, "label": "x"})
    with FakeMessagesAPI([response(change), response(text("ok"))]) as api:
        results, _ = await _outcomes(run_query(api, "go", tools, can_use_tool=lambda n, i, a: "yes"))
    assert results[change["id"]].outcome is ToolOutcome.ERROR


async def test_stop_while_a_tool_runs_is_stopped_and_the_queued_call_too(tools):
    calls = [tool_use("Sleep", {"seconds": 10, "label": "long"}), tool_use("Change", {"seconds": 0, "label": "q"})]
    with FakeMessagesAPI([response(*calls)]) as api:
        run = run_query(api, "go", tools, can_use_tool=lambda n, i, a: PermissionAllow())
        model = RunModel(prompt="go")
        results: dict[str, ToolResult] = {}
        async for event in run:
            model.handle(event)
            if isinstance(event, ToolResult):
                results[event.tool_use_id] = event
            if getattr(event, "name", "") == "Sleep" and type(event).__name__ == "ToolStart":
                asyncio.get_running_loop().call_later(0.05, run.stop)
    assert [results[c["id"]].outcome.value for c in calls] == ["stopped", "stopped"]
    assert [_state(model, c["id"]) for c in calls] == ["stopped", "stopped"]


async def test_stop_while_streaming_gives_the_emitted_call_a_stopped_result_event(tools):
    call = tool_use("Change", {"seconds": 0, "label": "held"})  # held until the model moves on
    slow = response(call, text("and now a long explanation " * 40), delay_s=0.01)
    with FakeMessagesAPI([slow], strict=False) as api:
        run = run_query(api, "go", tools, streaming_tools=False)
        results: dict[str, ToolResult] = {}
        async for event in run:
            if isinstance(event, StreamEvent) and event.type == "content_block_delta" \
                    and (event.delta or {}).get("type") == "text_delta":
                run.stop()
            if isinstance(event, ToolResult):
                results[event.tool_use_id] = event
    assert run.terminal.reason == TerminalReason.ABORTED_STREAMING
    assert results[call["id"]].outcome is ToolOutcome.STOPPED  # synthetic, yet an event with its outcome


async def test_rewording_a_denial_does_not_change_what_the_view_shows(tools, monkeypatch):
    """The view shows the loop's outcome, so new words in any message change nothing."""
    monkeypatch.setattr(permission_result, "DENIED", "Nope.")
    monkeypatch.setattr(tool_execution, "DENIED", "Nope.")
    change = tool_use("Change", {"seconds": 0, "label": "x"})
    with FakeMessagesAPI([response(change)]) as api:
        run = run_query(api, "go", tools, can_use_tool=lambda n, i, a: False)  # a plain no
        results, model = await _outcomes(run)
    assert results[change["id"]].content == "Nope."
    assert _state(model, change["id"]) == "denied"


class Say(Tool):
    """Answers with the model's words as they are (a result that may read like anything)."""

    name = "Say"
    description = "Say the text."
    Input = EchoInput

    def is_read_only(self, input: EchoInput) -> bool:
        return True

    async def call(self, input: EchoInput, context, prepared) -> ToolOutput:
        return ToolOutput(content=input.text)


@pytest.mark.parametrize("words", ["Interrupted by user", "Permission to use Echo was denied",
                                   "The run was stopped before", "Cancelled: the run was stopped"])
async def test_an_ok_result_that_reads_like_a_refusal_is_shown_as_done(tools, words):
    say = tool_use("Say", {"text": words})
    with FakeMessagesAPI([response(say), response(text("ok"))]) as api:
        results, model = await _outcomes(run_query(api, "go", [*tools, Say()]))
    assert results[say["id"]].outcome is ToolOutcome.OK
    assert _state(model, say["id"]) == "done"


async def test_stop_mid_stream_counts_what_message_start_reported():
    """One accounting: the loop counts the stream, so a response cut by Stop still costs
    its input tokens, in ``run.usage``, ``terminal.usage`` and the view's header alike."""
    slow = response(text("a long answer " * 60), usage={"input_tokens": 1234, "cache_read_input_tokens": 56},
                    delay_s=0.01)
    with FakeMessagesAPI([slow], strict=False) as api:
        run = run_query(api, "go", [])
        model = RunModel(prompt="go")
        async for event in run:
            model.handle(event)
            if isinstance(event, StreamEvent) and event.type == "content_block_delta":
                run.stop()
    assert run.terminal.reason == TerminalReason.ABORTED_STREAMING
    assert run.usage.input_tokens == 1234 and run.usage.cache_read_input_tokens == 56
    assert run.terminal.usage.input_tokens == 1234 and run.usage.requests == 1
    assert model.usage.input_tokens == 1234
