"""Lesson 09 live, with a person: its own cells with ``LIVE = True`` in real JupyterLab in real
Chromium. The answer box holds the scripted answer; the person replaces it (first with something
that is not an answer, which is refused and says why), clicks Send, and the next cell shows the
loop's next request: the person's call, run, with its result.

Skipped unless JupyterLab, Python playwright and /usr/bin/chromium are installed (tests/jupyter/lab.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from tests.jupyter.lab import HAVE_BROWSER, Lab, cell, require_browser, run_and_wait, screenshot, write_notebook

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER,
                                reason="needs jupyterlab, playwright and the Debian chromium package")

LESSON = Path(__file__).resolve().parents[2] / "notebooks" / "09-be-the-model.ipynb"


@pytest.mark.timeout(300)
def test_a_person_answers_the_loop_through_the_lesson_widget(tmp_path):
    code = [c.source for c in nbformat.read(LESSON, as_version=4).cells if c.cell_type == "code"]
    assert code[0].startswith("LIVE = False") and "seat.reply(r1, ANSWERS[0])" == code[3]
    lab = Lab(tmp_path, {"TMPDIR": str(tmp_path)})  # the lesson's scratch folder goes there
    write_notebook(lab.root / "lesson.ipynb", ["LIVE = True", code[1], code[2], code[3], code[4]])
    try:
        page = lab.open("lesson.ipynb", width=1280, height=1400)
        for i in range(3):
            run_and_wait(page, i)
        assert "# request 1" in cell(page, 2).inner_text()
        run_and_wait(page, 3)
        box = cell(page, 3).locator(".jupyter-widgets textarea")
        box.wait_for(timeout=60000)
        assert '"name": "Read"' in box.input_value()  # the scripted answer, as a suggestion
        box.fill('{"content": "Hello"}')
        cell(page, 3).locator(".jupyter-widgets button", has_text="Send answer 1").click()
        cell(page, 3).locator(".jupyter-widgets :text('Not sent')").wait_for(timeout=30000)
        assert "at least one block" in cell(page, 3).inner_text()
        folder = next(tmp_path.glob("lesson-be-the-model-*"))
        mine = [{"type": "text", "text": "Only the notes, please."},
                {"type": "tool_use", "name": "Read", "input": {"file_path": str(folder / "notes.txt")}}]
        box.fill(json.dumps(mine))
        cell(page, 3).locator(".jupyter-widgets button", has_text="Send answer 1").click()
        cell(page, 3).locator(".jupyter-widgets :text('Sent.')").wait_for(timeout=30000)
        run_and_wait(page, 4)
        shown = cell(page, 4).inner_text()
        screenshot(page, "lesson-be-the-model-live")
    finally:
        lab.close()
    assert "# request 2" in shown and "Only the notes, please." in shown
    assert "counter = 41" in shown and "is_error" not in shown  # the person's one call, run
