"""The offline demo as ``./dev demo`` sets it up (no API key, the replay model for every
kernel), tried as a newcomer tries it in real JupyterLab in Chromium: the start-here
notebook's ``%%agent`` cell is stopped, denied, broken (the cell it inserted deleted
before its run), reloaded mid-run, and a prompt goes in from the side panel. After each,
the next run of the cell replays from a clean start and completes (42 under it)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest

from jupyter_agent.environment import REPLAY_ENV
from jupyter_agent.launch import lab_command

from .lab import CELLS, HAVE_BROWSER, END_REASON, Lab, button, cell, cell_sources, click_button, dark_theme, \
    require_browser, run_and_wait, run_cell, save, screenshot, wait_cell_count, wait_idle

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason="needs jupyterlab, playwright and Debian's chromium")

START_HERE = Path(__file__).resolve().parents[2] / "notebooks" / "00-start-here.ipynb"
PANEL = "#jupyter-agent-panel"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab with the environment ``./dev demo`` gives it offline (launch.lab_command)."""
    folder = tmp_path_factory.mktemp("notebooks")
    _, env, note = lab_command(["--notebooks", str(folder)], environ={"PATH": "/usr/bin"})
    assert "OFFLINE" in note
    server = Lab(tmp_path_factory.mktemp("lab"), {REPLAY_ENV: env[REPLAY_ENV],
                                                  "JUPYTER_CONFIG_PATH": env["JUPYTER_CONFIG_PATH"]})
    yield server
    server.close()


def end_of(page, index: int) -> str:
    """Wait for the run in cell ``index`` to end; its end reason."""
    code = cell(page, index).locator("code", has_text=END_REASON).first
    code.wait_for(timeout=90000)
    return code.inner_text()


def the_run_completes(page, agent: int, count: int) -> int:
    """Run the ``%%agent`` cell (``count`` cells in the page), Allow its insert and its run:
    42 under it, the run ``completed``. Returns the new count of cells."""
    run_cell(page, agent)
    click_button(page, "Allow", timeout=90)
    wait_cell_count(page, count + 1)
    assert cell_sources(page)[agent + 1] == "x + 1"
    click_button(page, "Allow", timeout=90)
    cell(page, agent + 1).locator(".jp-OutputArea-output", has_text="42").wait_for(timeout=90000)
    assert end_of(page, agent) == "completed", cell(page, agent).inner_text()
    shown = cell(page, agent).inner_text()
    assert "this replays live_cell.json" in shown and "Model error" not in shown, shown
    return count + 1


@pytest.mark.timeout(600)
def test_the_demo_runs_again_after_a_stop_a_deny_an_error_a_reload_and_a_panel_prompt(lab, page_of):
    shutil.copy(START_HERE, lab.root / "start.ipynb")
    page = page_of("start.ipynb")
    sources = cell_sources(page)
    agent = next(i for i, s in enumerate(sources) if s.startswith("%%agent --replay live_cell"))
    run_and_wait(page, agent - 2)
    run_and_wait(page, agent - 1)
    count = len(sources)

    # Stop while the first card waits
    run_cell(page, agent)
    button(page, "Allow").wait_for(timeout=90000)
    click_button(page, "Stop")
    assert end_of(page, agent) != "completed"
    count = the_run_completes(page, agent, count)

    # Deny the insert (with no note: the run ends there, as Claude Code's does)
    run_cell(page, agent)
    click_button(page, "Deny", timeout=90)
    assert end_of(page, agent) == "aborted_tools"
    assert "denied by you" in cell(page, agent).inner_text()
    count = the_run_completes(page, agent, count)

    # An error: the inserted cell is deleted before its run is allowed
    run_cell(page, agent)
    click_button(page, "Allow", timeout=90)
    wait_cell_count(page, count + 1)
    cell(page, agent + 1).locator(".jp-InputPrompt").click()
    page.keyboard.press("Escape")
    page.keyboard.press("d")
    page.keyboard.press("d")
    wait_cell_count(page, count)
    click_button(page, "Allow", timeout=90)
    end_of(page, agent)
    screenshot(page, "demo_after_an_error", cell(page, agent))
    count = the_run_completes(page, agent, count)

    # A prompt from the side panel: a recording that fits plays, and says so
    page.click(f"li[data-id='{PANEL[1:]}']")
    panel = page.locator(PANEL)
    panel.locator(".jp-AgentPanel-input").fill("Summarise this notebook for me")
    panel.locator(".jp-AgentPanel-input").press("Enter")
    for step in range(2):  # the demo's Read and Edit in its scratch folder
        waiting = panel.locator(".jp-AgentPanel-approval:not([data-state='answered'])")
        waiting.wait_for(timeout=90000)
        card = panel.locator(f".jp-AgentPanel-approval[data-request='{waiting.get_attribute('data-request')}']")
        if step == 1:  # the panel at its default width while a card waits, light and dark
            screenshot(page, "demo_panel_card_light")
            with dark_theme(page):
                screenshot(page, "demo_panel_card_dark")
        card.get_by_role("button", name="Allow", exact=True).click()
        card.wait_for(state="detached", timeout=90000)
    panel.locator(".jp-AgentPanel-runFooter", has_text="3 turns").wait_for(timeout=90000)
    said = panel.inner_text()
    assert "live_cell.json plays only from an %%agent cell" in said and "demo_read_edit.json" in said, said
    assert "Set ANTHROPIC_API_KEY to have your own prompts answered." in said
    count = the_run_completes(page, agent, count)

    # A reload while a card waits, the file autosaved with the last run "✓ Finished": the
    # cell shows the run as it is (its widget comes back only if JupyterLab's widget manager
    # reloads the kernel's models, which it did not here after earlier runs: its fallback
    # says what waits and how to answer), and the panel's buttons finish it
    reload_mid_run(page, lab.root / "start.ipynb", agent)
    shown = cell(page, agent).inner_text()
    assert "Finished" not in shown and "NotebookEdit" in shown, shown
    screenshot(page, "demo_after_a_reload", cell(page, agent))
    panel = page.locator(PANEL)
    if not panel.is_visible():
        page.click(f"li[data-id='{PANEL[1:]}']")
    for tool in ("NotebookEdit", "NotebookRun"):
        card = panel.locator(".jp-AgentPanel-approval:not([data-state='answered'])", has_text=tool)
        card.get_by_role("button", name="Allow", exact=True).click(timeout=90000)
        card.wait_for(state="detached", timeout=90000)
    cell(page, agent + 1).locator(".jp-OutputArea-output", has_text="42").wait_for(timeout=90000)
    assert end_of(page, agent) == "completed", cell(page, agent).inner_text()
    count = the_run_completes(page, agent, count + 1)
    screenshot(page, "demo_after_everything")


def reload_mid_run(page, path: Path, agent: int) -> None:
    """Save the notebook (as JupyterLab's autosave does), run the ``%%agent`` cell, and
    reload the page while its first card waits."""
    cell(page, agent).locator(".jp-InputPrompt").click()
    save(page, path)
    assert "Finished" in json.dumps(nbformat.read(path, 4).cells[agent].outputs)  # what the reload shows
    run_cell(page, agent)
    button(page, "Allow").wait_for(timeout=90000)
    page.reload()
    page.wait_for_selector(CELLS, timeout=120000)
    wait_idle(page)
    # the run as it is: its NotebookEdit waits (the file's outputs say it was done)
    cell(page, agent).locator(".jp-OutputArea-output", has_text="waiting for approval").first.wait_for(timeout=90000)
