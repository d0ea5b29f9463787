"""A notebook with `%%agent` cells executed headless by nbclient (what `jupyter execute`
and papermill use): each run finishes before the next cell, the saved outputs keep the
transcript, and approvals follow the permission mode (an ask is a clear deny)."""

from __future__ import annotations

import nbformat
from nbclient import NotebookClient

from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use

from .frontend import isolated_env


def test_nbclient_runs_each_agent_cell_to_its_end_and_saves_the_transcript(tmp_path, monkeypatch):
    done = tmp_path / "headless.txt"
    blocked = tmp_path / "blocked.txt"
    with FakeMessagesAPI([
        response(text("Writing it."), tool_use("Write", {"file_path": str(done), "content": "from the agent"}),
                 delay_s=0.005),
        response(text("Wrote headless.txt.")),
        response(tool_use("Write", {"file_path": str(blocked), "content": "no"})),
        response(text("I could not write blocked.txt: it needs approval.")),
    ]) as api:
        for key, value in isolated_env(tmp_path, **api.env()).items():
            monkeypatch.setenv(key, value)
        nb = nbformat.v4.new_notebook(cells=[
            nbformat.v4.new_code_cell("%load_ext jupyter_agent"),
            nbformat.v4.new_code_cell("%%agent --permission-mode acceptEdits\nWrite headless.txt"),
            nbformat.v4.new_code_cell("print(open('headless.txt').read())"),
            nbformat.v4.new_code_cell("%%agent\nNow write blocked.txt"),
        ])
        path = tmp_path / "headless.ipynb"
        NotebookClient(nb, timeout=60, kernel_name="python3",
                       resources={"metadata": {"path": str(tmp_path)}}).execute()
        nbformat.write(nb, path)
        requests = len(api.requests)

    saved = nbformat.read(path, as_version=4)
    # the next cell ran after the run ended: it read what the agent wrote
    assert saved.cells[2].outputs[0]["text"] == "from the agent\n"
    first = saved.cells[1].outputs
    assert len(first) == 1 and set(first[0]["data"]) == {"text/markdown", "text/plain"}
    md = first[0]["data"]["text/markdown"]
    assert "Writing it." in md and "Wrote headless.txt." in md and "✓ *Finished*" in md
    # default mode, nobody to ask: the write is denied with a message that says why
    second = saved.cells[3].outputs[0]["data"]["text/markdown"]
    assert "needs approval" in second and "no one can approve it" in second
    assert "can_use_tool=" not in second and "allow=(" not in second  # the model's words, not the developer's
    assert "✓ *Finished*" in second and not blocked.exists()
    assert requests == 4
    assert api.api_key not in path.read_text()


def test_nbclient_replays_the_demo_offline_to_a_clean_end_at_its_first_ask(tmp_path, monkeypatch):
    """Offline (JUPYTER_AGENT_REPLAY, no key), no one to approve: the demo's first Read (its
    scratch folder is outside the working folder) is refused; the replay ends with its closing
    answer, as after a person's Deny, rather than a replay mismatch (a model error)."""
    for key, value in isolated_env(tmp_path, JUPYTER_AGENT_REPLAY="demo").items():
        monkeypatch.setenv(key, value)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("%load_ext jupyter_agent"),
                                         nbformat.v4.new_code_cell("%%agent\nShow me what you can do")])
    NotebookClient(nb, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    md = nb.cells[1].outputs[0]["data"]["text/markdown"]
    assert "Read needs a person's approval and no one can give it in this run" in md, md
    assert "✓ *Finished*" in md and "replay_mismatch" not in md and "model_error" not in md, md
