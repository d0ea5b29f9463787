"""A resource subscription's watch in a real kernel, the test playing the page's bridge and the
server's ``watch`` call (``jupyter/outside/outside_watch.py``; the browser test,
test_mcp_resources_browser.py, drives the real page and server):

* the watch answers once it has read the notebook; a person typing (a ``changed`` notice per
  key, each answered as the page answers the watch's ``version``) makes one read and one message
  naming the cell, after the pause, not one per key;
* a move changes no cell: the message names none, and the notebook is told;
* a change that leaves every cell as it was says nothing; a deleted cell is named;
* the server's close ends the watch: the bridge keeps no listener of it.
"""

from __future__ import annotations

import pytest

from jupyter_agent.jupyter.bridge.kernel_bridge import PROTOCOL_VERSION

from .test_background_ask import answer, asks_to, call, close_comm, data_on, reply, show_notebook

pytestmark = pytest.mark.asyncio(loop_scope="module")


def page_read(cells: list[tuple[str, str]], state: str) -> dict:
    """A page's answer to ``read``: these (id, source) code cells."""
    return {"cells": [{"id": i, "cell_type": "code", "source": s, "outputs": [], "execution_count": None,
                       "metadata": {}} for i, s in cells], "version": state, "state": state, "metadata": {}}


def changed(kernel, watch: str) -> list[list[str]]:
    return [d["changed"] for d in data_on(kernel, watch) if "changed" in d]


async def test_a_watch_tells_once_per_pause_which_cells_changed(kernel, module_tmp):
    me = "page-watched"
    bridge = await show_notebook(kernel, module_tmp, "watched.ipynb", me, asks=False)
    watch = call(kernel, "watch", "watched.ipynb", "jupyter-agent resource subscriptions")
    (read,) = await kernel.until(lambda: asks_to(kernel, bridge, me, "read"), 20, "the watch's first read")
    assert read["notify"] is True  # (the page tells of its next change)
    reply(kernel, bridge, me, read, page_read([("a", "x = 1"), ("b", "y = 2")], "s1"))
    assert (await kernel.until(lambda: answer(kernel, watch), 20, "the watch's answer"))["ok"] is True

    # A person types five keys: a notice each, and the watch asks the page again after each.
    for key in range(5):
        kernel.comm_msg(bridge, {"v": PROTOCOL_VERSION, "op": "changed", "from": me, "sources": True})
        asked = await kernel.until(lambda n=key: asks_to(kernel, bridge, me, "version")[n:], 20, "a version request")
        assert asked[0]["notify"] is True
        reply(kernel, bridge, me, asked[0], {"version": f"typing-{key}"})
    (_, again) = await kernel.until(lambda: asks_to(kernel, bridge, me, "read")[1:] and asks_to(
        kernel, bridge, me, "read"), 20, "the read after the pause")
    reply(kernel, bridge, me, again, page_read([("a", "x = 12345"), ("b", "y = 2")], "s2"))
    assert await kernel.until(lambda: changed(kernel, watch), 20, "the message") == [["a"]]

    # A move: no cell changed, their order did.
    kernel.comm_msg(bridge, {"v": PROTOCOL_VERSION, "op": "changed", "from": me, "sources": True})
    await kernel.until(lambda: asks_to(kernel, bridge, me, "version")[5:], 20, "a version request")
    reply(kernel, bridge, me, asks_to(kernel, bridge, me, "version")[5], {"version": "moved"})
    third = (await kernel.until(lambda: asks_to(kernel, bridge, me, "read")[2:], 20, "the read"))[0]
    reply(kernel, bridge, me, third, page_read([("b", "y = 2"), ("a", "x = 12345")], "s3"))
    assert await kernel.until(lambda: changed(kernel, watch)[1:], 20, "the move's message") == [[]]

    # A change that leaves every cell as it was (metadata): read, nothing said. Then the server
    # closes the watch: the bridge keeps none of its listeners.
    kernel.comm_msg(bridge, {"v": PROTOCOL_VERSION, "op": "changed", "from": me, "sources": False})
    await kernel.until(lambda: asks_to(kernel, bridge, me, "version")[6:], 20, "a version request")
    reply(kernel, bridge, me, asks_to(kernel, bridge, me, "version")[6], {"version": "same"})
    fourth = (await kernel.until(lambda: asks_to(kernel, bridge, me, "read")[3:], 20, "the read"))[0]
    reply(kernel, bridge, me, fourth, page_read([("b", "y = 2"), ("a", "x = 12345")], "s4"))

    # The person deletes cell b: it is named (its URI is told: a read of it now says it is gone).
    kernel.comm_msg(bridge, {"v": PROTOCOL_VERSION, "op": "changed", "from": me, "sources": True})
    await kernel.until(lambda: asks_to(kernel, bridge, me, "version")[7:], 20, "a version request")
    reply(kernel, bridge, me, asks_to(kernel, bridge, me, "version")[7], {"version": "deleted"})
    fifth = (await kernel.until(lambda: asks_to(kernel, bridge, me, "read")[4:], 20, "the read"))[0]
    reply(kernel, bridge, me, fifth, page_read([("a", "x = 12345")], "s5"))
    assert await kernel.until(lambda: changed(kernel, watch)[2:], 20, "the deletion's message") == [["b"]]
    close_comm(kernel, watch)
    listening = "__import__('jupyter_agent.jupyter.kernel.agent_session', fromlist=['x']).get_bridge().change_listeners"
    for _ in range(200):  # (the close reaches the watch's task a loop turn after the kernel handled it)
        if await kernel.value(f"len({listening})") == "0":
            break
    assert await kernel.value(f"len({listening})") == "0"
    assert changed(kernel, watch) == [["a"], [], ["b"]]  # nothing for the unchanged read
