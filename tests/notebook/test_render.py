"""What the model sees of a notebook: cell blocks, outputs, images, hints, pages."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook, new_output

from jupyter_agent.notebook import FileNotebook, MemoryNotebook
from jupyter_agent.notebook.render import render_notebook

from .corpus import PNG, corpus


async def snapshot_of(tmp_path: Path, text: str):
    path = tmp_path / "n.ipynb"
    path.write_text(text)
    return await FileNotebook(path).snapshot()


def texts(content) -> str:
    return content if isinstance(content, str) else "\n".join(b["text"] for b in content if b["type"] == "text")


async def test_cells_render_as_claude_code_does(tmp_path):
    page = render_notebook(await snapshot_of(tmp_path, corpus()["lab_v45"]))
    body = texts(page.content)
    assert body.startswith(f'<notebook path="{tmp_path / "n.ipynb"}" cells="6">\n'
                           '<cell id="intro" type="markdown"># Analyse 📈\n')
    assert "日本語のテキスト</cell>\n" in body
    assert ("<cell id=\"load\" type=\"code\" execution_count=\"1\">import math\nprint('loaded', math.pi)\n"
            "<output>\nloaded 3.141592653589793\n</output>\n</cell>\n") in body
    assert '<cell id="raw-1" type="raw">raw: keep {{ exactly }}</cell>' in body
    assert body.endswith('<cell id="empty_cell" type="code" never_run="true"></cell>\n</notebook>')
    assert not page.partial


async def test_outputs_results_errors_and_images(tmp_path):
    page = render_notebook(await snapshot_of(tmp_path, corpus()["lab_v45"]))
    blocks = page.content
    images = [b for b in blocks if b["type"] == "image"]
    assert len(images) == 1 and images[0]["source"] == {"type": "base64", "media_type": "image/png", "data": PNG}
    body = texts(blocks)
    assert "{'a': 1}" in body and "<IPython.core.display.Image object>" in body
    assert "ZeroDivisionError: division by zero" in body and "\x1b" not in body
    assert "----> 1 1/0" in body  # the traceback, colour codes stripped
    # the image sits between its cell and the next one
    order = [b["type"] for b in blocks]
    assert order == ["text", "image", "text"]


async def test_huge_outputs_keep_their_start_and_end(tmp_path):
    nb = new_notebook()
    loud = new_code_cell("print('x' * 50000)", id="loud")
    loud.outputs = [new_output("stream", name="stdout", text="START" + "x" * 50_000 + "END")]
    nb.cells = [loud, new_code_cell("1", id="quiet")]
    body = texts(render_notebook(await snapshot_of(tmp_path, nbformat.writes(nb))).content)
    assert "Outputs of cell loud had 50,008 characters of text; the middle was cut" in body
    assert "characters cut from the middle of this output" in body and "STARTxx" in body and "xxEND" in body
    assert len(body) < 11_000 and '<cell id="quiet" type="code" never_run="true">1</cell>' in body


async def test_a_big_notebook_pages_by_cells(tmp_path):
    nb = new_notebook()
    nb.cells = [new_code_cell(f"# cell {i}\n" + "y = 1\n" * 100, id=f"c{i}") for i in range(300)]
    snapshot = await snapshot_of(tmp_path, nbformat.writes(nb))
    first = render_notebook(snapshot)
    assert first.partial and first.first == 0 and 50 < first.last < 299
    assert len(first.content) < 110_000
    assert f"To see more, Read with offset={first.last + 1}" in first.content
    second = render_notebook(snapshot, offset=first.last + 1, limit=3)
    assert second.content.split("\n")[1].startswith(f'<cell id="c{first.last + 1}" type="code"')
    assert second.last == first.last + 3
    assert "offset 999 is past the last one" in render_notebook(snapshot, offset=999).content


async def test_images_per_read_are_capped_and_language_is_tagged():
    nb = new_notebook(metadata={"kernelspec": {"name": "ir", "language": "R", "display_name": "R"}})
    for i in range(25):
        cell = new_code_cell(f"plot({i})", id=f"p{i}")
        cell.outputs = [new_output("display_data", data={"image/png": PNG})]
        nb.cells.append(cell)
    snapshot = await MemoryNotebook("r.ipynb", nb).snapshot()
    content = render_notebook(snapshot).content
    assert sum(1 for b in content if b["type"] == "image") == 20
    assert "over 20 images in one read" in texts(content)
    assert '<cell id="p0" type="code" language="r">plot(0)\n<output>' in texts(content)
