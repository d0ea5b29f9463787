"""The live notebook in Notebook 7 (the `notebook` package, pages at /notebooks/<path>),
in real Chromium: the issue's main scenario, as in JupyterLab (test_live_notebook.py).

One Notebook 7 server and browser for the module. The end state's screenshot goes to
tests/output/screenshots/ (see ``lab.py``).
"""

from __future__ import annotations

import importlib.util
import json

import nbformat
import pytest

from jupyter_agent.testing import response, text, tool_use

from .lab import HAVE_BROWSER, Lab, allow_the_insert_then_the_run, cell, cell_sources, click_button, require_browser, \
    save, screenshot, wait_cell_count, write_notebook

require_browser()
pytestmark = pytest.mark.skipif(not (HAVE_BROWSER and importlib.util.find_spec("notebook")),
                                reason="needs notebook>=7, playwright and Debian's chromium")


@pytest.fixture(scope="module")
def nb7(api, tmp_path_factory):
    server = Lab(tmp_path_factory.mktemp("nb7"), api.env(), app="notebook")
    yield server
    server.close()


def test_notebook7_agent_adds_a_cell_below_and_runs_it_in_the_users_kernel(nb7, api):
    """x = 41; %load_ext; %%agent adds `print(x + 1)` right under itself and runs it after
    Allow: the page shows 42 without a reload, and saving brings no dialog; its Undo this run
    takes the cell out of the page at once. The page loads
    without errors from the extension (its side panel must not break Notebook 7)."""
    path = nb7.root / "scenario7.ipynb"
    write_notebook(path, ["x = 41", "%load_ext jupyter_agent",
                          "%%agent\nadd a cell that prints x+1 and run it", "# The end"],
                   ids=["setx", "load", "agentcell", "theend"])
    api.add(
        response(tool_use("Read", {"file_path": str(path)})),
        response(tool_use("NotebookEdit", {"notebook_path": str(path), "cell_id": "agentcell",
                                           "new_source": "print(x + 1)", "cell_type": "code",
                                           "edit_mode": "insert"})),
        response(tool_use("NotebookRun", {"notebook_path": str(path), "cell_id": "cell-3"})),
        response(text("Done: the new cell printed 42.")),
    )
    context = nb7.browser.new_context(viewport={"width": 1200, "height": 1000})
    errors: list[str] = []
    # on the context, so that errors while the page loads count too
    context.on("weberror", lambda e: errors.append(f"{e.error}\n{e.error.stack}"))
    context.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page = None
    try:
        page = nb7.open("scenario7.ipynb", context)
        # the side panel is open beside the notebook, not hidden under View → Right Sidebar
        page.locator("#jp-right-stack #jupyter-agent-panel").wait_for(state="visible", timeout=30000)
        allow_the_insert_then_the_run(page)
        page.wait_for_selector("text=Done: the new cell printed 42.", timeout=60000)
        assert "[4]" in cell(page, 3).locator(".jp-InputPrompt").inner_text()  # the user's kernel
        results = json.dumps(api.requests[-1].body["messages"][-1])
        assert "42" in results and "NameError" not in results
        page.locator(".jp-Notebook").click(position={"x": 5, "y": 5})
        save(page, path)
        assert page.locator(".jp-Dialog").count() == 0  # no "File Changed" Overwrite/Revert
        on_disk = nbformat.read(path, as_version=4)
        assert [c.source for c in on_disk.cells][3] == "print(x + 1)"
        assert any("42" in "".join(o.get("text", "")) for o in on_disk.cells[3].outputs)
        # Undo this run: the inserted cell leaves the page at once, and a save asks nothing
        click_button(page, "Undo this run")
        wait_cell_count(page, 4)
        assert "print(x + 1)" not in cell_sources(page)
        save(page, path)
        assert page.locator(".jp-Dialog").count() == 0
        assert [c.source for c in nbformat.read(path, as_version=4).cells] == [
            "x = 41", "%load_ext jupyter_agent", "%%agent\nadd a cell that prints x+1 and run it", "The end"]
        ours = [e for e in errors if "jupyter-agent" in e or "jupyter_agent" in e]
        assert not ours, ours
    finally:
        if page is not None:
            screenshot(page, "live_scenario_notebook7")
        context.close()
        nb7.shutdown_kernels()
    assert api.pending == 0 and not api.rejections


@pytest.mark.timeout(300)  # ~15 s on a quiet machine; 2 loaded cores take several times that
def test_notebook7_fix_with_agent_and_explain_on_an_error_output(nb7, api):
    """The Fix with agent / Explain scenario of test_panel_browser.py, in Notebook 7 (the side
    panel opens beside the notebook)."""
    from .test_panel_browser import BROKEN, fix_scenario

    path = nb7.root / "fix7.ipynb"
    write_notebook(path, ["values = [3, 5, 8]", "%load_ext jupyter_agent", BROKEN, "print('fine')"],
                   ids=["vals", "load", "err", "ok"])
    try:
        page = nb7.open("fix7.ipynb")
        page.locator("#jp-right-stack #jupyter-agent-panel").wait_for(state="visible", timeout=30000)
        fix_scenario(page, api, api.add, path, notebook7=True)
        assert api.pending == 0
    finally:
        nb7.finish("notebook7_fix")
