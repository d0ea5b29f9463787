"""The saved conversation's file (``jupyter/persistence/saved_conversation.py``), in this process: what is
written (redacted, paired, owner-only; undo data without secrets, within its bound) and what
reading a file anyone could have written gives back (checked, repaired, or refused)."""

from __future__ import annotations

import json
import os

import pytest

from jupyter_agent.changes import CellState, RunChanges
from jupyter_agent.loop.usage import Usage
from jupyter_agent.jupyter.persistence import saved_conversation as sc
from jupyter_agent.jupyter.persistence.saved_conversation import (SavedConversation, SavedConversationError, SavedRun,
                                                                  encode, load, saved_path, write)

SECRET = "zq-unit-secret-value-987654321"


@pytest.fixture
def secret_env(monkeypatch):
    monkeypatch.setenv("UNIT_SERVICE_TOKEN", SECRET)


def _changes(tmp_path) -> RunChanges:
    changes = RunChanges()
    plain, secret = str(tmp_path / "plain.txt"), str(tmp_path / "secret.txt")
    changes.file_written(plain, (b"before\n", 0o644), b"after\n")
    changes.file_written(secret, (f"token={SECRET}\n".encode(), 0o600), b"token=gone\n")
    changes.file_written(str(tmp_path / "new.txt"), None, b"created\n")
    nb = str(tmp_path / "nb.ipynb")
    changes.before_cell_change(nb, CellState("c0", "code", "x = 1", ({"output_type": "stream", "name": "stdout",
                                                                        "text": f"{SECRET}\n"},), 1), live=False)
    changes.after_cell_change(nb, "c0", "x = 2", "code")
    changes.before_cell_change(nb, CellState("c1", "code", f"key = {SECRET!r}"), live=False)
    changes.after_cell_change(nb, "c1", "key = None", "code")
    changes.ran_cell(("x", "not a name"))
    return changes


def test_written_without_secrets_paired_and_read_back(tmp_path, secret_env, jupyter_dirs):
    messages = [{"role": "user", "content": f"my token is {SECRET}"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read",
                                                   "input": {"file_path": "/x"}}]}]  # cut: no result yet
    saved = SavedConversation(key="notebook:/nb.ipynb", messages=messages, rules=["Edit(src/**)"],
                              runs=[SavedRun("first", "completed", 2, _changes(tmp_path),
                                             usage=Usage(input_tokens=4000, output_tokens=60, cost_usd=0.0129)),
                                    SavedRun("replayed", offline=True, usage=Usage(input_tokens=10))],
                              variables=["df", "x", "1bad"], kernel_epoch="e1")
    path = saved_path(saved.key)
    assert str(path).startswith(os.environ["JUPYTER_DATA_DIR"])
    write(path, encode(saved))
    raw = path.read_text()
    assert SECRET not in raw and "[redacted UNIT_SERVICE_TOKEN]" in raw
    assert oct(path.stat().st_mode & 0o777) == "0o600"

    back = load(path)
    assert back.messages[0]["content"] == "my token is [redacted UNIT_SERVICE_TOKEN]"
    assert back.messages[-1]["content"][0]["tool_use_id"] == "toolu_1"  # paired when written
    assert back.rules == ["Edit(src/**)"] and back.variables == ["df", "x"] and back.kernel_epoch == "e1"
    assert back.notes == []
    run = back.runs[0]
    assert (run.prompt, run.reason, run.turns, run.unsaved) == ("first", "completed", 2, 2)
    assert (run.usage.input_tokens, run.usage.output_tokens, run.usage.cost_usd, run.offline) == (4000, 60, 0.0129,
                                                                                                  False)
    assert back.runs[1].offline and back.runs[1].usage.input_tokens == 10
    files = run.changes.files
    assert files[str(tmp_path / "plain.txt")].data == b"before\n"
    assert files[str(tmp_path / "secret.txt")].data is None  # kept by hash only: undo says it cannot
    assert files[str(tmp_path / "secret.txt")].restorable is False
    assert files[str(tmp_path / "new.txt")].existed is False
    cells = run.changes.notebooks[str(tmp_path / "nb.ipynb")].cells
    assert list(cells) == ["c0"]  # the cell whose source held the secret is not kept
    assert SECRET not in json.dumps(cells["c0"].before.outputs)
    assert run.changes.variables == ["x"]


def test_undo_data_beyond_the_bound_is_kept_by_hash(tmp_path, monkeypatch, jupyter_dirs):
    monkeypatch.setattr(sc, "MAX_UNDO_BYTES", 10)
    changes = RunChanges()
    changes.file_written(str(tmp_path / "big.txt"), (b"x" * 100, 0o644), b"y")
    saved = SavedConversation(key="k", messages=[{"role": "user", "content": "hi"}],
                              runs=[SavedRun("p", changes=changes)])
    path = tmp_path / "c.json"
    write(path, encode(saved))
    run = load(path).runs[0]
    assert run.unsaved == 1 and run.changes.files[str(tmp_path / "big.txt")].data is None


def test_a_file_others_can_write_gives_no_rules(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"format": sc.FORMAT, "version": 1, "messages": [{"role": "user", "content": "hi"}],
                                "rules": ["Bash"]}))
    path.chmod(0o600)
    assert load(path).rules == ["Bash"]
    path.chmod(0o646)
    back = load(path)
    assert back.rules == [] and "not taken back" in back.notes[0]


