"""Outside agents' calls that issue 38 added, against real JupyterLab in real Chromium: two
clients of one name on two MCP sessions keep their own reads (one's read does not let the
other edit); a raw cell inserted (the card, the page showing a raw cell, Undo); a cell that
shows a PNG run by run_cell returns the image as MCP image content.
"""

from __future__ import annotations

import re
import time

import pytest

from tests.mcp_server.outputs import PNG

from .lab import HAVE_BROWSER, cell, cell_sources, require_browser, run_and_wait, wait_cell_count, write_notebook
from .test_mcp_server_browser import OutsideClient, open_with_panel, text_of

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason="needs jupyterlab, playwright and Debian's chromium")

SHOW_PNG = f"import base64\nfrom IPython.display import Image, display\ndisplay(Image(data=base64.b64decode('{PNG}')))"


def test_two_sessions_raw_cells_and_images_from_a_run(lab, page_of):
    write_notebook(lab.root / "twins.ipynb", ["%load_ext jupyter_agent", "w = 1", SHOW_PNG],
                   ids=["load", "setw", "img"])
    page, panel = open_with_panel(page_of, "twins.ipynb")
    url = f"{lab.url}/jupyter-agent/mcp"
    first, second = OutsideClient(url, "twin", mode="legacy"), OutsideClient(url, "twin", mode="legacy")
    path = {"notebook_path": "twins.ipynb"}
    try:
        assert not first.now("read_cells", path).is_error
        # The other session of the same client name has read nothing: refused, unasked.
        unread = second.now("insert_cell", {**path, "cell_type": "code", "source": "nope = 1"})
        assert unread.is_error and "Call read_cells on twins.ipynb first" in text_of(unread), text_of(unread)
        assert panel.locator(".jp-AgentPanel-approval").count() == 0

        pending = first.call("insert_cell", {**path, "after_cell_id": "setw", "cell_type": "raw",
                                             "source": "raw: kept as it is"})
        card = panel.locator(".jp-AgentPanel-approval")
        card.wait_for(timeout=60000)
        assert "raw: kept as it is" in card.inner_text()
        card.get_by_role("button", name="Allow", exact=True).click()
        assert not pending.result(60).is_error
        wait_cell_count(page, 4)
        page.locator(".jp-RawCell", has_text="raw: kept as it is").wait_for(timeout=30000)

        assert not first.now("read_cells", path).is_error
        pending = first.call("run_cell", {**path, "cell_id": "img"})
        card = panel.locator(".jp-AgentPanel-approval", has_text="NotebookRun")
        card.wait_for(timeout=60000)
        card.get_by_role("button", name="Allow", exact=True).click()
        ran = pending.result(120)
        assert not ran.is_error, text_of(ran)
        images = [(b.data, b.mime_type) for b in ran.content if b.type == "image"]
        assert images == [(PNG, "image/png")], (text_of(ran), images)
        page.locator(".jp-OutputArea-output img").first.wait_for(timeout=30000)  # the page shows it too

        panel.locator(".jp-AgentPanel-undo").first.click()  # the run of `first`: its insert and run
        page.locator(".jp-RawCell").wait_for(state="detached", timeout=30000)
        assert "raw: kept as it is" not in "\n".join(cell_sources(page))
    finally:
        first.close()
        second.close()


