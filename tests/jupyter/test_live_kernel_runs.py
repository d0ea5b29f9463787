"""KernelRun and NotebookRunCells on the notebook open in real JupyterLab, from an
``%%agent`` cell: the code and the cells run in the user's kernel (the kernel's client of
itself, ``jupyter/bridge/self_client.py``); a scratch run shows in no cell and saves nothing."""

from __future__ import annotations

import json

import pytest

from jupyter_agent.testing import response, text, tool_use

from .lab import (HAVE_BROWSER, cell, cell_sources, require_browser, run_and_wait, run_cell, screenshot,
                  wait_for_end, write_notebook)

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason="needs jupyterlab, playwright and Debian's chromium")


def _results(api) -> dict[str, str]:
    """Every tool_result the model was sent, by tool_use id, as text."""
    out = {}
    for message in api.requests[-1].body["messages"]:
        for block in message.get("content") if isinstance(message.get("content"), list) else []:
            if block.get("type") == "tool_result":
                content = block.get("content")
                out[block["tool_use_id"]] = content if isinstance(content, str) else json.dumps(content)
    return out


def test_a_scratch_run_and_a_range_run_in_the_users_kernel(lab, page_of, script, api):
    nb = lab.root / "scratch.ipynb"
    write_notebook(nb, ["x = 41", '%load_ext jupyter_agent\n%config AgentConfig.allow = ["NotebookRun"]',
                        "%%agent --permission-mode bypassPermissions\ncheck x, then run the rest",
                        "y = x + 1", "print('y is', y)", "z = y / 0", "print('never')"],
                   ids=["setx", "load", "agent", "c1", "c2", "c3", "c4"])
    scratch = tool_use("KernelRun", {"notebook_path": str(nb), "code": "seen = x\nprint('x is', seen)"})
    read = tool_use("Read", {"file_path": str(nb)})
    cells = tool_use("NotebookRunCells", {"notebook_path": str(nb), "from_cell_id": "c1"})
    script(response(scratch), response(read), response(cells), response(text("Checked.")))
    page = page_of("scratch.ipynb")
    run_and_wait(page, 0)
    run_and_wait(page, 1)
    run_cell(page, 2)
    try:
        wait_for_end(page, timeout=90000)
    finally:
        screenshot(page, "live_kernel_runs")
    results = _results(api)
    assert results[scratch["id"]] == ("Ran the code in the notebook's kernel (nothing was saved into the "
                                      "notebook).\nx is 41")
    # the Read of the open notebook: the user's kernel running, what ran and what never did
    seen = results[read["id"]]
    assert f'kernel="running" working_folder="{lab.root}"' in seen, seen
    assert '<cell id="setx" type="code" execution_count="1">x = 41</cell>' in seen
    assert '<cell id="c4" type="code" never_run="true">print(\'never\')</cell>' in seen
    assert "stale" not in seen
    ran = results[cells["id"]]
    assert ran.startswith("Ran 3 of 4 code cells: c1, c2, c3.\nCell c3 raised ZeroDivisionError")
    assert "Not run: c4." in ran and "y is 42" in ran
    # the scratch run is in no cell; the range's outputs are in theirs, the last cell never ran
    assert cell_sources(page) == ["x = 41", '%load_ext jupyter_agent\n%config AgentConfig.allow = ["NotebookRun"]',
                                  "%%agent --permission-mode bypassPermissions\ncheck x, then run the rest",
                                  "y = x + 1", "print('y is', y)", "z = y / 0", "print('never')"]
    assert "x is 41" not in page.locator(".jp-Notebook").inner_text()
    assert "y is 42" in cell(page, 4).locator(".jp-OutputArea").inner_text()
    assert "ZeroDivisionError" in cell(page, 5).locator(".jp-OutputArea").inner_text()
    assert cell(page, 6).locator(".jp-OutputArea-output").count() == 0
    # the names the scratch run and the cells made are the run's "variables changed"
    assert "seen" in cell(page, 2).inner_text() and "variables changed" in cell(page, 2).inner_text()
