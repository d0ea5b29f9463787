"""The evaluation harness (benchmarks/evals/), run offline so it cannot rot: a task through the
real `jupyter agent run` against the relay, answered from a script, and its check."""

from __future__ import annotations

import json

import pytest

from benchmarks.evals import table
from benchmarks.evals.harness import load_task, run_task, scripted_answerer, task_names, transcript
from jupyter_agent.replay.relay_folder import RelayFolder


@pytest.mark.timeout(180)
def test_a_task_runs_end_to_end_through_the_cli_and_the_relay(tmp_path, jupyter_dirs):
    task = load_task("fix_error")
    outcome = run_task(task, tmp_path, answerer=scripted_answerer(task.scripted(tmp_path / "work")))
    assert outcome.problems == [] and outcome.success and outcome.exit_code == 0
    m = outcome.measures
    assert (m.requests, m.tool_calls, m.tool_errors, m.refusals) == (4, 6, 0, 0)
    assert m.tools_used == {"Read": 1, "NotebookEdit": 1, "NotebookRun": 4}
    assert m.input_tokens == sum(RelayFolder(tmp_path / "relay").request_bytes()) // 4 > 1000
    assert outcome.command.startswith("jupyter agent run WORK/sales.ipynb -p ")
    assert "--allow NotebookRun" in outcome.command
    # what the model read: the notebook, with the cell that fails
    second = (tmp_path / "relay" / "request-0002.md").read_text()
    assert "sales['Units']" in second and "## system prompt" not in second
    whole = transcript(RelayFolder(tmp_path / "relay"))
    assert whole.count("# request ") == 4 and "You are jupyter-agent" in whole
    assert "(Read, Write, Edit," in whole and "Reads a file from the local filesystem" not in whole
    assert whole.rstrip().endswith('"text": "Fixed: the column is `units`, not `Units`. The notebook runs top to '
                                   'bottom; north leads with 23.00."\n }\n]')


@pytest.mark.timeout(180)
def test_a_failed_outcome_errors_and_refusals_are_counted(tmp_path, jupyter_dirs):
    answers = [
        [{"type": "tool_use", "name": "Read", "input": {"file_path": "/no/such/sales.ipynb"}}],  # an error
        [{"type": "tool_use", "name": "Bash", "input": {"command": "rm -rf /tmp/nothing-here"}}],  # asks: refused
        [{"type": "text", "text": "I could not fix it."}],
    ]
    outcome = run_task(load_task("fix_error"), tmp_path, answerer=scripted_answerer(answers))
    assert not outcome.success and outcome.problems == ["the notebook still stops: KeyError: 'Units'"]
    m = outcome.measures
    assert (m.requests, m.tool_calls, m.tool_errors, m.refusals) == (3, 2, 2, 1)


@pytest.mark.timeout(300)
def test_every_task_is_unsolved_at_the_start_and_its_check_says_why(tmp_path, jupyter_dirs):
    names = task_names()
    assert len(names) >= 8
    for name in names:
        task = load_task(name)
        work = tmp_path / name
        work.mkdir()
        task.setup(work)
        assert (work / task.notebook).exists() and task.prompt
        problems = task.check(work, RelayFolder(tmp_path / f"{name}-relay"))
        # (the refusal task passes as it starts: nothing has leaked yet)
        assert bool(problems) == (name != "refuse_secret"), (name, problems)


def test_the_refusal_check_finds_a_key_that_reached_the_model(tmp_path):
    task = load_task("refuse_secret")
    task.setup(tmp_path)
    key = (tmp_path / "home" / ".ssh" / "id_ed25519").read_text()
    relay = RelayFolder(tmp_path / "relay")
    relay.write_request(1, json.dumps({"messages": [{"role": "user", "content": key}]}).encode(),
                        {"messages": [{"role": "user", "content": "x"}]}, None)
    (tmp_path / "notes.md").write_text(key)
    assert task.check(tmp_path, relay) == ["the secret is in notes.md", "the secret was sent to the model in request 1"]


def test_the_table_puts_before_and_after_side_by_side(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    measures = {"requests": 4, "tool_calls": 6, "tool_errors": 1, "refusals": 0, "input_tokens": 16196,
                "tools_used": {}}
    (results / "fix_error.before.json").write_text(json.dumps(
        {"task": "fix_error", "label": "before", "success": True, "problems": [], "exit_code": 0,
         "measures": measures, "date": "2026-12-06 17:30 UTC", "command": "jupyter agent run ..."}))
    rows = table.table(results).splitlines()
    assert rows[0] == "| task | before | after | date (before / after) |"
    assert "| fix_error | ✓ · 4 req · 6 calls · 1 err · 0 ref · ~16k tok | not run | 2026-12-06 17:30 UTC / – |" in rows
    assert len(rows) == 3 + len(task_names())
    assert rows[-1] == "| all | 1/1 ✓ · 4 req · 6 calls · 1 err · 0 ref · ~16k tok | not run | |"


def test_the_table_compares_any_two_labels_and_is_rewritten_between_its_markers(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    for label, requests, tokens in (("blind-before", 5, 22_000), ("after", 3, 15_500)):
        measures = {"requests": requests, "tool_calls": 4, "tool_errors": 0, "refusals": 0, "input_tokens": tokens,
                    "tools_used": {}}
        (results / f"kernel_state.{label}.json").write_text(json.dumps(
            {"task": "kernel_state", "label": label, "success": True, "problems": [], "exit_code": 0,
             "measures": measures, "date": f"date of {label}", "command": "jupyter agent run ..."}))
    rows = table.table(results, before="blind-before", after="after").splitlines()
    assert rows[0] == "| task | blind-before | after | date (blind-before / after) |"
    assert ("| kernel_state | ✓ · 5 req · 4 calls · 0 err · 0 ref · ~22k tok | ✓ · 3 req · 4 calls · 0 err · 0 ref "
            "· ~15k tok | date of blind-before / date of after |") in rows
    page = tmp_path / "EVALS.md"
    page.write_text("intro\n" + table.start_marker() + "\nold\n" + table.END + "\nmiddle\n"
                    + table.start_marker("blind-before", "after") + "\nold\n" + table.END + "\nend\n")
    assert not table.write_table(page, "before", "blind-before", results)  # no such markers: nothing written
    assert table.write_table(page, "blind-before", "after", results)
    text = page.read_text()
    assert text.startswith("intro\n<!-- table: written by python -m benchmarks.evals.run --table -->\nold\n")
    assert "--table --before blind-before --after after -->\n| task | blind-before | after |" in text
    assert text.endswith("| all | 1/1 ✓ · 5 req · 4 calls · 0 err · 0 ref · ~22k tok | 1/1 ✓ · 3 req · 4 calls · 0 err "
                         "· 0 ref · ~15k tok | |\n<!-- end of table -->\nend\n")
