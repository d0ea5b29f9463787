"""KernelRun and NotebookRunCells through the loop: the real SDK against the fake Messages
API, a real kernel, a real notebook file (the CLI's path: ``kernels.run_code_in_kernel`` and
``run_cell_in_kernel``)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from jupyter_agent import query
from jupyter_agent.changes import RunChanges
from jupyter_agent.loop.permission_result import PermissionAllow, PermissionAsk
from jupyter_agent.loop.services import Services
from jupyter_agent.loop.tool import ToolContext
from jupyter_agent.notebook import KernelPool, ToolSession, close_session, tool_session
from jupyter_agent.permissions import Permissions
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use
from tests.tools.test_tools_through_loop import result_text, results_sent


def _notebook(path: Path, *cells) -> None:
    path.write_text(nbformat.writes(new_notebook(cells=list(cells))) + "\n")


async def _run(workspace: Path, script: list, *, asks: list | None = None, mode: str = "acceptEdits",
               allow: tuple[str, ...] = ()) -> tuple[FakeMessagesAPI, object, ToolContext]:
    kernels = KernelPool(transport="ipc", kernel_name="python3")
    context = ToolContext(cwd=workspace, services=Services(ToolSession(kernels=kernels)))

    def decide(name, input, ask):
        if asks is not None:
            asks.append((name, ask))
        return PermissionAllow()

    try:
        with FakeMessagesAPI(script) as api:
            run = query("go", model=api.model(), cwd=workspace, context=context, can_use_tool=decide,
                        permissions=Permissions(mode=mode, cwd=workspace, allow=allow))
            terminal = await run.wait()
    finally:
        await close_session(tool_session(context))
    assert terminal.reason == "completed"
    return api, run, context


async def test_kernel_run_sees_the_cells_state_and_saves_nothing(workspace, jupyter_dirs):
    path = workspace / "nb.ipynb"
    _notebook(path, new_code_cell("data = [3, 1, 2]", id="load"))
    before_file = None
    read = tool_use("Read", {"file_path": str(path)})
    run_load = tool_use("NotebookRun", {"notebook_path": str(path), "cell_id": "load"})
    check = tool_use("KernelRun", {"notebook_path": str(path), "code": "total = sum(data)\nprint(total, sorted(data))"})
    again = tool_use("KernelRun", {"notebook_path": str(path), "code": "total * 2"})
    asks: list = []
    script = [response(read), response(run_load), response(check), response(again), response(text("ok"))]
    api, run, context = await _run(workspace, script, asks=asks)
    before_file = path.read_text()
    checked = results_sent(api, 3)[check["id"]]
    assert not checked.get("is_error")
    assert result_text(checked) == ("Ran the code in the notebook's kernel (nothing was saved into the notebook).\n"
                                     "6 [1, 2, 3]")
    assert result_text(results_sent(api, 4)[again["id"]]).endswith("\n12")
    # nothing entered the notebook: one cell, its own outputs, count 1 (the scratch runs took none)
    saved = json.loads(before_file)
    assert [c["id"] for c in saved["cells"]] == ["load"] and saved["cells"][0]["execution_count"] == 1
    # the asks showed the whole code; the names it made are the run's "variables changed"
    kernel_asks = [ask for name, ask in asks if name == "KernelRun"]
    assert isinstance(kernel_asks[0], PermissionAsk) and "total = sum(data)\nprint(total, sorted(data))" in \
        kernel_asks[0].message
    assert "total" in context.services.get(RunChanges).variables


async def test_kernel_run_error_and_time_limit(workspace, jupyter_dirs):
    path = workspace / "nb.ipynb"
    _notebook(path, new_code_cell("x = 1", id="a"))
    boom = tool_use("KernelRun", {"notebook_path": str(path), "code": "{}['Units']"})
    slow = tool_use("KernelRun", {"notebook_path": str(path), "code": "import time\nwhile True: time.sleep(0.05)",
                                  "timeout": 1500})
    bad = tool_use("KernelRun", {"notebook_path": str(path), "code": "1", "timeout": 10_000_000})
    api, _, _ = await _run(workspace, [response(boom), response(slow), response(bad), response(text("ok"))])
    raised = results_sent(api, 1)[boom["id"]]
    assert "raised an error" in result_text(raised) and "KeyError" in result_text(raised)
    timed = results_sent(api, 2)[slow["id"]]
    assert timed.get("is_error") and result_text(timed).startswith("The code timed out")
    refused = results_sent(api, 3)[bad["id"]]
    assert refused.get("is_error") and "milliseconds" in result_text(refused)


async def test_kernel_run_asks_even_in_bypass_mode_unless_a_notebook_run_rule_allows_it(workspace, jupyter_dirs):
    path = workspace / "nb.ipynb"
    _notebook(path, new_code_cell("x = 1", id="a"))
    call = tool_use("KernelRun", {"notebook_path": str(path), "code": "print('hi')"})
    asks: list = []
    await _run(workspace, [response(call), response(text("ok"))], asks=asks, mode="bypassPermissions")
    assert [name for name, ask in asks if isinstance(ask, PermissionAsk)] == ["KernelRun"]
    asks.clear()
    api, _, _ = await _run(workspace, [response(call), response(text("ok"))], asks=asks,
                           mode="bypassPermissions", allow=("NotebookRun",))
    assert not [a for _, a in asks if isinstance(a, PermissionAsk)]
    assert result_text(results_sent(api, 1)[call["id"]]).endswith("hi")


async def test_run_cells_stops_at_the_first_error_and_says_what_did_not_run(workspace, jupyter_dirs):
    path = workspace / "nb.ipynb"
    _notebook(path, new_markdown_cell("# Title", id="title"), new_code_cell("print('zero')", id="c0"),
              new_code_cell("a = 1\nprint('a')", id="c1"), new_code_cell("b = a + missing", id="c2"),
              new_code_cell("print('never')", id="c3"))
    read = tool_use("Read", {"file_path": str(path)})
    run_all = tool_use("NotebookRunCells", {"notebook_path": str(path)})
    fix = tool_use("NotebookEdit", {"notebook_path": str(path), "cell_id": "c2", "new_source": "b = a + 1"})
    rest = tool_use("NotebookRunCells", {"notebook_path": str(path), "from_cell_id": "c2", "all_outputs": True})
    asks: list = []
    script = [response(read), response(run_all), response(fix), response(rest), response(text("ok"))]
    api, _, _ = await _run(workspace, script, asks=asks)
    first = results_sent(api, 2)[run_all["id"]]
    said = result_text(first)
    assert said.startswith("Ran 3 of 4 code cells: c0, c1, c2.\nCell c2 raised NameError; the run stopped "
                           "there.\nNot run: c3.")
    # by default the earlier cells' outputs are left out, named; the error is whole, and the cell
    # run just before it is kept (what an error is about often shows there)
    assert "(Outputs of c0 left out: Read the notebook to see them, or run with all_outputs=true.)" in said
    assert "Ran cell c0" not in said and "Ran cell c1 [2].\na" in said
    assert "Ran cell c2 [3]; it raised an error:\nNameError" in said
    assert "never" not in said
    # one approval with every cell's code, whole
    ask = next(a for name, a in asks if name == "NotebookRunCells")
    assert "print('a')" in ask.message and "b = a + missing" in ask.message and "print('never')" in ask.message
    second = result_text(results_sent(api, 4)[rest["id"]])
    assert second == "Ran 2 of 2 code cells: c2, c3.\n\nRan cell c2 [4].\n(no output)\n\nRan cell c3 [5].\nnever"
    saved = json.loads(path.read_text())
    assert [c.get("execution_count") for c in saved["cells"]] == [None, 1, 2, 4, 5]


async def test_an_inserted_cell_runs_by_its_chosen_id_in_the_same_answer_with_only_the_last_output(
        workspace, jupyter_dirs):
    path = workspace / "nb.ipynb"
    _notebook(path, new_code_cell("x = 2\nprint('x set')", id="c1"), new_code_cell("print('y', x + 1)", id="c2"))
    read = tool_use("Read", {"file_path": str(path)})
    insert = tool_use("NotebookEdit", {"notebook_path": str(path), "cell_id": "c1", "edit_mode": "insert",
                                       "cell_type": "code", "new_source": "x = x * 10\nx", "new_cell_id": "scale"})
    run = tool_use("NotebookRunCells", {"notebook_path": str(path), "to_cell_id": "scale"})
    run_new = tool_use("NotebookRun", {"notebook_path": str(path), "cell_id": "scale"})
    api, _, _ = await _run(workspace, [response(read), response(insert, run, run_new), response(text("ok"))])
    sent = results_sent(api, 2)
    assert result_text(sent[insert["id"]]) == "Inserted cell scale (code, 2 lines) at cell-1."
    ran = result_text(sent[run["id"]])
    assert ran == ("Ran 2 of 2 code cells: c1, scale.\n\n(Outputs of c1 left out: Read the notebook to see them, "
                   "or run with all_outputs=true.)\n\nRan cell scale [2].\n20")
    assert result_text(sent[run_new["id"]]) == "Ran cell scale [3].\n200"  # after the range: in order
    saved = nbformat.read(path, as_version=4)
    nbformat.validate(saved)
    assert [c.id for c in saved.cells] == ["c1", "scale", "c2"]
    assert saved.cells[0].outputs[0]["text"] == "x set\n"  # left out of the result, kept in the notebook


async def test_read_tells_the_kernels_state_stale_and_never_run_cells_and_leaves_outputs_out(workspace, jupyter_dirs):
    path = workspace / "nb.ipynb"
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVQI12P4//8/AAX+Av6n1qXpAAAAAElFTkSuQmCC"
    _notebook(path, new_code_cell("print('one')", id="a"), new_code_cell("print('two')", id="b"),
              new_code_cell("from IPython.display import Image, display\nimport base64\n"
                            f"display(Image(data=base64.b64decode({png!r})))", id="img"),
              new_code_cell("never = 1", id="c"))
    first = tool_use("Read", {"file_path": str(path)})
    run = tool_use("NotebookRunCells", {"notebook_path": str(path), "to_cell_id": "img"})

    def person_edits_cell_b(body):
        """A person changes cell b's source in the file after it ran (its outputs stay)."""
        nb = nbformat.read(path, as_version=4)
        nb.cells[1].source = "print('TWO')"
        nbformat.write(nb, path)
        return response(tool_use("Read", {"file_path": str(path)}, id="toolu_reread"))

    lean = tool_use("Read", {"file_path": str(path), "outputs": False})
    no_images = tool_use("Read", {"file_path": str(path), "images": False})
    script = [response(first), response(run), person_edits_cell_b, response(lean, no_images), response(text("ok"))]
    api, _, _ = await _run(workspace, script)
    before = result_text(results_sent(api, 1)[first["id"]])
    assert before.startswith(f'<notebook path="{path}" cells="4" kernel="not running" working_folder="{workspace}">')
    assert '<cell id="c" type="code" never_run="true">never = 1</cell>' in before
    after = results_sent(api, 3)["toolu_reread"]["content"]
    text_after = "\n".join(b["text"] for b in after if b["type"] == "text")
    assert text_after.startswith(f'<notebook path="{path}" cells="4" kernel="running"')
    assert ('<cell id="a" type="code" execution_count="1">print(\'one\')\n<output>\none\n</output>\n</cell>'
            in text_after)
    assert '<cell id="b" type="code" execution_count="2" stale="true">print(\'TWO\')\n<output>\ntwo\n' in text_after
    assert [b["type"] for b in after].count("image") == 1
    lean_text = results_sent(api, 4)[lean["id"]]["content"]
    assert "<output>" not in lean_text and 'stale="true"' in lean_text and "Outputs left out" in lean_text
    no_image = results_sent(api, 4)[no_images["id"]]["content"]
    assert isinstance(no_image, str) and "one\n</output>" in no_image and "1 image left out" in no_image
