"""Old notebooks: every version nbformat reads is readable and editable, and an edit keeps the file's style.

The old files are written by nbformat's own writers for each version (``nbformat.v1``,
``v2``, ``v3``: what IPython 0.x-2.x wrote), plus a v3 file spelled out as IPython 2
saved it (sources and outputs as lists of lines). They are read through the ``Read``
tool and edited through ``NotebookEdit``, as the model would.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import nbformat
import pytest
from nbformat import v1, v2, v3

from jupyter_agent.notebook.nbjson import parse
from tests.tools.conftest import call_tool, ctx, workspace  # noqa: F401 (fixtures)

SNOW = "☃"


def _v1() -> str:
    nb = v1.new_notebook()
    nb.cells.append(v1.new_text_cell(text=f"Old {SNOW} notes"))
    nb.cells.append(v1.new_code_cell(code="x = 6 * 7\nprint(x)", prompt_number=1))
    nb.cells.append(v1.new_code_cell(code="y = 2", prompt_number=2))
    return v1.writes_json(nb)


def _v2() -> str:
    ws = v2.new_worksheet(name="ws")
    ws.cells.append(v2.new_text_cell("markdown", source=f"# {SNOW} Title\nsecond line"))
    ws.cells.append(v2.new_code_cell(input="x = 6 * 7\nx", prompt_number=1, outputs=[
        v2.new_output(output_type="pyout", output_text="42", prompt_number=1)]))
    ws.cells.append(v2.new_code_cell(input="y = 2", prompt_number=2))
    return v2.writes_json(v2.new_notebook(worksheets=[ws], metadata=v2.new_metadata(name="old")))


def _v3() -> str:
    ws = v3.new_worksheet()
    ws.cells.append(v3.new_heading_cell(f"{SNOW} Title", level=1))
    ws.cells.append(v3.new_code_cell(input="x = 6 * 7\nx", prompt_number=1, outputs=[
        v3.new_output(output_type="pyout", output_text="42", prompt_number=1)]))
    ws.cells.append(v3.new_code_cell(input="y = 2", prompt_number=2))
    return v3.writes_json(v3.new_notebook(worksheets=[ws], metadata=v3.new_metadata()))


#: IPython 2.x's own bytes: indent 1, sorted keys, raw UTF-8, every text a list of lines.
IPYTHON2_V3 = """{
 "metadata": {
  "name": "",
  "signature": "sha256:9a1f"
 },
 "nbformat": 3,
 "nbformat_minor": 0,
 "worksheets": [
  {
   "cells": [
    {
     "cell_type": "heading",
     "level": 1,
     "metadata": {},
     "source": [
      "☃ Title"
     ]
    },
    {
     "cell_type": "code",
     "collapsed": false,
     "input": [
      "x = 6 * 7\\n",
      "x"
     ],
     "language": "python",
     "metadata": {},
     "outputs": [
      {
       "metadata": {},
       "output_type": "pyout",
       "prompt_number": 1,
       "text": [
        "42"
       ]
      }
     ],
     "prompt_number": 1
    },
    {
     "cell_type": "code",
     "collapsed": false,
     "input": [
      "y = 2"
     ],
     "language": "python",
     "metadata": {},
     "outputs": [],
     "prompt_number": 2
    }
   ],
   "metadata": {}
  }
 ]
}"""

OLD = {"v1": _v1, "v2": _v2, "v3": _v3, "v3_ipython2": lambda: IPYTHON2_V3}


def _as_v4(text: str) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return json.loads(nbformat.writes(nbformat.reads(text, as_version=4)))


@pytest.mark.parametrize("name", list(OLD))
async def test_old_notebooks_are_read_and_edited_through_nbformats_upgrade(ctx, workspace: Path, name):
    original = OLD[name]()
    path = workspace / "old.ipynb"
    path.write_text(original, encoding="utf-8")

    read = await call_tool(ctx, "Read", {"file_path": str(path)})
    assert not read.get("is_error"), read["content"]
    assert '<cell id="cell-0" type="markdown">' in read["content"] and SNOW in read["content"]
    assert '<cell id="cell-1" type="code" execution_count="1">x = 6 * 7\n' in read["content"]
    assert "not a readable notebook" not in read["content"]

    result = await call_tool(ctx, "NotebookEdit", {"notebook_path": str(path), "cell_id": "cell-2",
                                                   "new_source": "y = 3"})
    assert not result.get("is_error"), result["content"]
    assert "upgraded to nbformat 4.5 by nbformat's own conversion" in result["content"]

    data = json.loads(path.read_text(encoding="utf-8"))
    nbformat.validate(data)
    assert (data["nbformat"], data["nbformat_minor"]) == (4, 5)
    expected = _as_v4(original)
    for index, (got, want) in enumerate(zip(data["cells"], expected["cells"], strict=True)):
        got, want = dict(got), dict(want)
        got.pop("id"), want.pop("id")
        if index == 2:
            assert got["source"] == ["y = 3"] and got["outputs"] == []
        else:
            assert got == want  # exactly what nbformat's upgrade makes of it
    # Edits keep working on the upgraded file, by its new ids or by index.
    again = await call_tool(ctx, "NotebookEdit", {"notebook_path": str(path), "cell_id": data["cells"][0]["id"],
                                                  "new_source": "# New"})
    assert not again.get("is_error") and "upgraded" not in again["content"]


@pytest.mark.parametrize("ascii_file", [True, False])
async def test_an_upgraded_old_notebook_keeps_its_way_of_writing_non_ascii(ctx, workspace: Path, ascii_file):
    text = IPYTHON2_V3
    if ascii_file:  # IPython 0.x wrote with json's default: every non-ASCII character escaped
        text = json.dumps(json.loads(text), indent=1, sort_keys=True)
    path = workspace / "old.ipynb"
    path.write_text(text, encoding="utf-8")
    await call_tool(ctx, "Read", {"file_path": str(path)})
    await call_tool(ctx, "NotebookEdit", {"notebook_path": str(path), "cell_id": "cell-2", "new_source": "z = 'é'"})
    written = path.read_text(encoding="utf-8")
    assert written.isascii() is ascii_file
    assert ("\\u2603" in written) is ascii_file and (SNOW in written) is not ascii_file
    assert '\n "cells": [\n  {\n   "cell_type": "markdown",' in written  # indent 1, as the file had it


async def test_a_format_nbformat_cannot_read_says_which_it_can(ctx, workspace: Path):
    path = workspace / "future.ipynb"
    path.write_text(json.dumps({"nbformat": 9, "nbformat_minor": 0, "sheets": []}))
    result = await call_tool(ctx, "Read", {"file_path": str(path)})
    assert "Unsupported notebook format 9.0: nbformat reads versions 1, 2, 3, 4" in result["content"]


# --- v4 before cell ids: the edit keeps every other byte ------------------------------------

SCRIPTS = {
    "snowman": "Let it ☃ snow ☃",
    "cjk": "数据分析 データ分析 데이터 분석",
    "arabic": "تحليل البيانات — مرحبا",
    "emoji_astral": "plots 📈🎉 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛",
    "combining": "e\u0301te\u0301 Z\u0324\u0354\u0367\u0311 n\u0303",
}


def _v40(script: str) -> dict:
    return {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": [f"# {script}\n", script]},
            {"cell_type": "code", "execution_count": 1, "metadata": {"tags": [script]},
             "outputs": [{"name": "stdout", "output_type": "stream", "text": [f"{script}\n"]}],
             "source": [f"print({script!r})"]},
            {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": ["x = 1"]},
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                     "title": script, "ratio": 0.5},
        "nbformat": 4, "nbformat_minor": 0,
    }


def _mixed(data: dict) -> str:
    """A file two programs wrote: raw UTF-8 (Jupyter), but its metadata re-saved by a
    script with ``json.dump``'s default escapes."""
    text = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    meta = json.dumps(data["metadata"]["title"])
    return text.replace(f'"title": {json.dumps(data["metadata"]["title"], ensure_ascii=False)}', f'"title": {meta}')


