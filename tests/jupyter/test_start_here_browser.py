"""The start-here notebook as a newcomer meets it in real JupyterLab: opening it changes
nothing, and its "try the agent" cells, replayed offline (``--replay live_cell``), add a
cell right under the ``%%agent`` cell through the live page and run it in the user's
kernel (42), with the run saying that it is a replay; then its error cell's Fix with agent
replays the recorded fix of that cell (``fix_error``), allowed and run."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from .lab import HAVE_BROWSER, button, cell, cell_sources, click_button, docs_screenshot, require_browser, \
    run_and_wait, run_cell, screenshot, wait_cell_count, wait_for_end, wait_idle

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason="needs jupyterlab, playwright and Debian's chromium")

START_HERE = Path(__file__).resolve().parents[2] / "notebooks" / "00-start-here.ipynb"


@pytest.mark.timeout(300)  # ~20 s on a quiet machine; 2 loaded cores take several times that
def test_the_start_here_try_it_cells_insert_and_run_a_cell_in_the_open_notebook(lab, page_of):
    # a name of its own for each attempt: a re-run (tests/reruns.py) must not open the page
    # the first attempt left with its inserted cell
    name = f"start-{uuid.uuid4().hex[:8]}.ipynb"
    shutil.copy(START_HERE, lab.root / name)
    page = page_of(name)
    wait_idle(page)
    # opening it marks nothing changed (the file already holds what JupyterLab would add)
    assert page.locator(".jp-mod-dirty").count() == 0
    sources = cell_sources(page)
    agent = next(i for i, s in enumerate(sources) if s.startswith("%%agent --replay live_cell"))
    assert sources[agent - 2:agent] == ["x = 41", "%load_ext jupyter_agent"]
    run_and_wait(page, agent - 2)
    run_and_wait(page, agent - 1)
    run_cell(page, agent)
    button(page, "Allow").wait_for(timeout=60000)
    assert len(cell_sources(page)) == len(sources)  # nothing inserted before Allow
    click_button(page, "Allow")
    wait_cell_count(page, len(sources) + 1)
    assert cell_sources(page)[agent + 1] == "x + 1"  # right under the %%agent cell
    button(page, "Allow").wait_for(timeout=60000)
    # the run's approval numbers the new cell as the page does (1-based, all cells counted)
    screenshot(page, "start_here_run_approval", cell(page, agent))
    cell(page, agent).scroll_into_view_if_needed()
    docs_screenshot(page, "start-here-approval")  # README.md's picture
    assert f"run cell {agent + 2} of {len(sources) + 1} (id " in cell(page, agent).inner_text()
    click_button(page, "Allow")
    cell(page, agent + 1).locator(".jp-OutputArea-output", has_text="42").wait_for(timeout=60000)
    wait_for_end(page)
    screenshot(page, "start_here_try_it", cell(page, agent))
    shown = cell(page, agent).inner_text()
    assert "Offline replay — your prompt is not used; this replays live_cell.json" in shown
    assert "model_error" not in shown
    # the next cells: an error whose Fix with agent the replay walks through (fix_error.json)
    error = next(i for i, s in enumerate(cell_sources(page)) if "len(vales)" in s)
    run_and_wait(page, error)
    bar = cell(page, error).locator(".jp-AgentErrorActions")
    bar.get_by_role("button", name="Fix with agent", exact=True).click()
    panel = page.locator("#jupyter-agent-panel")  # the click opened the side panel
    approval = panel.locator(".jp-AgentPanel-approval", has_text="NotebookEdit")
    approval.wait_for(timeout=60000)
    assert approval.locator(".jp-AgentPanel-add", has_text="len(values)").count() == 1
    assert "this replays fix_error.json" in panel.inner_text()
    cell(page, error).scroll_into_view_if_needed()
    docs_screenshot(page, "fix-with-agent")  # docs/side-panel.md's picture
    approval.get_by_role("button", name="Allow", exact=True).click()
    panel.locator(".jp-AgentPanel-approval", has_text="NotebookRun").get_by_role(
        "button", name="Allow", exact=True).click()
    cell(page, error).locator(".jp-OutputArea-output", has_text="5.333").wait_for(timeout=60000)
    assert "len(values)" in cell_sources(page)[error] and bar.count() == 0
    screenshot(page, "start_here_fixed")

