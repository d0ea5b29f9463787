"""jupyter-agent's MCP server with the ``mcp`` SDK's own client over streamable HTTP, against
real JupyterLab in real Chromium: an outside agent's edits appear live in the page after the
user allows them in the side panel, a run's outputs come back, ``%agent undo`` takes the
outside run back in one step, a denied edit and a stale one change nothing, and markup in
the client's name stays text on the card. With the side panel closed, the same card shows
under the notebook (readable in light and dark), and is answered there, once for both
places. Then Claude Code's own CLI (bundled by the
``claude-agent-sdk`` wheel) as the client, its model the project's fake Messages API.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.util
import json
import os
import re
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.testing import response, text, tool_use
from tests.programs import stop_process

from .lab import HAVE_BROWSER, cell, cell_sources, menu, require_browser, run_and_wait, screenshot, \
    wait_cell_count, wait_theme, write_notebook
from .test_contrast_browser import MEASURE
from .test_contrast_browser import _report as contrast_report

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason="needs jupyterlab, playwright and Debian's chromium")

PANEL = "#jupyter-agent-panel"
#: A cell that puts a secret in the kernel's environment and prints it (the page shows the
#: user's own output; nothing returned to the client holds it).
SECRET = "outs1de-s3cret-" + "value-4242"
FIRST = (f'import os; os.environ["OUTSIDE_API_KEY"] = "{SECRET[:8]}" + "{SECRET[8:]}"; '
         'print(os.environ["OUTSIDE_API_KEY"]); x = 41')
#: The outside agent's cell: it runs long enough to report progress (every second).
NEW = "import time\ntime.sleep(1.5)\nprint(x + 1)"
#: Claude Code's CLI, as the claude-agent-sdk wheel bundles it (None: not installed).
_SDK = importlib.util.find_spec("claude_agent_sdk")
CLAUDE = (Path(_SDK.origin).parent / "_bundled" / "claude") if _SDK and _SDK.origin else None
CLAUDE = CLAUDE if CLAUDE is not None and CLAUDE.is_file() else None
#: The client's name, as its initialize says it: markup, to be shown as text.
CLIENT = "<img src=x onerror=window.__pwned=1>Outside<b>Agent</b>"


class OutsideClient:
    """The SDK's client on a loop of its own (the test drives the page meanwhile)."""

    def __init__(self, url: str, name: str = CLIENT, stdio: Any = None, mode: str = "auto") -> None:
        """``stdio``: the server parameters of ``jupyter agent mcp`` to talk to instead of ``url``;
        ``mode``: the SDK's (``legacy``: the initialize handshake, an MCP session of its own)."""
        self.stdio, self.mode = stdio, mode
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.url, self.name = url, name
        opened: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._owner = asyncio.run_coroutine_threadsafe(self._own(opened), self.loop)
        self.client: Any = opened.result(120)

    async def _own(self, opened: concurrent.futures.Future[Any]) -> None:
        """Enter the client and leave it in this one task (the SDK's task groups want that)."""
        from mcp import Client
        from mcp.client.stdio import stdio_client
        from mcp.client.streamable_http import streamable_http_client
        from mcp_types import Implementation

        self._stop = asyncio.Event()
        transport = stdio_client(self.stdio) if self.stdio is not None else streamable_http_client(self.url)
        try:
            async with Client(transport, client_info=Implementation(name=self.name, version="9"),
                              mode=self.mode) as client:
                opened.set_result(client)
                await self._stop.wait()
        except BaseException as exc:
            if not opened.done():
                opened.set_exception(exc)
            raise

    def call(self, tool: str, args: dict[str, Any], **options: Any) -> concurrent.futures.Future[Any]:
        """Start a call; its future (the test clicks on the card meanwhile)."""
        return asyncio.run_coroutine_threadsafe(self.client.call_tool(tool, args, **options), self.loop)

    def now(self, tool: str, args: dict[str, Any], timeout: float = 120) -> Any:
        return self.call(tool, args).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        self._owner.result(60)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)


def text_of(result: Any) -> str:
    return "\n".join(getattr(b, "text", "") for b in result.content)


@pytest.fixture
def outside(lab):
    client = OutsideClient(f"{lab.url}/jupyter-agent/mcp")
    yield client
    client.close()


def open_with_panel(page_of: Any, name: str) -> tuple[Any, Any]:
    """The notebook's page with jupyter-agent loaded (its cell 1) and the side panel connected."""
    page = page_of(name)
    page.click(f"li[data-id='{PANEL[1:]}']")
    panel = page.locator(PANEL)
    run_and_wait(page, 0)
    run_and_wait(page, 1)
    panel.locator(".jp-AgentPanel-empty").wait_for(timeout=30000)
    return page, panel


