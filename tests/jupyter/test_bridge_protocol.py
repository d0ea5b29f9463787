"""The bridge protocol and the "no page" policies in a real kernel, with the test playing
the JupyterLab page over the comm (fast; the browser tests cover the real page).

* malformed and unknown messages get an error reply and change nothing;
* a page that says goodbye fails the waiting tool at once, with a clear error;
* the kernel's own notebook with no page answering: edits are refused, the file stays;
* headless (nbclient): the executor owns the notebook, the agent's edit of it is refused,
  the run ends, nothing hangs and the saved notebook keeps the transcript.
"""

from __future__ import annotations

import asyncio
import time

import nbformat
import pytest
import pytest_asyncio
from nbclient import NotebookClient

from jupyter_agent.jupyter.bridge.kernel_bridge import PROTOCOL_VERSION, TARGET
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use

from .frontend import Frontend, isolated_env

in_module_loop = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def kernel(api, module_tmp):
    """A kernel that believes it serves ``own.ipynb`` (as jupyter_server tells it)."""
    own = module_tmp / "own.ipynb"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("a = 1")])
    nb.cells[0].id = "first"
    nbformat.write(nb, own)
    env = isolated_env(module_tmp, **api.env(), JPY_SESSION_NAME=str(own))
    frontend = await Frontend(module_tmp, env).start()
    assert (await frontend.execute("%load_ext jupyter_agent"))["reply"]["status"] == "ok"
    yield frontend
    await frontend.stop()


def bridge_comm(kernel) -> str:
    opens = [m for m in kernel.messages if m["msg_type"] == "comm_open"
             and m["content"].get("target_name") == TARGET]
    assert opens, "the kernel did not open the bridge comm on %load_ext"
    return opens[-1]["content"]["comm_id"]


def replies(kernel, comm_id: str) -> list[dict]:
    return [m["content"]["data"] for m in kernel.messages if m["msg_type"] == "comm_msg"
            and m["content"]["comm_id"] == comm_id and "re" in m["content"]["data"]]


def requests(kernel, comm_id: str) -> list[dict]:
    return [m["content"]["data"] for m in kernel.messages if m["msg_type"] == "comm_msg"
            and m["content"]["comm_id"] == comm_id and "op" in m["content"]["data"]]


@in_module_loop
async def test_malformed_and_unknown_messages_get_an_error_reply(kernel):
    comm_id = bridge_comm(kernel)
    earlier = len(replies(kernel, comm_id))  # the module's kernel: other tests' replies came first
    kernel.comm_msg(comm_id, "not an object")
    kernel.comm_msg(comm_id, {"v": PROTOCOL_VERSION, "id": "q1", "op": "explode"})
    def ours() -> list[dict]:
        return replies(kernel, comm_id)[earlier:]

    got = await kernel.until(lambda: len(ours()) >= 2 and ours(), 10, "two error replies")
    assert got[0]["ok"] is False and got[0]["code"] == "bad_request"
    assert got[1] == {"v": PROTOCOL_VERSION, "re": "q1", "ok": False, "code": "unknown_op",
                      "error": "the kernel does not answer 'explode' messages"}
    assert (await kernel.execute("1 + 1"))["reply"]["status"] == "ok"  # the kernel is fine


@in_module_loop
async def test_a_pages_bridge_message_changes_no_kernel_status_and_another_comms_message_does(kernel):
    """JupyterLab re-renders its kernel indicators on every busy/idle: none for the bridge's
    own messages (docs/bridge.md, "Kernel status"); a widget's comm keeps its status."""
    bridge_id = bridge_comm(kernel)
    await kernel.execute("import comm\n_other = comm.create_comm(target_name='jupyter_agent_test_other')")
    other_id = (await kernel.value("_other.comm_id")).strip("'")

    def send(comm_id: str, data: dict) -> str:
        msg = kernel.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        kernel.kc.shell_channel.send(msg)
        return msg["header"]["msg_id"]

    def of(msg_id: str, kind: str) -> list[dict]:
        return [m for m in kernel.messages if m["msg_type"] == kind and m["parent_header"].get("msg_id") == msg_id]

    to_bridge = send(bridge_id, {"v": PROTOCOL_VERSION, "id": "q-status", "op": "explode"})
    to_other = send(other_id, {"method": "custom", "content": {}})
    # Shell messages are handled in order and IOPub keeps it: once the other comm's message
    # is idle, whatever the bridge message caused is in.
    await kernel.until(lambda: [m["content"]["execution_state"] for m in of(to_other, "status")] == ["busy", "idle"],
                       10, "the other comm's busy and idle")
    (refusal,) = of(to_bridge, "comm_msg")  # the bridge handled it: its refusal came
    assert refusal["content"]["data"]["code"] == "unknown_op"
    assert of(to_bridge, "status") == []


