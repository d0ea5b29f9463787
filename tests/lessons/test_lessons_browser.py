"""The stepper widget and the timeline in real JupyterLab in real Chromium, then the
saved notebook reopened without the kernel that drew them: the static copy is readable.

Skipped unless JupyterLab, Python playwright and /usr/bin/chromium are installed
(docs/design.md, "Browser tests": never download a browser). The servers, pages and
screenshots (tests/output/screenshots/) come from the browser-test harness, tests/jupyter/lab.py.
"""

from __future__ import annotations

import importlib.util

import nbformat
import pytest

from tests.jupyter.lab import HAVE_BROWSER, Lab, cell, require_browser, run_and_wait, save, screenshot, \
    write_notebook

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER,
                                reason="needs jupyterlab, playwright and the Debian chromium package")

SETUP = '''\
from jupyter_agent.lessons import Lesson, Stepper
from jupyter_agent.lessons.widget import StepperView
from jupyter_agent.testing import response, text, tool_use
lesson = Lesson("browser")
notes = lesson.write("notes.txt", "value = 1\\n")
script = [response(text("Reading."), tool_use("Read", {"file_path": str(notes)}, id="toolu_browser_1")),
          response(text("It says value = 1."))]
view = StepperView(Stepper.start("Read notes.txt", model=lesson.model(script), cwd=lesson.dir))
view'''


def _lit(page) -> str:
    """The step lit in the live widget's diagram."""
    return page.locator(".jupyter-widgets td[data-lit='true']").first.get_attribute("data-step")


def _click(page, label: str, lit: str) -> None:
    page.locator(".jupyter-widgets button", has_text=label).first.click()
    page.wait_for_selector(f".jupyter-widgets td[data-step='{lit}'][data-lit='true']", timeout=60000)


@pytest.mark.timeout(400)
def test_stepper_widget_and_timeline_live_then_saved_and_reopened(tmp_path):
    lab = Lab(tmp_path / "live", {"TMPDIR": str(tmp_path)})  # the lesson's folder goes there too
    path = write_notebook(lab.root / "lesson.ipynb", [SETUP, "view.timeline()"])
    try:
        page = lab.open("lesson.ipynb", width=1280, height=1400)
        run_and_wait(page, 0)
        page.wait_for_selector(".jupyter-widgets button:has-text('Next step')", timeout=90000)
        for lit in ("1", "2", "3", "4"):
            _click(page, "Next step", lit)
            if lit == "2":
                page.wait_for_selector(".jupyter-widgets :text('toolu_browser_1') >> visible=true", timeout=30000)
        _click(page, "Back", "3")
        page.wait_for_selector(".jupyter-widgets :text('looking back') >> visible=true", timeout=30000)
        _click(page, "Run to end", "end")
        page.wait_for_selector(".jupyter-widgets :text('Ended:') >> visible=true", timeout=30000)
        widget_text = cell(page, 0).inner_text()
        # the static copy is in the page but hidden while the widget is live
        static = page.locator("[class*='ja-lesson-static']")
        assert static.count() == 1 and not static.first.is_visible()
        run_and_wait(page, 1)
        page.wait_for_selector(".jp-Cell >> nth=1 >> .jp-OutputArea-output img", timeout=30000)
        screenshot(page, "lessons-live")
        page.locator(".jp-Notebook").click(position={"x": 5, "y": 5})
        save(page, path)
        saved = nbformat.read(path, as_version=4)

        assert "Ended: completed" in widget_text and "not that the task is done" in widget_text
        assert "turn_count" in widget_text and "toolu_browser_1" in widget_text
        outputs = saved.cells[0].outputs
        html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
        assert len(html) == 1 and "Ended: <code>completed</code>" in html[0]  # the last state, saved
        assert {"image/svg+xml", "text/html"} <= set(saved.cells[1].outputs[0]["data"])

        # Reopen as someone else's copy, in a fresh browser context: changed content is not
        # trusted (its signature is not the one this server saved), so JupyterLab sanitizes
        # its HTML; the widget's model is gone with the stopped kernel.
        page.context.close()
        lab.shutdown_kernels()
        saved.metadata["reopened"] = True
        nbformat.write(saved, lab.root / "lesson.ipynb")
        page = lab.open("lesson.ipynb", width=1280, height=1400)
        static = page.locator(".jp-Cell >> nth=0 >> .jp-RenderedHTMLCommon", has_text="Ended:")
        static.first.wait_for(timeout=30000)
        assert static.first.is_visible()
        reopened_text = static.first.inner_text()
        assert page.locator(".jp-Cell >> nth=1 >> .jp-OutputArea-output img").first.is_visible()
        screenshot(page, "lessons-reopened")
    finally:
        lab.close()
    assert "Ended: completed" in reopened_text and "toolu_browser_1" in reopened_text
    assert "turn_count" in reopened_text


@pytest.mark.timeout(300)
@pytest.mark.skipif(not importlib.util.find_spec("notebook"), reason="needs the notebook (7) package")
def test_stepper_widget_in_notebook_7(tmp_path):
    server = Lab(tmp_path, {"TMPDIR": str(tmp_path)}, app="notebook")
    write_notebook(server.root / "lesson.ipynb", [SETUP])
    try:
        page = server.open("lesson.ipynb", width=1280, height=1200)
        run_and_wait(page, 0)  # (the page's kernel is connected: open() waited for it)
        try:
            page.wait_for_selector(".jupyter-widgets button:has-text('Next step')", timeout=90000)
        except Exception:
            screenshot(page, "lessons-notebook7-failed")
            raise
        _click(page, "Next step", "1")
        _click(page, "Next turn", "1")  # step 1 of turn 2
        page.wait_for_selector(".jupyter-widgets :text('toolu_browser_1') >> visible=true", timeout=30000)
        _click(page, "Run to end", "end")
        page.wait_for_selector(".jupyter-widgets :text('Ended:') >> visible=true", timeout=30000)
        text = cell(page, 0).inner_text()
        assert not page.locator("[class*='ja-lesson-static']").first.is_visible()
        screenshot(page, "lessons-notebook7")
    finally:
        server.close()
    assert "Ended: completed" in text and "turn_count" in text
