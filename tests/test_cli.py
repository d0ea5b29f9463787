"""`jupyter agent run`: the loop headless on a notebook file, from the command line."""

from __future__ import annotations

import io
import json
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


def jupyter_agent(*args: str, cwd: Path, env: dict[str, str], stdin: str | None = None, timeout: float = 60):
    # what the `jupyter-agent` entry point runs (`python -m jupyter_agent.cli` works too,
    # but was measured ~3x slower to run here)
    code = "import sys; from jupyter_agent.cli import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env,
                          input=stdin, capture_output=True, text=True, timeout=timeout)


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
    assert "Ended: completed" in proc.stderr and "not a promise" not in proc.stderr  # no lecture
    assert nbformat.read(nb, as_version=4).cells[0].source == "x = 2"
    assert "work.ipynb" in str(api.requests[0].body)  # the model knows the notebook
    assert "Changes:\n  replaced cell work.ipynb (cell c1)\n" in proc.stderr  # the run's list of changes


def test_without_a_terminal_asks_are_denied_and_max_turns_sets_the_status(tmp_path):
    nb = make_notebook(tmp_path / "work.ipynb")
    with FakeMessagesAPI([
        response(tool_use("Read", {"file_path": str(nb)}),
                 tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "c1", "new_source": "x = 3"})),
    ]) as api:
        proc = jupyter_agent("run", str(nb), "-p", "Set x to 3", "--max-turns", "1",
                             cwd=tmp_path, env=clean_env(tmp_path, **api.env()), stdin="")
    assert proc.returncode == 3, proc.stderr  # max_turns
    assert "⊘ NotebookEdit" in proc.stderr and "no one is at a terminal" in proc.stderr
    # advice for whoever runs the command: its flags, not Python options
    assert "--allow 'Edit(" in proc.stderr and "--permission-mode" in proc.stderr
    assert "can_use_tool=" not in proc.stderr and "allow=(" not in proc.stderr
    assert "Ended: max_turns" in proc.stderr
    assert nbformat.read(nb, as_version=4).cells[0].source == "x = 1"


@pytest.mark.parametrize("how", ["option", "environment"])
def test_replay_of_the_demo_runs_offline_with_no_key(tmp_path, how):
    from jupyter_agent.environment import resolve_transcript

    make_notebook(tmp_path / "demo.ipynb")
    # its scratch folder is outside the working folder: reading there asks, so allow it all
    args, env = ["run", "demo.ipynb", "--permission-mode", "bypassPermissions"], clean_env(tmp_path)
    if how == "option":
        args += ["--replay", "demo"]
    else:
        env["JUPYTER_AGENT_REPLAY"] = resolve_transcript("demo")
    proc = jupyter_agent(*args, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "notes.txt").exists()  # the replay works in its own scratch folder
    assert "Offline replay — your prompt is not used; this replays demo_read_edit.json" in proc.stdout + proc.stderr
    assert "Done: notes.txt now says `value = 2`." in proc.stdout
    figures = next(line for line in proc.stderr.splitlines() if line.startswith("turns "))
    assert "tokens in" in figures and "$" not in figures and "cost" not in figures  # offline spends nothing