@in_module_loop
async def test_a_page_that_leaves_fails_the_waiting_tool_at_once(kernel, script, module_tmp, api):
    comm_id = bridge_comm(kernel)
    me = kernel.kc.session.session  # the session of our execute requests: "this page"
    own = module_tmp / "own.ipynb"
    kernel.comm_msg(comm_id, {"v": PROTOCOL_VERSION, "op": "hello", "from": me, "result": {
        "path": "own.ipynb", "server_root": str(module_tmp), "version": "v1"}})
    await kernel.execute("pass")  # shell messages are handled in order: the hello is in before the run
    before = len(requests(kernel, comm_id))  # requests of earlier tests on this module's kernel
    script(response(tool_use("Read", {"file_path": str(own)})),
           response(text("The page left.")))
    await kernel.execute("%agent new")
    await kernel.execute("%%agent --permission-mode bypassPermissions\nread it")
    read = await kernel.until(lambda: [r for r in requests(kernel, comm_id)[before:] if r.get("op") == "read"],
                              10, "the read request")
    assert read[0]["to"] == me
    started = time.monotonic()
    kernel.comm_msg(comm_id, {"v": PROTOCOL_VERSION, "op": "bye", "from": me})
    await kernel.until(lambda: api.pending == 0 and "The page left." in kernel.widget_text(), 10, "the run's end")
    assert time.monotonic() - started < 3
    sent = str(api.requests[-1].body["messages"][-1])
    assert "stopped answering" in sent and "the page closed the notebook" in sent


@in_module_loop
async def test_no_page_answering_refuses_edits_of_the_kernels_own_notebook(kernel, script, module_tmp, api):
    own = module_tmp / "own.ipynb"
    before = own.read_bytes()
    script(response(tool_use("Read", {"file_path": str(own)})),
           response(tool_use("NotebookEdit", {"notebook_path": str(own), "cell_id": "first", "new_source": "a = 2"})),
           response(tool_use("Write", {"file_path": str(own), "content": before.decode()})),
           response(text("I cannot edit it here.")))
    await kernel.execute("%agent new")
    mine = kernel.kc.session.session
    kernel.kc.session.session = "another-frontend-without-the-extension"
    try:
        await kernel.execute("%%agent --permission-mode bypassPermissions\nchange a")
        await kernel.until(lambda: api.pending == 0 and "I cannot edit it here." in kernel.widget_text(), 20,
                           "the run's end")
    finally:
        kernel.kc.session.session = mine
    sent = str(api.requests[-1].body["messages"])
    assert "no JupyterLab page with the jupyter-agent extension answers" in sent
    assert "Change it cell by cell with NotebookEdit" in sent  # the whole-file Write is refused too
    assert own.read_bytes() == before
    assert "are refused" in kernel.widget_text()  # said to the user, not only to the model


@in_module_loop
async def test_no_page_answering_asks_no_approval_numbered_from_the_file(kernel, script, module_tmp, api):
    """With no page answering, the tools see the file, which lags behind the page the user
    looks at (an unsaved cell, the empty cell Shift+Enter adds): an approval drawn from it
    said "run cell 4 of 4" beside a page of 5 cells, for a run that is refused after Allow
    anyway. The refusal comes first, and nobody is asked."""
    own = module_tmp / "own.ipynb"
    script(response(tool_use("Read", {"file_path": str(own)})),
           response(tool_use("NotebookRun", {"notebook_path": str(own), "cell_id": "cell-0"})),
           response(text("I cannot run it here.")))
    await kernel.execute("%agent new")
    mine = kernel.kc.session.session
    kernel.kc.session.session = "another-frontend-without-the-extension"
    try:
        await kernel.execute("%%agent\nrun the first cell")  # default mode: a run would ask
        await kernel.until(lambda: api.pending == 0 and "I cannot run it here." in kernel.widget_text(), 20,
                           "the run's end, with no approval waiting")
    finally:
        kernel.kc.session.session = mine
    assert "wants to run" not in kernel.widget_text()  # no card asked
    assert "no JupyterLab page with the jupyter-agent extension answers" in str(api.requests[-1].body["messages"])


