"""An outside agent's ask about a notebook no side panel follows (open in a background tab), in a
real kernel, the test playing the page's bridge and, later, its side panel (the browser test,
test_mcp_background_browser.py, drives the real page).

* the page that shows the notebook is sent ``ask`` (the client's name as text, what it asks),
  the call waits; once the panel connects (the user brought the notebook to the front) the
  card is there; answered there, the page gets ``ask_end`` for the same ask;
* an ask stopped unanswered (Stop) ends the page's notification too;
* an older page (no ``asks`` in its hello) is not sent it: the call is refused as before.
"""

from __future__ import annotations

import asyncio
import uuid

import nbformat
import pytest

from jupyter_agent.jupyter.bridge.kernel_bridge import PROTOCOL_VERSION, TARGET as BRIDGE
from jupyter_agent.jupyter.outside.outside_ask import asked_what, short_name
from jupyter_agent.jupyter.outside.outside_run import NO_PANEL
from jupyter_agent.jupyter.panel.panel_comm import TARGET as PANEL
from jupyter_agent.jupyter.panel.panel_json import shown_text
from jupyter_agent.jupyter.bridge.comm_protocol import PANEL_VERSION
from jupyter_agent.mcp_server.protocol import TARGET as OUTSIDE, VERSION

pytestmark = pytest.mark.asyncio(loop_scope="module")

HOSTILE = '<img src=x onerror="window.__pwned=1">Claude</b> \u202egnp.exe'


def data_on(kernel, comm_id: str) -> list[dict]:
    return [m["content"]["data"] for m in kernel.messages
            if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == comm_id]


def bridge_comm(kernel) -> str:
    opens = [m for m in kernel.messages if m["msg_type"] == "comm_open"
             and m["content"].get("target_name") == BRIDGE]
    assert opens, "the kernel did not open the bridge comm on %load_ext"
    return opens[-1]["content"]["comm_id"]


def open_comm(kernel, target: str, data: dict) -> str:
    comm_id = uuid.uuid4().hex
    kc = kernel.kc
    kc.shell_channel.send(kc.session.msg("comm_open", {"comm_id": comm_id, "target_name": target, "data": data}))
    return comm_id


def close_comm(kernel, comm_id: str) -> None:
    kc = kernel.kc
    kc.shell_channel.send(kc.session.msg("comm_close", {"comm_id": comm_id, "data": {}}))


def call(kernel, op: str, path: str, client: str) -> str:
    """An outside call, as the Jupyter server extension opens it (mcp_server/protocol.py)."""
    return open_comm(kernel, OUTSIDE, {"v": VERSION, "op": op, "path": path, "args": {}, "client": client})


def answer(kernel, comm_id: str) -> dict | None:
    return next((d for d in data_on(kernel, comm_id) if "ok" in d), None)


async def show_notebook(kernel, module_tmp, name: str, client_id: str, asks: bool) -> str:
    """The page ``client_id`` says hello for ``name`` on the kernel's bridge comm (its id)."""
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("a = 1")]), module_tmp / name)
    comm_id = bridge_comm(kernel)
    result = {"path": name, "server_root": str(module_tmp), "version": "v1", "notices": True, "kernel_runs": True}
    if asks:
        result["asks"] = True
    kernel.comm_msg(comm_id, {"v": PROTOCOL_VERSION, "op": "hello", "from": client_id, "result": result})
    await kernel.execute("pass")  # the hello is in
    return comm_id


def asks_to(kernel, comm_id: str, client_id: str, op: str) -> list[dict]:
    return [d for d in data_on(kernel, comm_id) if d.get("op") == op and d.get("to") == client_id]


def reply(kernel, comm_id: str, client_id: str, request: dict, result: dict) -> None:
    kernel.comm_msg(comm_id, {"v": PROTOCOL_VERSION, "re": request["id"], "from": client_id, "ok": True,
                              "result": result})


