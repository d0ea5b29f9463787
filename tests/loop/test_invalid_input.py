"""A tool call whose streamed input is not a JSON object gets an error result and does
not run (issue 7.8): it used to run silently with ``{}``."""

from __future__ import annotations

import pytest

from jupyter_agent import TerminalReason, ToolStart, query
from jupyter_agent.loop.permission_result import PermissionAllow
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use
from jupyter_agent.replay.sse import build_events

from .conftest import model_for


def with_raw_input(name: str, raw: str):
    """A response whose one tool_use block streams ``raw`` as its input JSON."""
    call = tool_use(name, {})
    base = response(call)
    events = [e for e in build_events(base, model="m", message_id="msg", usage={}) if isinstance(e, tuple)]
    stop = next(n for n, (kind, _) in enumerate(events) if kind == "content_block_stop")
    delta = {"type": "content_block_delta", "index": 0,
             "delta": {"type": "input_json_delta", "partial_json": raw}}
    return call, response(call, extra_events=[(stop, delta)])


@pytest.mark.parametrize("streaming", [True, False])
@pytest.mark.parametrize("raw", ['{"file_path": "out.txt", "content": "unterminated', '["out.txt", "x"]'])
async def test_a_write_with_invalid_json_input_is_an_error_and_writes_nothing(tmp_path, streaming, raw):
    call, broken = with_raw_input("Write", raw)
    with FakeMessagesAPI([broken, response(text("I will fix my call."))]) as api:
        run = query("write it", model=model_for(api), cwd=tmp_path, permission_mode="bypassPermissions",
                    streaming_tools=streaming, can_use_tool=lambda *a: PermissionAllow())
        events = [e async for e in run]
        second = api.requests[1].body["messages"]
        assert api.rejections == []
    assert run.terminal.reason == TerminalReason.COMPLETED
    assert list(tmp_path.iterdir()) == []  # nothing was written
    assert not any(isinstance(e, ToolStart) for e in events)
    sent_use, sent_result = second[-2]["content"][0], second[-1]["content"][0]
    # the API gets the call back as {} and no private keys
    assert sent_use == {"type": "tool_use", "id": call["id"], "name": "Write", "input": {}}
    assert sent_result["tool_use_id"] == call["id"] and sent_result["is_error"] is True
    assert "not valid JSON" in sent_result["content"] and "did not run" in sent_result["content"]
    assert raw[:20] in sent_result["content"]  # the model sees what it sent


async def test_valid_input_still_runs(tmp_path):
    call, ok = with_raw_input("Write", '{"file_path": "out.txt", "content": "hello"}')
    with FakeMessagesAPI([ok, response(text("done"))]) as api:
        run = query("write it", model=model_for(api), cwd=tmp_path, permission_mode="bypassPermissions")
        await run.wait()
    assert (tmp_path / "out.txt").read_text() == "hello"
