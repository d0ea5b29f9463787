"""The side panel in real JupyterLab in real Chromium, with the fake Messages API as the
model: type a prompt in the panel, watch the answer stream, approve the edit and the run
there, and see the new cell run in the page, in the user's kernel. Switching notebooks
switches the kernel; a kernel without the extension gets a one-line hint.

Screenshots (light and dark theme) go to tests/output/screenshots/ (see ``lab.py``).
"""

from __future__ import annotations

import pytest

from jupyter_agent.testing import response, text, thinking, tool_use

from .lab import HAVE_BROWSER, cell, cell_sources, menu, require_browser, restarted, run_and_wait, \
    screenshot, wait_cell_count, wait_theme, write_notebook

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason="needs jupyterlab, playwright and Debian's chromium")

PANEL = "#jupyter-agent-panel"
HINT = "Run %load_ext jupyter_agent in this notebook"


def test_side_panel_round_trip(lab, page_of, script, api):
    nb = lab.root / "agent.ipynb"
    write_notebook(nb, ["x = 41", "%load_ext jupyter_agent"], ids=["setx", "load"])
    write_notebook(lab.root / "plain.ipynb", ["1 + 1"])
    script(
        response(thinking("The user wants x + 1 printed."), text("I'll **add** a cell that prints `x + 1`."),
                 tool_use("Read", {"file_path": str(nb)}), delay_s=0.01),
        response(tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "load", "new_source": "print(x + 1)",
                                           "cell_type": "code", "edit_mode": "insert"})),
        response(tool_use("NotebookRun", {"notebook_path": str(nb), "cell_id": "cell-2"})),
        response(text("Done: the new cell printed *42*."), delay_s=0.01),
    )
    page = page_of("agent.ipynb")
    try:
        page.click(f"li[data-id='{PANEL[1:]}']")  # the sidebar tab opens the panel
        panel = page.locator(PANEL)
        panel.locator(".jp-AgentPanel-hintBox", has_text=HINT).wait_for(timeout=30000)  # not loaded yet
        run_and_wait(page, 0)
        run_and_wait(page, 1)
        panel.locator(".jp-AgentPanel-empty").wait_for(timeout=30000)  # connected once the cell ran
        assert panel.locator(".jp-AgentPanel-mode").input_value() == "default"

        panel.locator(".jp-AgentPanel-input").fill("Add a cell that prints x+1 and run it")
        panel.locator(".jp-AgentPanel-input").press("Enter")
        approval = panel.locator(".jp-AgentPanel-approval")
        approval.wait_for(timeout=30000)
        assert "print(x + 1)" in approval.inner_text() and len(cell_sources(page)) == 3  # nothing before Allow
        # (3: Shift+Enter on the last cell added an empty one)
        assert "Add a cell that prints x+1" in panel.locator(".jp-AgentPanel-prompt").inner_text()
        assert panel.locator(".jp-AgentPanel-text strong", has_text="add").count() == 1  # Markdown rendered
        assert panel.locator(".jp-AgentPanel-thinking details").count() == 1  # folded
        assert panel.locator(".jp-AgentPanel-state-done[data-tool='Read']").count() == 1
        assert panel.locator(".jp-AgentPanel-state-approval[data-tool='NotebookEdit']").count() == 1
        screenshot(page, "panel_approval_light")
        approval.get_by_role("button", name="Allow", exact=True).click()
        wait_cell_count(page, 4)
        assert cell_sources(page)[2] == "print(x + 1)"  # the edit is in the page, live
        approval = panel.locator(".jp-AgentPanel-approval", has_text="NotebookRun")
        approval.wait_for(timeout=30000)
        approval.get_by_role("button", name="Allow", exact=True).click()
        cell(page, 2).locator(".jp-OutputArea-output", has_text="42").wait_for(timeout=30000)  # the user's kernel
        panel.locator(".jp-AgentPanel-runFooter.jp-AgentPanel-ok").wait_for(timeout=30000)
        footer = panel.locator(".jp-AgentPanel-runFooter").inner_text()
        assert "completed" in footer and "4 turns" in footer and "out" in footer and "$" in footer
        assert "✓ Finished" in footer and "not a promise" not in footer  # a normal end is one quiet line
        assert panel.locator(".jp-AgentPanel-state-done").count() == 3
        assert panel.locator(".jp-AgentPanel-decision", has_text="Allowed by you.").count() == 2
        assert panel.locator(".jp-AgentPanel-text em", has_text="42").count() == 1
        assert "$" in panel.locator(".jp-AgentPanel-usage").inner_text()
        assert panel.locator(".jp-AgentPanel-approval").count() == 0
        assert "42" in str(api.requests[-1]["messages"][-1]["content"])  # the run's output reached the model
        screenshot(page, "panel_done_light")

        menu(page, "Settings", "Theme", "JupyterLab Dark")
        wait_theme(page, light=False)
        screenshot(page, "panel_done_dark")

        # another notebook, whose kernel has not loaded the extension: the panel follows, with a hint
        page.locator(".jp-DirListing-itemText", has_text="plain.ipynb").dblclick()
        panel.locator(".jp-AgentPanel-title", has_text="plain.ipynb").wait_for(timeout=30000)
        panel.locator(".jp-AgentPanel-hintBox", has_text=HINT).wait_for(timeout=30000)
        assert panel.locator(".jp-AgentPanel-run").count() == 0
        screenshot(page, "panel_hint_dark")
        # back to the first notebook: its kernel's conversation is there again
        page.locator(".lm-DockPanel-tabBar .lm-TabBar-tabLabel", has_text="agent.ipynb").click()
        panel.locator(".jp-AgentPanel-run").first.wait_for(timeout=30000)
        assert "Done: the new cell printed 42." in panel.inner_text()
        panel.get_by_role("button", name="New conversation").click()
        panel.locator(".jp-AgentPanel-empty").wait_for(timeout=30000)
        assert panel.locator(".jp-AgentPanel-run").count() == 0
        # Deny with a note: nothing is written, the model reads the note
        script(response(tool_use("Write", {"file_path": str(lab.root / "no.txt"), "content": "x"})),
               response(text("Understood: I will not write no.txt.")))
        panel.locator(".jp-AgentPanel-input").fill("Write x to no.txt")
        panel.get_by_role("button", name="Send", exact=True).click()
        approval = panel.locator(".jp-AgentPanel-approval")
        approval.locator(".jp-AgentPanel-feedback").fill("Not now, thanks.")
        approval.get_by_role("button", name="Deny", exact=True).click()
        panel.locator(".jp-AgentPanel-runFooter.jp-AgentPanel-ok").wait_for(timeout=30000)
        assert not (lab.root / "no.txt").exists()
        assert "Denied by you: Not now, thanks." in panel.locator(".jp-AgentPanel-tool").inner_text()
        assert "Not now, thanks." in str(api.requests[-1]["messages"][-1]["content"])
        assert "Add a cell that prints" not in str(api.requests[-1]["messages"])  # a new conversation
        # a kernel restart forgets %load_ext: the panel says so instead of hanging
        with restarted(page):  # the restarted kernel is up, and the panel's retry was refused too
            menu(page, "Kernel", "Restart Kernel…")
            page.locator(".jp-Dialog-button.jp-mod-accept", has_text="Restart").click()
            panel.locator(".jp-AgentPanel-hintBox", has_text=HINT).wait_for(timeout=30000)
        panel.locator(".jp-AgentPanel-hintBox", has_text=HINT).wait_for(timeout=30000)
    finally:
        screenshot(page, "panel_end")


def test_panel_settings_place_and_open_it(lab, page_of):
    """The panel's settings (labextension/schema/panel.json), as a user's settings file sets
    them: in the left sidebar, open when JupyterLab starts. Its buttons are named by their
    words (the icons are aria-hidden)."""
    write_notebook(lab.root / "settings.ipynb", ["1 + 1"])
    user_settings = lab.settings / "jupyter-agent" / "panel.jupyterlab-settings"
    user_settings.parent.mkdir(parents=True, exist_ok=True)
    user_settings.write_text('{"side": "left", "openOnStart": true}')
    try:
        page = page_of("settings.ipynb")
        panel = page.locator(f"#jp-left-stack {PANEL}")
        panel.wait_for(timeout=30000)  # open without a click, on the left
        assert page.locator(f"#jp-right-stack {PANEL}").count() == 0
        send = panel.get_by_role("button", name="Send", exact=True)
        assert send.locator("[aria-hidden='true'] svg").count() == 1  # an icon, hidden from screen readers
        panel.get_by_role("button", name="Stop", exact=True).wait_for()
    finally:
        user_settings.unlink()