def test_execute_code_runs_scratch_code_in_the_notebooks_kernel(lab, page_of):
    """execute_code asks as the agent's KernelRun (the card shows the whole code), returns its
    outputs and the
    names it set stay in the kernel; no cell is added and the notebook is unchanged; a denied
    one runs nothing; a long one is interrupted by the client's interrupt, the kernel usable."""
    write_notebook(lab.root / "scratch.ipynb", ["%load_ext jupyter_agent", "v = 20"], ids=["load", "setv"])
    page, panel = open_with_panel(page_of, "scratch.ipynb")
    client = OutsideClient(f"{lab.url}/jupyter-agent/mcp", "scratcher")
    path = {"notebook_path": "scratch.ipynb"}
    before = cell_sources(page)
    try:
        pending = client.call("execute_code", {**path, "code": "answer = v * 2 + 2\nprint('answer is', answer)"})
        card = panel.locator(".jp-AgentPanel-approval")
        card.wait_for(timeout=60000)
        assert "answer = v * 2 + 2" in card.inner_text() and "print('answer is', answer)" in card.inner_text()
        card.get_by_role("button", name="Allow", exact=True).click()
        ran = pending.result(120)
        assert not ran.is_error and "answer is 42" in text_of(ran), text_of(ran)
        assert cell_sources(page) == before  # no cell added, none changed
        assert "answer: int" in text_of(client.now("list_variables", path))  # it ran in the user's kernel

        pending = client.call("execute_code", {**path, "code": "gone = 1"})
        card = panel.locator(".jp-AgentPanel-approval")
        card.wait_for(timeout=60000)
        card.get_by_role("button", name="Deny", exact=True).click()
        assert pending.result(60).is_error
        assert "gone" not in text_of(client.now("list_variables", path))

        started = lab.root / "scratch-started"
        started.unlink(missing_ok=True)
        pending = client.call("execute_code", {**path, "timeout_seconds": 120, "code": (
            "import pathlib, time\npathlib.Path('scratch-started').touch()\nwhile True: time.sleep(0.05)")})
        card = panel.locator(".jp-AgentPanel-approval")
        card.wait_for(timeout=60000)
        card.get_by_role("button", name="Allow", exact=True).click()
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:  # the code is executing
            time.sleep(0.05)
        stopped = client.now("interrupt", path)
        while "has not started yet" in text_of(stopped) and time.monotonic() < deadline:  # (the server's IOPub lags)
            time.sleep(0.05)
            stopped = client.now("interrupt", path)
        assert "KeyboardInterrupt" in text_of(stopped), text_of(stopped)
        assert "KeyboardInterrupt" in text_of(pending.result(60))  # (KernelRun: the code raised it)
        assert cell_sources(page) == before
    finally:
        client.close()


def test_run_cells_runs_a_range_asked_once_and_stops_at_the_first_error(lab, page_of):
    """run_cells (the agent's NotebookRunCells): one card showing every cell's code; the cells
    run in order in the page; the run stops at the first error and says which ran and which did not; the panel lists the
    outside run with the variables it changed (a run changes no cell to undo: its variables stay)."""
    loop = "import pathlib, time\npathlib.Path('range-looping').touch()\nwhile True: time.sleep(0.05)"
    write_notebook(lab.root / "range.ipynb", ["%load_ext jupyter_agent", "a = 1", "print('A', a)", "# Notes",
                                              "b = a + 1\nprint('B', b)", "1 / 0", "print('never')", "c = 3",
                                              loop, "d = 4"],
                   ids=["load", "seta", "pa", "md", "setb", "boom", "never", "setc", "loop", "setd"])
    page, panel = open_with_panel(page_of, "range.ipynb")
    client = OutsideClient(f"{lab.url}/jupyter-agent/mcp", "ranger")
    path = {"notebook_path": "range.ipynb"}
    try:
        assert not client.now("read_cells", path).is_error
        pending = client.call("run_cells", {**path, "start_cell_id": "pa", "end_cell_id": "never"})
        card = panel.locator(".jp-AgentPanel-approval")
        card.wait_for(timeout=60000)
        shown = card.inner_text()
        assert all(code in shown for code in ("print('A', a)", "print('B', b)", "1 / 0", "print('never')")), shown
        assert "# Notes" not in shown  # (a markdown cell does not run)
        card.get_by_role("button", name="Allow", exact=True).click()
        ran = pending.result(120)
        said = text_of(ran)
        assert "Ran 3 of 4 code cells: pa, setb, boom." in said, said
        assert "Cell boom raised ZeroDivisionError; the run stopped there." in said and "Not run: never." in said, said
        assert "A 1" in said and "B 2" in said and "ZeroDivisionError" in said
        page.locator(".jp-OutputArea-output", has_text="ZeroDivisionError").wait_for(timeout=30000)  # in the page
        assert page.locator(".jp-OutputArea-output", has_text="never").count() == 0
        assert panel.locator(".jp-AgentPanel-approval").count() == 0  # asked once

        panel.locator(".jp-AgentPanel-status", has_text="variables changed: b").wait_for(timeout=30000)

        # A range whose second cell loops: interrupted by the client, the rest not run.
        looping = lab.root / "range-looping"
        looping.unlink(missing_ok=True)
        assert not client.now("read_cells", path).is_error
        pending = client.call("run_cells", {**path, "start_cell_id": "setc", "end_cell_id": "setd"})
        card = panel.locator(".jp-AgentPanel-approval")
        card.wait_for(timeout=60000)
        card.get_by_role("button", name="Allow", exact=True).click()
        deadline = time.monotonic() + 60
        while not looping.exists() and time.monotonic() < deadline:  # the second cell is executing
            time.sleep(0.05)
        stopped = client.now("interrupt", path)
        while "has not started yet" in text_of(stopped) and time.monotonic() < deadline:  # (the server's IOPub lags)
            time.sleep(0.05)
            stopped = client.now("interrupt", path)
        said = text_of(pending.result(90))
        assert "Ran 2 of 3 code cells: setc, loop." in said, (said, text_of(stopped))
        assert re.search(r"Cell loop (raised KeyboardInterrupt|was interrupted); the run stopped there", said), said
        assert "Not run: setd." in said, said
    finally:
        client.close()


