"""The notebook open in the page, for a kernel on another machine (a Kernel or Enterprise
Gateway): the tools reach it by the notebook server's path of it (what the model is told)
or its path from the server's root, never on the kernel's disk; other paths are the
kernel's files; a notebook that is neither is refused with a message that says so.

The page's notebook is a registered in-memory document here, bound as ``live_notebook.py`` binds
a page's (``PageNotebook``); the bridge to a real page is covered by
``tests/jupyter/test_gateway.py``.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from jupyter_agent.jupyter.bridge.kernel_bridge import Page
from jupyter_agent.jupyter.bridge.live_notebook import page_notebook
from jupyter_agent.loop.permission_result import PermissionDeny
from jupyter_agent.notebook import MemoryNotebook, PageNotebook, RunResult, register_document, tool_session

from .conftest import call_tool, make_ctx, text_of, tree_bytes


class PageDocument(MemoryNotebook):
    """The page's notebook: its cells, and its runs (the page runs them in the user's kernel)."""

    ran: list[str]

    async def run_cell(self, cell_id, *, timeout, abort=None, expected_version=None):
        self.ran.append(cell_id)
        cell = (await self.snapshot()).find(cell_id)
        return RunResult(cell=cell, outputs=[{"output_type": "stream", "name": "stdout", "text": "LIVE 42\n"}],
                         execution_count=3, saved=False)


@pytest.fixture
def server_root(tmp_path: Path) -> Path:
    """The notebook server's root: a folder of another machine (the kernel's disk has no such folder)."""
    return tmp_path / "server-host" / "root"


@pytest.fixture
def page(workspace, server_root):
    """A context in ``default`` mode on the kernel's folder, with the page's notebook bound."""
    ctx = make_ctx(workspace, "default")
    key = str(server_root / "live.ipynb")
    doc = PageDocument(key, new_notebook(cells=[new_code_cell("x = 41", id="setx"),
                                                new_code_cell("%%agent\nadd a cell", id="agentcell")]))
    doc.ran = []
    register_document(tool_session(ctx), doc)
    tool_session(ctx).page_notebook = PageNotebook(key=key, names=frozenset({key, "live.ipynb"}), remote=True)
    return ctx, doc, key


def _never_asked(name, input, ask):
    raise AssertionError(f"{name} asked: {ask.message}")


async def test_the_servers_path_and_the_page_path_reach_the_page_without_asking(page, workspace):
    ctx, doc, key = page
    for path in (key, "live.ipynb", "./live.ipynb"):
        read = await call_tool(ctx, "Read", {"file_path": path}, can_use_tool=_never_asked)
        assert not read.get("is_error"), read
        assert '<cell id="setx" type="code" never_run="true">x = 41</cell>' in text_of(read)


async def test_the_page_path_made_absolute_from_the_kernels_folder_reaches_the_page(page, workspace):
    """A model told that paths must be absolute joins the kernel's folder and ``live.ipynb``:
    with no such file on the kernel's disk, that is the page's notebook too."""
    ctx, doc, key = page
    read = await call_tool(ctx, "Read", {"file_path": str(workspace / "live.ipynb")}, can_use_tool=_never_asked)
    assert not read.get("is_error") and "x = 41" in text_of(read), read
    # a file of the kernel's own at that path is the kernel's file, not the page's
    nbformat.write(new_notebook(cells=[new_code_cell("mine = 1", id="mine")]), workspace / "live.ipynb")
    read = await call_tool(ctx, "Read", {"file_path": str(workspace / "live.ipynb")}, can_use_tool=_never_asked)
    assert "mine = 1" in text_of(read) and "x = 41" not in text_of(read)


async def test_edits_and_runs_go_to_the_page_and_nothing_is_written_on_the_kernels_disk(page, workspace, tmp_path):
    ctx, doc, key = page
    before = tree_bytes(tmp_path)
    bypass = make_ctx(workspace, "bypassPermissions", allow=["NotebookRun"])
    bypass.services, bypass.read_file_state = ctx.services, ctx.read_file_state
    await call_tool(bypass, "Read", {"file_path": key})
    edit = await call_tool(bypass, "NotebookEdit", {"notebook_path": key, "cell_id": "agentcell",
                                                    "new_source": "print(x + 1)", "cell_type": "code",
                                                    "edit_mode": "insert"})
    assert not edit.get("is_error"), edit
    assert [c["source"] for c in doc.cells] == ["x = 41", "%%agent\nadd a cell", "print(x + 1)"]
    run = await call_tool(bypass, "NotebookRun", {"notebook_path": key, "cell_id": "cell-2"})
    assert not run.get("is_error") and "LIVE 42" in text_of(run), run
    assert doc.ran == ["cell-2"]
    assert tree_bytes(tmp_path) == before  # no folder of the server's path, no notebook in the kernel's


async def test_a_file_at_the_servers_path_on_the_kernels_disk_is_not_what_the_tools_read(page, workspace,
                                                                                         server_root):
    """One machine for both (or a copy on the kernel's host): the page's notebook is still
    the page's, never the file the kernel's disk has at that path."""
    ctx, doc, key = page
    server_root.mkdir(parents=True)
    nbformat.write(new_notebook(cells=[new_code_cell("stale = True", id="disk")]), server_root / "live.ipynb")
    read = await call_tool(ctx, "Read", {"file_path": key}, can_use_tool=_never_asked)
    assert "x = 41" in text_of(read) and "stale" not in text_of(read)
    write = await call_tool(ctx, "Write", {"file_path": key, "content": "{}"}, can_use_tool=_never_asked)
    assert write.get("is_error") and "NotebookEdit" in text_of(write)


async def test_other_paths_are_the_kernels_files(page, workspace):
    ctx, doc, key = page
    nbformat.write(new_notebook(cells=[new_code_cell("kernel_side = 1", id="k")]), workspace / "other.ipynb")
    read = await call_tool(ctx, "Read", {"file_path": "other.ipynb"}, can_use_tool=_never_asked)
    assert "kernel_side = 1" in text_of(read)


async def test_a_notebook_neither_open_nor_on_the_kernels_disk_is_refused_with_where_the_open_one_is(page):
    ctx, doc, key = page
    for name, field, extra in (("Read", "file_path", {}),
                               ("NotebookEdit", "notebook_path", {"cell_id": "a", "new_source": "b"}),
                               ("NotebookRun", "notebook_path", {"cell_id": "a"})):
        result = await call_tool(ctx, name, {field: "missing.ipynb", **extra},
                                 can_use_tool=lambda *_: PermissionDeny("not asked for this"))
        said = text_of(result)
        assert result.get("is_error"), result
        assert "is neither the notebook open in the page" in said and "nor a notebook on the kernel's disk" in said
        assert f"reached by its path {key}" in said, said


@pytest.mark.parametrize("kernel_in", ["notebook folder", "elsewhere"])
def test_the_page_notebook_is_the_kernels_file_only_where_the_server_started_the_kernel_for_it(
        tmp_path, kernel_in):
    """Local JupyterLab starts the kernel in the notebook's folder (and tells it the path):
    the file is the kernel's. A gateway starts it in its own folder: even where the same
    path exists (one machine), the notebook is reached by the server's names for it."""
    root = tmp_path / "root"
    root.mkdir()
    nbformat.write(new_notebook(), root / "live.ipynb")
    gateway = tmp_path / "gateway"
    gateway.mkdir()
    shown = Page(client_id="c", comm=None, path="live.ipynb", server_root=str(root))
    where = page_notebook(shown, None, root if kernel_in == "notebook folder" else gateway)
    assert where is not None
    if kernel_in == "notebook folder":
        assert where == PageNotebook(key=str((root / "live.ipynb").resolve()))
    else:
        assert where.remote and where.key == str(root / "live.ipynb")
        assert where.names == {str(root / "live.ipynb"), "live.ipynb"}