def test_replay_of_the_demo_without_a_terminal_ends_cleanly_at_its_first_ask(tmp_path):
    """No one to approve (stdin is not a terminal, default mode): the demo's first Read, in
    its scratch folder outside the working folder, is refused; the replay ends with its
    closing answer, as after a person's Deny, not a replay mismatch."""
    from jupyter_agent.loop.permission_result import NO_ONE_APPROVES
    from jupyter_agent.prompts import denial_for_model

    assert NO_ONE_APPROVES in denial_for_model("Read", None)  # how the replay knows this refusal
    make_notebook(tmp_path / "demo.ipynb")
    proc = jupyter_agent("run", "demo.ipynb", "--replay", "demo", cwd=tmp_path, env=clean_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "Read needs a person's approval and no one can give it in this run" in proc.stdout, proc.stdout
    assert "replay_mismatch" not in proc.stderr and "model_error" not in proc.stderr, proc.stderr
    assert "--allow" in proc.stderr  # the operator's hint: how to let it run


@pytest.mark.parametrize("args, message", [
    (["run", "missing.ipynb", "-p", "hi"], "no such notebook"),
    (["run", "nb.ipynb", "-p", "hi", "--permission-mode", "yolo"], "invalid choice: 'yolo'"),
    (["run", "nb.ipynb", "-p", "hi", "--max-turns", "-1"], "must be at least 1"),
    (["run", "nb.ipynb", "-p", "hi", "--allow", "Edit("], "Invalid permission rule"),
    (["run", "nb.ipynb"], "say what to do with -p PROMPT"),
    (["run", "nb.ipynb", "-p", "hi"], "no Anthropic API key found"),
    (["run", "nb.ipynb", "-p", "hi", "--replay", "nope.json"], "no such transcript"),
])
def test_bad_input_is_a_usage_error(tmp_path, args, message, monkeypatch, capsys):
    make_notebook(tmp_path / "nb.ipynb")
    monkeypatch.chdir(tmp_path)
    for key in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "JUPYTER_AGENT_REPLAY"):
        monkeypatch.delenv(key, raising=False)
    err = io.StringIO()
    with pytest.raises(SystemExit) if "invalid choice" in message or "at least" in message else _nothing():
        if "--allow" in args:
            for key, value in {"ANTHROPIC_API_KEY": "sk-test"}.items():
                monkeypatch.setenv(key, value)
        code = main(args, out=io.StringIO(), err=err)
        assert code == 2
    assert message in err.getvalue() + capsys.readouterr().err


def test_a_model_the_administrators_policy_does_not_allow_is_a_usage_error(tmp_path, monkeypatch):
    admin = tmp_path / "admin"
    admin.mkdir()
    (admin / "jupyter_agent_policy.json").write_text(json.dumps({"allowed_models": ["claude-haiku-*"]}))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(admin))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.delenv("JUPYTER_AGENT_REPLAY", raising=False)
    make_notebook(tmp_path / "nb.ipynb")
    monkeypatch.chdir(tmp_path)
    err = io.StringIO()
    assert main(["run", "nb.ipynb", "-p", "hi", "--model", "claude-opus-4-1"], out=io.StringIO(), err=err) == 2
    assert f"'claude-opus-4-1' is not allowed by the administrator's policy ({admin}" in err.getvalue()


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
    assert err.getvalue().count("? NotebookEdit wants approval") == 2 and "x = 4" in err.getvalue()
    assert nbformat.read(nb, as_version=4).cells[0].source == "x = 4"  # yes, then no with feedback
    assert feedback["is_error"] and "please keep 4" in str(feedback["content"])


def test_jupyter_finds_the_subcommand(tmp_path):
    # the venv's own `jupyter`, called by its path with the venv off PATH (nothing activated
    # it): it must still find `jupyter-agent`, which pip installed next to it
    env = clean_env(tmp_path, PATH=path_without_scripts())
    proc = subprocess.run([installed("jupyter"), "agent", "run", "--help"], capture_output=True, text=True,
                          timeout=60, env=env)
    assert proc.returncode == 0 and "usage: jupyter agent run" in proc.stdout, proc.stderr


@pytest.mark.parametrize("answer, choice, feedback", [
    ("y", "allow", None), ("yes", "allow", None), ("OK", "allow", None), ("allow", "allow", None),
    ("a", "always", None), ("always", "always", None),
    ("", "deny", None), ("n", "deny", None), ("no", "deny", None), ("deny", "deny", None),
    ("use x = 5 instead", "deny", "use x = 5 instead"),
])
def test_the_answers_people_type(answer, choice, feedback):
    from jupyter_agent.cli import interpret_answer

    assert interpret_answer(answer + "\n") == (choice, feedback)