WRITERS = {
    "jupyter_raw": lambda d: json.dumps(d, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
    "python_escaped": lambda d: json.dumps(d, indent=1, sort_keys=True),
    "indent2_escaped": lambda d: json.dumps(d, indent=2, sort_keys=True) + "\n",
    "compact_raw": lambda d: json.dumps(d, separators=(",", ":"), ensure_ascii=False),
    "js_unsorted_raw": lambda d: json.dumps(
        {"metadata": d["metadata"], "nbformat": 4, "nbformat_minor": 0,
         "cells": [dict(reversed(list(c.items()))) for c in d["cells"]]}, indent=2, ensure_ascii=False),
    "mixed": _mixed,
    "float_spelling": lambda d: (json.dumps(d, indent=1, sort_keys=True, ensure_ascii=False) + "\n").replace(
        '"ratio": 0.5', '"ratio": 5e-1'),
}


def _without_id(cell_text: str) -> str:
    """A cell's text with the ``id`` member the upgrade spliced in taken out again."""
    for pattern in (r'"id":\s*"[0-9a-zA-Z_-]+",\s*', r',\s*"id":\s*"[0-9a-zA-Z_-]+"'):
        stripped, count = re.subn(pattern, "", cell_text, count=1)
        if count:
            return stripped
    raise AssertionError(f"no id in {cell_text!r}")


@pytest.mark.parametrize("writer", list(WRITERS))
@pytest.mark.parametrize("script", list(SCRIPTS))
async def test_editing_a_v40_notebook_keeps_every_other_byte(ctx, workspace: Path, script, writer):
    original = WRITERS[writer](_v40(SCRIPTS[script]))
    path = workspace / "v40.ipynb"
    path.write_bytes(original.encode("utf-8"))
    await call_tool(ctx, "Read", {"file_path": str(path)})
    result = await call_tool(ctx, "NotebookEdit", {"notebook_path": str(path), "cell_id": "cell-2",
                                                   "new_source": f"y = '{SCRIPTS[script]}'"})
    assert not result.get("is_error"), result["content"]
    assert "upgraded it to nbformat 4.5" in result["content"]

    written = path.read_bytes().decode("utf-8")
    data = json.loads(written)
    nbformat.validate(data)
    assert data["cells"][2]["source"] == [f"y = '{SCRIPTS[script]}'"]
    old, new = parse(original), parse(written)
    # Before and after the cells: the same bytes, but for nbformat_minor.
    def outside(nt, minor):
        text = nt.text[: nt.cells_span[0]] + "<cells>" + nt.text[nt.cells_span[1]:]
        return re.sub(r'("nbformat_minor":\s*)\d', rf"\g<1>{minor}", text)

    assert outside(new, 5) == outside(old, 5) and data["nbformat_minor"] == 5
    # The untouched cells: the same bytes, once the spliced-in id is taken out.
    for index in (0, 1):
        assert _without_id(new.text[slice(*new.cell_spans[index])]) == old.text[slice(*old.cell_spans[index])]
    # The edited cell is written the way the file writes: escapes or raw, its indent.
    edited = new.text[slice(*new.cell_spans[2])]
    assert edited.isascii() == old.style.ensure_ascii
    assert new.style == old.style
