"""The README's main job, ``./dev demo``: JupyterLab on ``notebooks/`` at the start-here
notebook, offline with the replay model (and saying so) when no API key is set."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest

from jupyter_agent.environment import REPLAY_ENV
from jupyter_agent.launch import lab_command
from jupyter_agent.replay.packaged import DEMO_TRANSCRIPT
from tests.programs import system_program

KEY = "sk-ant-api03-launchtestsecret0123456789"


def notebooks(tmp_path: Path) -> Path:
    folder = tmp_path / "notebooks"
    folder.mkdir()
    for name in ("01-the-loop.ipynb", "start-here.ipynb"):
        nbformat.write(nbformat.v4.new_notebook(), folder / name)
    return folder


def test_without_a_key_it_runs_offline_with_the_replay_model_and_says_so(tmp_path):
    folder = notebooks(tmp_path)
    cmd, env, note = lab_command(["--notebooks", str(folder)], environ={"PATH": "/usr/bin"})
    assert env[REPLAY_ENV] == str(DEMO_TRANSCRIPT)  # every kernel the server starts replays
    assert "OFFLINE" in note and "replay" in note and "ANTHROPIC_API_KEY" in note
    assert cmd[1:3] == ["-m", "jupyterlab"] and f"--ServerApp.root_dir={folder}" in cmd
    assert "--LabApp.default_url=/lab/tree/start-here.ipynb" in cmd and "--no-browser" not in cmd
    cmd, _, _ = lab_command(["--notebooks", str(folder), "--no-browser", "--port", "9999", "--ServerApp.ip=0.0.0.0"],
                            environ={})
    assert "--no-browser" in cmd and "--port=9999" in cmd and cmd[-1] == "--ServerApp.ip=0.0.0.0"
    cmd, _, _ = lab_command(["--notebooks", str(folder), "--port", "0"], environ={})
    assert "--port=0" in cmd  # any free port, not JupyterLab's 8888


def test_with_a_key_it_uses_claude_and_never_prints_the_key(tmp_path):
    folder = notebooks(tmp_path)
    cmd, env, note = lab_command(["--notebooks", str(folder)], environ={"ANTHROPIC_API_KEY": KEY})
    assert REPLAY_ENV not in env and env["ANTHROPIC_API_KEY"] == KEY
    assert "Claude" in note and KEY not in note and KEY not in " ".join(cmd)


def test_a_missing_folder_is_a_clear_error(tmp_path, capsys):
    with pytest.raises(SystemExit):
        lab_command(["--notebooks", str(tmp_path / "nope")], environ={})
    assert "no folder" in capsys.readouterr().err


def test_the_terminal_demo_is_still_reachable(tmp_path, monkeypatch, capsys):
    from jupyter_agent.launch import main

    for var in ("IPYTHONDIR", "JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR", "JUPYTER_CONFIG_DIR"):
        monkeypatch.setenv(var, str(tmp_path / var.lower()))
    assert main(["--terminal", "--workspace", str(tmp_path / "ws"), "--yes"]) == 0
    assert "average sale: 111.50" in capsys.readouterr().out


REPO = Path(__file__).resolve().parents[1]
GIT = system_program("git") or "/usr/bin/git"  # the machine's own, by its path (tests/test_programs.py)


def git(repo: Path, *args: str) -> str:
    return subprocess.run([GIT, "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def demo_repository(tmp_path: Path) -> Path:
    """A git repository laid out as this one for ./dev demo: notebooks/ committed, this
    repository's .gitignore."""
    repo = tmp_path / "repo"
    repo.mkdir()
    folder = notebooks(repo)
    (folder / "data.csv").write_text("a,b\n1,2\n")
    shutil.copy(REPO / ".gitignore", repo / ".gitignore")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "notebooks")
    return repo


