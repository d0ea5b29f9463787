"""`jupyter agent run`: the loop headless on a notebook file, from the command line."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from jupyter_agent.cli import main
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use
from tests.programs import installed, path_without_scripts


def make_notebook(path: Path) -> Path:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1", id="c1")])
    nbformat.write(nb, path)
    return path


def clean_env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "JUPYTER_AGENT_", "JPY_"))}
    env.update(IPYTHONDIR=str(tmp / ".ipython"), JUPYTER_CONFIG_DIR=str(tmp / ".jupyter"),
               JUPYTER_RUNTIME_DIR=str(tmp / ".runtime"), JUPYTER_DATA_DIR=str(tmp / ".data"))
    env.update(extra)
    return env


def jupyter_agent(*args: str, cwd: Path, env: dict[str, str], stdin: str | None = None):
    # what the `jupyter-agent` entry point runs (`python -m jupyter_agent.cli` works too,
    # but was measured ~3x slower to run here)
    code = "import sys; from jupyter_agent.cli import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env,
                          input=stdin, capture_output=True, text=True, timeout=60)


def test_run_edits_the_notebook_streams_and_exits_by_end_reason(tmp_path):
    nb = make_notebook(tmp_path / "work.ipynb")
    with FakeMessagesAPI([
        response(text("Reading the notebook."), tool_use("Read", {"file_path": str(nb)})),
        response(tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "c1", "new_source": "x = 2"})),
        response(text("Set x to 2 in cell c1.")),
    ]) as api:
        proc = jupyter_agent("run", "work.ipynb", "-p", "Set x to 2", "--permission-mode", "acceptEdits",
                             cwd=tmp_path, env=clean_env(tmp_path, **api.env()))
    assert proc.returncode == 0, proc.stderr
    assert "Reading the notebook." in proc.stdout and "Set x to 2 in cell c1." in proc.stdout
    assert "● NotebookEdit" in proc.stderr and "✓ NotebookEdit" in proc.stderr
    assert "Ended: completed" in proc.stderr and "not a promise" in proc.stderr
    assert nbformat.read(nb, as_version=4).cells[0].source == "x = 2"
    assert "work.ipynb" in str(api.requests[0].body)  # the model knows the notebook


def test_without_a_terminal_asks_are_denied_and_max_turns_sets_the_status(tmp_path):
    nb = make_notebook(tmp_path / "work.ipynb")
    with FakeMessagesAPI([
        response(tool_use("Read", {"file_path": str(nb)}),
                 tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "c1", "new_source": "x = 3"})),
    ]) as api:
        proc = jupyter_agent("run", str(nb), "-p", "Set x to 3", "--max-turns", "1",
                             cwd=tmp_path, env=clean_env(tmp_path, **api.env()), stdin="")
    assert proc.returncode == 3, proc.stderr  # max_turns
    assert "✗ NotebookEdit" in proc.stderr and "no one is here to give it" in proc.stderr
    assert "Ended: max_turns" in proc.stderr
    assert nbformat.read(nb, as_version=4).cells[0].source == "x = 1"


@pytest.mark.parametrize("how", ["option", "environment"])
def test_replay_of_the_demo_runs_offline_with_no_key(tmp_path, how):
    from jupyter_agent.jupyter.environment import resolve_transcript

    make_notebook(tmp_path / "demo.ipynb")
    args, env = ["run", "demo.ipynb", "--permission-mode", "acceptEdits"], clean_env(tmp_path)
    if how == "option":
        args += ["--replay", "demo"]
    else:
        env["JUPYTER_AGENT_REPLAY"] = resolve_transcript("demo")
    proc = jupyter_agent(*args, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "notes.txt").read_text() == "# demo settings\nvalue = 2\n"
    assert "Done: notes.txt now says `value = 2`." in proc.stdout


@pytest.mark.parametrize("args, message", [
    (["run", "missing.ipynb", "-p", "hi"], "no such notebook"),
    (["run", "nb.ipynb", "-p", "hi", "--permission-mode", "yolo"], "invalid choice: 'yolo'"),
    (["run", "nb.ipynb", "-p", "hi", "--max-turns", "0"], "must be at least 1"),
    (["run", "nb.ipynb"], "say what to do with -p PROMPT"),
    (["run", "nb.ipynb", "-p", "hi"], "No Anthropic API key found"),
    (["run", "nb.ipynb", "-p", "hi", "--replay", "nope.json"], "no such transcript"),
])
def test_bad_input_is_a_usage_error(tmp_path, args, message, monkeypatch, capsys):
    make_notebook(tmp_path / "nb.ipynb")
    monkeypatch.chdir(tmp_path)
    for key in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "JUPYTER_AGENT_REPLAY"):
        monkeypatch.delenv(key, raising=False)
    err = io.StringIO()
    with pytest.raises(SystemExit) if "invalid choice" in message or "at least" in message else _nothing():
        code = main(args, out=io.StringIO(), err=err)
        assert code == 2
    assert message in err.getvalue() + capsys.readouterr().err


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_interactive_terminal_asks_for_approval(tmp_path, monkeypatch):
    nb = make_notebook(tmp_path / "work.ipynb")
    monkeypatch.chdir(tmp_path)
    with FakeMessagesAPI([
        response(tool_use("Read", {"file_path": str(nb)}),
                 tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "c1", "new_source": "x = 4"})),
        response(tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "c1", "new_source": "x = 5"})),
        response(text("Tried twice.")),
    ]) as api:
        for key, value in clean_env(tmp_path, **api.env()).items():
            monkeypatch.setenv(key, value)
        monkeypatch.setattr(sys, "stdin", _Tty("y\nplease keep 4\n"))
        out, err = io.StringIO(), io.StringIO()
        code = main(["run", str(nb), "-p", "Set x"], out=out, err=err)
        feedback = api.requests[-1]["messages"][-1]["content"][0]
    assert code == 0, err.getvalue()
    assert err.getvalue().count("✋ NotebookEdit wants approval") == 2 and "x = 4" in err.getvalue()
    assert nbformat.read(nb, as_version=4).cells[0].source == "x = 4"  # yes, then no with feedback
    assert feedback["is_error"] and "please keep 4" in str(feedback["content"])


def test_jupyter_finds_the_subcommand(tmp_path):
    # the venv's own `jupyter`, called by its path with the venv off PATH (nothing activated
    # it): it must still find `jupyter-agent`, which pip installed next to it
    env = clean_env(tmp_path, PATH=path_without_scripts())
    proc = subprocess.run([installed("jupyter"), "agent", "run", "--help"], capture_output=True, text=True,
                          timeout=60, env=env)
    assert proc.returncode == 0 and "usage: jupyter agent run" in proc.stdout, proc.stderr
