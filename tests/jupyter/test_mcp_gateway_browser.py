"""jupyter-agent's MCP server when the notebook's kernel is a gateway's: JupyterLab pointed at
a real Jupyter Kernel Gateway (``--GatewayClient.url``, ``gateway.py``), the ``mcp`` SDK's own
client over streamable HTTP, the page in real Chromium. The endpoint reaches the kernel over
a websocket to the gateway (``jupyter_agent/mcp_server/gateway.py``): reads, the variables,
an insert shown live after Allow and undone in one step, a run's outputs, an interrupt, a
restart asked for and allowed (the fresh kernel's variables; the page back on it, every time:
docs/mcp-server.md, "Kernels on a gateway"); a restart by the gateway itself
under a waiting call is told as a restart (the kernel's session id stands for the pid a gateway
does not give), and a kernel the gateway shut down under a waiting call is a clear error, with
no new kernel started.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import re
import urllib.request
import uuid
from typing import Any

import pytest

from .gateway import gateway_fixture, gateway_lab_fixture  # noqa: F401 (the module's gateway and lab)
from .lab import HAVE_BROWSER, cell, cell_sources, require_browser, run_and_wait, wait_cell_count, write_notebook
from .test_mcp_runs_browser import poll, run_id_of
from .test_mcp_server_browser import PANEL, OutsideClient, text_of

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason="needs jupyterlab, playwright and Debian's chromium")

NEW = "print(x + 1)"
LOOP = "n = 0\nwhile True:\n    n += 1"


def open_with_panel(lab: Any, gateway: Any, page_of: Any, name: str) -> tuple[Any, Any, str]:
    """The notebook's page (its kernel the gateway's) with jupyter-agent loaded (its cell 0) and
    the side panel connected; and the kernel's id."""
    page = page_of(name)  # (its connection comes up: no orphan takes the page's identity: server_extension.py)
    kernel_id = next(s["kernel"]["id"] for s in lab._api("/api/sessions") if s["path"] == name)
    assert kernel_id in {k["id"] for k in gateway.kernels()}, "the notebook's kernel is not the gateway's"
    page.click(f"li[data-id='{PANEL[1:]}']")
    panel = page.locator(PANEL)
    run_and_wait(page, 0)
    panel.locator(".jp-AgentPanel-empty").wait_for(timeout=30000)
    return page, panel, kernel_id


def card(page: Any, shows: str) -> Any:
    """The approval card showing ``shows``: in the side panel, or under the notebook when the
    panel is closed (after a reload)."""
    found = page.locator(".jp-AgentPanel-approval:visible", has_text=shows).first
    found.wait_for(timeout=60000)
    return found


def allow(page: Any, shows: str) -> None:
    card(page, shows).get_by_role("button", name="Allow", exact=True).click()


@pytest.mark.timeout(300)
def test_edits_runs_undo_and_interrupt_on_a_gateway_kernel(lab, gateway, page_of):
    write_notebook(lab.root / "gw.ipynb", ["%load_ext jupyter_agent", "x = 41", "%agent undo", LOOP],
                   ids=["load", "setx", "undo", "loop"])
    page, _, _ = open_with_panel(lab, gateway, page_of, "gw.ipynb")
    run_and_wait(page, 1)
    outside = OutsideClient(f"{lab.url}/jupyter-agent/mcp", name="gw-client")
    try:
        path = {"notebook_path": "gw.ipynb"}
        read = outside.now("read_cells", path)
        assert not read.is_error and 'id="setx"' in text_of(read), text_of(read)
        variables = outside.now("list_variables", path)
        assert not variables.is_error and "x: int" in text_of(variables), text_of(variables)

        pending = outside.call("insert_cell", {**path, "after_cell_id": "setx", "cell_type": "code", "source": NEW})
        allow(page, NEW)
        inserted = pending.result(60)
        assert not inserted.is_error, text_of(inserted)
        wait_cell_count(page, 5)
        assert cell_sources(page) == ["%load_ext jupyter_agent", "x = 41", NEW, "%agent undo", LOOP]  # live

        new_id = re.search(r'<cell id="([^"]+)" index=2 ', text_of(outside.now("read_cells", path))).group(1)
        pending = outside.call("run_cell", {**path, "cell_id": new_id})
        allow(page, "NotebookRun")
        ran = pending.result(120)
        assert not ran.is_error and "42" in text_of(ran), text_of(ran)
        cell(page, 2).locator(".jp-OutputArea-output", has_text="42").wait_for(timeout=30000)  # in the page too

        run_and_wait(page, 3)  # %agent undo: the outside run, in one step
        cell(page, 2).locator(".jp-OutputArea-output", has_text="removed (the run had created it)").wait_for(
            timeout=60000)
        assert cell_sources(page)[:4] == ["%load_ext jupyter_agent", "x = 41", "%agent undo", LOOP]

        # An endless loop the client ran: interrupted through the gateway; the kernel and x stay.
        assert not outside.now("read_cells", path).is_error
        looping = outside.call("run_cell", {**path, "cell_id": "loop", "wait_seconds": 0})
        allow(page, "NotebookRun")
        loop_id = run_id_of(text_of(looping.result(60)))
        poll(outside, loop_id, lambda t: "running for" in t)
        stopped = text_of(outside.now("interrupt", {**path, "run_id": loop_id}, timeout=90))
        if "ended after" not in stopped:  # (a loaded machine: the interrupted cell's answer came later)
            stopped = poll(outside, loop_id, lambda t: "ended after" in t)
        assert "KeyboardInterrupt" in stopped, stopped
        variables = text_of(outside.now("list_variables", path))
        assert "x: int" in variables and "n: int" in variables, variables
    finally:
        outside.close()