def _start_on_a_terminal(tmp_path, api, nb):
    """`jupyter agent run` with a real pseudo-terminal as stdin (so it asks)."""
    import pty

    master, slave = pty.openpty()
    code = "import sys; from jupyter_agent.cli import main; sys.exit(main())"
    proc = subprocess.Popen([sys.executable, "-c", code, "run", str(nb), "-p", "Set x"], cwd=tmp_path,
                            env=clean_env(tmp_path, **api.env()), stdin=slave, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    os.close(slave)
    return proc, master


def _read_until(stream, marker: str, timeout: float = 60) -> str:
    import select
    import time

    seen, deadline = "", time.monotonic() + timeout
    fd = stream.fileno()
    while marker not in seen:
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {marker!r} in {seen!r}")
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            chunk = os.read(fd, 4096).decode(errors="replace")
            if not chunk:
                raise EOFError(seen)
            seen += chunk
    return seen


def test_ok_at_the_terminal_prompt_allows(tmp_path):
    nb = make_notebook(tmp_path / "work.ipynb")
    with FakeMessagesAPI([
        response(tool_use("Read", {"file_path": str(nb)}),
                 tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "c1", "new_source": "x = 4"})),
        response(text("Set.")),
    ]) as api:
        proc, master = _start_on_a_terminal(tmp_path, api, nb)
        try:
            asked = _read_until(proc.stderr, "or type a note to deny with it: ")
            os.write(master, b"ok\n")
            _, err = proc.communicate(timeout=60)
        finally:
            os.close(master)
    assert "Allow? [y/N]" in asked and "Enter/n = deny" in asked and "y/yes/ok = allow" in asked
    assert proc.returncode == 0, err
    assert nbformat.read(nb, as_version=4).cells[0].source == "x = 4"


def test_ctrl_c_at_the_prompt_exits_promptly(tmp_path):
    import signal
    import time

    nb = make_notebook(tmp_path / "work.ipynb")
    with FakeMessagesAPI([
        response(tool_use("Read", {"file_path": str(nb)}),
                 tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "c1", "new_source": "x = 4"})),
    ]) as api:
        proc, master = _start_on_a_terminal(tmp_path, api, nb)
        try:
            _read_until(proc.stderr, "or type a note to deny with it: ")
            proc.send_signal(signal.SIGINT)
            started = time.monotonic()
            try:
                _, err = proc.communicate(timeout=15)
            except subprocess.TimeoutExpired as exc:
                proc.kill()
                raise AssertionError("still running 15 s after Ctrl-C: the prompt thread kept it alive") from exc
            took = time.monotonic() - started
        finally:
            os.close(master)
    # 130 = aborted; nothing was typed, nothing was written
    assert proc.returncode == 130, err
    assert took < 10, took
    assert nbformat.read(nb, as_version=4).cells[0].source == "x = 1"


def test_no_key_message_fits_the_terminal(tmp_path):
    make_notebook(tmp_path / "nb.ipynb")
    proc = jupyter_agent("run", "nb.ipynb", "-p", "hi", cwd=tmp_path, env=clean_env(tmp_path))
    assert proc.returncode == 2
    assert "export ANTHROPIC_API_KEY" in proc.stderr and "--replay demo" in proc.stderr
    assert "%agent" not in proc.stderr and "getpass" not in proc.stderr  # no notebook instructions