def test_active_notebook_names_the_users_notebook_and_cell(lab, page_of):
    """active_notebook: the notebook current in the page the user worked in last, its active
    cell (id, index, source) and the cells selected; read-only (no card, nothing changed)."""
    write_notebook(lab.root / "other.ipynb", ["%load_ext jupyter_agent", "o = 1"], ids=["oload", "oset"])
    write_notebook(lab.root / "mine.ipynb", ["%load_ext jupyter_agent", "m = 1", "def broken(:\n    pass",
                                             "m + 1"], ids=["mload", "mset", "bad", "after"])
    other = page_of("other.ipynb")
    run_and_wait(other, 0)
    page, panel = open_with_panel(page_of, "mine.ipynb")
    client = OutsideClient(f"{lab.url}/jupyter-agent/mcp", "finder")
    try:
        cell(page, 2).locator(".jp-InputPrompt").click()  # the user is at the broken cell
        page.keyboard.press("Shift+ArrowDown")  # ...and selects the next one too
        said = text_of(client.now("active_notebook", {}))
        assert "The notebook the user works in: mine.ipynb" in said, said
        # Shift+Down moved the active cell to the next one, the broken cell selected with it.
        assert "Active cell: after (index 3, code):\nm + 1" in said and "Also selected: bad" in said, said
        assert "other.ipynb" not in said.split("\n")[0]
        assert panel.locator(".jp-AgentPanel-approval").count() == 0  # nothing asked
    finally:
        client.close()


def test_create_notebook_asks_writes_and_opens_it_in_the_page(lab, page_of):
    """create_notebook: the card (Write, the whole new file) in the page of the notebook the
    user works in; Allow: the file exists, the page opens it in a tab, jupyter-agent is loaded
    in its kernel so read_cells works at once; an existing path is refused, nothing asked."""
    write_notebook(lab.root / "home.ipynb", ["%load_ext jupyter_agent", "h = 1"], ids=["hload", "hset"])
    page, panel = open_with_panel(page_of, "home.ipynb")
    client = OutsideClient(f"{lab.url}/jupyter-agent/mcp", "maker")
    try:
        taken = client.now("create_notebook", {"notebook_path": "home.ipynb"})
        assert taken.is_error and "exists already" in text_of(taken), text_of(taken)
        pending = client.call("create_notebook", {"notebook_path": "made/fresh.ipynb"})
        card = panel.locator(".jp-AgentPanel-approval")
        card.wait_for(timeout=60000)
        assert "Write" in card.inner_text() and "fresh.ipynb" in card.inner_text()
        card.get_by_role("button", name="Allow", exact=True).click()
        made = pending.result(120)
        said = text_of(made)
        assert not made.is_error and "Created made/fresh.ipynb" in said and "open in a tab" in said, said
        assert "read_cells works on it" in said, said
        assert (lab.root / "made" / "fresh.ipynb").exists()
        page.locator(".lm-TabBar-tab", has_text="fresh.ipynb").wait_for(timeout=30000)  # opened in the page
        read = client.now("read_cells", {"notebook_path": "made/fresh.ipynb"})
        assert not read.is_error and "%load_ext jupyter_agent" in text_of(read), text_of(read)
    finally:
        client.close()
