"""How the kernel's bridge hands a page's reply to the waiting request (bridge speed, issue 10).

ipykernel calls a comm's ``on_msg`` on the main thread (the loop's own thread) or, for a
comm on a subshell, on that subshell's thread. On the loop's thread the reply settles the
request at once, not one loop turn later (after the kernel has finished handling the
message: its idle status); from another thread it still goes through the loop, safely.
The comm here is a stand-in that records what the kernel sends: the transport is covered
by the real-kernel and browser tests (test_bridge_protocol, test_live_notebook).
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from jupyter_agent.jupyter.bridge.kernel_bridge import PROTOCOL_VERSION, KernelBridge, Page


class RecordingComm:
    def __init__(self) -> None:
        self.sent: list[dict] = []

    def send(self, data: dict) -> None:
        self.sent.append(data)


def reply_to(request: dict) -> dict:
    return {"content": {"data": {"v": PROTOCOL_VERSION, "re": request["id"], "ok": True,
                                 "result": {"version": "live-1-abc"}, "ms": 0.1}}}


async def _bridge_with_page() -> tuple[KernelBridge, RecordingComm]:
    bridge = KernelBridge()
    bridge._loop = asyncio.get_running_loop()
    comm = RecordingComm()
    bridge.pages["client"] = Page(client_id="client", comm=comm)
    return bridge, comm


@pytest.mark.asyncio
async def test_a_reply_on_the_loops_thread_settles_the_request_before_on_msg_returns():
    bridge, comm = await _bridge_with_page()
    task = asyncio.create_task(bridge.request("client", "version"))
    await asyncio.sleep(0)  # the request is on the wire
    (request,) = comm.sent
    waiting = next(iter(bridge._pending.values())).future
    bridge._receive(comm, reply_to(request))  # as ipykernel's main-thread on_msg does
    assert waiting.done(), "the reply waited for another turn of the kernel's loop"
    assert await task == {"version": "live-1-abc"}


@pytest.mark.asyncio
async def test_a_reply_from_another_thread_still_reaches_the_waiting_request():
    bridge, comm = await _bridge_with_page()
    task = asyncio.create_task(bridge.request("client", "version"))
    await asyncio.sleep(0)
    (request,) = comm.sent
    waiting = next(iter(bridge._pending.values())).future
    thread = threading.Thread(target=bridge._receive, args=(comm, reply_to(request)))
    thread.start()
    thread.join()
    assert not waiting.done()  # handed to the loop, not touched from the subshell's thread
    assert await asyncio.wait_for(task, 2) == {"version": "live-1-abc"}


@pytest.mark.asyncio
async def test_a_reply_on_another_comm_than_the_requests_is_ignored():
    """Only the comm a request went out on settles it: another comm (another page, or a
    stale comm) answering with the same id changes nothing."""
    bridge, comm = await _bridge_with_page()
    other = RecordingComm()
    bridge._comms.extend([comm, other])
    task = asyncio.create_task(bridge.request("client", "version"))
    await asyncio.sleep(0)
    (request,) = comm.sent
    waiting = next(iter(bridge._pending.values())).future
    forged = reply_to(request)
    forged["content"]["data"]["result"] = {"version": "forged"}
    bridge._receive(other, forged)
    assert not waiting.done(), "a reply from another comm settled the request"
    assert bridge.protocol_errors
    bridge._receive(comm, reply_to(request))
    assert await task == {"version": "live-1-abc"}


@pytest.mark.asyncio
async def test_a_hello_on_another_comm_does_not_take_a_pages_place():
    bridge, comm = await _bridge_with_page()
    other = RecordingComm()
    bridge._comms.extend([comm, other])
    hello = {"content": {"data": {"v": PROTOCOL_VERSION, "op": "hello", "from": "client",
                                  "result": {"path": "elsewhere.ipynb"}}}}
    bridge._receive(other, hello)
    assert bridge.pages["client"].comm is comm and bridge.pages["client"].path == ""
    assert other.sent and other.sent[-1]["ok"] is False
    bridge._receive(comm, hello)  # the page's own comm may say hello again
    assert bridge.pages["client"].path == "elsewhere.ipynb"


@pytest.mark.asyncio
async def test_a_request_over_the_message_limit_is_not_sent():
    """A message near the websocket's 10 MiB would close the page's kernel connection."""
    from jupyter_agent.jupyter.bridge.kernel_bridge import BridgeError
    from jupyter_agent.jupyter.bridge.comm_protocol import BRIDGE_MAX_MESSAGE_BYTES, BridgeCode

    bridge, comm = await _bridge_with_page()
    with pytest.raises(BridgeError) as refused:
        await bridge.request("client", "insert", index=0, source="x" * (BRIDGE_MAX_MESSAGE_BYTES + 1))
    assert refused.value.code == BridgeCode.TOO_LARGE and "MiB" in str(refused.value)
    assert comm.sent == []


@pytest.mark.asyncio
async def test_a_page_that_has_been_slow_to_answer_is_waited_for_past_the_requests_timeout():
    """Ten runs at once in one page on a loaded machine: the page answers, seconds late.
    A page whose recent answers were slow is busy, not gone: it gets several times its
    slowest recent answer (benchmarks/bench_load.py failed every run there on a 5 s limit).
    A page never heard from gets the request's own limit."""
    from jupyter_agent.jupyter.bridge.kernel_bridge import PageGone
    from jupyter_agent.jupyter.bridge.comm_protocol import BridgeCode

    bridge, comm = await _bridge_with_page()
    first = asyncio.create_task(bridge.request("client", "version", timeout=5))
    await asyncio.sleep(0.3)  # scenario: the page answers after 0.3 s
    bridge._receive(comm, reply_to(comm.sent[-1]))
    await first
    second = asyncio.create_task(bridge.request("client", "version", timeout=0.1))
    await asyncio.sleep(0.6)  # scenario: past the request's 0.1 s, within ten times the page's 0.3 s
    bridge._receive(comm, reply_to(comm.sent[-1]))
    assert await second == {"version": "live-1-abc"}

    fresh, _ = await _bridge_with_page()
    with pytest.raises(PageGone) as gone:
        await fresh.request("client", "version", timeout=0.1)
    assert gone.value.code == BridgeCode.NO_ANSWER