def test_a_replay_that_no_longer_matches_stops_and_says_so(tmp_path):
    # a recording that edits notes.txt in the working folder, run where notes.txt already
    # says value = 2: its Edit fails, so the recorded "Done" would be false
    from jupyter_agent.environment import resolve_transcript

    recording = json.loads(Path(resolve_transcript("demo")).read_text())
    del recording["scratch"]
    for answer in recording["responses"]:
        for block in answer["content"]:
            if block["type"] == "tool_use":
                block["input"]["file_path"] = "notes.txt"
    (tmp_path / "in_place.json").write_text(json.dumps(recording))
    make_notebook(tmp_path / "demo.ipynb")
    (tmp_path / "notes.txt").write_text("# demo settings\nvalue = 2\n")
    proc = jupyter_agent("run", "demo.ipynb", "--replay", "in_place.json", "--permission-mode", "acceptEdits",
                         cwd=tmp_path, env=clean_env(tmp_path))
    assert proc.returncode == 1, proc.stderr  # model_error
    assert "The replay stopped: it no longer matches this folder" in proc.stderr
    assert "In the recording, Edit succeeded; it failed here" in proc.stderr
    assert "$" not in proc.stderr.splitlines()[-1]  # a replay costs nothing: no "≈ $0.0000"
    assert "Done: notes.txt now says" not in proc.stdout
    assert (tmp_path / "notes.txt").read_text() == "# demo settings\nvalue = 2\n"


# --- the terminal display is drawn from the RunModel ----------------------------------------

async def test_the_terminal_shows_what_the_runs_view_model_holds(fake_api_env, tmp_path):
    """A real run (real SDK, fake API): the terminal display folds nothing itself; what
    it prints is what its RunModel, the widgets' and the transcript's view model, holds."""
    from jupyter_agent import query
    from jupyter_agent.cli import TerminalDisplay
    from jupyter_agent.view.transcript import transcript_markdown

    fake_api_env.add(response(text("I'll write it."), tool_use("Write", {"file_path": "a.txt", "content": "1"})),
                     response(text("Done: a.txt holds 1.")))
    out, err = io.StringIO(), io.StringIO()
    display = TerminalDisplay(out, err, cwd=tmp_path)
    run = query("Write a.txt", cwd=str(tmp_path), permission_mode="acceptEdits")
    async for event in run:
        display.handle(event)
    assert out.getvalue() == "I'll write it.\nDone: a.txt holds 1.\n"
    assert "● Write a.txt" in err.getvalue() and "✓ Write a.txt" in err.getvalue()
    assert "Ended: completed" in err.getvalue()
    md = transcript_markdown(display.model)
    assert "I'll write it." in md and "Done: a.txt holds 1." in md and "✓" in md
    assert [t.state for t in display.model.tools()] == ["done"]


def test_the_terminal_prints_an_answer_that_came_without_streaming():
    """A model that does not stream gives only the AssistantMessage: the view model makes
    an item of it, so the terminal prints the answer (it used to print only stream deltas)."""
    from jupyter_agent.cli import TerminalDisplay
    from jupyter_agent.loop.events import AssistantMessage, RequestStart
    from jupyter_agent.loop.state import Terminal, TerminalReason
    from jupyter_agent.loop.usage import Usage

    out, err = io.StringIO(), io.StringIO()
    display = TerminalDisplay(out, err)
    display.handle(RequestStart(1, 1, "claude-test", 1))
    display.handle(AssistantMessage({"role": "assistant", "content": [{"type": "text", "text": "All set."}]},
                                    Usage(), "claude-test", "end_turn"))
    display.handle(Terminal(TerminalReason.COMPLETED, 1))
    assert out.getvalue() == "All set.\n"
    assert "── turn 1 · request 1 · claude-test" in err.getvalue() and "Ended: completed" in err.getvalue()