@pytest.mark.timeout(300)
def test_restart_kernel_on_a_gateway(lab, gateway, page_of):
    """``restart_kernel`` allowed: the gateway restarts the same kernel, jupyter-agent is loaded
    in the fresh one (its variables gone), the page is back on it, and the next read and run
    work through it."""
    write_notebook(lab.root / "gwr.ipynb", ["%load_ext jupyter_agent", "kept = 7", "print('fresh', 'kept' in dir())"],
                   ids=["load", "keep", "check"])
    page, _, kernel_id = open_with_panel(lab, gateway, page_of, "gwr.ipynb")
    run_and_wait(page, 1)
    outside = OutsideClient(f"{lab.url}/jupyter-agent/mcp", name="gw-restarter")
    try:
        path = {"notebook_path": "gwr.ipynb"}
        assert "kept: int" in text_of(outside.now("list_variables", path))
        pending = outside.call("restart_kernel", path)
        allow(page, "NotebookRestart")
        restarted = pending.result(120)
        said = text_of(restarted)
        assert not restarted.is_error and "Restarted the kernel of gwr.ipynb" in said, said
        assert [k["id"] for k in gateway.kernels()] == [kernel_id]  # the same kernel, restarted
        variables = outside.now("list_variables", path)  # (the kernel's own: no page needed)
        assert not variables.is_error and "kept" not in text_of(variables), text_of(variables)
        # The page is back on the fresh kernel every time (it was not in about one restart of two
        # while the relay's orphan connection held the page's ZMQ identity: server_extension.py).
        assert "the page is back on it, so your next call works" in said, said
        assert not outside.now("read_cells", path).is_error
        ran = outside.call("run_cell", {**path, "cell_id": "check"})
        allow(page, "NotebookRun")
        result = ran.result(120)
        assert not result.is_error and "fresh False" in text_of(result), text_of(result)
    finally:
        outside.close()


