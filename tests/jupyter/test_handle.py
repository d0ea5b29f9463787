"""The run handle of the front (``AgentRun``): a real run through the real SDK and the
fake Messages API, replayed to several readers, with what it keeps bounded."""

from __future__ import annotations

import asyncio
import threading
import time

from jupyter_agent import query
from jupyter_agent.jupyter.widgets.run_handle import STREAM_EVENTS_KEPT, AgentRun
from jupyter_agent.view.runmodel import RunModel
from jupyter_agent.loop.events import StreamEvent
from jupyter_agent.loop.state import Terminal
from jupyter_agent.testing import pause, response, text


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


class _ViewEndingSlowly:
    """A run's view whose ``finish()``, on a thread other than the loop's, returns only
    once the run's task is over: the order in which a kernel's shutdown request (handled
    on ipykernel's control thread) can meet the run ending on the loop."""

    def __init__(self) -> None:
        self.task: asyncio.Task | None = None
        self.finished = 0

    def add_class(self, _: str) -> None:
        pass

    def finish(self) -> None:
        self.finished += 1
        if threading.current_thread() is threading.main_thread():
            return
        deadline = time.monotonic() + 10
        while self.task is not None and not self.task.done() and time.monotonic() < deadline:
            time.sleep(0.01)


async def test_a_run_lost_with_its_kernel_while_its_task_ends_ends_once(fake_api_env, tmp_path):
    """lose() (the kernel's shutdown, on another thread) stops the run; the run's task then
    ends on the loop while lose() is still showing the end: the run ends once, as lost,
    and its listeners (a chat's turn) hear of it once."""
    fake_api_env.add(response(text("Thinking it over"), pause(20), text("done")))
    run = query("Take your time", cwd=str(tmp_path), tools=[])
    view = _ViewEndingSlowly()
    handle = AgentRun(run, RunModel(), view=view, tick_s=0)
    ended: list[AgentRun] = []
    handle.add_done_callback(ended.append)
    handle.start()
    view.task = handle.task
    async for event in handle:
        if isinstance(event, StreamEvent):
            break
    lose = threading.Thread(target=handle.lose, args=("The kernel was restarted.",))
    lose.start()
    while lose.is_alive():
        await asyncio.sleep(0.01)
    await asyncio.wait_for(asyncio.shield(handle.task), 10)

    assert len(ended) == 1 and view.finished == 1
    assert handle.model.lost and handle.done
