"""Grep inside notebooks: hits name the cell (and the line within it), never a JSON line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use

from .conftest import call_tool
from .test_tools_through_loop import result_text, results_sent, run_script

#: A cell source with quotes and backslashes: JSON stores it as ``"path = \"C:\\\\data\\\\new\"\n"``.
TRICKY = 'x = 1\npath = "C:\\\\data\\\\new"\nTHRESHOLD = 0.5\nprint(f"{THRESHOLD=}")'


def write_notebook(path: Path) -> Path:
    nb = new_notebook(cells=[
        new_markdown_cell('# Threshold\nSay "why" here.'),
        new_code_cell(TRICKY, outputs=[new_output("stream", name="stdout", text="THRESHOLD=0.5\n")]),
        new_code_cell("y = 2\nz = 3", outputs=[new_output("execute_result", execution_count=3,
                                                           data={"text/plain": "5  # not a THRESHOLD"})]),
    ])
    for cell, cell_id in zip(nb.cells, ("m1", "c85", "c86")):
        cell.id = cell_id
    nbformat.write(nb, path)
    return path


async def test_a_hit_names_its_cell_through_the_loop(workspace):
    write_notebook(workspace / "nb.ipynb")
    (workspace / "a.py").write_text("THRESHOLD = 1\n")
    calls = [tool_use("Grep", {"pattern": "THRESHOLD", "output_mode": "content"}),
             tool_use("Grep", {"pattern": r'"C:\\\\data', "output_mode": "content", "path": "nb.ipynb"}),
             tool_use("Grep", {"pattern": "THRESHOLD", "output_mode": "count"})]
    with FakeMessagesAPI([response(*calls), response(text("found"))]) as api:
        await run_script(api, "search", workspace)
    results = results_sent(api, 1)
    assert result_text(results[calls[0]["id"]]).splitlines() == [
        "a.py:1:THRESHOLD = 1",
        "nb.ipynb [cell c85] 3: THRESHOLD = 0.5",
        'nb.ipynb [cell c85] 4: print(f"{THRESHOLD=}")',
        "nb.ipynb [cell c85 output] 1: THRESHOLD=0.5",
        "nb.ipynb [cell c86 output] 1: 5  # not a THRESHOLD",
    ]
    # The pattern meets the source as it is (quotes and one pair of backslashes), not its JSON escapes.
    assert result_text(results[calls[1]["id"]]) == '[cell c85] 2: path = "C:\\\\data\\\\new"'
    assert result_text(results[calls[2]["id"]]).splitlines()[:2] == ["a.py:1", "nb.ipynb:4"]


async def test_json_structure_never_matches(ctx, workspace):
    write_notebook(workspace / "nb.ipynb")
    for pattern in ("cell_type", "execution_count", "outputs", "nbformat", r'\\n",'):
        result = await call_tool(ctx, "Grep", {"pattern": pattern})
        assert result["content"] == "No files found", pattern
    found = await call_tool(ctx, "Grep", {"pattern": "Say \"why\""})
    assert found["content"] == "Found 1 file\nnb.ipynb"


async def test_context_stays_inside_the_cell(ctx, workspace):
    write_notebook(workspace / "nb.ipynb")
    result = await call_tool(ctx, "Grep", {"pattern": "^y = 2", "output_mode": "content", "-C": 3})
    assert result["content"].splitlines() == ["nb.ipynb [cell c86] 1: y = 2", "nb.ipynb [cell c86] 2- z = 3"]
    result = await call_tool(ctx, "Grep", {"pattern": "^x = 1", "output_mode": "content", "-A": 1,
                                           "path": "nb.ipynb", "-n": False})
    assert result["content"].splitlines() == ["[cell c85]: x = 1", '[cell c85]- path = "C:\\\\data\\\\new"']


async def test_head_limit_and_type_apply_to_notebooks(ctx, workspace):
    write_notebook(workspace / "nb.ipynb")
    (workspace / "a.py").write_text("THRESHOLD = 1\n")
    result = await call_tool(ctx, "Grep", {"pattern": "THRESHOLD", "output_mode": "content", "head_limit": 2})
    assert result["content"].splitlines()[:2] == ["a.py:1:THRESHOLD = 1", "nb.ipynb [cell c85] 3: THRESHOLD = 0.5"]
    assert "[Showing the first 2 of 5 results.]" in result["content"]
    only = await call_tool(ctx, "Grep", {"pattern": "THRESHOLD", "type": "py"})
    assert only["content"] == "Found 1 file\na.py"
    notebooks = await call_tool(ctx, "Grep", {"pattern": "THRESHOLD", "glob": "*.ipynb", "output_mode": "count"})
    assert notebooks["content"].splitlines()[0] == "nb.ipynb:4"


async def test_a_notebook_without_ids_shows_the_ids_read_shows(ctx, workspace):
    nb = new_notebook(cells=[new_code_cell("a = 1"), new_code_cell("needle = 2")])
    nb.nbformat_minor = 4
    for cell in nb.cells:
        del cell["id"]
    (workspace / "old.ipynb").write_text(nbformat.writes(nb, version=4))
    result = await call_tool(ctx, "Grep", {"pattern": "needle", "output_mode": "content"})
    assert result["content"] == "old.ipynb [cell cell-1] 1: needle = 2"
    read = await call_tool(ctx, "Read", {"file_path": "old.ipynb"})
    assert '<cell id="cell-1"' in str(read["content"])


async def test_a_notebook_that_is_not_json_is_searched_as_raw_lines_and_says_so(ctx, workspace):
    (workspace / "broken.ipynb").write_text('{"cells": [\n  {"source": "needle = 1"\n')
    result = await call_tool(ctx, "Grep", {"pattern": "needle", "output_mode": "content"})
    lines = result["content"].splitlines()
    assert lines[0] == 'broken.ipynb:2:  {"source": "needle = 1"'
    assert lines[-1].startswith("[broken.ipynb: not valid JSON (") and lines[-1].endswith(
        "): its hits are raw lines of the file.]")
    listed = await call_tool(ctx, "Grep", {"pattern": "needle"})
    assert listed["content"].startswith("Found 1 file\nbroken.ipynb\n\n[broken.ipynb: not valid JSON")


async def test_a_notebook_of_5000_cells(ctx, workspace):
    cells = [new_code_cell(f"value_{i} = {i}\nprint(value_{i})",
                           outputs=[new_output("stream", name="stdout", text=f"{i}\n")]) for i in range(5000)]
    for i, cell in enumerate(cells):
        cell.id = f"k{i}"
    nbformat.write(new_notebook(cells=cells), workspace / "big.ipynb")
    result = await call_tool(ctx, "Grep", {"pattern": r"^value_4321 =", "output_mode": "content"})
    assert result["content"] == "big.ipynb [cell k4321] 1: value_4321 = 4321"
    outputs = await call_tool(ctx, "Grep", {"pattern": "^4999$", "output_mode": "content"})
    assert outputs["content"] == "big.ipynb [cell k4999 output] 1: 4999"
    counted = await call_tool(ctx, "Grep", {"pattern": "print", "output_mode": "count"})
    assert counted["content"].splitlines()[0] == "big.ipynb:5000"


async def test_errors_are_searched_without_colours_and_ignored_notebooks_are_not(ctx, workspace):
    error = new_output("error", ename="ZeroDivisionError", evalue="division by zero",
                       traceback=["\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"])
    nb = new_notebook(cells=[new_code_cell("1 / 0", outputs=[error])])
    nb.cells[0].id = "boom"
    nbformat.write(nb, workspace / "e.ipynb")
    (workspace / "skip").mkdir()
    nbformat.write(nb, workspace / "skip" / "e.ipynb")
    (workspace / ".gitignore").write_text("skip/\n")
    result = await call_tool(ctx, "Grep", {"pattern": "^ZeroDivisionError: division", "output_mode": "content"})
    assert result["content"].splitlines() == [
        "e.ipynb [cell boom output] 1: ZeroDivisionError: division by zero",
        "e.ipynb [cell boom output] 2: ZeroDivisionError: division by zero",
    ]


async def test_a_changed_notebook_is_searched_as_it_is_now(ctx, workspace):
    nb = new_notebook(cells=[new_code_cell("needle_a = 1")])
    nb.cells[0].id = "one"
    path = workspace / "n.ipynb"
    nbformat.write(nb, path)
    first = await call_tool(ctx, "Grep", {"pattern": "needle_", "output_mode": "content"})
    assert first["content"] == "n.ipynb [cell one] 1: needle_a = 1"
    stat = path.stat()
    path.write_text(path.read_text().replace("needle_a", "needle_b"))  # the same size: only the mtime tells
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    again = await call_tool(ctx, "Grep", {"pattern": "needle_", "output_mode": "content"})
    assert again["content"] == "n.ipynb [cell one] 1: needle_b = 1"



async def test_only_notebooks_whose_bytes_may_hold_a_hit_are_parsed(ctx, workspace):
    from jupyter_agent.tools import nbsearch

    for n in range(3):
        nb = new_notebook(cells=[new_code_cell(f"value_{n} = {n}")])
        nb.cells[0].id = f"v{n}"
        nbformat.write(nb, workspace / f"n{n}.ipynb")
    with nbsearch._cache_lock:
        nbsearch._cache.clear()
        nbsearch._cache_chars = 0
    result = await call_tool(ctx, "Grep", {"pattern": r"^value_1\s+=", "output_mode": "content"})
    assert result["content"] == "n1.ipynb [cell v1] 1: value_1 = 1"
    assert [os.path.basename(path) for path, _, _ in nbsearch._cache] == ["n1.ipynb"]  # the others: not parsed
    every = await call_tool(ctx, "Grep", {"pattern": "value_", "output_mode": "count"})
    assert every["content"].splitlines()[:3] == ["n0.ipynb:1", "n1.ipynb:1", "n2.ipynb:1"]


async def test_hits_the_raw_bytes_do_not_spell_out_are_found(ctx, workspace):
    # A source JSON escapes (\u0076 is "v"), a Kelvin sign that ripgrep's -i folds with k, and an
    # error without a name (shown as "Error: ..."): each view holds a hit its file's bytes lack.
    (workspace / "escaped.ipynb").write_text(json.dumps(
        {"cells": [{"cell_type": "code", "id": "esc", "metadata": {}, "outputs": [], "execution_count": None,
                    "source": ["\\u0076alue_9 = 1\n"]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
    ).replace("\\\\u0076", "\\u0076"))
    kelvin = new_notebook(cells=[new_code_cell("t = 3  # \u212aelvin")])
    kelvin.cells[0].id = "kel"
    nbformat.write(kelvin, workspace / "kelvin.ipynb")
    nameless = new_notebook(cells=[new_code_cell("boom()", outputs=[new_output("error", ename="", evalue="oops",
                                                                               traceback=[])])])
    nameless.cells[0].id = "err"
    nbformat.write(nameless, workspace / "nameless.ipynb")
    found = await call_tool(ctx, "Grep", {"pattern": "value_9 =", "output_mode": "content"})
    assert found["content"] == "escaped.ipynb [cell esc] 1: value_9 = 1"
    folded = await call_tool(ctx, "Grep", {"pattern": "kelvin", "-i": True, "output_mode": "content"})
    assert folded["content"] == "kelvin.ipynb [cell kel] 1: t = 3  # \u212aelvin"
    named = await call_tool(ctx, "Grep", {"pattern": "^Error", "output_mode": "content"})
    assert named["content"] == "nameless.ipynb [cell err output] 1: Error: oops"
