"""Outputs by reference (``jupyter/outside/outside_read.py``) on a real ``.ipynb`` read through nbformat:
read_cells lists each output compactly, read_output returns one whole within its bound, text
as head and tail, an image as an image, markup as text, secrets redacted, and a reference to
nothing is a clear error. (Over MCP, against a page: tests/jupyter/test_mcp_server_browser.py.)"""

from __future__ import annotations

import asyncio

import pytest

from jupyter_agent.jupyter.outside.outside_read import NoSuchOutput, cells_content, output_content
from jupyter_agent.notebook.file_backend import FileNotebook

from .outputs import LOG_LINES, PNG, SECRET, log_text, write_outputs_notebook


@pytest.fixture
def snapshot(tmp_path):
    path = write_outputs_notebook(tmp_path / "outs.ipynb", ["x = 1"])
    return asyncio.run(FileNotebook(path).snapshot())


def text_of(blocks):
    return "\n".join(b["text"] for b in blocks if b["type"] == "text")


def test_read_cells_lists_outputs_by_reference_never_whole(snapshot):
    blocks = cells_content(snapshot, 0, 20, 4_000)
    text = text_of(blocks)
    assert [b["type"] for b in blocks] == ["text"]  # no image: the listing names it
    assert len(text) < 4_000  # a 72,000-character log is a line
    assert f"[0] stream stdout, {len(log_text()):,} characters: log line 00000" in text
    assert "more characters]" in text and f"log line {LOG_LINES - 1:05d}" not in text
    assert "[0] display_data, image/png 69 bytes, text/plain 29 characters" in text
    assert "<Figure size 1x1 with 1 Axes>" in text
    assert "[1] execute_result" in text and "[0] error ZeroDivisionError" in text
    assert "read_output" in text
    assert SECRET not in text and SECRET[:20] not in text and "[redacted" in text


def test_a_huge_output_comes_back_as_head_and_tail(snapshot):
    text = text_of(output_content(snapshot, "log", 0, 2_000))
    assert len(text) < 3_000
    assert text.startswith("Output 0 of cell log (1 of 1): stream stdout")
    assert "log line 00000" in text and f"log line {LOG_LINES - 1:05d}" in text  # head and tail
    assert "cut from the middle of this output" in text
    whole = text_of(output_content(snapshot, "log", 0, 100_000))
    assert "cut from the middle" not in whole and log_text().rstrip("\n") in whole


def test_an_image_comes_back_as_an_image(snapshot):
    blocks = output_content(snapshot, "img", 0, 20_000)
    images = [b for b in blocks if b["type"] == "image"]
    assert images == [{"type": "image", "data": PNG, "mime_type": "image/png"}]
    assert "<Figure size 1x1 with 1 Axes>" in text_of(blocks)


def test_secrets_are_redacted_and_markup_is_text(snapshot):
    text = text_of(output_content(snapshot, "sec", 0, 20_000))
    assert SECRET not in text and "[redacted" in text
    html = text_of(output_content(snapshot, "sec", 1, 20_000))
    assert "--- text/html (as text) ---\n<b>bold</b><script>" in html and "Bold()" in html
    error = text_of(output_content(snapshot, "err", 0, 20_000))
    assert "ZeroDivisionError: division by zero" in error and "\x1b" not in error


@pytest.mark.parametrize(("cell_id", "index", "says"), [
    ("nope", 0, "No cell 'nope'"), ("log", 1, "Cell log has one output, 0; there is no output 1"),
    ("sec", 5, "Cell sec has outputs 0 to 1; there is no output 5"), ("c0", 0, "Cell c0 has no outputs")])
def test_a_reference_to_nothing_is_a_clear_error(snapshot, cell_id, index, says):
    with pytest.raises(NoSuchOutput, match=says):
        output_content(snapshot, cell_id, index, 20_000)
