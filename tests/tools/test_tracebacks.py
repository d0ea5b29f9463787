"""Tracebacks for the model (``notebook/tracebacks.py``): a library's deep ``KeyError``, raised
from several frames of a package installed in a ``site-packages`` folder, with frames whose
source cannot be read (as a compiled extension's) and a chained exception, as pandas raises
one; through the real SDK, the fake Messages API and a real kernel."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from jupyter_agent import query
from jupyter_agent.loop.services import Services
from jupyter_agent.loop.tool import ToolContext
from jupyter_agent.notebook import KernelPool, ToolSession, close_session, tool_session
from jupyter_agent.notebook.tracebacks import compact_traceback
from jupyter_agent.permissions import Permissions
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use
from tests.tools.test_tools_through_loop import result_text, results_sent

PACKAGE = {
    "__init__.py": "from .frame import DataFrame\n",
    # frames with no source to show, as a compiled extension's (pandas' _libs/index.pyx)
    "_libs.py": textwrap.dedent('''\
        _code = """
        class IndexEngine:
            def __init__(self, keys):
                self.mapping = {k: i for i, k in enumerate(keys)}
            def get_loc(self, key):
                return self._lookup(key)
            def _lookup(self, key):
                return self.mapping[key]
        """
        _ns = {}
        exec(compile(_code, "index.pyx", "exec"), _ns)
        IndexEngine = _ns["IndexEngine"]
        '''),
    "indexes.py": textwrap.dedent('''\
        from ._libs import IndexEngine


        class Index:
            def __init__(self, keys):
                self._engine = IndexEngine(list(keys))

            def get_loc(self, key):
                try:
                    return self._engine.get_loc(key)
                except KeyError as err:
                    raise KeyError(key) from err
        '''),
    "frame.py": textwrap.dedent('''\
        from .indexes import Index


        class DataFrame:
            def __init__(self, data):
                self.data = dict(data)
                self.columns = Index(self.data)

            def __getitem__(self, key):
                return self._get_item(key)

            def _get_item(self, key):
                return list(self.data.values())[self.columns.get_loc(key)]
        '''),
}


def _library(root: Path) -> Path:
    folder = root / "lib" / "site-packages" / "fakepd"
    folder.mkdir(parents=True)
    for name, source in PACKAGE.items():
        (folder / name).write_text(source)
    return folder.parent


async def test_a_deep_library_error_comes_back_short_and_whole_one_read_away(workspace, jupyter_dirs, tmp_path):
    site = _library(tmp_path)
    path = workspace / "sales.ipynb"
    cell = (f"import sys; sys.path.insert(0, {str(site)!r})\nimport fakepd\n"
            "df = fakepd.DataFrame({'Units': [3], 'Price': [2.5]})\ndef revenue(frame):\n"
            "    return frame['units'] * frame['Price']\nrevenue(df)")
    path.write_text(nbformat.writes(new_notebook(cells=[new_code_cell(cell, id="calc")])) + "\n")
    read = tool_use("Read", {"file_path": str(path)})
    run = tool_use("NotebookRun", {"notebook_path": str(path), "cell_id": "calc"})
    kernels = KernelPool(transport="ipc", kernel_name="python3")
    context = ToolContext(cwd=workspace, services=Services(ToolSession(kernels=kernels)),
                          tool_results_dir=tmp_path / "results")
    reads: list[dict] = []

    def read_the_saved_traceback(body: dict) -> object:
        """The model's third answer: Read the file the compact traceback names."""
        said = "".join(result_text(b) for b in body["messages"][-1]["content"] if b.get("type") == "tool_result")
        reads.append(tool_use("Read", {"file_path": re.search(r"is saved at (\S+): Read it", said).group(1)}))
        return response(reads[0])

    try:
        with FakeMessagesAPI([response(read), response(run), read_the_saved_traceback,
                              response(text("The column is 'Units'."))]) as api:
            done = await query("why does it fail?", model=api.model(), cwd=workspace, context=context,
                               permissions=Permissions(mode="default", cwd=workspace, allow=("NotebookRun",))).wait()
    finally:
        await close_session(tool_session(context))
    assert done.reason == "completed"
    said = result_text(results_sent(api, 2)[run["id"]])
    lines = said.split("\n")
    assert lines[0] == "Ran cell calc [1]; it raised an error:"
    assert lines[1] == "KeyError: 'units'"  # the error first
    assert "Could not get source" not in said and "The above exception" not in said
    assert said.count("KeyError: 'units'") == 1  # the chained copy is the same error: not said again
    assert "chained from" not in said
    # the user's frames whole, each library frame one line with its code
    assert "----> 5     return frame['units'] * frame['Price']" in said and "----> 6 revenue(df)" in said
    assert "  fakepd/frame.py:10 in DataFrame.__getitem__(self, key): return self._get_item(key)" in lines
    assert "  fakepd/indexes.py:12 in Index.get_loc(self, key): raise KeyError(key) from err" in lines
    assert len(said) < 1_200, said
    # the whole traceback one Read away, with no approval (the run has no one to ask)
    full = result_text(results_sent(api, 3)[reads[0]["id"]])
    assert not results_sent(api, 3)[reads[0]["id"]].get("is_error"), full
    assert "Could not get source" in full and "The above exception was the direct cause" in full
    assert "IndexEngine._lookup" in full and "Index.get_loc" in full
    # the notebook keeps the kernel's own traceback, untouched
    stored = json.loads(path.read_text())["cells"][0]["outputs"][0]
    assert stored["output_type"] == "error" and any("Could not get source" in t for t in stored["traceback"])


def test_a_traceback_not_in_ipythons_shape_is_left_whole():
    lines = ["Traceback (most recent call last):", '  File "x.py", line 1, in <module>', "ValueError: bad"]
    assert compact_traceback("ValueError", "bad", lines) == "ValueError: bad\n" + "\n".join(lines)


def _chained(first: str, then: str) -> list[str]:
    """An IPython traceback of ``then`` raised while handling ``first`` (a library frame each)."""
    return ["-" * 75, "KeyError                                  Traceback (most recent call last)",
            "File /lib/site-packages/lib/a.py:3, in look(key)\n----> 3 raise KeyError(key)\n", first,
            "\nThe above exception was the direct cause of the following exception:\n",
            "-" * 75, f"{then.split(':')[0]}                          Traceback (most recent call last)",
            "Cell In[2], line 1\n----> 1 look('Units')\n",
            "File /lib/site-packages/lib/a.py:5, in look(key)\n----> 5 raise err\n", then]


def test_a_chained_error_is_named_once_when_it_is_the_same_error_and_kept_when_it_differs():
    same = compact_traceback("KeyError", "'Units'", _chained("KeyError: 'Units'", "KeyError: 'Units'"))
    assert same.count("KeyError: 'Units'") == 1 and "chained from" not in same
    assert "[The full traceback" not in same  # (no saver given: nothing named)
    other = compact_traceback("ValueError", "no such column", _chained("KeyError: 'Units'",
                                                                       "ValueError: no such column"))
    assert other.startswith("ValueError: no such column\n(chained from KeyError: 'Units', raised at lib/a.py:3")


def test_a_short_user_traceback_gets_no_note():
    lines = ["-" * 75, "ZeroDivisionError                         Traceback (most recent call last)",
             "Cell In[6], line 1\n----> 1 z = y / 0\n", "ZeroDivisionError: division by zero"]
    assert compact_traceback("ZeroDivisionError", "division by zero", lines) == (
        "ZeroDivisionError: division by zero\nTraceback (most recent call last; library frames folded to one "
        "line):\nCell In[6], line 1\n----> 1 z = y / 0")