def test_the_demo_opens_a_fresh_ignored_copy_of_the_notebooks(tmp_path, monkeypatch):
    repo = demo_repository(tmp_path)
    monkeypatch.chdir(repo)
    cmd, _, note = lab_command([], environ={})
    copy = repo / "demo-notebooks"
    assert f"--ServerApp.root_dir={copy}" in cmd and "--LabApp.default_url=/lab/tree/start-here.ipynb" in cmd
    assert "fresh copy of notebooks/" in " ".join(note.split())
    assert (copy / "data.csv").read_text() == "a,b\n1,2\n"  # what the lessons read is there too
    # the demo's runs land in the copy (as JupyterLab's autosave writes them): git sees nothing
    nb = nbformat.read(copy / "start-here.ipynb", 4)
    nb.cells.append(nbformat.v4.new_code_cell("x + 1"))
    nbformat.write(nb, copy / "start-here.ipynb")
    (copy / "mine.ipynb").write_text("{}")
    assert git(repo, "status", "--porcelain") == ""
    lab_command(["--keep"], environ={})  # as the last demo left it
    assert len(nbformat.read(copy / "start-here.ipynb", 4).cells) == 1
    lab_command([], environ={})  # the next demo starts from notebooks/ again; the user's own file stays
    assert nbformat.read(copy / "start-here.ipynb", 4).cells == [] and (copy / "mine.ipynb").exists()


def test_dev_demo_installs_only_what_the_demo_needs():
    """chromium, bubblewrap and the hub's proxy are for the tests: ./dev demo's branch does not
    install them (./dev test's and ./dev flaky's do)."""
    script = (REPO / "dev").read_text()
    branches = script.split("case \"${1:-}\" in", 1)[1]
    demo = branches.split(";;")[0]
    assert "setup" in demo and "setup_test_tools" not in demo
    test, flaky = branches.split(";;")[1:3]
    assert "setup_test_tools" in test and "setup_test_tools" in flaky
    tools = script.split("setup_test_tools() {", 1)[1].split("\n}\n", 1)[0]
    assert "chromium" in tools and "bubblewrap" in tools and "install_hub_proxy" in tools
    setup = script.split("setup() {", 1)[1].split("\n}\n", 1)[0]
    assert not any(word in setup for word in ("chromium", "bubblewrap", "install_hub_proxy"))


def test_it_starts_jupyterlab_on_the_start_here_notebook_without_a_browser(tmp_path):
    folder = notebooks(tmp_path)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "JUPYTER_AGENT_", "JPY_"))}
    for name in ("cfg", "data", "runtime", "settings", "workspaces"):
        (tmp_path / name).mkdir()
    env.update(JUPYTER_CONFIG_DIR=str(tmp_path / "cfg"), JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"), BROWSER="false")
    proc = subprocess.Popen([sys.executable, "-m", "jupyter_agent.launch", "--notebooks", str(folder),
                             "--no-browser", "--port", str(port), "--IdentityProvider.token="],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines = [proc.stdout.readline()]
        while not lines[-1].startswith("=") or len(lines) == 1:
            lines.append(proc.stdout.readline())
        banner = " ".join(" ".join(lines).split())
        assert "OFFLINE with the replay model" in banner and str(folder) in banner
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contents") as r:
                    listing = json.loads(r.read())
                break
            except (urllib.error.URLError, ConnectionError):
                assert proc.poll() is None and time.monotonic() < deadline, "JupyterLab did not start"
                time.sleep(0.1)  # polling: the loop's deadline is the wait
        assert {c["name"] for c in listing["content"]} == {"01-the-loop.ipynb", "start-here.ipynb"}
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/") as r:  # follows the redirect
            assert r.url.endswith("/lab/tree/start-here.ipynb") and r.status == 200
            page = r.read().decode()
        # no "get notified about Jupyter news?" prompt over the notebook (the demo's own config)
        config = json.loads(page.split('id="jupyter-config-data"', 1)[1].split(">", 1)[1].split("</script>", 1)[0])
        assert "@jupyterlab/apputils-extension:announcements" in config["disabledExtensions"]
        # the server (so each kernel it starts) has the replay model; the launcher became it
        environ = Path(f"/proc/{proc.pid}/environ").read_bytes().split(b"\0")
        assert f"{REPLAY_ENV}={DEMO_TRANSCRIPT}".encode() in environ
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