def test_the_terminal_display_needs_no_widget_stack():
    """The CLI takes the view model and the labels from view/, which the Jupyter front
    shares: it loads none of IPython, ipywidgets, comm or traitlets, nor the Jupyter
    front itself (a fresh interpreter, so other tests' imports do not count)."""
    code = ("import io, sys; from jupyter_agent.cli import TerminalDisplay, build_parser; "
            "from jupyter_agent.loop.state import Terminal, TerminalReason; "
            "import jupyter_agent.view.runmodel, jupyter_agent.view.labels, jupyter_agent.view.transcript; "
            "build_parser().parse_args(['run', 'x.ipynb', '--max-turns', '0']); "
            "d = TerminalDisplay(io.StringIO(), io.StringIO()); d.handle(Terminal(TerminalReason.COMPLETED, 1)); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('IPython', 'ipywidgets', 'comm', 'traitlets')"
            " or m.startswith('jupyter_agent.jupyter')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


# --- what the terminal shows its operator (issue 40) ------------------------------------------

def test_a_local_models_window_is_unknown_in_the_terminal_meter(tmp_path):
    """ANTHROPIC_BASE_URL at a local server and --model qwen3:8b: the meter says the window
    is unknown, not a fraction of a guessed 200k."""
    nb = make_notebook(tmp_path / "work.ipynb")
    with FakeMessagesAPI([response(text("hello"))], ollama_like=True) as api:
        proc = jupyter_agent("run", str(nb), "-p", "hi", "--model", "qwen3:8b",
                             cwd=tmp_path, env=clean_env(tmp_path, **api.env()))
    assert proc.returncode == 0, proc.stderr
    assert "window unknown" in proc.stderr and "/ 200k" not in proc.stderr and "compacts at" not in proc.stderr
    assert "cost unknown" in proc.stderr and "$0.0000" not in proc.stderr


def test_without_a_terminal_the_hint_to_allow_a_call_is_printed_whole(tmp_path):
    deep = tmp_path / ("a-rather-long-folder-name-" * 4) / "and-deeper-still"
    deep.mkdir(parents=True)
    nb = make_notebook(deep / "work.ipynb")
    with FakeMessagesAPI([
        response(tool_use("Read", {"file_path": str(nb)}),
                 tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "c1", "new_source": "x = 3"})),
    ]) as api:
        proc = jupyter_agent("run", str(nb), "-p", "Set x to 3", "--max-turns", "1",
                             cwd=deep, env=clean_env(tmp_path, **api.env()), stdin="")
    hint = next(x for x in proc.stderr.splitlines() if x.startswith("NotebookEdit was denied"))
    assert hint.endswith("; or run from a terminal to be asked.") and "--permission-mode acceptEdits" in hint


def test_an_edit_outside_the_working_folder_is_asked_as_a_diff(tmp_path, monkeypatch):
    """The file of an Edit outside the working folders is read only once allowed, so the ask
    has no diff of the file: it carries the Edit's own strings as one (the terminal, the
    cell's card and the panel show it), not JSON."""
    from jupyter_agent.cli import approval_text

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "notes.txt").write_text("# demo settings\nvalue = 1\n")
    work = tmp_path / "work"
    work.mkdir()
    nb = make_notebook(work / "work.ipynb")
    monkeypatch.chdir(work)
    edit = {"file_path": str(outside / "notes.txt"), "old_string": "value = 1", "new_string": "value = 2"}
    with FakeMessagesAPI([
        response(tool_use("Read", {"file_path": str(outside / "notes.txt")})),
        response(tool_use("Edit", edit)),
        response(text("Done.")),
    ]) as api:
        for key, value in clean_env(tmp_path, **api.env()).items():
            monkeypatch.setenv(key, value)
        monkeypatch.setattr(sys, "stdin", _Tty("y\ny\n"))
        out, err = io.StringIO(), io.StringIO()
        code = main(["run", str(nb), "-p", "Edit it"], out=out, err=err)
    assert code == 0, err.getvalue()
    shown = err.getvalue()
    assert "? Edit wants approval" in shown
    assert "\n-value = 1\n+value = 2\n" in shown and '"old_string"' not in shown
    assert (outside / "notes.txt").read_text() == "# demo settings\nvalue = 2\n"
    assert '"content": "y"' in approval_text("Write", {"file_path": "x", "content": "y"}, "Write x?", None)