async def test_a_pages_changes_are_counted_in_the_order_its_messages_came():
    """A page that sends ``changed`` notices: each reply carries the count of changes the
    kernel knew of when it arrived (a changing request's reply counts as one); a notice
    counts only on the page's own comm, and one that comes after a reply counts after it,
    whenever the waiting caller wakes up."""
    from jupyter_agent.jupyter.bridge.kernel_bridge import CHANGES_SEEN

    bridge, comm = await _bridge_with_page()
    other = RecordingComm()
    bridge._comms.extend([comm, other])
    page = bridge.pages["client"]
    page.notices = True
    changed = {"content": {"data": {"v": PROTOCOL_VERSION, "op": "changed", "from": "client"}}}
    task = asyncio.create_task(bridge.request("client", "read"))
    await asyncio.sleep(0)
    bridge._receive(comm, reply_to(comm.sent[-1]))
    bridge._receive(comm, changed)  # before the caller woke up
    assert (await task)[CHANGES_SEEN] == (page.serial, 0)
    assert page.changes == 1
    bridge._receive(other, changed)  # not the page's comm: not the page speaking
    assert page.changes == 1
    task = asyncio.create_task(bridge.request("client", "insert", index=0, source="x"))
    await asyncio.sleep(0)
    bridge._receive(comm, reply_to(comm.sent[-1]))
    assert (await task)[CHANGES_SEEN] == (page.serial, 2)  # the agent's own insert is a change too
