"""`%%agent` in real JupyterLab in real Chromium: Markdown streams into the widget, a
click on Allow runs the write, and the static transcript replaces the widget.

Skipped unless JupyterLab, Python playwright and /usr/bin/chromium are installed
(docs/design.md, "Browser tests": never download a browser). ~10 s.
"""

from __future__ import annotations

import pytest

from jupyter_agent.testing import response, text, thinking, tool_use

from .lab import HAVE_BROWSER, require_browser, run_and_wait, run_cell, write_notebook

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