def test_outside_insert_run_and_undo(lab, page_of, outside):
    nb = lab.root / "outside.ipynb"
    write_notebook(nb, [FIRST, "%load_ext jupyter_agent", "%agent undo"], ids=["setx", "load", "undo"])
    page, panel = open_with_panel(page_of, "outside.ipynb")
    listed = text_of(outside.now("list_notebooks", {}))
    assert "outside.ipynb" in listed
    read = outside.now("read_cells", {"notebook_path": "outside.ipynb"})
    assert not read.is_error and 'id="setx"' in text_of(read) and "x = 41" in text_of(read)
    assert SECRET not in text_of(read) and "[redacted OUTSIDE_API_KEY]" in text_of(read)  # its output

    pending = outside.call("insert_cell", {"notebook_path": "outside.ipynb", "after_cell_id": "load",
                                           "cell_type": "code", "source": NEW})
    card = panel.locator(".jp-AgentPanel-approval")
    card.wait_for(timeout=60000)
    shown = card.inner_text()
    assert "time.sleep(1.5)" in shown and len(cell_sources(page)) == 3  # nothing before Allow
    assert f"Asked by {CLIENT} 9, an outside agent (MCP)." in shown  # the client's markup as text
    assert card.locator("img").count() == 0 and page.evaluate("() => window.__pwned") is None
    card.get_by_role("button", name="Allow", exact=True).click()
    inserted = pending.result(60)
    assert not inserted.is_error, text_of(inserted)
    wait_cell_count(page, 4)
    assert cell_sources(page) == [FIRST, "%load_ext jupyter_agent", NEW, "%agent undo"]  # live

    new_id = re.search(r'<cell id="([^"]+)" index=2 ', text_of(outside.now(
        "read_cells", {"notebook_path": "outside.ipynb"}))).group(1)
    progress: list[str] = []

    async def heard(done: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    pending = outside.call("run_cell", {"notebook_path": "outside.ipynb", "cell_id": new_id}, progress_callback=heard)
    card = panel.locator(".jp-AgentPanel-approval", has_text="NotebookRun")
    card.wait_for(timeout=60000)
    card.get_by_role("button", name="Allow", exact=True).click()
    ran = pending.result(120)
    assert not ran.is_error and "42" in text_of(ran), text_of(ran)
    assert any(f"Cell {new_id} is running" in m for m in progress), progress  # MCP progress while it ran
    cell(page, 2).locator(".jp-OutputArea-output", has_text="42").wait_for(timeout=30000)  # in the user's kernel

    panel.locator(".jp-AgentPanel-undo").wait_for(timeout=30000)  # the panel offers to undo the outside run
    # its calls counted, not "0 turns" (it has no model): the insert and the run
    panel.locator(".jp-AgentPanel-status", has_text="2 calls").wait_for(timeout=30000)
    assert "0 turns" not in panel.inner_text()
    screenshot(page, "mcp_outside_run_calls")
    run_and_wait(page, 3)  # %agent undo: the outside run is the kernel's last run
    cell(page, 2).locator(".jp-OutputArea-output", has_text="removed (the run had created it)").wait_for(
        timeout=60000)  # the undo's report, once it is done
    # (Shift+Enter on the last cell added an empty one below it)
    assert cell_sources(page) == [FIRST, "%load_ext jupyter_agent", "%agent undo", ""]
    assert "Undo of run 1" in cell(page, 2).inner_text()
    # the panel hears of it (RunChanges.undo_state): what the undo did, and no Undo button left
    panel.locator(".jp-AgentPanel-status", has_text="removed (the run had created it)").wait_for(timeout=30000)
    assert panel.locator(".jp-AgentPanel-undo").count() == 0


def test_denied_stale_and_bad_calls_change_nothing(lab, page_of, outside):
    nb = lab.root / "deny.ipynb"
    write_notebook(nb, ["y = 1", "%load_ext jupyter_agent"], ids=["sety", "load"])
    page, panel = open_with_panel(page_of, "deny.ipynb")
    path = {"notebook_path": "deny.ipynb"}
    assert not outside.now("read_cells", path).is_error

    pending = outside.call("replace_cell", {**path, "cell_id": "sety", "source": "y = 2"})
    card = panel.locator(".jp-AgentPanel-approval")
    card.wait_for(timeout=60000)
    card.locator(".jp-AgentPanel-feedback").fill("Keep y as it is, thanks.")
    card.get_by_role("button", name="Deny", exact=True).click()
    denied = pending.result(60)
    assert denied.is_error and "Keep y as it is, thanks." in text_of(denied)
    assert cell_sources(page) == ["y = 1", "%load_ext jupyter_agent", ""]  # (Shift+Enter added the last)

    # The user edits the cell in the page after the client's read: its replace is refused, unasked.
    editor = cell(page, 0).locator(".cm-content")
    editor.click()
    page.keyboard.press("End")
    page.keyboard.type("  # mine")
    page.wait_for_function("() => document.querySelector('.jp-Cell .cm-content').textContent.includes('# mine')")
    stale = outside.now("replace_cell", {**path, "cell_id": "sety", "source": "y = 3"})
    assert stale.is_error and "changed" in text_of(stale).lower(), text_of(stale)
    assert panel.locator(".jp-AgentPanel-approval").count() == 0
    assert cell_sources(page)[0] == "y = 1  # mine"

    for args, says in [({**path, "cell_id": "nope", "source": "z"}, "nope"),
                       ({"notebook_path": "missing.ipynb", "cell_id": "sety", "source": "z"}, "missing.ipynb"),
                       ({**path, "cell_id": "sety", "source": "x" * 300_000}, "limit"),
                       ({**path, "cell_id": "sety", "source": "\x00\x01\x02binary"}, "binary")]:
        assert outside.now("read_cells", path).is_error is False  # (fresh read: only the bad input can fail)
        result = outside.now("replace_cell", args)
        assert result.is_error and says in text_of(result), (args.get("cell_id"), text_of(result))
    assert panel.locator(".jp-AgentPanel-approval").count() == 0
    assert cell_sources(page) == ["y = 1  # mine", "%load_ext jupyter_agent", ""]

    # An allowed insert, undone from the panel: Undo this run under the outside run.
    assert not outside.now("read_cells", path).is_error
    pending = outside.call("insert_cell", {**path, "after_cell_id": "sety", "cell_type": "markdown",
                                           "source": "A *note*"})
    card = panel.locator(".jp-AgentPanel-approval")
    card.wait_for(timeout=60000)
    card.get_by_role("button", name="Allow", exact=True).click()
    assert not pending.result(60).is_error
    wait_cell_count(page, 4)
    panel.locator(".jp-AgentPanel-undo").click()
    wait_cell_count(page, 3)
    assert cell_sources(page) == ["y = 1  # mine", "%load_ext jupyter_agent", ""]
    panel.locator(".jp-AgentPanel-status", has_text="removed").wait_for(timeout=30000)


def test_the_card_under_the_notebook_with_the_panel_closed(lab, page_of, outside):
    """The side panel stays closed: the outside agent's card shows in a bar under the notebook's
    cells (who asks and the whole cell, as text; readable in light and dark), is answered
    there, and goes from both places; a Deny there sends its note; a card answered in the
    panel goes from under the notebook."""
    nb = lab.root / "docked.ipynb"
    write_notebook(nb, ["w = 1", "%load_ext jupyter_agent"], ids=["setw", "load"])
    page = page_of("docked.ipynb")
    run_and_wait(page, 0)
    run_and_wait(page, 1)
    panel = page.locator(PANEL)
    # the panel is connected to the notebook's kernel, and closed
    panel.locator(".jp-AgentPanel-empty").wait_for(state="attached", timeout=30000)
    assert not panel.is_visible()
    path = {"notebook_path": "docked.ipynb"}
    assert not outside.now("read_cells", path).is_error

    source = 'print("<img src=y onerror=window.__pwned=2>")'
    pending = outside.call("insert_cell", {**path, "after_cell_id": "load", "cell_type": "code", "source": source})
    dock = page.locator(".jp-NotebookPanel .jp-AgentNotebookApprovals")
    card = dock.locator(".jp-AgentPanel-approval")
    card.wait_for(timeout=60000)
    assert card.is_visible() and not panel.is_visible()
    head = dock.locator(".jp-AgentNotebookApprovals-head").inner_text()
    assert head.startswith(f"{CLIENT} 9, an outside agent (MCP), asks"), head  # markup as text
    assert source in card.inner_text() and f"Asked by {CLIENT} 9" in card.inner_text()
    assert dock.locator("img").count() == 0 and page.evaluate("() => window.__pwned") is None
    # below the cells, not among them (it stays in view however the notebook scrolls)
    assert page.locator(".jp-NotebookPanel .jp-Notebook .jp-AgentNotebookApprovals").count() == 0
    notebook_box = page.locator(".jp-NotebookPanel .jp-Notebook").bounding_box()
    assert dock.bounding_box()["y"] >= notebook_box["y"] + notebook_box["height"] - 1
    assert panel.locator(".jp-AgentPanel-approval").count() == 1  # the same card in the (closed) panel
    problems = []  # every text of the bar readable (WCAG AA) in light and dark
    for theme, light in (("light", True), ("dark", False)):
        if not light:
            menu(page, "Settings", "Theme", "JupyterLab Dark")
            wait_theme(page, light=False)
        result = page.evaluate(MEASURE, [".jp-AgentNotebookApprovals"])
        screenshot(page, f"docked_card_{theme}")
        assert result["measured"] > 5, result
        problems += contrast_report(theme, result)
    menu(page, "Settings", "Theme", "JupyterLab Light")  # (the module's other tests: light)
    wait_theme(page, light=True)
    assert not problems, "text below WCAG AA:\n" + "\n".join(problems)
    card.get_by_role("button", name="Allow", exact=True).click()
    inserted = pending.result(60)
    assert not inserted.is_error, text_of(inserted)
    wait_cell_count(page, 4)
    assert cell_sources(page)[:3] == ["w = 1", "%load_ext jupyter_agent", source]
    dock.wait_for(state="hidden", timeout=30000)  # gone from both places
    assert panel.locator(".jp-AgentPanel-approval").count() == 0

    assert not outside.now("read_cells", path).is_error
    pending = outside.call("replace_cell", {**path, "cell_id": "setw", "source": "w = 2"})
    card.wait_for(timeout=60000)
    card.locator(".jp-AgentPanel-feedback").fill("Leave w alone.")
    card.get_by_role("button", name="Deny", exact=True).click()
    denied = pending.result(60)
    assert denied.is_error and "Leave w alone." in text_of(denied)
    assert cell_sources(page)[0] == "w = 1"
    dock.wait_for(state="hidden", timeout=30000)

    page.click(f"li[data-id='{PANEL[1:]}']")  # the panel opens: an answer there clears the bar
    pending = outside.call("replace_cell", {**path, "cell_id": "setw", "source": "w = 3"})
    card.wait_for(timeout=60000)
    panel.locator(".jp-AgentPanel-approval").get_by_role("button", name="Allow", exact=True).click()
    assert not pending.result(60).is_error
    dock.wait_for(state="hidden", timeout=30000)
    page.wait_for_function("() => document.querySelector('.jp-Cell .cm-content').textContent === 'w = 3'")


def test_outputs_are_read_by_reference(lab, page_of, outside):
    """read_cells lists outputs compactly; read_output returns one: a huge log as head and
    tail, an image as MCP image content, a secret redacted; a reference to nothing is an error."""
    from tests.mcp_server.outputs import LOG_LINES, PNG, SECRET, log_text, write_outputs_notebook

    write_outputs_notebook(lab.root / "outputs.ipynb", ["%load_ext jupyter_agent"])
    page = page_of("outputs.ipynb")
    run_and_wait(page, 0)
    path = {"notebook_path": "outputs.ipynb"}
    before = cell_sources(page)
    listing = outside.now("read_cells", path)
    text = text_of(listing)
    assert not listing.is_error and all(b.type == "text" for b in listing.content)
    assert f"[0] stream stdout, {len(log_text()):,} characters: log line 00000" in text and len(text) < 5_000
    assert "[0] display_data, image/png 69 bytes" in text and SECRET not in text

    log = outside.now("read_output", {**path, "cell_id": "log", "output_index": 0, "max_chars": 2_000})
    assert not log.is_error and "cut from the middle of this output" in text_of(log)
    assert "log line 00000" in text_of(log) and f"log line {LOG_LINES - 1:05d}" in text_of(log)
    assert len(text_of(log)) < 3_000
    image = outside.now("read_output", {**path, "cell_id": "img", "output_index": 0})
    assert [(b.type, b.data, b.mime_type) for b in image.content if b.type == "image"] == [("image", PNG, "image/png")]
    secret = outside.now("read_output", {**path, "cell_id": "sec", "output_index": 0})
    assert SECRET not in text_of(secret) and "[redacted" in text_of(secret)
    html = outside.now("read_output", {**path, "cell_id": "sec", "output_index": 1})
    assert "<b>bold</b><script>" in text_of(html)  # markup as text, for the client to read

    unknown = outside.now("read_output", {**path, "cell_id": "nope", "output_index": 0})
    assert unknown.is_error and "No cell 'nope'" in text_of(unknown)
    past = outside.now("read_output", {**path, "cell_id": "log", "output_index": 3})
    assert past.is_error and "there is no output 3" in text_of(past)
    assert cell_sources(page) == before  # reads change nothing


@pytest.mark.skipif(CLAUDE is None, reason="needs claude-agent-sdk (its wheel bundles Claude Code's CLI)")
def test_claude_code_edits_the_open_notebook(lab, page_of, script, api, tmp_path):
    """``claude -p`` with our endpoint in its --mcp-config reads the notebook and inserts a cell;
    the card names Claude Code, the user allows, the page shows the cell, and the model (the
    fake API) gets our tools' results."""
    nb = lab.root / "claude.ipynb"
    write_notebook(nb, ["z = 1", "%load_ext jupyter_agent"], ids=["setz", "load"])
    page, panel = open_with_panel(page_of, "claude.ipynb")
    script(
        response(tool_use("mcp__jupyter__read_cells", {"notebook_path": "claude.ipynb"})),
        response(tool_use("mcp__jupyter__insert_cell", {"notebook_path": "claude.ipynb", "after_cell_id": "load",
                                                         "cell_type": "code", "source": "print(z + 41)"})),
        response(text("I added a cell that prints z + 41.")),
    )
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE"))}
    env.update(api.env(), HOME=str(home), DISABLE_AUTOUPDATER="1", DISABLE_TELEMETRY="1",
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")
    config = {"mcpServers": {"jupyter": {"type": "http", "url": f"{lab.url}/jupyter-agent/mcp"}}}
    before = len(api.messages_requests)
    proc = subprocess.Popen(
        [str(CLAUDE), "-p", "Add a cell after the load cell that prints z + 41", "--output-format", "json",
         "--model", "claude-sonnet-4-5", "--mcp-config", json.dumps(config), "--strict-mcp-config",
         "--allowedTools", "mcp__jupyter__read_cells,mcp__jupyter__insert_cell"],
        env=env, cwd=home, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        card = panel.locator(".jp-AgentPanel-approval")
        card.wait_for(timeout=120000)
        assert "print(z + 41)" in card.inner_text() and "an outside agent (MCP)" in card.inner_text()
        asker = re.search(r"Asked by (.+?), an outside agent", card.inner_text()).group(1)
        assert "claude" in asker.lower(), asker  # the name Claude Code gave in its initialize
        card.get_by_role("button", name="Allow", exact=True).click()
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            stop_process(proc)
    assert proc.returncode == 0, err[-3000:]
    result = json.loads(out)
    assert result["is_error"] is False and result["result"] == "I added a cell that prints z + 41.", result
    wait_cell_count(page, 4)  # (Shift+Enter on the last cell added an empty one)
    assert cell_sources(page)[:3] == ["z = 1", "%load_ext jupyter_agent", "print(z + 41)"]
    # what Claude Code sent its model: our tools' results, not errors
    last = api.messages_requests[-1].body["messages"]
    results = [b for m in last if m["role"] == "user" and isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"]
    assert len(api.messages_requests) - before == 3 and len(results) == 2, results
    assert not any(r.get("is_error") for r in results), results
    read = "".join(b.get("text", "") for b in results[0]["content"])
    assert 'id="setz"' in read and "z = 1" in read


def test_a_run_through_jupyter_agent_mcp_reports_its_progress(lab, page_of):
    """Over stdio (``jupyter agent mcp``, a client of the endpoint): the card names the client,
    and the running cell's progress notifications reach the client as over HTTP."""
    import sys

    from mcp.client.stdio import StdioServerParameters

    nb = lab.root / "stdio.ipynb"
    write_notebook(nb, ["s = 0", "%load_ext jupyter_agent", NEW.replace("x + 1", "6 * 7")],
                   ids=["first", "load", "slow"])
    page, panel = open_with_panel(page_of, "stdio.ipynb")
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "jupyter_agent.cli", "mcp", "--url", lab.url, "--token", ""], env=lab.env)
    client = OutsideClient("", name="stdio-agent", stdio=params)
    try:
        path = {"notebook_path": "stdio.ipynb"}
        assert not client.now("read_cells", path).is_error
        progress: list[str] = []

        async def heard(done: float, total: float | None, message: str | None) -> None:
            progress.append(message or "")

        pending = client.call("run_cell", {**path, "cell_id": "slow"}, progress_callback=heard)
        card = panel.locator(".jp-AgentPanel-approval", has_text="NotebookRun")
        card.wait_for(timeout=60000)
        assert "Asked by stdio-agent 9, an outside agent (MCP)." in card.inner_text()
        card.get_by_role("button", name="Allow", exact=True).click()
        ran = pending.result(120)
        assert not ran.is_error and "42" in text_of(ran), text_of(ran)
        assert any("Cell slow is running" in m for m in progress), progress  # through both hops
    finally:
        client.close()
