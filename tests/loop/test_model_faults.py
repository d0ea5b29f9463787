"""API faults seen through the loop: retried ones recover, the rest end as
``model_error`` with a message that says what to do, and the history stays valid."""

from __future__ import annotations

import pytest

from jupyter_agent import ModelRetry, TerminalReason, ToolResult, ToolStart
from jupyter_agent.loop.messages import ensure_tool_result_pairing
from jupyter_agent.testing import (
    FakeMessagesAPI, cut_stream, http_error, pause, response, stall, stream_error, text, tool_use,
)

from .conftest import run_query


@pytest.mark.parametrize("status, words", [
    (400, "invalid"),
    (401, "ANTHROPIC_API_KEY"),
    (429, "rate"),
    (529, "overloaded"),
    (500, "error"),
])
async def test_unrecovered_http_errors_end_as_model_error(tools, status, words):
    retried_statuses = (429, 529, 500)
    with FakeMessagesAPI([http_error(status)] * (3 if status in retried_statuses else 1)) as api:
        run = run_query(api, "go", tools, model_options={"max_retries": 2})
        events = [e async for e in run]
    terminal = events[-1]
    assert terminal.reason == TerminalReason.MODEL_ERROR
    assert words.lower() in terminal.message.lower(), terminal.message
    retried = sum(isinstance(e, ModelRetry) for e in events)
    assert retried == (2 if status in retried_statuses else 0)  # 400 and 401 are not retried
    assert [m["role"] for m in run.state.messages] == ["user"]


@pytest.mark.parametrize("fault", ["cut", "stall", "overloaded_event"])
async def test_a_broken_stream_is_retried_and_its_started_tools_discarded(tools, timeline, fault):
    """The first response breaks after its tool_use block is complete, so the streaming
    executor has already started that tool; the retry's response replaces it, and only
    the retried call's id ends up in the history, with exactly one result."""
    first = tool_use("Sleep", {"seconds": 5, "label": "broken"})
    second = tool_use("Echo", {"text": "from the retry"})
    # a pause after the tool block, so the executor's task surely starts before the break
    broken_base = response(first, pause(0.2), text("and some more text " * 20))
    broken = {
        "cut": cut_stream(after=8, base=broken_base),
        "stall": stall(after=8, seconds=5, base=broken_base),
        "overloaded_event": stream_error(after=8, base=broken_base),
    }[fault]
    with FakeMessagesAPI([broken, response(second), response(text("done"))]) as api:
        run = run_query(api, "go", tools, model_options={"stall_timeout_s": 1.5 if fault == "stall" else 30})
        events = [e async for e in run]
        final_request = api.requests[-1].body
    assert run.terminal.reason == TerminalReason.COMPLETED
    assert any(isinstance(e, ModelRetry) for e in events)
    history_ids = [b["id"] for m in run.state.messages if m["role"] == "assistant"
                   for b in m["content"] if b.get("type") == "tool_use"]
    assert history_ids == [second["id"]]
    _, repairs = ensure_tool_result_pairing(list(run.state.messages))
    assert repairs == []
    sent = [b for m in final_request["messages"] for b in m["content"] if isinstance(m["content"], list)
            for b in [b] if b.get("type") == "tool_result"]
    assert [b["tool_use_id"] for b in sent] == [second["id"]]
    started = [e.tool_use_id for e in events if isinstance(e, ToolStart)]
    results = [e.tool_use_id for e in events if isinstance(e, ToolResult)]
    assert second["id"] in started and results.count(second["id"]) == 1
    assert "broken" in timeline.spans  # the broken response's tool did start, and was cancelled
    assert timeline.spans["broken"][1] - timeline.spans["broken"][0] < 4
