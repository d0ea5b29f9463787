"""Kernel control and rich outputs through the whole loop, in real kernels, against the fake
Messages API: a DataFrame reaches the model as a text table, an interrupted cell stops the
run as Stop does, and NotebookRestart asks with the variables it would lose (and refuses
the kernel the agent itself runs in)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from jupyter_agent import query
from jupyter_agent.loop.abort import CELL_INTERRUPTED
from jupyter_agent.loop.permission_result import PermissionAllow, PermissionDeny
from jupyter_agent.loop.services import Services
from jupyter_agent.loop.tool import ToolContext
from jupyter_agent.notebook import KernelPool, ToolSession, close_session, register_document, tool_session
from jupyter_agent.notebook.live_backend import LiveNotebook
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use
from jupyter_agent.view.labels import end_explanation
from tests.tools.conftest import call_tool, text_of
from tests.tools.test_tools_through_loop import result_text, results_sent


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return Path(os.path.realpath(tmp_path))


def _notebook(workspace: Path, *sources: str) -> Path:
    path = Path(os.path.realpath(workspace)) / "nb.ipynb"
    path.write_text(nbformat.writes(new_notebook(cells=[new_code_cell(s, id=f"c{i}") for i, s in enumerate(sources)])))
    return path


async def _run(workspace: Path, script: list[Any], can_use_tool: Any = None) -> tuple[Any, FakeMessagesAPI, Any]:
    """The script through query() with a kernel pool of its own: (terminal, api, run)."""
    context = ToolContext(cwd=workspace, services=Services(ToolSession(kernels=KernelPool(transport="ipc"))))
    try:
        with FakeMessagesAPI(script) as api:
            run = query("go", model=api.model(), cwd=workspace, context=context,
                        can_use_tool=can_use_tool or (lambda name, input, ask: PermissionAllow()))
            terminal = await run.wait()
    finally:
        await close_session(tool_session(context))
    return terminal, api, run


async def test_a_dataframe_reaches_the_model_as_a_text_table(workspace, jupyter_dirs):
    path = _notebook(workspace, "import pandas as pd\n"
                                "pd.DataFrame({'city': ['Oslo', 'Lima'], 'temp': [3.5, 19.0]}, index=['a', 'b'])")
    read = tool_use("Read", {"file_path": str(path)})
    run = tool_use("NotebookRun", {"notebook_path": str(path), "cell_id": "c0"})
    terminal, api, _ = await _run(workspace, [response(read), response(run), response(text("Two cities."))])
    assert terminal.reason == "completed"
    sent = result_text(results_sent(api, 2)[run["id"]])
    assert "DataFrame: 2 rows × 2 columns\ncolumns: city, temp\n" in sent, sent
    assert "a  Oslo   3.5" in sent and "<table" not in sent and "<td>" not in sent
    saved = nbformat.read(path, as_version=4).cells[0].outputs[0]["data"]
    assert "<table" in saved["text/html"]  # the notebook keeps the output as it was


async def test_an_interrupted_cell_stops_the_run_as_stop_does(workspace, jupyter_dirs):
    path = _notebook(workspace, "raise KeyboardInterrupt()", "print('never')")
    read = tool_use("Read", {"file_path": str(path)})
    first = tool_use("NotebookRun", {"notebook_path": str(path), "cell_id": "c0"})
    second = tool_use("NotebookRun", {"notebook_path": str(path), "cell_id": "c1"})
    terminal, api, run = await _run(workspace, [response(read), response(first, second)])
    assert terminal.reason == "aborted_tools" and terminal.stopped_by == CELL_INTERRUPTED
    assert len(api.messages_requests) == 2  # the model was not asked again
    results = {b["tool_use_id"]: b for b in run.state.messages[-1]["content"]}
    assert set(results) == {first["id"], second["id"]}  # every call answered
    assert "interrupted by the user" in text_of(results[first["id"]])
    assert "stopped before this tool call started" in text_of(results[second["id"]])
    assert "The cell the agent was running was interrupted" in end_explanation(terminal)


async def test_restart_asks_with_the_variables_it_loses_then_they_are_gone(workspace, jupyter_dirs):
    path = _notebook(workspace, "alpha = 1\nframe_2 = [2]", "print(alpha)")
    asked: list[str] = []

    def approve(name: str, input: dict, ask: Any) -> Any:
        if name == "NotebookRestart":
            asked.append(ask.message)
        return PermissionAllow()

    read = tool_use("Read", {"file_path": str(path)})
    setup = tool_use("NotebookRun", {"notebook_path": str(path), "cell_id": "c0"})
    restart = tool_use("NotebookRestart", {"notebook_path": str(path)})
    after = tool_use("NotebookRun", {"notebook_path": str(path), "cell_id": "c1"})
    script = [response(read), response(setup), response(restart), response(after), response(text("ok"))]
    terminal, api, _ = await _run(workspace, script, approve)
    assert terminal.reason == "completed"
    question = f"NotebookRestart wants to restart the kernel of {path}. It will lose its 2 variables: alpha, frame_2."
    assert len(asked) == 1 and asked[0].startswith(question + " Cells must run again to rebuild them.")
    assert "Lost: its 2 variables: alpha, frame_2" in result_text(results_sent(api, 3)[restart["id"]])
    assert "NameError" in result_text(results_sent(api, 4)[after["id"]])


async def test_restart_is_refused_for_the_agents_own_kernel_and_denied_in_plan_mode(workspace):
    path = _notebook(workspace, "x = 1")
    ctx = ToolContext(cwd=workspace)
    register_document(tool_session(ctx), LiveNotebook(path, bridge=None, client_id="page"))
    refused = await call_tool(ctx, "NotebookRestart", {"notebook_path": str(path)},
                              can_use_tool=lambda *a: PermissionDeny("asked"))
    assert refused.get("is_error") and "the agent itself runs in that kernel" in text_of(refused)
    nothing = await call_tool(ToolContext(cwd=workspace), "NotebookRestart", {"notebook_path": str(path)})
    assert nothing.get("is_error") and "nothing to restart" in text_of(nothing)
