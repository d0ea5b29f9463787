"""The live notebook in real JupyterLab in real Chromium: the agent reads, edits and runs
the notebook the user has open, in the user's kernel, through the labextension's bridge.

One JupyterLab server and browser for the module; each test opens its own notebook.
Screenshots of each test's end state go to $JUPYTER_AGENT_SCREENSHOTS
(/tmp/jupyter-agent-screenshots).
"""

from __future__ import annotations

import json
import time

import nbformat
import pytest

from jupyter_agent.testing import text, tool_use, response

from .lab import HAVE_BROWSER, Lab, button, cell, cell_sources, click_button, require_browser, run_and_wait, \
    run_cell, screenshot, write_notebook

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason="needs jupyterlab, playwright and Debian's chromium")


@pytest.fixture(scope="module")
def lab(api, tmp_path_factory):
    server = Lab(tmp_path_factory.mktemp("lab"), api.env())
    yield server
    server.close()


@pytest.fixture
def page_of(lab):
    """Open notebooks in pages; close them and the kernels after the test."""
    contexts = []

    def open_page(name, context=None):
        page = lab.open(name, context)
        contexts.append(page.context)
        return page

    yield open_page
    for ctx in contexts:
        try:
            ctx.close()
        except Exception:
            pass
    lab.shutdown_kernels()


def saved(lab, name):
    return nbformat.read(lab.root / name, as_version=4)


def test_agent_adds_a_cell_below_and_runs_it_in_the_users_kernel(lab, page_of, script, api):
    """The issue's scenario: the new cell appears under the %%agent cell without a reload,
    waits for Allow, runs in the user's kernel (x is 41 there) and shows 42; Ctrl+S brings
    no dialog and the saved file has the cell and its output."""
    nb = lab.root / "scenario.ipynb"
    write_notebook(nb, ["x = 41", "%load_ext jupyter_agent",
                        "%%agent\nadd a cell that prints x+1 and run it", "# The end"],
                   ids=["setx", "load", "agentcell", "theend"])
    script(
        response(tool_use("Read", {"file_path": str(nb)})),
        response(tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "agentcell",
                                           "new_source": "print(x + 1)", "cell_type": "code",
                                           "edit_mode": "insert"})),
        response(tool_use("NotebookRun", {"notebook_path": str(nb), "cell_id": "cell-3"})),
        response(text("Done: the new cell printed 42.")),
    )
    page = page_of("scenario.ipynb")
    run_and_wait(page, 0)
    run_and_wait(page, 1)
    run_cell(page, 2)
    button(page, "Allow").wait_for(timeout=30000)
    assert len(cell_sources(page)) == 4  # nothing inserted before Allow
    click_button(page, "Allow")
    page.wait_for_function("() => document.querySelectorAll('.jp-Notebook .jp-Cell').length === 5")
    assert cell_sources(page)[3] == "print(x + 1)"  # right under the %%agent cell
    button(page, "Allow").wait_for(timeout=30000)
    click_button(page, "Allow")
    cell(page, 3).locator(".jp-OutputArea-output", has_text="42").wait_for(timeout=30000)
    try:
        page.wait_for_selector("text=Ended:", timeout=30000)
    finally:
        screenshot(page, "live_scenario")
    assert "42" in cell(page, 3).locator(".jp-OutputArea").inner_text()
    assert "[4]" in cell(page, 3).locator(".jp-InputPrompt").inner_text()  # ran in the user's kernel
    # The tool result the model got carries the page's output.
    results = json.dumps(api.requests[-1].body["messages"][-1])
    assert "42" in results and "NameError" not in results
    page.locator(".jp-Notebook").click(position={"x": 5, "y": 5})
    page.keyboard.press("Control+s")
    time.sleep(1.0)
    assert page.locator(".jp-Dialog").count() == 0  # no "File Changed" Overwrite/Revert
    screenshot(page, "live_scenario")
    on_disk = saved(lab, "scenario.ipynb")
    assert [c.source for c in on_disk.cells][3] == "print(x + 1)"
    assert any("42" in "".join(o.get("text", "")) for o in on_disk.cells[3].outputs)