@pytest.mark.timeout(180)
def test_a_page_connection_stays_the_kernels_through_restarts_on_a_gateway(lab, gateway):
    """What JupyterLab does with every page on a gateway's kernel, without a browser: a first
    websocket that asks for a subprotocol, which the relay does not give, closed at once (as the
    browser fails it), then a second with the same session id. The second is answered, and
    still after each restart of the kernel (both the relay's connections connected again after
    a restart, and the kernel answered only the last: about one restart in two the page's
    messages went nowhere), and the gateway holds that one connection only
    (``server_extension.py``)."""
    request = urllib.request.Request(f"{lab.url}/api/kernels", data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as r:
        kernel_id = json.loads(r.read())["id"]
    url = f"{lab.url.replace('http', 'ws', 1)}/api/kernels/{kernel_id}/channels?session_id={uuid.uuid4().hex}"

    async def page_connection() -> tuple[list[str], int]:
        from jupyter_client.jsonutil import json_default
        from jupyter_client.session import Session
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        first = await websocket_connect(HTTPRequest(url), subprotocols=["v1.kernel.websocket.jupyter.org"])
        assert first.selected_subprotocol is None  # (what makes a browser fail it)
        first.close()
        second = await websocket_connect(HTTPRequest(url))
        session, answered = Session(key=b""), []

        async def kernel_info() -> str:
            msg = session.msg("kernel_info_request", {})
            second.write_message(json.dumps({**msg, "channel": "shell"}, default=json_default))
            while True:
                reply = json.loads(await second.read_message())
                if reply["header"]["msg_type"] == "kernel_info_reply" and \
                        reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                    return str(reply["header"]["session"])

        async def answer(when: str) -> None:
            try:
                answered.append(await asyncio.wait_for(kernel_info(), 60))
            except TimeoutError:
                raise AssertionError(f"the kernel did not answer the page's connection {when}") from None

        try:
            await answer("at first")
            for n in range(1, 4):
                await asyncio.to_thread(lab._api, f"/api/kernels/{kernel_id}/restart", "POST")
                await answer(f"after restart {n}")  # (a new kernel process's answer)
            held = await asyncio.to_thread(gateway.connections, kernel_id)
        finally:
            second.close()
        return answered, held

    try:
        # (in a thread of its own: playwright's sync API holds this thread's event loop)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            kernels, held = pool.submit(asyncio.run, page_connection()).result(150)
        assert len(set(kernels)) == 4, kernels  # answered by the first kernel and by each restarted one
        assert held == 1  # the second's: none of the first's on the gateway
    finally:
        lab._api(f"/api/kernels/{kernel_id}", method="DELETE")


def insert_waiting(outside: Any, lab: Any, gateway: Any, page_of: Any, name: str, after: str,
                   source: str) -> tuple[Any, str, dict[str, str], Any]:
    """The notebook open with the panel, read by ``outside``, and an insert of ``source`` after
    cell ``after`` waiting on its card: the page, the kernel's id, the path argument, the call."""
    page, _, kernel_id = open_with_panel(lab, gateway, page_of, name)
    path = {"notebook_path": name}
    assert not outside.now("read_cells", path).is_error
    waiting = outside.call("insert_cell", {**path, "after_cell_id": after, "cell_type": "code", "source": source})
    card(page, source)
    return page, kernel_id, path, waiting


@pytest.mark.timeout(300)
def test_a_restart_or_a_cull_by_the_gateway_under_a_waiting_call(lab, gateway, page_of):
    """The gateway restarts the kernel (not the notebook server: its auto-restart, another of
    its clients) while an insert waits for Allow: the call says the kernel restarted (told by
    the kernel's new session id), and the next one that jupyter-agent is not loaded in the
    fresh kernel. The gateway shuts another notebook's kernel down (as its culler does) under a
    waiting insert: a clear error, and no kernel started in its place."""
    write_notebook(lab.root / "gwa.ipynb", ["%load_ext jupyter_agent", "a = 1"], ids=["load", "seta"])
    write_notebook(lab.root / "gwc.ipynb", ["%load_ext jupyter_agent", "c = 1"], ids=["load", "setc"])
    outside = OutsideClient(f"{lab.url}/jupyter-agent/mcp", name="gw-waiter")
    try:
        page, kernel_id, path, waiting = insert_waiting(outside, lab, gateway, page_of, "gwa.ipynb", "seta",
                                                        "never = 1")
        gateway.restart(kernel_id)
        failed = waiting.result(60)
        assert failed.is_error and "restarted while the call waited" in text_of(failed), text_of(failed)
        fresh = outside.now("read_cells", path)  # the fresh kernel is told, never used as the old one
        assert fresh.is_error and "%load_ext jupyter_agent" in text_of(fresh), text_of(fresh)
        assert len(cell_sources(page)) == 2

        page, kernel_id, path, waiting = insert_waiting(outside, lab, gateway, page_of, "gwc.ipynb", "setc",
                                                        "never = 2")
        before = {k["id"] for k in gateway.kernels()}
        gateway.delete(kernel_id)
        failed = waiting.result(60)
        said = text_of(failed)
        assert failed.is_error and "The gateway no longer has the notebook's kernel" in said, said
        assert "nothing started a new kernel" in said, said
        after = outside.now("read_cells", path)
        # (said as the server last knew of it: its kernel gone, or its session too once JupyterLab's poll saw it)
        assert after.is_error and re.search("no longer has the notebook's kernel|its kernel was shut down",
                                            text_of(after)), text_of(after)
        assert {k["id"] for k in gateway.kernels()} == before - {kernel_id}  # none started behind the user's back
        assert len(cell_sources(page)) == 2
    finally:
        outside.close()
