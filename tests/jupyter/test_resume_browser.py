"""``%agent resume`` in real JupyterLab in real Chromium: a live run inserts a cell into the
open notebook, the user restarts the kernel from the page, then resumes; the resumed run's
undo puts the page's cells back through the page (never into the file behind it), and the
next run's request carries the earlier history and the restart notice; the side panel shows
the resumed conversation's history, its words as text (a hostile answer is never markup)."""

from __future__ import annotations

import json

import pytest

from jupyter_agent.testing import response, text, tool_use

from .lab import (HAVE_BROWSER, cell, cell_sources, require_browser, restart_from_page, run_and_wait, run_cell,
                  screenshot, wait_cell_count, wait_for_end, wait_prompt, write_notebook)

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason="needs jupyterlab, playwright and Debian's chromium")

PANEL = "#jupyter-agent-panel"
PAYLOAD = '<img src=x onerror="window.__pwned=1">'


def test_resume_after_a_restart_from_the_page_undoes_through_the_page(lab, page_of, script, api):
    nb = lab.root / "resume_live.ipynb"
    write_notebook(nb, ["%load_ext jupyter_agent", "%%agent --permission-mode bypassPermissions\nadd a cell",
                        "%agent resume\n%agent undo 1", "%%agent\nwhat did you add?"],
                   ids=["load", "agent", "resume", "next"])
    script(
        response(tool_use("Read", {"file_path": str(nb)})),
        response(tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "agent",
                                           "new_source": "resumed_value = 1", "cell_type": "code",
                                           "edit_mode": "insert"})),
        response(text(f"Added a cell. {PAYLOAD}")),
    )
    page = page_of("resume_live.ipynb")
    run_and_wait(page, 0)
    run_cell(page, 1)
    wait_for_end(page, timeout=60000)
    wait_cell_count(page, 5)
    assert cell_sources(page)[2] == "resumed_value = 1"
    restart_from_page(page)  # as a user does: command mode, 0 0, then Restart in the dialog
    run_cell(page, 0)
    wait_prompt(page, 0, "[1]")  # the new kernel's first execution
    run_and_wait(page, 3)  # %agent resume, then %agent undo 1: the inserted cell goes, in the page
    wait_cell_count(page, 4)
    assert "resumed_value = 1" not in cell_sources(page)
    assert "Resumed the conversation" in cell(page, 2).inner_text()
    page.click(f"li[data-id='{PANEL[1:]}']")  # the side panel shows the resumed history
    panel = page.locator(PANEL)
    panel.locator(".jp-AgentPanel-text", has_text="Added a cell.").wait_for(timeout=30000)
    assert "add a cell" in panel.locator(".jp-AgentPanel-prompt").first.inner_text()
    assert panel.locator(".jp-AgentPanel-state-done[data-tool='NotebookEdit']").count() == 1
    assert PAYLOAD in panel.locator(".jp-AgentPanel-text", has_text="Added a cell.").inner_text()  # as text
    assert panel.locator("img[src='x']").count() == 0 and page.evaluate("window.__pwned") is None
    screenshot(page, "panel_resumed_history")
    script(response(text("I had added a cell; you undid it.")))
    run_cell(page, 3)
    page.get_by_text("I had added a cell; you undid it.").first.wait_for(timeout=60000)
    messages = api.requests[-1].body["messages"]
    sent = json.dumps(messages)
    assert "add a cell" in sent and "resumed_value = 1" in sent  # the earlier history
    assert "kernel was restarted" in messages[0]["content"][0]["text"]
    assert "The user undid the changes of your previous run" in sent