def test_headless_execution_owns_the_notebook_nothing_lost_no_deadlock(tmp_path, monkeypatch):
    path = tmp_path / "batch.ipynb"
    with FakeMessagesAPI([
        response(tool_use("Read", {"file_path": str(path)})),
        response(tool_use("NotebookEdit", {"notebook_path": str(path), "cell_id": "tail", "new_source": "x = 2"})),
        response(text("This notebook is being executed; I left it alone.")),
    ]) as api:
        for key, value in isolated_env(tmp_path, **api.env()).items():
            monkeypatch.setenv(key, value)
        nb = nbformat.v4.new_notebook(cells=[
            nbformat.v4.new_code_cell("%load_ext jupyter_agent"),
            nbformat.v4.new_code_cell("%%agent --permission-mode bypassPermissions\nchange the last cell"),
            nbformat.v4.new_code_cell("x = 1"),
        ])
        nb.cells[2].id = "tail"
        nbformat.write(nb, path)
        started = time.monotonic()
        NotebookClient(nb, timeout=60, kernel_name="python3",
                       resources={"metadata": {"path": str(tmp_path)}}).execute()
        nbformat.write(nb, path)  # what `jupyter execute --inplace` does at the end
        seconds = time.monotonic() - started
        sent = str(api.requests[-1].body["messages"])
    saved = nbformat.read(path, as_version=4)
    assert seconds < 50
    assert "being executed by a batch runner" in sent
    assert saved.cells[2].source == "x = 1"
    md = saved.cells[1].outputs[0]["data"]["text/markdown"]
    assert "I left it alone." in md and "✓ *Finished* (`completed`)" in md


async def _serve_page(kernel, comm_id: str, me: str, cells: list[dict]) -> None:
    """Answer the kernel's requests as a page showing ``cells`` would (read and version)."""
    answered: set[str] = set()
    while True:
        for req in requests(kernel, comm_id):
            if req.get("to") != me or req.get("id") in answered:
                continue
            answered.add(req["id"])
            result = {"version": "v1", "cells": cells, "path": "own.ipynb", "metadata": {}}
            kernel.comm_msg(comm_id, {"v": PROTOCOL_VERSION, "re": req["id"], "from": me, "ok": True,
                                      "result": result})
        await asyncio.sleep(0.02)


@in_module_loop
async def test_no_run_through_the_page_from_a_busy_cell(kernel, script, module_tmp, api):
    """`%%agent --wait` keeps its cell busy: a run through the page would queue behind it
    forever (docs/bridge.md), so NotebookRun says why instead, and nothing deadlocks."""
    comm_id = bridge_comm(kernel)
    me = kernel.kc.session.session
    own = module_tmp / "own.ipynb"
    kernel.comm_msg(comm_id, {"v": PROTOCOL_VERSION, "op": "hello", "from": me, "result": {
        "path": "own.ipynb", "server_root": str(module_tmp), "version": "v1"}})
    cells = [{"id": "first", "cell_type": "code", "source": "a = 1", "outputs": [], "metadata": {},
              "execution_count": None}]
    page = asyncio.ensure_future(_serve_page(kernel, comm_id, me, cells))
    script(response(tool_use("Read", {"file_path": str(own)})),
           response(tool_use("NotebookRun", {"notebook_path": str(own), "cell_id": "first"})),
           response(text("Could not run it from here.")))
    try:
        await kernel.execute('%config AgentConfig.allow = ["NotebookRun"]')  # runs ask in every mode otherwise
        await kernel.execute("%agent new")
        result = await kernel.execute("%%agent --wait --permission-mode bypassPermissions\nrun it", timeout=40)
    finally:
        page.cancel()
        await kernel.execute("%config AgentConfig.allow = []")
    assert result["reply"]["status"] == "ok" and result["seconds"] < 30
    assert not [r for r in requests(kernel, comm_id) if r.get("op") == "run"]  # never asked the page
    assert "A cell is executing in this kernel right now" in str(api.requests[-1].body["messages"])