async def test_the_page_is_told_of_the_ask_until_it_is_answered_in_the_panel(kernel, module_tmp):
    me = "page-bg"
    bridge = await show_notebook(kernel, module_tmp, "bg.ipynb", me, asks=True)
    outside = call(kernel, "restart", "bg.ipynb", HOSTILE)
    (ask,) = await kernel.until(lambda: asks_to(kernel, bridge, me, "ask"), 20, "the page told of the ask")
    assert ask["v"] == PROTOCOL_VERSION and ask["what"] == "restart the kernel" and ask["ask_id"]
    assert ask["asker"] == short_name(HOSTILE) and "<img src=x" in ask["asker"]  # text: the page sets it as text
    assert "\u202e" not in ask["asker"]  # an invisible, reordering character is marked, never sent as is
    reply(kernel, bridge, me, ask, {"shown": True})
    await kernel.execute("pass")
    assert answer(kernel, outside) is None  # the call waits for the user

    # The user brings the notebook to the front: its side panel connects, and the card is there.
    panel = open_comm(kernel, PANEL, {"v": PANEL_VERSION, "op": "hello"})
    try:
        state = await kernel.until(lambda: [d for d in data_on(kernel, panel) if d.get("type") == "state"
                                            and d["approvals"]], 20, "the card in the panel")
        (card,) = state[-1]["approvals"]
        assert card["tool"] == "NotebookRestart" and card["page"] == me and card["asker"] == shown_text(HOSTILE)
        assert not asks_to(kernel, bridge, me, "ask_end")  # still asking
        kernel.comm_msg(panel, {"v": PANEL_VERSION, "op": "approve", "request": card["id"], "choice": "deny",
                                "feedback": "Not now, please."})
        (end,) = await kernel.until(lambda: asks_to(kernel, bridge, me, "ask_end"), 20, "the ask's end")
        assert end["ask_id"] == ask["ask_id"]
        reply(kernel, bridge, me, end, {"ended": True})
        done = await kernel.until(lambda: answer(kernel, outside), 20, "the call's answer")
        assert done["ok"] is False and "Not now, please." in str(done["content"])
    finally:
        close_comm(kernel, panel)
        await kernel.execute("pass")


async def test_an_ask_stopped_unanswered_ends_the_pages_notification(kernel, module_tmp):
    me = "page-bg2"
    bridge = await show_notebook(kernel, module_tmp, "bg2.ipynb", me, asks=True)
    outside = call(kernel, "restart", "bg2.ipynb", "cursor")
    (ask,) = await kernel.until(lambda: asks_to(kernel, bridge, me, "ask"), 20, "the page told of the ask")
    assert ask["asker"] == "cursor"
    reply(kernel, bridge, me, ask, {"shown": True})
    await kernel.execute("from jupyter_agent.jupyter.kernel.agent_session import get_session\n"
                         "_runs = get_session().services.outside_hub.runs.values()")
    for _ in range(200):  # the card exists once the kernel has had the page's reply (a loop turn later)
        if await kernel.value("sum(len(r.broker.pending) for r in _runs)") == "1":
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("no card waits in the kernel")
    await kernel.execute("for _run in _runs: _run.stop()")  # the panel's Stop (and %agent stop's)
    (end,) = await kernel.until(lambda: asks_to(kernel, bridge, me, "ask_end"), 20, "the ask's end")
    assert end["ask_id"] == ask["ask_id"]
    done = await kernel.until(lambda: answer(kernel, outside), 20, "the call's answer")
    assert done["ok"] is False


async def test_an_older_page_is_not_sent_the_ask_and_the_call_is_refused_as_before(kernel, module_tmp):
    me = "page-old"
    bridge = await show_notebook(kernel, module_tmp, "old.ipynb", me, asks=False)
    outside = call(kernel, "restart", "old.ipynb", "claude-code")
    done = await kernel.until(lambda: answer(kernel, outside), 20, "the call's answer")
    assert done["ok"] is False and NO_PANEL in str(done["content"])
    assert not asks_to(kernel, bridge, me, "ask")


async def test_a_page_that_does_not_answer_the_ask_is_not_relied_on(kernel, module_tmp):
    """No reply to ``ask`` (a page gone quiet): after the bridge's patience, refused as before."""
    me = "page-quiet"
    bridge = await show_notebook(kernel, module_tmp, "quiet.ipynb", me, asks=True)
    outside = call(kernel, "restart", "quiet.ipynb", "claude-code")
    await kernel.until(lambda: asks_to(kernel, bridge, me, "ask"), 20, "the ask")
    done = await kernel.until(lambda: answer(kernel, outside), 40, "the call's answer")
    assert done["ok"] is False and NO_PANEL in str(done["content"])
    assert not asks_to(kernel, bridge, me, "ask_end")  # nothing shown, nothing to end


async def test_what_is_asked_in_a_few_words():
    assert asked_what("NotebookEdit", {"edit_mode": "insert"}) == "insert a cell"
    assert asked_what("NotebookEdit", {"edit_mode": "delete"}) == "delete a cell"
    assert asked_what("NotebookEdit", {}) == "replace a cell"
    assert asked_what("NotebookRun", {"cell_id": "c1"}) == "run a cell"
    assert len(short_name("x" * 500)) == 40 and short_name("x" * 500).endswith("…")
