"""The nbformat file backend: edits keep every untouched byte, validate, and upgrade old files."""

from __future__ import annotations

import asyncio
import copy
import json
import warnings
from pathlib import Path

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_agent.notebook import FileNotebook, NotebookError, StaleNotebookError
from jupyter_agent.notebook.nbjson import parse

from .corpus import CELL_COUNT, corpus

CORPUS = corpus()
SPLICED = ("lab_v45", "indent2_ascii_no_newline", "compact", "windows_crlf", "js_numbers")


def write(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.ipynb"
    path.write_bytes(CORPUS[name].encode("utf-8"))
    return path


def original(name: str) -> dict:
    """The corpus notebook as v4 (a v3 one as nbformat's own upgrade makes it)."""
    data = json.loads(CORPUS[name])
    if data["nbformat"] == 3:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            data = json.loads(nbformat.writes(nbformat.convert(nbformat.from_dict(data), 4)))
    return data


def original_cells(name: str) -> list[dict]:
    return original(name)["cells"]


def without_id(cell: dict) -> dict:
    return {k: v for k, v in cell.items() if k != "id"}


def validate_file(path: Path) -> dict:
    data = json.loads(path.read_text(encoding="utf-8"))
    nbformat.validate(copy.deepcopy(data))
    assert (data["nbformat"], data["nbformat_minor"]) == (4, 5)
    ids = [c["id"] for c in data["cells"]]
    assert len(set(ids)) == len(ids)
    return data


OPS = {
    "replace_code": lambda doc, snap: doc.replace_cell(snap.cells[1].id, "print('new')\nx = 1",
                                                       expected_version=snap.version),
    "replace_markdown": lambda doc, snap: doc.replace_cell(snap.cells[0].id, "# New title",
                                                           expected_version=snap.version),
    "insert_after_first": lambda doc, snap: doc.insert_cell(1, "markdown", "inserted ✓", expected_version=snap.version),
    "delete_fourth": lambda doc, snap: doc.delete_cell(snap.cells[3].id, expected_version=snap.version),
}
TOUCHED = {"replace_code": {1}, "replace_markdown": {0}, "insert_after_first": set(), "delete_fourth": {3}}


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("name", list(CORPUS))
async def test_edit_validates_and_leaves_untouched_cells_as_they_were(tmp_path, name, op):
    path = write(tmp_path, name)
    doc = FileNotebook(path)
    snap = await doc.snapshot()
    assert len(snap.cells) == CELL_COUNT[name]
    await OPS[op](doc, snap)
    data = validate_file(path)
    before = original_cells(name)
    after = data["cells"]
    if op == "insert_after_first":
        assert after[1]["source"] in (["inserted ✓"], "inserted ✓") and after[1]["cell_type"] == "markdown"
        after = after[:1] + after[2:]
    if op == "delete_fourth":
        before = before[:3] + before[4:]
    for index, (old, new) in enumerate(zip(before, after, strict=True)):
        if index in TOUCHED[op] and op != "delete_fourth":
            continue
        if name == "v3_worksheets" or "id" not in old:
            assert without_id(new) == without_id(old)
        elif name == "duplicate_ids":
            assert without_id(new) == without_id(old)  # ids had to be repaired
        else:
            assert new == old
    assert data["metadata"] == original(name)["metadata"]


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("name", SPLICED)
async def test_spliced_edits_keep_every_other_byte_and_the_files_style(tmp_path, name, op):
    path = write(tmp_path, name)
    doc = FileNotebook(path)
    await OPS[op](doc, await doc.snapshot())
    old, new = parse(CORPUS[name]), parse(path.read_bytes().decode("utf-8"))
    assert old.text[: old.cells_span[0]] == new.text[: new.cells_span[0]]  # everything before the cells
    assert old.text[old.cells_span[1]:] == new.text[new.cells_span[1]:]  # ... and after (metadata, widgets)
    old_cells = [old.text[a:b] for a, b in old.cell_spans]
    new_cells = [new.text[a:b] for a, b in new.cell_spans]
    kept = [c for i, c in enumerate(old_cells) if i not in TOUCHED[op]]
    assert all(c in new_cells for c in kept)  # byte-identical
    # Indent, separators, key order, newline style, final newline; \u escapes stay escapes.
    from dataclasses import replace
    assert replace(new.style, ensure_ascii=False) == replace(old.style, ensure_ascii=False)
    if old.text.isascii():  # inserted "✓" and the like are written as \u escapes too
        assert new.text.isascii()


async def test_indent2_escapes_survive_an_edit_with_non_ascii(tmp_path):
    path = write(tmp_path, "indent2_ascii_no_newline")
    doc = FileNotebook(path)
    snap = await doc.snapshot()
    await doc.replace_cell(snap.cells[1].id, "print('naïve 📈')", expected_version=snap.version)
    text = path.read_text()
    assert text.isascii() and "\\u00efve" in text and not text.endswith("\n")
    assert '\n      "cell_type": "code",' in text  # indent 2, three levels deep
    assert (await doc.snapshot()).cells[1].source == "print('naïve 📈')"


async def test_replacing_a_code_cell_clears_outputs_and_count(tmp_path):
    path = write(tmp_path, "lab_v45")
    doc = FileNotebook(path)
    snap = await doc.snapshot()
    await doc.replace_cell("show", "2 + 2", expected_version=snap.version)
    cell = json.loads(path.read_text())["cells"][2]
    assert cell["outputs"] == [] and cell["execution_count"] is None and cell["id"] == "show"


async def test_changing_type_to_code_drops_attachments_and_to_markdown_drops_outputs(tmp_path):
    path = write(tmp_path, "lab_v45")
    doc = FileNotebook(path)
    await doc.replace_cell("intro", "x = 1", "code")
    await doc.replace_cell("load", "now *text*", "markdown")
    cells = validate_file(path)["cells"]
    assert cells[0]["cell_type"] == "code" and "attachments" not in cells[0] and cells[0]["outputs"] == []
    assert cells[1]["cell_type"] == "markdown" and "outputs" not in cells[1] and "execution_count" not in cells[1]


async def test_old_notebooks_show_index_ids_and_are_written_as_v45(tmp_path):
    for name in ("v44_no_ids", "v3_worksheets"):
        path = write(tmp_path, name)
        doc = FileNotebook(path)
        snap = await doc.snapshot()
        assert [c.id for c in snap.cells][:2] == ["cell-0", "cell-1"]
        result = await doc.replace_cell("cell-1", "changed", expected_version=snap.version)
        data = validate_file(path)
        assert data["cells"][1]["source"] == ["changed"] and result.cell.id == data["cells"][1]["id"]
    v3 = await FileNotebook(tmp_path / "v3_worksheets.ipynb").snapshot()
    assert v3.cells[0].cell_type == "markdown" and v3.cells[0].source == "# Old notebook"


async def test_a_stale_version_is_refused_and_nothing_is_written(tmp_path):
    path = write(tmp_path, "lab_v45")
    doc = FileNotebook(path)
    snap = await doc.snapshot()
    path.write_text(CORPUS["lab_v45"].replace("loaded", "LOADED"))
    changed = path.read_bytes()
    with pytest.raises(StaleNotebookError, match="modified since read"):
        await doc.replace_cell("load", "x", expected_version=snap.version)
    assert path.read_bytes() == changed


async def test_an_edit_that_cannot_validate_is_refused(tmp_path):
    data = json.loads(CORPUS["lab_v45"])
    data["cells"][1]["mystery_key"] = True  # invalid before we touch it
    path = tmp_path / "bad.ipynb"
    path.write_text(json.dumps(data, indent=1))
    before = path.read_bytes()
    with pytest.raises(NotebookError, match="would not be valid.*mystery_key"):
        await FileNotebook(path).replace_cell("intro", "x")
    assert path.read_bytes() == before


async def test_invalid_json_names_the_place(tmp_path):
    path = tmp_path / "bad.ipynb"
    path.write_text('{\n "cells": [\n  {"cell_type": "code",,}\n ]\n}')
    with pytest.raises(NotebookError, match="not valid JSON.*line 3"):
        await FileNotebook(path).snapshot()


async def test_insert_into_an_empty_notebook_and_delete_the_last_cell(tmp_path):
    path = tmp_path / "empty.ipynb"
    path.write_text(nbformat.writes(nbformat.v4.new_notebook()) + "\n")
    doc = FileNotebook(path)
    added = await doc.insert_cell(0, "code", "print(1)")
    assert validate_file(path)["cells"][0]["id"] == added.cell.id
    await doc.delete_cell(added.cell.id)
    assert validate_file(path)["cells"] == []
    assert path.read_text() == nbformat.writes(nbformat.v4.new_notebook()) + "\n"


ops = st.lists(st.tuples(st.sampled_from(["insert", "replace", "delete"]), st.integers(0, 10),
                         st.text(alphabet="ab\n é📈\"\\", max_size=12)), min_size=1, max_size=6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=ops, name=st.sampled_from(SPLICED))
def test_random_edit_sequences_keep_the_notebook_valid_and_other_cells_intact(tmp_path, ops, name):
    async def scenario():
        path = tmp_path / "prop.ipynb"
        path.write_bytes(CORPUS[name].encode())
        doc = FileNotebook(path)
        model = [dict(c) for c in json.loads(CORPUS[name])["cells"]]
        for kind, where, text in ops:
            if kind == "insert":
                index = where % (len(model) + 1)
                result = await doc.insert_cell(index, "code", text)
                model.insert(index, {"id": result.cell.id, "source": text})
            elif model:
                index = where % len(model)
                if kind == "replace":
                    await doc.replace_cell(model[index]["id"], text)
                    model[index] = {"id": model[index]["id"], "source": text}
                else:
                    await doc.delete_cell(model[index]["id"])
                    del model[index]
            data = validate_file(path)
            originals = {c["id"]: c for c in json.loads(CORPUS[name])["cells"]}
            for want, got in zip(model, data["cells"], strict=True):
                assert got["id"] == want["id"]
                if "cell_type" in want:  # never touched: exactly the original cell
                    assert got == originals[want["id"]]
                else:
                    source = got["source"]
                    assert ("".join(source) if isinstance(source, list) else source) == want["source"]

    asyncio.run(scenario())
