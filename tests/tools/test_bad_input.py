"""Every malformed call gets an is_error result that says what to fix, and changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from .conftest import call_tool, tree_bytes


@pytest.fixture
def seeded(ctx, workspace: Path):
    (workspace / "a.txt").write_text("alpha\nbeta\n")
    (workspace / "folder").mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# T", id="md1"), nbformat.v4.new_code_cell("1 + 1", id="code1")]
    (workspace / "ok.ipynb").write_text(nbformat.writes(nb))
    (workspace / "broken.ipynb").write_text('{"cells": [')
    (workspace / "latin.ipynb").write_bytes(b'{"cells": [], "note": "caf\xe9"}')
    (workspace / "v5.ipynb").write_text(json.dumps({"nbformat": 5, "cells": []}))
    return ctx


# (tool, input, a phrase the message must contain)
CASES = [
    ("Read", {}, "`file_path` is missing"),
    ("Read", {"file_path": 5}, "`file_path` is invalid"),
    ("Read", {"file_path": ""}, "file_path is empty"),
    ("Read", {"file_path": "   "}, "file_path is empty"),
    ("Read", {"file_path": "a.txt", "offset": -1}, "`offset` is invalid"),
    ("Read", {"file_path": "a.txt", "limit": 0}, "`limit` is invalid"),
    ("Read", {"file_path": "a.txt", "limit": "ten"}, "`limit` is invalid"),
    ("Read", {"file_path": "a.txt", "pages": "1-2"}, "PDF files only"),
    ("Read", {"file_path": "x" * 5000}, "at most 4096"),
    ("Read", {"file_path": "folder"}, "is a directory"),
    ("Read", {"file_path": "nope/none.txt"}, "does not exist"),
    ("Write", {"file_path": "a.txt"}, "`content` is missing"),
    ("Write", {"file_path": "a.txt", "content": ["x"]}, "`content` is invalid"),
    ("Write", {"file_path": "folder", "content": "x"}, "is a directory"),
    ("Write", {"file_path": "new.txt", "content": "x" * 10_000_001}, "the limit is 10,000,000"),
    ("Write", {"file_path": "new.ipynb", "content": "{not json"}, "not a valid Jupyter notebook"),
    ("Write", {"file_path": "new.ipynb", "content": '{"cells": []}'}, "not a valid Jupyter notebook"),
    ("Edit", {"file_path": "a.txt", "new_string": "x"}, "`old_string` is missing"),
    ("Edit", {"file_path": "a.txt", "old_string": "alpha", "new_string": "alpha"}, "No changes to make"),
    ("Edit", {"file_path": "a.txt", "old_string": "alpha", "new_string": "b", "replace_all": "perhaps"},
     "`replace_all` is invalid"),
    ("Edit", {"file_path": "folder", "old_string": "a", "new_string": "b"}, "is a directory"),
    ("Edit", {"file_path": "ghost.txt", "old_string": "a", "new_string": "b"}, "does not exist"),
    ("Glob", {"pattern": ""}, "pattern is empty"),
    ("Glob", {"pattern": 3}, "`pattern` is invalid"),
    ("Glob", {"pattern": "*", "path": ""}, "path is empty"),
    ("Glob", {"pattern": "*", "path": "ghost"}, "does not exist"),
    ("Glob", {"pattern": "**/../*"}, "may not contain '..'"),
    ("Grep", {"pattern": ""}, "pattern is empty"),
    ("Grep", {"pattern": "x", "output_mode": "lines"}, "`output_mode` is invalid"),
    ("Grep", {"pattern": "x", "head_limit": 0}, "`head_limit` is invalid"),
    ("Grep", {"pattern": "x", "-A": -1}, "`-A` is invalid"),
    ("Grep", {"pattern": "x", "type": "cobol"}, "Unknown type"),
    ("Grep", {"pattern": "x", "glob": " "}, "glob is empty"),
    ("Grep", {"pattern": "x", "path": "ghost"}, "does not exist"),
    ("Grep", {"pattern": "[unclosed"}, "regular expression"),
    ("NotebookEdit", {"notebook_path": "a.txt", "new_source": "x", "cell_id": "md1"}, "must be a Jupyter notebook"),
    ("NotebookEdit", {"notebook_path": "ok.ipynb", "new_source": "x", "cell_id": "<script>"}, "not a valid cell id"),
    ("NotebookEdit", {"notebook_path": "ok.ipynb", "new_source": "x", "cell_id": "a" * 65}, "not a valid cell id"),
    ("NotebookEdit", {"notebook_path": "ok.ipynb", "new_source": "x", "cell_id": ""}, "cell_id is empty"),
    ("NotebookEdit", {"notebook_path": "ok.ipynb", "new_source": "x", "cell_id": "md1", "edit_mode": "append"},
     "`edit_mode` is invalid"),
    ("NotebookEdit", {"notebook_path": "ok.ipynb", "new_source": "x", "cell_id": "md1", "cell_type": "raw"},
     "`cell_type` is invalid"),
    ("NotebookEdit", {"notebook_path": "ok.ipynb", "new_source": "x", "edit_mode": "insert"}, "Cell type is required"),
    ("NotebookEdit", {"notebook_path": "ok.ipynb", "new_source": "x"}, "Cell ID must be specified"),
    ("NotebookEdit", {"notebook_path": "ok.ipynb", "new_source": "x", "cell_id": "nope"}, "not found in notebook"),
    ("NotebookEdit", {"notebook_path": "ok.ipynb", "new_source": "x", "cell_id": "cell-9"}, "out of range"),
    ("NotebookEdit", {"notebook_path": "broken.ipynb", "new_source": "x", "cell_id": "cell-0"}, "not valid JSON"),
    ("NotebookEdit", {"notebook_path": "latin.ipynb", "new_source": "x", "cell_id": "cell-0"}, "not valid UTF-8"),
    ("NotebookEdit", {"notebook_path": "v5.ipynb", "new_source": "x", "cell_id": "cell-0"}, "Unsupported notebook"),
    ("NotebookEdit", {"notebook_path": "folder.ipynb", "new_source": "x", "cell_id": "c"}, "does not exist"),
    ("NotebookRun", {"notebook_path": "ok.ipynb"}, "`cell_id` is missing"),
    ("NotebookRun", {"notebook_path": "ok.ipynb", "cell_id": "md1"}, "only code cells can be run"),
    ("NotebookRun", {"notebook_path": "a.txt", "cell_id": "x"}, "Jupyter notebooks"),
    ("Nonexistent", {"x": 1}, "No such tool available"),
]


@pytest.mark.parametrize("tool,args,phrase", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
async def test_malformed_input_is_an_error_that_says_what_to_fix(seeded, workspace, tool, args, phrase):
    if tool.startswith("Notebook") and args.get("notebook_path", "").endswith(".ipynb"):
        # Read first where possible, so the error is about the argument, not about reading.
        await call_tool(seeded, "Read", {"file_path": args["notebook_path"]})
    before = tree_bytes(workspace)
    result = await call_tool(seeded, tool, args)
    assert result.get("is_error") is True, result
    assert phrase in result["content"], result["content"]
    assert tree_bytes(workspace) == before


async def test_broken_notebook_reads_as_text_so_it_can_be_repaired(seeded):
    result = await call_tool(seeded, "Read", {"file_path": "broken.ipynb"})
    assert not result.get("is_error") and "not a readable notebook" in result["content"]
    assert '1\t{"cells": [' in result["content"]
    fixed = nbformat.writes(nbformat.v4.new_notebook())
    result = await call_tool(seeded, "Write", {"file_path": "broken.ipynb", "content": fixed})
    assert not result.get("is_error")
