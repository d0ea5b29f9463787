"""A run's undo state, the same in every place that shows it, whichever way it was undone,
in real JupyterLab in real Chromium with the fake Messages API as the model: a run sent
from the side panel and undone with ``%agent undo 1`` in a cell, and a cell's run undone
with its own **Undo this run** button; each time the panel's run loses its Undo button and
says what the undo did. (The panel's own button is ``test_mcp_server_browser.py``'s.)

Screenshots (light and dark theme) go to tests/output/screenshots/ (see ``lab.py``).
"""

from __future__ import annotations

import pytest

from jupyter_agent.testing import response, text, tool_use

from .lab import HAVE_BROWSER, button, cell, menu, require_browser, run_and_wait, run_cell, screenshot, \
    wait_theme, write_notebook

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason="needs jupyterlab, playwright and Debian's chromium")

PANEL = "#jupyter-agent-panel"
REMOVED = "removed (the run had created it)"


def test_the_panel_hears_of_an_undo_made_elsewhere(lab, page_of, script):
    first, second = lab.root / "from_panel.txt", lab.root / "from_cell.txt"
    write_notebook(lab.root / "undo.ipynb", [
        "%load_ext jupyter_agent", "%agent new --permission-mode acceptEdits",
        "%%agent\nWrite from_cell.txt", "%agent undo 1"], ids=["load", "mode", "ask", "undo"])
    script(response(tool_use("Write", {"file_path": str(first), "content": "panel\n"})), response(text("Wrote it.")),
           response(tool_use("Write", {"file_path": str(second), "content": "cell\n"})),
           response(text("Wrote it too.")))
    page = page_of("undo.ipynb")
    page.click(f"li[data-id='{PANEL[1:]}']")
    panel = page.locator(PANEL)
    run_and_wait(page, 0)
    run_and_wait(page, 1)  # (acceptEdits: a Write in the working folder asks nobody)
    panel.locator(".jp-AgentPanel-empty").wait_for(timeout=30000)
    panel.locator(".jp-AgentPanel-input").fill("Write from_panel.txt")
    panel.locator(".jp-AgentPanel-input").press("Enter")
    runs = panel.locator(".jp-AgentPanel-run")
    runs.nth(0).locator(".jp-AgentPanel-undo").wait_for(timeout=60000)
    assert first.read_text() == "panel\n"

    run_cell(page, 2)  # run 2, from a cell: its widget ends with its own Undo this run
    bar = cell(page, 2).locator("button.jupyter-button", has_text="Undo this run")
    bar.wait_for(timeout=60000)
    runs.nth(1).locator(".jp-AgentPanel-undo").wait_for(timeout=60000)
    assert second.read_text() == "cell\n"

    # `%agent undo 1`: the panel's run 1 loses its button and says what the undo did
    run_and_wait(page, 3)
    cell(page, 3).locator(".jp-OutputArea-output", has_text=REMOVED).wait_for(timeout=60000)
    assert not first.exists()
    runs.nth(0).locator(".jp-AgentPanel-status", has_text=f"from_panel.txt: {REMOVED}").wait_for(timeout=30000)
    assert runs.nth(0).locator(".jp-AgentPanel-undo").count() == 0
    assert runs.nth(1).locator(".jp-AgentPanel-undo").is_enabled()  # run 2 is not undone

    # the cell's own button undoes run 2: the panel's run 2 agrees, the button goes from both
    button(page, "Undo this run").click()
    runs.nth(1).locator(".jp-AgentPanel-status", has_text=f"from_cell.txt: {REMOVED}").wait_for(timeout=30000)
    assert not second.exists()
    assert panel.locator(".jp-AgentPanel-undo").count() == 0
    bar.wait_for(state="hidden", timeout=30000)
    screenshot(page, "panel_undone_elsewhere_light")
    menu(page, "Settings", "Theme", "JupyterLab Dark")
    wait_theme(page, light=False)
    screenshot(page, "panel_undone_elsewhere_dark")


def test_an_undo_that_failed_is_offered_again_in_the_cell_and_the_panel(lab, page_of, script):
    """A directory stands where the run's file was: the cell's Undo this run fails, and both
    the cell (its button back, saying to fix the cause) and the panel (its Undo back, under
    the line that says what failed) offer it again; once fixed, the panel's Undo undoes it."""
    target = lab.root / "blocked.txt"
    write_notebook(lab.root / "undo_failed.ipynb", [
        "%load_ext jupyter_agent", "%agent new --permission-mode acceptEdits", "%%agent\nWrite blocked.txt"],
        ids=["load", "mode", "ask"])
    script(response(tool_use("Write", {"file_path": str(target), "content": "agent\n"})), response(text("Wrote it.")))
    page = page_of("undo_failed.ipynb")
    page.click(f"li[data-id='{PANEL[1:]}']")
    panel = page.locator(PANEL)
    run_and_wait(page, 0)
    run_and_wait(page, 1)
    run_cell(page, 2)
    bar = cell(page, 2).locator("button.jupyter-button", has_text="Undo this run")
    bar.wait_for(timeout=60000)
    run = panel.locator(".jp-AgentPanel-run").last
    run.locator(".jp-AgentPanel-undo").wait_for(timeout=60000)
    target.unlink()
    target.mkdir()  # (as root, a read-only file would not stop the undo: a directory does)

    bar.click()
    cell(page, 2).get_by_text("fix that, then undo again").wait_for(timeout=30000)
    run.locator(".jp-AgentPanel-status", has_text="blocked.txt: could not be put back").wait_for(timeout=30000)
    page.wait_for_function("b => !b.disabled", arg=bar.element_handle(), timeout=30000)
    assert run.locator(".jp-AgentPanel-undo").is_enabled()
    screenshot(page, "undo_failed_offered_again")

    target.rmdir()
    target.write_text("agent\n")  # as the run left it
    run.locator(".jp-AgentPanel-undo").click()
    run.locator(".jp-AgentPanel-status", has_text="blocked.txt: removed (the run had created it)").wait_for(
        timeout=30000)
    assert not target.exists() and run.locator(".jp-AgentPanel-undo").count() == 0
    bar.wait_for(state="hidden", timeout=30000)
    screenshot(page, "undo_failed_then_done")
