"""Read of notebooks and NotebookEdit, with Claude Code's rules."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from jupyter_agent.notebook import MemoryNotebook, register_document, tool_session

from .conftest import call_tool


@pytest.fixture
def notebook(workspace: Path) -> Path:
    nb = new_notebook()
    code = new_code_cell("x = 1\nx", id="code1", execution_count=4)
    code.outputs = [new_output("execute_result", data={"text/plain": "1"}, execution_count=4)]
    nb.cells = [new_markdown_cell("# Title", id="md1"), code, new_code_cell("y = 2", id="code2")]
    path = workspace / "nb.ipynb"
    path.write_text(nbformat.writes(nb) + "\n")
    return path


def cells(path: Path) -> list[dict]:
    data = json.loads(path.read_text())
    nbformat.validate(data)
    return data["cells"]


async def edit(ctx, **args):
    return await call_tool(ctx, "NotebookEdit", {"notebook_path": "nb.ipynb", **args})


async def test_read_renders_cells_and_enables_edits(ctx, notebook):
    result = await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    assert result["content"].split("\n", 1)[1].startswith(
        '<cell id="md1" type="markdown"># Title</cell>\n'
        '<cell id="code1" type="code" execution_count="4">x = 1\nx\n<output>\n1\n</output>\n</cell>\n')
    assert str(notebook) in ctx.read_file_state


async def test_edit_before_read_is_refused(ctx, notebook):
    before = notebook.read_bytes()
    result = await edit(ctx, cell_id="code2", new_source="z")
    assert result["is_error"] and "has not been read yet" in result["content"]
    assert notebook.read_bytes() == before


async def test_replace_answers_like_claude_code_and_clears_outputs(ctx, notebook):
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    result = await edit(ctx, cell_id="code1", new_source="x = 10")
    assert result["content"] == "Updated cell code1 (code, 1 line)."  # not the source the model sent
    changed = cells(notebook)[1]
    assert changed["source"] == ["x = 10"] and changed["outputs"] == [] and changed["execution_count"] is None


async def test_insert_goes_first_without_id_and_after_the_named_cell(ctx, notebook):
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    first = await edit(ctx, edit_mode="insert", cell_type="markdown", new_source="intro")
    after = await edit(ctx, edit_mode="insert", cell_type="code", cell_id="code1", new_source="between")
    got = cells(notebook)
    assert [c["id"] for c in got][1:4] == ["md1", "code1", got[3]["id"]]
    assert got[0]["source"] == ["intro"] and got[3]["source"] == ["between"]
    assert first["content"] == f"Inserted cell {got[0]['id']} (markdown, 1 line) at cell-0."
    assert after["content"] == f"Inserted cell {got[3]['id']} (code, 1 line) at cell-3."
    assert len({c["id"] for c in got}) == 5  # fresh, unique ids


async def test_an_insert_takes_the_id_the_model_chose_and_refuses_one_it_cannot_have(ctx, notebook):
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    made = await edit(ctx, edit_mode="insert", cell_type="code", cell_id="code1", new_source="a\nb",
                      new_cell_id="my-check_1")
    assert made["content"] == "Inserted cell my-check_1 (code, 2 lines) at cell-2."
    assert [c["id"] for c in cells(notebook)] == ["md1", "code1", "my-check_1", "code2"]
    before = notebook.read_bytes()
    for wanted, said in [("code2", "A cell with id 'code2' is already in the notebook: choose another"),
                         ("cell-7", "reads as a position (cell-N)"),
                         ("has space", "is not a valid cell id: use 1-64 letters"),
                         ("x" * 65, "is not a valid cell id")]:
        refused = await edit(ctx, edit_mode="insert", cell_type="code", new_source="z", new_cell_id=wanted)
        assert refused["is_error"] and said in refused["content"], refused
    replace = await edit(ctx, cell_id="code1", new_source="z", new_cell_id="other")
    assert replace["is_error"] and "new_cell_id is for edit_mode=insert only" in replace["content"]
    assert notebook.read_bytes() == before  # nothing half-done


async def test_index_ids_delete_and_type_change(ctx, notebook):
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    assert (await edit(ctx, cell_id="cell-2", new_source="now text", cell_type="markdown"))["content"] == \
        "Updated cell cell-2 (markdown, 1 line)."
    assert cells(notebook)[2]["cell_type"] == "markdown" and "outputs" not in cells(notebook)[2]
    assert (await edit(ctx, cell_id="md1", new_source="", edit_mode="delete"))["content"] == "Deleted cell md1."
    assert [c["id"] for c in cells(notebook)] == ["code1", "code2"]


async def test_replace_one_past_the_end_appends_as_claude_code_does(ctx, notebook):
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    result = await edit(ctx, cell_id="cell-3", new_source="tail")
    assert result["content"].startswith("Inserted cell ")
    assert cells(notebook)[3]["source"] == ["tail"] and cells(notebook)[3]["cell_type"] == "code"


async def test_a_notebook_changed_since_read_is_refused(ctx, notebook):
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    notebook.write_text(notebook.read_text().replace("y = 2", "y = 3"))
    before = notebook.read_bytes()
    result = await edit(ctx, cell_id="code1", new_source="x")
    assert result["is_error"] and "modified since read" in result["content"]
    assert notebook.read_bytes() == before


async def test_own_edits_do_not_need_a_new_read(ctx, notebook):
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    for source in ("a", "b", "c"):
        result = await edit(ctx, cell_id="code2", new_source=source)
        assert not result.get("is_error"), result
    assert cells(notebook)[2]["source"] == ["c"]


async def test_a_registered_document_is_used_instead_of_the_file(ctx, workspace):
    doc = MemoryNotebook(workspace / "live.ipynb", new_notebook(cells=[new_code_cell("a = 1", id="only")]))
    register_document(tool_session(ctx), doc)
    read = await call_tool(ctx, "Read", {"file_path": "live.ipynb"})
    assert read["content"].split("\n")[1:] == ['<cell id="only" type="code" never_run="true">a = 1</cell>',
                                               "</notebook>"]
    result = await call_tool(ctx, "NotebookEdit", {"notebook_path": "live.ipynb", "cell_id": "only",
                                                   "new_source": "a = 2"})
    assert not result.get("is_error") and doc.cells[0]["source"] == "a = 2"
    assert not (workspace / "live.ipynb").exists()


async def test_edit_permission_request_shows_the_cell_diff(workspace, notebook):
    from .conftest import make_ctx

    ctx = make_ctx(workspace, "default")
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    asks = []

    def ui(name, input, ask):
        asks.append(ask)
        from jupyter_agent.loop.permission_result import PermissionDeny
        return PermissionDeny("no")

    await call_tool(ctx, "NotebookEdit", {"notebook_path": "nb.ipynb", "cell_id": "code2", "new_source": "y = 3"},
                    can_use_tool=ui)
    [ask] = asks
    assert "--- a/nb.ipynb (code2)" in ask.diff and "-y = 2\n+y = 3" in ask.diff


async def test_reading_an_invalid_notebook_warns_and_edits_are_refused(ctx, workspace):
    data = json.loads(nbformat.writes(new_notebook(cells=[new_code_cell("a", id="a1")])))
    data["cells"][0]["mystery"] = 1
    path = workspace / "odd.ipynb"
    path.write_text(json.dumps(data, indent=1))
    before = path.read_bytes()
    read = await call_tool(ctx, "Read", {"file_path": "odd.ipynb"})
    assert not read.get("is_error") and "does not pass nbformat validation" in read["content"]
    assert "mystery" in read["content"]
    result = await call_tool(ctx, "NotebookEdit", {"notebook_path": "odd.ipynb", "cell_id": "a1", "new_source": "b"})
    assert result["is_error"] and "would not be valid" in result["content"] and path.read_bytes() == before


async def test_a_change_that_keeps_size_and_mtime_is_still_caught_before_writing(ctx, notebook):
    import os

    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    stat = notebook.stat()
    notebook.write_text(notebook.read_text().replace("y = 2", "y = 3"))  # same size
    os.utime(notebook, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime: only the bytes tell
    changed = notebook.read_bytes()
    result = await edit(ctx, cell_id="code1", new_source="x")
    assert result["is_error"] and "modified since read" in result["content"]
    assert notebook.read_bytes() == changed


async def _no_hang(coro, fifo):
    """Await ``coro``; if it blocks (opening a FIFO), free the blocked reader and fail."""
    import os

    try:
        return await asyncio.wait_for(coro, 10)
    except TimeoutError:
        try:  # a reader is blocked in open(): open the writing end so it returns, then close it
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
        raise AssertionError("the tool hung on a FIFO") from None


@pytest.mark.parametrize("tool, args", [
    ("NotebookEdit", {"cell_id": "cell-0", "new_source": "x"}),
    ("NotebookEdit", {"edit_mode": "insert", "cell_type": "code", "new_source": "x"}),
    ("NotebookRun", {"cell_id": "cell-0"}),
    ("Read", {}),
    ("Edit", {"old_string": "a", "new_string": "b"}),
    ("Write", {"content": "x"}),
])
async def test_a_fifo_named_ipynb_is_refused_at_once(ctx, workspace, tool, args):
    import os

    fifo = workspace / ("pipe.txt" if tool in ("Edit", "Write") else "pipe.ipynb")
    os.mkfifo(fifo)
    key = "file_path" if tool in ("Read", "Edit", "Write") else "notebook_path"
    result = await _no_hang(call_tool(ctx, tool, {key: str(fifo), **args}), fifo)
    assert result["is_error"]
    assert "is a named pipe (FIFO), not a regular file" in result["content"], result["content"]


async def test_a_notebook_swapped_for_a_fifo_after_the_check_is_refused_without_blocking(workspace, monkeypatch):
    """The open itself does not block, and the opened file is checked again: a path that
    passed the check as a regular file and is a FIFO by the time it is opened is refused."""
    import os

    from jupyter_agent.notebook import NotebookError
    from jupyter_agent.files.filestat import read_regular_file

    fifo, regular = workspace / "pipe.ipynb", workspace / "real.ipynb"
    os.mkfifo(fifo)
    regular.write_text("{}")
    real_stat = os.stat
    # The race, made certain: the path check sees the regular file that was there a moment ago.
    monkeypatch.setattr(os, "stat", lambda p, *a, **k: real_stat(regular if str(p) == str(fifo) else p, *a, **k))
    with pytest.raises(NotebookError, match="is a named pipe"):
        await _no_hang(asyncio.to_thread(read_regular_file, fifo, error=NotebookError), fifo)


async def test_notebook_run_settles_and_redacts_whatever_a_backend_returns(ctx, workspace, monkeypatch):
    """A document that runs cells its own way (as a live page does) may hand back raw outputs:
    what the model receives is still coalesced, settled and free of the agent's secrets."""
    from jupyter_agent.notebook import RunResult

    key = "sk-ant-api03-" + "Z9" * 50
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)

    class OwnRunner(MemoryNotebook):
        async def run_cell(self, cell_id, *, timeout, abort=None, expected_version=None):
            cell = (await self.snapshot()).find(cell_id)
            outputs = [{"output_type": "stream", "name": "stdout", "text": "0%\r50%"},
                       {"output_type": "stream", "name": "stdout", "text": f"\r100% {key}\n"}]
            return RunResult(cell=cell, outputs=outputs, execution_count=1, saved=False)

    doc = OwnRunner(workspace / "live.ipynb", new_notebook(cells=[new_code_cell("go()", id="only")]))
    register_document(tool_session(ctx), doc)
    await call_tool(ctx, "Read", {"file_path": "live.ipynb"})
    from .conftest import make_ctx

    bypass = make_ctx(workspace, "bypassPermissions", allow=["NotebookRun"])  # runs always ask otherwise
    bypass.services, bypass.read_file_state = ctx.services, ctx.read_file_state
    result = await call_tool(bypass, "NotebookRun", {"notebook_path": "live.ipynb", "cell_id": "only"})
    assert key not in json.dumps(result) and "Z9Z9Z9" not in json.dumps(result)
    assert result["content"] == "Ran cell only [1].\n100% [redacted ANTHROPIC_API_KEY]"


