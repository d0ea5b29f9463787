"""What the model is told in a headless `jupyter agent run`: which tools run, which cannot
(the system prompt), and a refusal it can act on; the operator's flags go to stderr only."""

from __future__ import annotations

import json

from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use
from tests.test_cli import clean_env, jupyter_agent, make_notebook


def test_a_refused_bash_tells_the_model_what_runs_and_the_operator_how_to_allow_it(tmp_path):
    nb = make_notebook(tmp_path / "work.ipynb")
    script = "cd /tmp && echo " + "'a long line of a script' " * 40
    bash = tool_use("Bash", {"command": script})
    scratch = tool_use("KernelRun", {"notebook_path": str(nb), "code": "print(6 * 7)"})
    with FakeMessagesAPI([response(bash), response(scratch), response(text("Done."))]) as api:
        proc = jupyter_agent("run", str(nb), "-p", "check", "--permission-mode", "bypassPermissions",
                             "--allow", "NotebookRun", cwd=tmp_path, env=clean_env(tmp_path, **api.env()), stdin="")
    assert proc.returncode == 0, proc.stderr
    system = json.dumps(api.requests[0].body["system"])
    assert "Permissions in this session (permission mode bypassPermissions)" in system
    assert "NotebookRun, NotebookRunCells, KernelRun (allowed by a rule)" in system
    assert "Cannot run: Bash" in system and "may need approval" not in system
    result = api.requests[1].body["messages"][-1]["content"][0]
    said = result["content"] if isinstance(result["content"], str) else json.dumps(result["content"])
    assert result["is_error"]
    assert said.startswith("Bash was not run: running code needs a person's approval, and no one can approve it")
    assert "KernelRun" in said  # what it can use instead
    for operator_word in ("--allow", "--permission-mode", "bypassPermissions", "always asks"):
        assert operator_word not in said
    # the operator's hint: on stderr, not echoing a 1,000-character script into an --allow
    assert "Bash was denied: it needs approval and no one is at a terminal" in proc.stderr
    assert script not in proc.stderr.replace("\n", "")
    assert "--permission-mode" not in proc.stderr.split("Bash was denied")[1].split("\n")[0]
    # and the scratch run the NotebookRun rule allows ran, unattended
    ran = api.requests[2].body["messages"][-1]["content"][0]
    assert "42" in json.dumps(ran["content"]) and not ran.get("is_error")
