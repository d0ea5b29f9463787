"""The model's reader thread: a response keeps being read while the caller's loop is
blocked (a user's cell in the kernel), the stall limit counts only the server's silence,
and neither threads nor sockets are left behind.

Real SDK, real HTTP, the fake Messages API; the blocked loop is a real ``time.sleep`` on
the loop that consumes the stream.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time

import pytest

from jupyter_agent.loop.events import AssistantMessage, ModelRetry, StreamEvent
from jupyter_agent.loop.model_protocol import ModelError
from jupyter_agent.model import AnthropicModel
from jupyter_agent.loop.share import HOLD_BUDGET_S
from jupyter_agent.model.reader import Inbox
from jupyter_agent.testing import response, stall, text

from .test_model import established_to, req

# The stall limit of these tests' models: short, so a blocked loop outlasts it; not shorter,
# as a loaded machine can pause a healthy stream for a second.
STALL_S = 1.5


def reader_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("jupyter-agent-reader") and t.is_alive()]


def started_since(before: list[threading.Thread]) -> list[threading.Thread]:
    """Reader threads started since ``before`` (other tests' models in this process may be
    collected meanwhile and their threads end: only this test's own threads are compared)."""
    return [t for t in reader_threads() if t not in before]


async def until(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def consume_while_the_loop_blocks(model, seconds: float) -> list:
    """Stream ``model``'s response in a task (as the run's producer does in a kernel) and,
    once the first event is in, block the loop for ``seconds`` from another callback (as a
    user's cell does), while that task waits for the next event."""
    events: list = []
    first = asyncio.Event()

    async def consume():
        async for event in model.stream(req()):
            events.append(event)
            first.set()

    task = asyncio.create_task(consume())
    try:
        await first.wait()
        time.sleep(seconds)  # what a user's cell does to the kernel's loop
        await task
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await model.aclose()
    return events


async def test_a_blocked_loop_is_no_stall_and_the_response_goes_on_where_it_was(fake_api):
    # ~2.5 s of streaming (~125 events, 20 ms apart); the loop is blocked for longer than the stall limit
    # right after the first event: the server keeps sending, the reader thread keeps reading.
    words = "".join(f"w{i} " for i in range(120))
    fake_api.add(response(text(words), chunk_chars=4, delay_s=0.02))
    events = await consume_while_the_loop_blocks(fake_api.model(stall_timeout_s=STALL_S, max_retries=2),
                                                 STALL_S + 1.0)
    assert not [e for e in events if isinstance(e, ModelRetry)]
    assert len(fake_api.requests) == 1 and fake_api.requests[0].outcome == "ok"
    assert isinstance(events[-1], AssistantMessage) and events[-1].message["content"][0]["text"] == words
    deltas = [e.delta["text"] for e in events if isinstance(e, StreamEvent) and e.type == "content_block_delta"]
    assert "".join(deltas) == words  # every delta, in order: nothing lost while the loop was blocked


async def test_a_server_that_stops_sending_is_still_a_stall(fake_api):
    fake_api.add(stall(after=3, seconds=20))
    model = fake_api.model(stall_timeout_s=STALL_S, max_retries=0)
    t0 = time.monotonic()
    try:
        with pytest.raises(ModelError) as e:
            async for _ in model.stream(req()):
                pass
    finally:
        await model.aclose()
    assert e.value.kind == "stream_stalled"
    assert time.monotonic() - t0 < 10  # the stall is 20 s; the limit 1.5 s
    assert len(fake_api.requests) == 1


async def test_a_stall_while_the_loop_is_blocked_is_seen_when_it_runs_again(fake_api):
    fake_api.add(stall(after=3, seconds=20), "Recovered.")
    events = await consume_while_the_loop_blocks(fake_api.model(stall_timeout_s=STALL_S, max_retries=1),
                                                 STALL_S + 1.0)  # the server goes silent meanwhile
    retries = [e for e in events if isinstance(e, ModelRetry)]
    assert len(retries) == 1 and "stream_stalled" in retries[0].error
    assert events[-1].message["content"][0]["text"] == "Recovered."
    assert len(fake_api.requests) == 2


async def test_stop_closes_the_response_at_once_and_aclose_leaves_no_thread_or_socket(fake_api):
    before = reader_threads()
    fake_api.add(response(text("z" * 800), chunk_chars=4, delay_s=0.02))  # ~4 s if read to the end
    model = fake_api.model()
    got: list = []

    async def consume():
        async for ev in model.stream(req()):
            got.append(ev)

    task = asyncio.create_task(consume())
    await until(lambda: len(got) >= 5)
    mine = started_since(before)
    assert len(mine) == 1
    task.cancel()  # what Stop does
    with pytest.raises(asyncio.CancelledError):
        await task
    assert established_to(fake_api.port) == 0  # closed by the time the cancel is through
    await until(lambda: fake_api.requests[0].outcome == "client_disconnected")
    await model.aclose()
    assert not mine[0].is_alive()


async def test_a_model_dropped_without_aclose_stops_its_thread(fake_api):
    before = reader_threads()
    fake_api.add("hello")
    model = fake_api.model()
    assert [e async for e in model.stream(req())][-1].message["content"][0]["text"] == "hello"
    mine = started_since(before)
    assert len(mine) == 1
    del model
    gc.collect()
    await until(lambda: not mine[0].is_alive())


async def test_the_stall_limit_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("JUPYTER_AGENT_STALL_TIMEOUT", "7.5")
    assert AnthropicModel("m", api_key="k").stall_timeout_s == 7.5
    assert AnthropicModel("m", api_key="k", stall_timeout_s=3).stall_timeout_s == 3
    monkeypatch.setenv("JUPYTER_AGENT_STALL_TIMEOUT", "soon")
    model = AnthropicModel("m", api_key="k", base_url="http://127.0.0.1:9")  # nothing is sent
    with pytest.raises(ModelError) as e:
        async for _ in model.stream(req()):
            pass
    assert e.value.kind == "invalid_setting" and "JUPYTER_AGENT_STALL_TIMEOUT='soon'" in str(e.value)
    assert "(e.g. 60)" in str(e.value)


async def test_a_burst_queued_while_the_loop_was_blocked_is_handed_over_a_few_ms_at_a_time():
    loop = asyncio.get_running_loop()
    inbox = Inbox(loop)
    for i in range(5_000):  # from this thread, as the reader's would while the loop is blocked
        inbox.put(i)
    turns = 0
    stop = False

    async def other_work():  # what the user's next cell would be: it must get turns
        nonlocal turns
        while not stop:
            turns += 1
            await asyncio.sleep(0)

    other = asyncio.create_task(other_work())
    await asyncio.sleep(0)
    turns = 0
    got = []
    t0 = time.perf_counter()
    for _ in range(5_000):
        got.append(await inbox.get())  # every item is there: get() need never wait
        time.sleep(0.0001)  # the consumer's own work per item
    held = time.perf_counter() - t0
    stop = True
    await other
    assert got == list(range(5_000))
    # >= 0.5 s of work in stretches of at most HOLD_BUDGET_S (plus one item): the other
    # task got a turn after every stretch (without the budget it would get none)
    assert turns >= held / (HOLD_BUDGET_S + 0.001) * 0.5, (turns, held)
