"""`%%agent` in real JupyterLab in real Chromium: Markdown streams into the widget, a
click on Allow runs the write, and the static transcript replaces the widget; a page
reloaded while an approval waits (and a second tab) answers it and shows the end; a Bash
card streams; an MCP server of .mcp.json and its tool's call ask on cards that say what
will run.

Skipped unless JupyterLab, Python playwright and /usr/bin/chromium are installed
(docs/design.md, "Browser tests": never download a browser). ~10 s.
"""

from __future__ import annotations

import json

import nbformat
import pytest

from jupyter_agent.testing import response, text, thinking, tool_use
from tests.mcp.servers import stdio_server

from .lab import (
    CELLS, HAVE_BROWSER, button, cell, dark_theme, require_browser, run_and_wait, run_cell, save, screenshot,
    wait_for_end, write_notebook,
)

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER,
                                reason="needs jupyterlab, playwright and the Debian chromium package")


def test_agent_cell_in_jupyterlab(lab, page_of, script):
    target = lab.root / "out.txt"
    write_notebook(lab.root / "agent.ipynb", ["%load_ext jupyter_agent", "%%agent\nWrite hello to out.txt"])
    script(
        response(thinking("Consider the file."), text("I'll **write** `out.txt`:\n\n- one\n- two"),
                 tool_use("Write", {"file_path": str(target), "content": "hello"}), delay_s=0.01),
        response(text("Done: `out.txt` says *hello*."), delay_s=0.01),
    )
    page = page_of("agent.ipynb")
    run_and_wait(page, 0)
    run_cell(page, 1)
    page.wait_for_selector("button:has-text('Allow')", timeout=30000)
    strong = page.locator(".jp-OutputArea strong", has_text="write").all()
    assert sum(1 for s in strong if s.is_visible()) == 1  # Markdown (the fallback is hidden)
    assert not target.exists()
    page.click("button:has-text('Allow')")
    page.wait_for_selector(".jp-Cell >> nth=1 >> text=Finished", timeout=30000)
    output = page.locator(".jp-Cell >> nth=1").inner_text()
    assert target.read_text() == "hello"
    assert "Done: out.txt says hello." in output and "completed" in output
    assert "Stop" not in output  # the live widget is gone: the transcript replaced it


