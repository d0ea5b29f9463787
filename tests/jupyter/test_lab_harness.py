"""The browser-test harness (lab.py) waits for what the page shows *after* an action, so
that a slow machine makes a test slower, not wrong: a run that never happened, or a
restart still under way, is not taken for the state shown before it.

Skipped unless JupyterLab, Python playwright and /usr/bin/chromium are installed.
"""

from __future__ import annotations

import nbformat
import pytest

from .lab import HAVE_BROWSER, cell, command, require_browser, restarted, run_and_wait, save, write_notebook

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason="needs jupyterlab, playwright and Debian's chromium")

# What a run that never reaches the kernel looks like from the page: the keys go nowhere
# (as when Notebook 7 drops a run sent before its kernel connected).
SWALLOW_KEYS = "() => window.addEventListener('keydown', e => e.stopImmediatePropagation(), true)"


def test_run_and_wait_does_not_take_an_earlier_count_for_this_run(lab, page_of):
    write_notebook(lab.root / "rerun.ipynb", ["n = 0", "n += 1\nprint('run', n)"])
    page = page_of("rerun.ipynb")
    run_and_wait(page, 0)
    run_and_wait(page, 1)
    run_and_wait(page, 1)  # the prompt showed [2] before; this run must give [3] and its output
    assert "[3]" in cell(page, 1).locator(".jp-InputPrompt").inner_text()
    assert cell(page, 1).locator(".jp-OutputArea").inner_text().strip() == "run 2"
    page.evaluate(SWALLOW_KEYS)
    with pytest.raises(AssertionError, match="did not run"):
        run_and_wait(page, 1, timeout=3)  # still "[3]" on the page, but nothing ran


def test_restarted_waits_for_the_restart_and_not_the_idle_before_it(lab, page_of):
    path = write_notebook(lab.root / "restart.ipynb", ["x = 1", "print(x)"])
    page = page_of("restart.ipynb")
    run_and_wait(page, 0)
    with pytest.raises(AssertionError, match="did not restart"):
        with restarted(page, timeout=3):
            pass  # idle all along: no restart to wait for
    with restarted(page):
        command(page, "Restart Kernel…")
        page.locator(".jp-Dialog .jp-mod-accept").click()
    seen = page.evaluate("() => window.__jaStatuses")
    assert "restarting" in seen and "idle" in seen[seen.index("restarting"):]  # (busy may follow: kernel_info)
    run_and_wait(page, 1)  # a new kernel: x is gone, and this is its first execution
    assert "[1]" in cell(page, 1).locator(".jp-InputPrompt").inner_text()
    assert "NameError" in cell(page, 1).locator(".jp-OutputArea").inner_text()
    # save() returns once the file on disk has what the page shows
    page.locator(".jp-Notebook").click(position={"x": 5, "y": 5})
    save(page, path)
    assert "NameError" in str(nbformat.read(path, as_version=4).cells[1].outputs)
