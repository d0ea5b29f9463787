"""The run handle of the front (``AgentRun``): a real run through the real SDK and the
fake Messages API, replayed to several readers, with what it keeps bounded."""

from __future__ import annotations

import asyncio

from jupyter_agent import query
from jupyter_agent.jupyter.handle import STREAM_EVENTS_KEPT, AgentRun
from jupyter_agent.view.runmodel import RunModel
from jupyter_agent.loop.events import StreamEvent
from jupyter_agent.loop.state import Terminal
from jupyter_agent.testing import response, text


async def test_a_long_stream_keeps_every_message_but_only_the_latest_deltas(fake_api_env, tmp_path):
    """A long answer streams thousands of deltas (each holding the message so far): the
    handle keeps every other event and a bounded tail of deltas, and a reader that
    starts after the end still gets the run in order, ending with the Terminal."""
    answer = "word " * 1500
    fake_api_env.add(response(text(answer), chunk_chars=4))
    run = query("Say a lot", cwd=str(tmp_path), tools=[])
    live_names: list[str] = []
    handle = AgentRun(run, RunModel(), tick_s=0)

    async def read_live() -> None:
        async for event in handle:
            live_names.append(type(event).__name__)

    reader = asyncio.ensure_future(read_live())
    handle.start()
    terminal = await asyncio.wait_for(handle.wait(), 30)
    await asyncio.wait_for(reader, 5)

    assert terminal.reason.value == "completed"
    assert live_names[0] == "RequestStart" and live_names[-2:] == ["AssistantMessage", "Terminal"]
    assert live_names.count("StreamEvent") > 2 * STREAM_EVENTS_KEPT  # a live reader saw them all
    kept = list(handle.events)
    streamed = [e for e in kept if isinstance(e, StreamEvent)]
    assert 0 < len(streamed) <= STREAM_EVENTS_KEPT
    late = [type(e).__name__ async for e in handle]  # a reader after the end: replayed
    assert late == [type(e).__name__ for e in kept]
    assert late[0] == "RequestStart" and late[-2:] == ["AssistantMessage", "Terminal"]
    assert isinstance(kept[-1], Terminal)
    assert streamed[-1].snapshot["content"][0]["text"] == answer  # the latest delta has it all