def test_a_reloaded_page_answers_a_waiting_approval_and_shows_the_end(lab, page_of, script):
    """Reloading the page while an approval waits: the cell's widget is restored from the live
    kernel and its buttons work; after Allow the run's end replaces the widget in that page
    too, though JupyterLab sends a reloaded page no display updates (a second tab reads the
    saved notebook the same way), and saving there keeps the end."""
    target = lab.root / "reloaded.txt"
    nb_path = write_notebook(lab.root / "reload.ipynb", ["%load_ext jupyter_agent", "%%agent\nWrite reloaded.txt"])
    script(response(text("Writing it."), tool_use("Write", {"file_path": str(target), "content": "hello"})),
           response(text("Written after the reload.")))
    page = page_of("reload.ipynb")
    run_and_wait(page, 0)
    run_cell(page, 1)
    button(page, "Allow").wait_for(timeout=60000)
    save(page, nb_path)  # what the reloaded page reads
    page.reload()
    page.wait_for_selector(CELLS)
    # (no wait_idle: a page reloaded on a kernel that is already idle may show "idle" at once,
    # with no other status before it; the restored widget below needs the kernel's connection)
    allow = cell(page, 1).locator("button.jupyter-button:not([disabled])", has_text="Allow").first
    allow.wait_for(timeout=60000)  # re-attached: the widget restored from the live kernel
    assert "kernel lost" not in cell(page, 1).inner_text()
    screenshot(page, "reloaded-waiting", cell(page, 1))
    allow.click()
    # the transcript replaces the widget in a page that did not show it live
    end = cell(page, 1).locator(".jp-OutputArea-output", has_text="Written after the reload.")
    end.locator("code", has_text="completed").wait_for(timeout=60000)
    # the run's widget is gone (the run wrote a file: its Undo button is the one widget left)
    page.wait_for_function("el => ![...el.querySelectorAll('.jupyter-widgets')].some("
                           "w => w.textContent.includes('Writing it.'))", arg=cell(page, 1).element_handle())
    screenshot(page, "reloaded-ended", cell(page, 1))
    assert target.read_text() == "hello"
    cell(page, 1).locator(".jp-InputPrompt").click()  # the notebook has the focus: Ctrl+S saves it
    save(page, nb_path)
    saved = nbformat.read(nb_path, as_version=4).cells[1].outputs
    outputs = json.dumps(saved)
    assert "completed" in outputs and "Still running" not in outputs
    widgets = [o for o in saved if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert [o["data"]["text/plain"] for o in widgets] == ["Undo this run (a button; needs the run's kernel)"]


def test_a_bash_card_streams_its_output_and_shows_the_exit_code(lab, page_of, script):
    """A Bash line whose every part a rule allows runs: its card shows the output while the
    command still runs (a progress bar's last state only), then the exit code. A command no
    rule covers asks, on a card that shows the whole command. Screenshots in both themes."""
    go = lab.root / "bash-go"
    command = ("printf 'line 1\\nline 2\\n'; printf 'progress 10%%\\rprogress 100%%\\n'; "
               f"while [ ! -f {go.name} ]; do sleep 0.05; done; echo finished; exit 3")
    rules = ["Bash(printf:*)", "Bash([:*)", "Bash(sleep:*)", "Bash(echo:*)", "Bash(exit:*)"]
    write_notebook(lab.root / "bash.ipynb", [f"%load_ext jupyter_agent\n%config AgentConfig.allow = {rules!r}",
                                             "%%agent\nRun the script"])
    script(response(tool_use("Bash", {"command": command, "description": "Run the script"})),
           response(tool_use("Bash", {"command": "echo '<b>done</b>' && touch bash-approved.txt",
                                      "description": "Mark it <i>done</i>"})),
           response(text("It exited with 3.")))
    page = page_of("bash.ipynb")
    run_and_wait(page, 0)
    run_cell(page, 1)
    live = cell(page, 1).locator(".ja-live", has_text="progress 100%")
    live.wait_for(timeout=60000)
    assert "line 1\nline 2" in live.inner_text() and "progress 10%" not in live.inner_text()
    screenshot(page, "bash-live-light", cell(page, 1))
    try:
        with dark_theme(page):
            screenshot(page, "bash-live-dark", cell(page, 1))
            go.write_text("")
            button(page, "Allow").wait_for(timeout=60000)  # touch: no rule covers it
            card = cell(page, 1).inner_text()
            assert "echo '<b>done</b>' && touch bash-approved.txt" in card and "Mark it <i>done</i>" in card
            screenshot(page, "bash-approval-dark", cell(page, 1))
            page.click("button:has-text('Allow')")
            page.wait_for_function("el => el.innerText.includes('Finished') && el.innerText.includes('exit code 3')",
                                   arg=cell(page, 1).element_handle(), timeout=60000)
            assert (lab.root / "bash-approved.txt").exists()
            screenshot(page, "bash-ended-dark", cell(page, 1))
    finally:
        go.write_text("")


@pytest.mark.timeout(240)  # (a loaded machine: the server is a Python process importing the SDK, two theme changes)
def test_an_mcp_server_and_its_tool_ask_on_cards_that_say_what_will_run(lab, page_of, script, api):
    """The folder's .mcp.json names a server (written on the ``mcp`` SDK): before the run's
    first request a card shows the exact command that would start it; after Allow the
    model's call of its tool asks on a card naming the server, the tool and the arguments;
    after Allow the tool's result is paired and shown. Screenshots in both themes."""
    folder = lab.root / "mcp"  # (its own folder: the other tests' runs must not see this .mcp.json)
    folder.mkdir()
    calc = stdio_server(folder)
    (folder / ".mcp.json").write_text(json.dumps({"mcpServers": {"calc": calc}}))
    # (each server is a Python process importing the SDK: on a loaded machine it may take longer than 30 s)
    write_notebook(folder / "mcp.ipynb", ["%load_ext jupyter_agent\n%env MCP_TIMEOUT=120000", "%%agent\nAdd 2 and 3"])
    add = tool_use("mcp__calc__add", {"a": 2, "b": 3})
    script(response(text("Asking the calculator."), add), response(text("The server added them.")))
    page = page_of("mcp/mcp.ipynb")
    run_and_wait(page, 0)
    run_cell(page, 1)
    button(page, "Allow").wait_for(timeout=60000)
    card = cell(page, 1).inner_text()
    # the exact command (the script's path relative to the working folder, where it runs), and its input whole
    assert "Start the MCP server calc?" in card and f"run this command: {calc['command']} calc_server.py." in card
    assert f'"{calc["args"][0]}"' in card
    assert not (folder / "pid").exists()  # not started before the approval
    screenshot(page, "mcp-server-approval-light", cell(page, 1))
    with dark_theme(page):
        screenshot(page, "mcp-server-approval-dark", cell(page, 1))
        page.click("button:has-text('Allow')")
        page.wait_for_function("el => el.innerText.includes('Allow the tool add of the MCP server calc?')",
                               arg=cell(page, 1).element_handle(), timeout=120000)  # started, then asked
        button(page, "Allow").wait_for(timeout=60000)
        shown = cell(page, 1).inner_text()
        assert '"a": 2' in shown and '"b": 3' in shown and (folder / "pid").exists()
        screenshot(page, "mcp-tool-approval-dark", cell(page, 1))
        page.click("button:has-text('Allow')")
        wait_for_end(page)
        call = cell(page, 1).locator("details", has_text="mcp__calc__add").first
        call.locator("summary").click()
        call.locator("text=sum=5").wait_for(timeout=30000)  # the server's answer, under its call
        screenshot(page, "mcp-result-dark", cell(page, 1))
    assert "The server added them." in cell(page, 1).inner_text()
    screenshot(page, "mcp-result-light", cell(page, 1))
    sent = [b for b in api.requests[-1].body["messages"][-1]["content"] if b.get("type") == "tool_result"]
    assert [(b["tool_use_id"], b["content"][0]["text"]) for b in sent] == [(add["id"], "sum=5")]  # paired by id