def test_a_file_of_another_user_gives_no_undo_records_nor_rules(tmp_path, jupyter_dirs):
    path = tmp_path / "c.json"
    saved = SavedConversation("folder:/x", messages=[{"role": "user", "content": "hi"}], rules=["Bash"],
                              runs=[SavedRun("p", changes=_changes(tmp_path))])
    write(path, encode(saved))
    mine = load(path)
    assert not mine.foreign and mine.rules == ["Bash"] and mine.runs[0].changes is not None
    assert mine.runs[0].changes.saved  # read back: its undo keeps to the working folders
    os.chown(path, 4242, 4242)  # (the tests run as root)
    theirs = load(path)
    assert theirs.foreign == "it belongs to another user (uid 4242)"
    assert theirs.rules == [] and theirs.runs[0].changes is None
    assert "the undo records of 1 run(s) were not taken back: the file is not yours alone" in theirs.notes[1]


def test_a_saved_mode_is_permission_bits_only():
    changes = sc.changes_from_json({"files": [{"path": "/w/a", "existed": True, "mode": 0o4755, "data": "",
                                               "before_hash": None, "after_hash": ""}]})
    assert changes.files["/w/a"].mode == 0o755


@pytest.mark.parametrize("content, said", [
    (b"\xff\xfe not json", "cannot be read"),
    (b"[1, 2]", "is not a saved jupyter-agent conversation"),
    (json.dumps({"format": sc.FORMAT, "version": 99}).encode(), "format version 99"),
])
def test_unreadable_files_are_refused_with_what_to_do(tmp_path, content, said):
    path = tmp_path / "c.json"
    path.write_bytes(content)
    with pytest.raises(SavedConversationError) as caught:
        load(path)
    assert said in str(caught.value) and ("%agent new" in str(caught.value) or "Delete" in str(caught.value))


def test_wrong_types_and_unknown_blocks_are_left_out(tmp_path):
    notes: list[str] = []
    messages = sc.check_messages([
        {"role": "user", "content": [{"type": "text", "text": 5}, {"type": "text", "text": "kept"},
                                     {"type": "image", "source": {"type": "url", "url": "http://x"}}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "bad id with spaces", "name": "Read",
                                           "input": {}},
                                          {"type": "tool_use", "id": "toolu_ok", "name": "Read", "input": []},
                                          {"type": "text", "text": "answer", "cache_control": {"x": 1}}]},
        "not a message",
    ], notes)
    assert messages == [{"role": "user", "content": [{"type": "text", "text": "kept"}]},
                        {"role": "assistant", "content": [{"type": "text", "text": "answer"}]}]
    assert notes == ["left out 5 message(s) or block(s) of an unknown shape"]
    with pytest.raises((TypeError, ValueError, KeyError)):
        sc.changes_from_json({"files": [{"path": "relative.txt", "existed": True, "mode": None, "data": None,
                                         "before_hash": None}]})
    with pytest.raises((TypeError, ValueError, KeyError)):
        sc.changes_from_json({"files": [{"path": "/a", "existed": "yes"}]})


def test_a_symlink_in_the_files_place_is_not_written_through(tmp_path):
    target = tmp_path / "bashrc"
    target.write_text("keep me\n")
    path = tmp_path / "conversations" / "c.json"
    path.parent.mkdir()
    path.symlink_to(target)
    with pytest.raises(SavedConversationError, match="symbolic link"):
        write(path, encode(SavedConversation(key="k", messages=[{"role": "user", "content": "hi"}])))
    assert target.read_text() == "keep me\n"


# -- what the side panel shows of a resumed conversation (issue 40, item 9) -----------------------

def test_resumed_runs_get_their_part_of_the_history():
    """Each resumed run gets the items of its turns; what precedes the first found prompt (a
    compaction's summary) shows in the first run; a failed call shows as an error; the loop's
    reminders are not shown; a run whose prompt is not in the history keeps its prompt only."""
    from types import SimpleNamespace

    from jupyter_agent.jupyter.persistence.resumed_history import fill_runs
    from jupyter_agent.view.runmodel import RunModel

    messages = [
        {"role": "user", "content": "Summary of the earlier work."},
        {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]},
        {"role": "user", "content": [{"type": "text", "text": "<system-reminder>\nnames\n</system-reminder>\n"},
                                     {"type": "text", "text": "Run the cell"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "x"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "boom", "is_error": True},
                                     {"type": "text", "text": "Try again"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
    ]
    runs = [SimpleNamespace(prompt=p, model=RunModel(prompt=p)) for p in ("Compacted away", "Run the cell", "Gone")]
    fill_runs(messages, runs)
    assert [type(i).__name__ for i in runs[0].model.items] == ["PromptItem"]
    shown = [(type(i).__name__, getattr(i, "text", getattr(i, "state", ""))) for i in runs[1].model.items]
    assert shown == [("NoticeItem", "User message: Summary of the earlier work."), ("TextItem", "Noted."),
                     ("PromptItem", "Run the cell"), ("ToolItem", "error"), ("NoticeItem", "User message: Try again"),
                     ("TextItem", "Done.")]
    tool = runs[1].model.items[3]
    assert tool.state == "error" and tool.result == "boom"
    assert [type(i).__name__ for i in runs[2].model.items] == ["PromptItem"]