@in_module_loop
async def test_a_page_speaking_another_protocol_version_is_told_and_never_edited(
        kernel, script, module_tmp, api):
    comm_id = bridge_comm(kernel)
    me = kernel.kc.session.session
    own = module_tmp / "own.ipynb"
    before = own.read_bytes()
    kernel.comm_msg(comm_id, {"v": 99, "op": "hello", "from": me, "result": {
        "path": "own.ipynb", "server_root": str(module_tmp), "version": "v1"}})
    # the page is answered too, so it tells its user to reload or reinstall
    await kernel.until(lambda: [r for r in replies(kernel, comm_id) if r.get("code") == "version"], 10,
                       "the refusal of the hello")
    refusal = [r for r in replies(kernel, comm_id) if r.get("code") == "version"][-1]
    assert refusal["re"] is None and "speaks bridge protocol 99" in refusal["error"]
    edit = {"notebook_path": str(own), "cell_id": "first", "new_source": "a = 3"}
    script(response(tool_use("Read", {"file_path": str(own)})), response(tool_use("NotebookEdit", edit)),
           response(text("The page is too old.")),
           response(tool_use("NotebookEdit", edit)), response(text("Still too old.")))
    await kernel.execute("%agent new")
    for prompt, left, answer in (("edit it", 2, "The page is too old."), ("again", 0, "Still too old.")):
        # --wait: the cell returns once the run has ended, after its last answer
        await kernel.execute(f"%%agent --wait --permission-mode bypassPermissions\n{prompt}", timeout=60)
        await kernel.until(lambda left=left, answer=answer: api.pending == left and answer in kernel.widget_text(),
                           20, "the run's end")
    assert "speaks bridge protocol 99" in str(api.requests[-1].body["messages"])
    assert own.read_bytes() == before
    assert "speaks bridge protocol 99" in kernel.widget_text()  # the user was told, in the run's view


#: A read through the live backend, again at once, and again once ``_go`` is set.
READS_TWICE_THEN_AGAIN = """\
import asyncio
from pathlib import Path
from jupyter_agent.jupyter.kernel.agent_session import get_bridge
from jupyter_agent.notebook.live_backend import LiveNotebook
_go, _seen = asyncio.Event(), []
async def _reader():
    doc = LiveNotebook(Path("own.ipynb").resolve(), get_bridge(), "ME")
    first = await doc.snapshot()
    _seen.append((await doc.snapshot()) is first)
    await _go.wait()
    _seen.append((await doc.snapshot()) is first)
_task = asyncio.get_running_loop().create_task(_reader())
"""


@in_module_loop
async def test_an_unchanged_page_is_not_asked_again_until_it_says_its_document_changed(kernel):
    comm_id = bridge_comm(kernel)
    me = kernel.kc.session.session
    kernel.comm_msg(comm_id, {"v": PROTOCOL_VERSION, "op": "hello", "from": me, "result": {
        "path": "own.ipynb", "version": "v1", "notices": True}})
    await kernel.execute("pass")  # the hello is in before the reads
    before = len(requests(kernel, comm_id))

    def reads() -> list[dict]:
        return [r for r in requests(kernel, comm_id)[before:] if r.get("op") == "read"]

    await kernel.execute(READS_TWICE_THEN_AGAIN.replace("ME", me))
    first = (await kernel.until(reads, 10, "the first read"))[0]
    assert first["notify"] is True and "known_state" not in first  # asks to be told of changes
    kernel.comm_msg(comm_id, {"v": PROTOCOL_VERSION, "re": first["id"], "from": me, "ok": True, "result": {
        "version": "live-1-a", "state": "doc:1", "cells": [{"id": "first", "cell_type": "code", "source": "a = 1"}]}})
    assert await settled(kernel, "_seen", "[]") == "[True]"  # the second read asked nothing: no change was said
    assert len(reads()) == 1
    kernel.comm_msg(comm_id, {"v": PROTOCOL_VERSION, "op": "changed", "from": me})
    await kernel.execute("_go.set()")
    again = (await kernel.until(lambda: reads()[1:], 10, "a read after the page said its document changed"))[0]
    assert again["known_state"] == "doc:1"
    kernel.comm_msg(comm_id, {"v": PROTOCOL_VERSION, "re": again["id"], "from": me, "ok": True,
                              "result": {"state": "doc:2", "unchanged": True}})
    assert await settled(kernel, "_task.done() and _seen", "False") == "[True, True]"  # "unchanged": the same read


async def settled(kernel, expr: str, pending: str) -> str:
    """The repr of ``expr`` in the kernel once it is no longer ``pending`` (10 s at most)."""
    value = pending
    for _ in range(200):
        value = await kernel.value(expr)
        if value != pending:
            break
        await asyncio.sleep(0.05)
    return value
