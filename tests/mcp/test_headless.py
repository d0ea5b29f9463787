"""MCP servers in ``jupyter agent run``: ``--mcp-config`` (a file or JSON, as ``.mcp.json``
holds them) starts servers without asking, their tools still ask unless ``--allow`` covers
them, and a ``.mcp.json`` in the working folder is not started without a terminal to ask."""

from __future__ import annotations

import io
import json
import sys

import pytest

from jupyter_agent.cli import main
from jupyter_agent.mcp.config import read_mcp_config
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use
from tests.test_cli import clean_env, jupyter_agent, make_notebook

from .servers import process_alive, stdio_server

pytestmark = pytest.mark.timeout(150)  # (a loaded machine: each server is a Python process that imports the SDK)


def test_the_cli_runs_a_servers_tool_a_rule_allows_and_no_other(tmp_path):
    nb = make_notebook(tmp_path / "work.ipynb")
    calc = stdio_server(tmp_path)
    (tmp_path / "servers.json").write_text(json.dumps({"mcpServers": {"calc": calc}}))
    # the folder's .mcp.json: its calc is the one given on the command line; repo would
    # leave a file behind if it ever started
    started = tmp_path / "repo-started"
    repo = {"command": sys.executable, "args": ["-c", f"open({str(started)!r}, 'w')"]}
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"calc": calc, "repo": repo}}))
    add = tool_use("mcp__calc__add", {"a": 2, "b": 3})
    touch = tool_use("mcp__calc__touch", {"name": "made.txt"})
    with FakeMessagesAPI([response(add, touch), response(text("Added; touch was not allowed."))]) as api:
        proc = jupyter_agent("run", nb.name, "-p", "add 2 and 3, then touch made.txt",
                             "--mcp-config", "servers.json", "--allow", "mcp__calc__add",
                             cwd=tmp_path, env=clean_env(tmp_path, **api.env()), stdin="", timeout=120)
        offered = {t["name"] for t in api.requests[0].body["tools"]}
        results = {b["tool_use_id"]: b for b in api.requests[1].body["messages"][-1]["content"]}
    assert proc.returncode == 0, proc.stderr
    assert {"mcp__calc__add", "mcp__calc__touch"} <= offered and not any("repo" in t for t in offered)
    assert results[add["id"]]["content"][0]["text"] == "sum=5" and not results[add["id"]].get("is_error")
    assert results[touch["id"]]["is_error"] and not (tmp_path / "made.txt").exists()
    # the model is told it cannot run; how to allow it next time goes to the operator, on stderr
    assert "mcp__calc__touch was not run" in str(results[touch["id"]]["content"])
    assert "--allow" not in str(results[touch["id"]]["content"]) and "--allow mcp__calc__touch" in proc.stderr
    assert "⊘ mcp__calc__touch" in proc.stderr
    # the .mcp.json server no one could approve: not started, and stderr says how to opt in
    assert not started.exists()
    assert ".mcp.json names the MCP server(s) 'repo'; they are not started" in proc.stderr
    assert "--mcp-config .mcp.json" in proc.stderr and "'calc'" not in proc.stderr.split("not started")[0]
    assert not process_alive(int((tmp_path / "pid").read_text()))  # gone with the CLI


def test_mcp_config_takes_a_file_or_json_with_or_without_the_mcpservers_wrapper(tmp_path):
    spec = {"command": "calc-server", "args": ["--port", "0"]}
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "mcp.json").write_text(json.dumps({"mcpServers": {"calc": spec}}))
    assert read_mcp_config("sub/mcp.json", tmp_path) == {"calc": spec}  # relative to the folder given
    assert read_mcp_config(json.dumps({"calc": spec}), tmp_path) == {"calc": spec}
    assert read_mcp_config(json.dumps({"mcpServers": {}}), tmp_path) == {}


@pytest.mark.parametrize("configs, message", [
    (["missing.json"], "missing.json: no such file. Give the path of a JSON file or the JSON itself: "
                       '{"mcpServers": {"NAME": {"command": "PROGRAM"'),
    (['{"calc": {"command": "x",}}'], "the JSON given is not valid JSON (Expecting property name"),
    (["broken.json"], "broken.json is not valid JSON (Expecting value: line 1 column 1"),
    (['{"mcpServers": ["calc"]}'], "the JSON given is not a JSON object of servers. Expected {\"mcpServers\""),
    (['{"calc": {"args": ["x"]}}'], "MCP server 'calc': 'command' must be the program to run"),
    (['{"calc": {"command": "a"}}', '{"calc": {"command": "b"}}'], "the MCP server 'calc' is given twice"),
])
def test_a_bad_mcp_config_is_a_usage_error_that_says_what_to_give(tmp_path, configs, message, monkeypatch):
    make_notebook(tmp_path / "nb.ipynb")
    (tmp_path / "broken.json").write_text("not json")
    monkeypatch.chdir(tmp_path)
    err = io.StringIO()
    args = ["run", "nb.ipynb", "-p", "hi"] + [a for value in configs for a in ("--mcp-config", value)]
    assert main(args, out=io.StringIO(), err=err) == 2
    assert "jupyter agent run: --mcp-config: " in err.getvalue() and message in err.getvalue(), err.getvalue()


def test_with_cwd_elsewhere_the_way_to_opt_in_names_the_files_whole_path(tmp_path, monkeypatch):
    nb = make_notebook(tmp_path / "nb.ipynb")
    project = tmp_path / "project"
    project.mkdir()
    started = tmp_path / "repo-started"
    repo = {"command": sys.executable, "args": ["-c", f"open({str(started)!r}, 'w')"]}
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"repo": repo}}))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # not a terminal
    err = io.StringIO()
    with FakeMessagesAPI([response(text("Nothing to do."))]) as api:
        for key, value in clean_env(tmp_path, **api.env()).items():
            monkeypatch.setenv(key, value)
        assert main(["run", str(nb), "-p", "hi", "--cwd", str(project)], out=io.StringIO(), err=err) == 0
        offered = {t["name"] for t in api.requests[0].body["tools"]}
    assert f"--mcp-config {project / '.mcp.json'} (servers given" in err.getvalue()
    assert not started.exists() and not any(name.startswith("mcp__") for name in offered)


def test_the_help_names_the_option(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "--mcp-config FILE_OR_JSON" in capsys.readouterr().out
