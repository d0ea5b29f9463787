"""The MCP server's tool shapes without a server: the checks made before anything reaches a
kernel, and how a kernel's answer becomes an MCP result (redacted; images as images)."""

from __future__ import annotations

import base64

import pytest

from jupyter_agent.mcp_server.tools import (MAX_SOURCE_CHARS, TOOLS, OutsideError, check_arguments, client_name,
                                            result_of)


@pytest.mark.parametrize("name, args, says", [
    ("nope", {}, "No tool named 'nope'"),
    ("read_cells", {}, "needs notebook_path"),
    ("read_cells", {"notebook_path": "a.ipynb", "limit": 0}, "limit must be between 1"),
    ("read_cells", {"notebook_path": "a.ipynb", "limit": True}, "limit must be an integer"),
    ("read_cells", {"notebook_path": 3}, "notebook_path must be a string"),
    ("read_cells", {"notebook_path": "  "}, "is not a valid notebook path"),
    ("insert_cell", {"notebook_path": "a.ipynb", "cell_type": "code", "source": "a\x1b[2Jb"}, "binary data"),
    ("insert_cell", {"notebook_path": "a.ipynb", "cell_type": "code", "source": "\ud800"}, "binary data"),
    ("insert_cell", {"notebook_path": "a.ipynb", "cell_type": "code", "source": "x" * (MAX_SOURCE_CHARS + 1)},
     "the limit is"),
    ("delete_cell", {"notebook_path": "a.ipynb", "cell_id": "c\x00"}, "not a valid cell id"),
    ("run_cell", {"notebook_path": "a.ipynb", "cell_id": "c1", "timeout": 5}, "takes no argument 'timeout'"),
    ("run_cell", {"notebook_path": "a.ipynb", "cell_id": "c1", "wait_seconds": 601}, "wait_seconds must be between 0"),
    ("run_status", {}, "needs run_id"),
    ("interrupt", {"notebook_path": "a.ipynb", "run_id": "r\x00"}, "not a valid run id"),
    ("execute_code", {"notebook_path": "a.ipynb"}, "needs code"),
    ("execute_code", {"notebook_path": "a.ipynb", "code": "x = 1\x00"}, "code holds binary data"),
    ("execute_code", {"notebook_path": "a.ipynb", "code": "x" * (MAX_SOURCE_CHARS + 1)}, "the limit is"),
    ("execute_code", {"notebook_path": "a.ipynb", "code": "1", "timeout_seconds": 0},
     "timeout_seconds must be between 1"),
    ("run_cells", {"notebook_path": "a.ipynb", "start_cell_id": "c\x00"}, "not a valid start cell id"),
    ("insert_cell", {"notebook_path": "a.ipynb", "cell_type": "python", "source": "x"}, "cell_type must be one of"),
    ("active_notebook", {"notebook_path": "a.ipynb"}, "takes no argument 'notebook_path'"),
    ("move_cell", {"notebook_path": "a.ipynb", "cell_id": "c1"}, "exactly one of after_cell_id"),
    ("move_cell", {"notebook_path": "a.ipynb", "cell_id": "c1", "after_cell_id": "c2", "before_cell_id": "c3"},
     "exactly one of after_cell_id"),
    ("move_cell", {"notebook_path": "a.ipynb", "cell_id": "c1", "to_index": 99},
     "It names the place by a cell, never an index"),
    ("move_cell", {"notebook_path": "a.ipynb", "cell_id": "c1", "before_cell_id": "c\x1b[2J"},
     "not a valid before cell id"),
    ("move_cell", {"notebook_path": "a.ipynb", "cell_id": 3, "after_cell_id": "c2"}, "cell_id must be a string"),
])
def test_bad_arguments_are_refused_before_any_kernel_hears_of_them(name, args, says):
    with pytest.raises(OutsideError) as refused:
        check_arguments(name, dict(args))
    assert says in str(refused.value)


def test_good_arguments_pass_as_they_are():
    args = {"notebook_path": "dir/a.ipynb", "cell_type": "code", "source": "print('tab\\there')\n\r\n",
            "after_cell_id": "c1"}
    assert check_arguments("insert_cell", dict(args)) == args
    assert set(TOOLS) >= {"list_notebooks", "read_cells", "run_cell"}


def test_a_kernels_answer_becomes_a_redacted_result_with_images(monkeypatch):
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "tok-0123456789abcdef")
    png = base64.b64encode(b"\x89PNG fake").decode()
    result = result_of({"ok": True, "content": [
        {"type": "text", "text": "the token is tok-0123456789abcdef"},
        {"type": "image", "data": png, "mime_type": "image/png"},
        {"type": "image", "data": "not base64!", "mime_type": "image/png"}]})
    assert not result.is_error
    assert result.content[0].text == "the token is [redacted SOME_SERVICE_TOKEN]"
    assert result.content[1].type == "image" and result.content[1].data == png
    assert len(result.content) == 2  # the broken image is left out
    failed = result_of({"ok": False, "error": "Denied by you: no"})
    assert failed.is_error and failed.content[0].text == "Denied by you: no"


def test_the_clients_name_comes_from_its_initialize():
    class Info:
        name, version = "<b>claude-code</b>", "2.1"

    class Params:
        client_info = Info()

    class Session:
        client_params = Params()

    class Ctx:
        session = Session()

    assert client_name(Ctx()) == "<b>claude-code</b> 2.1"  # as it says it: escaped where shown
    assert client_name(object()) == "an MCP client"


def test_active_notebook_names_the_page_with_focus_then_the_latest():
    from jupyter_agent.mcp_server.focus import active_text

    pages = [{"path": "a.ipynb", "current": True, "focused_at": 200, "has_focus": False,
              "active_cell_id": "ca", "active_index": 0, "active_cell_type": "code", "active_source": "a = 1"},
             {"path": "b.ipynb", "current": True, "focused_at": 100, "has_focus": True, "active_cell_id": "cb",
              "active_index": 4, "active_cell_type": "markdown", "active_source": "# B" * 3_000,
              "selected_ids": ["c1", "c2"]},
             {"path": "c.ipynb", "current": False, "focused_at": 900, "has_focus": True}]
    said = active_text(pages, ["busy.ipynb"])
    assert said.startswith("The notebook the user works in: b.ipynb\nActive cell: cb (index 4, markdown):\n# B")
    assert "characters left out" in said and len(said) < 5_000  # a long source: its head and tail
    assert "Also selected: c1, c2" in said and "Also current in other pages: a.ipynb" in said
    assert "c.ipynb" not in said and "Not asked (jupyter-agent not loaded, or the kernel busy" in said
    latest = active_text([{**pages[0], "has_focus": False}, {**pages[1], "has_focus": False}], [])
    assert latest.startswith("The notebook the user works in: a.ipynb")  # no page has focus: the latest
    assert active_text([], []).startswith("No JupyterLab page with jupyter-agent says which notebook is current")