async def test_a_run_approval_numbers_the_cell_as_the_open_page_shows_it(workspace):
    """The page has a cell the file does not have yet (inserted, unsaved): the approval
    and its card say "cell 5 of 5", the 1-based position among all the page's cells."""
    from jupyter_agent.jupyter.widgets.cards import approval_html
    from jupyter_agent.loop.permission_result import PermissionDeny, ask_parts

    from .conftest import make_ctx

    on_disk = new_notebook(cells=[new_code_cell(s, id=f"c{i}") for i, s in enumerate(["a", "b", "c", "d"])])
    nbformat.write(on_disk, workspace / "page.ipynb")
    page = new_notebook(cells=[*on_disk.cells, new_code_cell("x + 1", id="new1")])
    ctx = make_ctx(workspace, "default")
    register_document(tool_session(ctx), MemoryNotebook(workspace / "page.ipynb", page))
    await call_tool(ctx, "Read", {"file_path": "page.ipynb"})
    asks = []

    def ui(name, input, ask):
        asks.append((input, ask))
        return PermissionDeny("no")

    for cell_id in ("new1", "cell-4"):
        await call_tool(ctx, "NotebookRun", {"notebook_path": "page.ipynb", "cell_id": cell_id}, can_use_tool=ui)
    for input, ask in asks:
        question, code = ask_parts(ask.message)
        assert question.startswith("NotebookRun wants to run cell 5 of 5 (id new1) of page.ipynb") and code == "x + 1"
        card = approval_html("NotebookRun", dict(input), ask.message, cwd=workspace)
        assert "cell 5 of 5 (id new1)" in card and "of 4" not in card


async def test_a_delete_needs_no_new_source_and_a_replace_says_it_does(ctx, notebook):
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    assert (await edit(ctx, cell_id="code2", edit_mode="delete"))["content"] == "Deleted cell code2."
    assert [c["id"] for c in cells(notebook)] == ["md1", "code1"]
    refused = await edit(ctx, cell_id="code1")
    assert refused["is_error"] and "new_source is required for edit_mode=replace" in refused["content"]
    assert ["".join(c["source"]) for c in cells(notebook)] == ["# Title", "x = 1\nx"]
