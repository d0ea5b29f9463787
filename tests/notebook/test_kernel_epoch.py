"""The kernel epoch: a NotebookRun whose notebook's kernel was restarted (by someone else, or
after it died) since the conversation last ran a cell gets a clear error and runs nothing;
the next call runs in the fresh kernel. A restart the agent asked for (NotebookRestart) is
no error. Real kernels, the real SDK against the fake Messages API."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from jupyter_agent import Conversation
from jupyter_agent.notebook import close_session, tool_session
from jupyter_agent.notebook.epoch import KernelEpochs, KernelRestartedError
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use
from tests.tools.test_tools_through_loop import result_text, results_sent


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return Path(os.path.realpath(tmp_path))


def _notebook(workspace: Path, *sources: str) -> Path:
    path = workspace / "nb.ipynb"
    path.write_text(nbformat.writes(new_notebook(cells=[new_code_cell(s, id=f"c{i}") for i, s in enumerate(sources)])))
    return path


def _run_cell(path: Path, cell: str) -> dict:
    return tool_use("NotebookRun", {"notebook_path": str(path), "cell_id": cell})


async def test_a_run_in_a_restarted_kernel_is_a_clear_error_then_the_next_runs(workspace, jupyter_dirs):
    path = _notebook(workspace, "epoch_value = 41", "print(epoch_value + 1)", "epoch_value = 1")
    first, blocked, again, rebuilt = (_run_cell(path, "c0"), _run_cell(path, "c1"), _run_cell(path, "c1"),
                                      _run_cell(path, "c2"))
    script = [response(tool_use("Read", {"file_path": str(path)})), response(first), response(text("Set.")),
              response(blocked), response(again), response(rebuilt), response(text("Rebuilt."))]
    with FakeMessagesAPI(script) as api:
        conv = Conversation(model=api.model(), cwd=workspace, allow=("NotebookRun",))
        try:
            assert (await conv.send("set it").wait()).reason == "completed"
            pool = tool_session(conv.context).kernels
            kernel = pool.running(path)
            old_identity = kernel.identity
            await kernel.manager.restart_kernel(now=True)  # as a user or another client would
            await kernel.client.wait_for_ready(timeout=60)
            assert (await conv.send("print it").wait()).reason == "completed"
        finally:
            await conv.aclose()
            await close_session(tool_session(conv.context))
    error = results_sent(api, 4)[blocked["id"]]
    assert error.get("is_error") is True
    said = result_text(error)
    assert "The kernel of" in said and "was restarted since this conversation last ran a cell" in said
    assert "ran nothing" in said and "epoch_value" in said  # the names the old kernel held
    # the next call goes ahead in the fresh kernel: the variable is not there
    ran = result_text(results_sent(api, 5)[again["id"]])
    assert "NameError" in ran and "restarted" not in ran
    assert kernel.identity != old_identity
    assert not results_sent(api, 6)[rebuilt["id"]].get("is_error")


async def test_a_kernel_that_died_is_not_replaced_silently(workspace, jupyter_dirs):
    path = _notebook(workspace, "import os\nos._exit(1)", "print('fresh')")
    died, after = _run_cell(path, "c0"), _run_cell(path, "c1")
    script = [response(tool_use("Read", {"file_path": str(path)})), response(died), response(after),
              response(text("The kernel died."))]
    with FakeMessagesAPI(script) as api:
        conv = Conversation(model=api.model(), cwd=workspace, allow=("NotebookRun",))
        try:
            assert (await conv.send("go").wait()).reason == "completed"
        finally:
            await conv.aclose()
    assert results_sent(api, 2)[died["id"]].get("is_error") is True
    said = result_text(results_sent(api, 3)[after["id"]])
    assert "was restarted since this conversation last ran a cell" in said and "fresh\n" not in said


async def test_notebook_restart_by_the_agent_is_no_error(workspace, jupyter_dirs):
    path = _notebook(workspace, "kept = 1", "print('after restart')")
    calls = [_run_cell(path, "c0"), tool_use("NotebookRestart", {"notebook_path": str(path)}), _run_cell(path, "c1")]
    script = [response(tool_use("Read", {"file_path": str(path)})), *[response(c) for c in calls],
              response(text("Done."))]
    with FakeMessagesAPI(script) as api:
        conv = Conversation(model=api.model(), cwd=workspace, allow=("NotebookRun", "NotebookRestart"))
        try:
            assert (await conv.send("go").wait()).reason == "completed"
        finally:
            await conv.aclose()
    said = result_text(results_sent(api, 4)[calls[2]["id"]])
    assert "after restart" in said and "restarted since" not in said


def test_epochs_raise_once_per_replacement():
    epochs = KernelEpochs()
    epochs.check("nb", "k1")
    epochs.saw("nb", ["b", "a"])
    epochs.check("nb", None)  # a kernel that did not say: nothing is checked
    epochs.check("nb", "k1")
    with pytest.raises(KernelRestartedError) as caught:
        epochs.check("nb", "k2")
    assert caught.value.gone == ["a", "b"] and "a, b" in str(caught.value)
    epochs.check("nb", "k2")  # told once: the fresh kernel is the notebook's now
    epochs.forget("nb")
    epochs.check("nb", "k3")
