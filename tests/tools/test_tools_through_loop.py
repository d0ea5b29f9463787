"""The tools and permission modes through the whole loop, against the fake Messages API.

Each test scripts the model's ``tool_use`` calls, runs ``query()`` through the real
anthropic SDK, and checks the files on disk and the ``tool_result`` blocks the fake
server received in the next request.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from jupyter_agent import query
from jupyter_agent.loop.permission_result import PermissionAllow
from jupyter_agent.notebook import KernelPool, ToolSession, close_session, tool_session
from jupyter_agent.notebook.memory_backend import MemoryNotebook
from jupyter_agent.permissions import ApprovalBroker, Permissions
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use
from jupyter_agent.loop.services import Services
from jupyter_agent.loop.tool import ToolContext


def results_sent(api: FakeMessagesAPI, request_number: int) -> dict[str, dict]:
    """The tool_result blocks of a request's last message, by tool_use id."""
    content = api.requests[request_number].body["messages"][-1]["content"]
    return {b["tool_use_id"]: b for b in content if b.get("type") == "tool_result"}


def result_text(block: dict) -> str:
    content = block["content"]
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content if b.get("type") == "text")


async def run_script(api: FakeMessagesAPI, prompt: str, cwd: Path, **kwargs):
    run = query(prompt, model=api.model(), cwd=cwd, **kwargs)
    terminal = await run.wait()
    return run, terminal


async def test_read_then_edit_in_accept_edits_mode(workspace):
    (workspace / "app.py").write_text("def greet():\n    return 'hi'\n")
    read = tool_use("Read", {"file_path": str(workspace / "app.py")})
    edit = tool_use("Edit", {"file_path": str(workspace / "app.py"), "old_string": "'hi'", "new_string": "'hello'"})
    with FakeMessagesAPI([response(read), response(edit), response(text("Done."))]) as api:
        _, terminal = await run_script(api, "make it say hello", workspace, permission_mode="acceptEdits")
    assert terminal.reason == "completed"
    assert (workspace / "app.py").read_text() == "def greet():\n    return 'hello'\n"
    assert result_text(results_sent(api, 1)[read["id"]]) == "1\tdef greet():\n2\t    return 'hi'"
    edited = results_sent(api, 2)[edit["id"]]
    assert not edited.get("is_error") and "has been updated" in result_text(edited)
    # no one can approve running code here: those tools are named in the prompt, not sent
    assert [t["name"] for t in api.requests[0].body["tools"]] == [
        "Read", "Write", "Edit", "Glob", "Grep", "NotebookEdit", "TodoWrite"]
    assert ("- Cannot run: NotebookRun, NotebookRunCells, KernelRun, Bash, NotebookRestart."
            in api.requests[0].body["system"][0]["text"])


def _answers(name, input, ask):
    return PermissionAllow()


async def test_a_tool_is_sent_unless_no_call_of_it_can_run_and_a_call_of_an_unsent_one_is_denied(workspace):
    """Sent: what a rule, a person or a hook could let run. Not sent: what nothing can."""
    from jupyter_agent.loop.hooks import Hooks
    from jupyter_agent.permissions import Permissions

    def sent(api) -> list[str]:
        return [t["name"] for t in api.requests[0].body["tools"]]

    every = ["Read", "Write", "Edit", "Glob", "Grep", "NotebookEdit", "NotebookRun", "NotebookRunCells", "KernelRun",
             "Bash", "TodoWrite", "NotebookRestart"]
    bash = tool_use("Bash", {"command": "echo hi", "description": "say hi"})
    runs = [dict(can_use_tool=_answers),  # a person answers
            dict(hooks=Hooks(pre_tool_use=[lambda *args: None])),  # a hook could allow
            dict(permissions=Permissions(mode="bypassPermissions", cwd=workspace, allow=("Bash(echo:*)",))),
            dict(permissions=Permissions(mode="bypassPermissions", cwd=workspace, deny=("Bash",)))]
    got = []
    for kwargs in runs:
        with FakeMessagesAPI([response(bash), response(text("done"))]) as api:
            _, terminal = await run_script(api, "go", workspace, **kwargs)
        assert terminal.reason == "completed"
        got.append((sent(api), result_text(results_sent(api, 1)[bash["id"]])))
    assert [names for names, _ in got[:2]] == [every, every]
    assert "Bash" in got[2][0] and "NotebookRestart" not in got[2][0] and got[2][1].startswith("hi")
    names, denied = got[3]
    assert names == ["Read", "Write", "Edit", "Glob", "Grep", "NotebookEdit", "TodoWrite"]
    # the model calls it anyway (it knows the name from the prompt): the permission system answers
    assert "No such tool" not in denied and "Bash" in denied, denied


async def test_edit_without_read_and_stale_edit_are_error_results(workspace):
    path = workspace / "a.txt"
    path.write_text("one\n")
    blind = tool_use("Edit", {"file_path": "a.txt", "old_string": "one", "new_string": "two"})
    read = tool_use("Read", {"file_path": "a.txt"})

    def user_changes_the_file(body):  # the person edits the file between the model's turns
        path.write_text("one, changed by the user\n")
        return response(tool_use("Edit", {"file_path": "a.txt", "old_string": "one", "new_string": "two"}, id="late"))

    with FakeMessagesAPI([response(blind), response(read), user_changes_the_file, response(text("ok"))]) as api:
        await run_script(api, "edit", workspace, permission_mode="acceptEdits")
    first = results_sent(api, 1)[blind["id"]]
    assert first["is_error"] and "has not been read yet" in first["content"]
    late = results_sent(api, 3)["late"]
    assert late["is_error"] and "has been modified since read" in late["content"]
    assert path.read_text() == "one, changed by the user\n"


async def test_default_mode_without_a_ui_denies_writes_clearly(workspace):
    write = tool_use("Write", {"file_path": "new.txt", "content": "x"})
    with FakeMessagesAPI([response(write), response(text("I could not write."))]) as api:
        _, terminal = await run_script(api, "write", workspace)
    assert terminal.reason == "completed" and not (workspace / "new.txt").exists()
    result = results_sent(api, 1)[write["id"]]
    assert result["is_error"] and "needs approval" in result["content"]


async def test_a_plain_deny_from_the_ui_stops_the_turn(workspace):
    write = tool_use("Write", {"file_path": "new.txt", "content": "x"})
    broker = ApprovalBroker(on_request=lambda request: request.deny())
    with FakeMessagesAPI([response(write)]) as api:
        run, terminal = await run_script(api, "write", workspace, can_use_tool=broker)
    assert terminal.reason == "aborted_tools" and not (workspace / "new.txt").exists()
    last = run.state.messages[-1]["content"][0]
    assert last["tool_use_id"] == write["id"] and last["is_error"] and "doesn't want to proceed" in last["content"]
    assert len(api.requests) == 1


async def test_always_allow_adds_a_rule_the_next_call_uses(workspace):
    (workspace / "src").mkdir()
    asked = []

    def on_request(request):
        asked.append(request.tool_name)
        request.allow_always()

    first = tool_use("Write", {"file_path": "src/a.py", "content": "a = 1\n"})
    second = tool_use("Write", {"file_path": "src/b.py", "content": "b = 2\n"})
    policy = Permissions(cwd=workspace)
    with FakeMessagesAPI([response(first), response(second), response(text("done"))]) as api:
        await run_script(api, "write two files", workspace, permissions=policy,
                         can_use_tool=ApprovalBroker(policy, on_request))
    assert asked == ["Write"]  # the second write was covered by "Edit(src/**)"
    assert (workspace / "src" / "b.py").read_text() == "b = 2\n"


async def test_plan_mode_tells_the_model_and_refuses_changes(workspace):
    (workspace / "a.txt").write_text("a\n")
    read = tool_use("Read", {"file_path": "a.txt"})
    write = tool_use("Write", {"file_path": "a.txt", "content": "b\n"})
    with FakeMessagesAPI([response(read, write), response(text("Here is my plan."))]) as api:
        await run_script(api, "plan it", workspace, permission_mode="plan")
    system = json.dumps(api.requests[0].body["system"])
    assert "Plan mode is active" in system
    results = results_sent(api, 1)
    assert not results[read["id"]].get("is_error")
    assert results[write["id"]]["is_error"] and "plan mode" in results[write["id"]]["content"]
    assert (workspace / "a.txt").read_text() == "a\n"


async def test_bypass_still_asks_for_safety_paths(workspace):
    (workspace / ".git").mkdir()
    hook = tool_use("Write", {"file_path": ".git/config", "content": "[core]\n\tpager = evil\n"})
    fine = tool_use("Write", {"file_path": "ok.txt", "content": "ok\n"})
    with FakeMessagesAPI([response(hook, fine), response(text("done"))]) as api:
        await run_script(api, "go", workspace, permission_mode="bypassPermissions")
    results = results_sent(api, 1)
    assert results[hook["id"]]["is_error"] and "protected path" in results[hook["id"]]["content"]
    assert not (workspace / ".git" / "config").exists() and (workspace / "ok.txt").read_text() == "ok\n"


async def test_parallel_searches_all_answer_paired_by_id(workspace):
    for i in range(3):
        (workspace / f"m{i}.py").write_text(f"value_{i} = {i}\n")
    calls = [tool_use("Grep", {"pattern": f"value_{i}", "output_mode": "content"}) for i in range(3)]
    calls.append(tool_use("Glob", {"pattern": "*.py"}))
    with FakeMessagesAPI([response(*calls), response(text("found"))]) as api:
        await run_script(api, "search", workspace)
    results = results_sent(api, 1)
    assert list(results) == [c["id"] for c in calls]
    for i in range(3):
        assert results[calls[i]["id"]]["content"] == f"m{i}.py:1:value_{i} = {i}"
    assert sorted(results[calls[3]["id"]]["content"].splitlines()) == [str(workspace / f"m{i}.py") for i in range(3)]


async def test_notebook_read_edit_run_through_the_loop(workspace, jupyter_dirs):
    path = workspace / "analysis.ipynb"
    path.write_text(nbformat.writes(new_notebook(cells=[new_code_cell("data = [3, 1, 2]", id="load")])) + "\n")
    read = tool_use("Read", {"file_path": str(path)})
    insert = tool_use("NotebookEdit", {"notebook_path": str(path), "cell_id": "load", "edit_mode": "insert",
                                       "cell_type": "code", "new_source": "print(sorted(data))"})
    run_load = tool_use("NotebookRun", {"notebook_path": str(path), "cell_id": "load"})
    run_new = tool_use("NotebookRun", {"notebook_path": str(path), "cell_id": "cell-1"})
    kernels = KernelPool(transport="ipc", kernel_name="python3")
    context = ToolContext(cwd=workspace, services=Services(ToolSession(kernels=kernels)))
    script = [response(read), response(insert), response(run_load, run_new), response(text("Sorted."))]
    try:
        with FakeMessagesAPI(script) as api:
            _, terminal = await run_script(api, "sort the data", workspace, permission_mode="acceptEdits",
                                           context=context, can_use_tool=lambda name, input, ask: PermissionAllow())
    finally:
        await close_session(tool_session(context))
    assert terminal.reason == "completed"
    assert result_text(results_sent(api, 1)[read["id"]]) == (
        f'<notebook path="{path}" cells="1" kernel="not running" working_folder="{workspace}">\n'
        '<cell id="load" type="code" never_run="true">data = [3, 1, 2]</cell>\n</notebook>')
    inserted = result_text(results_sent(api, 2)[insert["id"]])
    assert inserted.startswith("Inserted cell ") and inserted.endswith(" (code, 1 line) at cell-1.")
    ran = results_sent(api, 3)
    assert "[1, 2, 3]" in result_text(ran[run_new["id"]]) and not ran[run_new["id"]].get("is_error")
    saved = json.loads(path.read_text())
    nbformat.validate(saved)
    assert saved["cells"][1]["outputs"][0]["text"] == ["[1, 2, 3]\n"]
    assert os.path.realpath(str(path)) in context.read_file_state


class CountingNotebook(MemoryNotebook):
    """A notebook that counts how often a tool read it."""

    reads = 0

    async def snapshot(self):
        self.reads += 1
        return await super().snapshot()


def _counting_notebook(workspace: Path) -> tuple[Path, CountingNotebook, ToolContext]:
    path = workspace / "plan.ipynb"
    nb = new_notebook(cells=[new_code_cell("a = 1", id="first"), new_code_cell("b = 2", id="second")])
    path.write_text(nbformat.writes(nb) + "\n")
    doc = CountingNotebook(os.path.realpath(path), nb)
    context = ToolContext(cwd=workspace)
    tool_session(context).notebook_documents[os.path.realpath(path)] = doc
    return path, doc, context


async def test_a_notebook_edit_is_planned_once_and_the_approval_shows_that_plan(workspace):
    """One read of the notebook for the whole call (validation, the approval's diff and the
    edit), where there used to be three."""
    path, doc, context = _counting_notebook(workspace)
    read = tool_use("Read", {"file_path": str(path)})
    edit = tool_use("NotebookEdit", {"notebook_path": str(path), "cell_id": "second", "new_source": "b = 3"})
    asked = []

    def allow(name, input, ask):
        asked.append((name, ask.diff, doc.reads))
        return PermissionAllow()

    with FakeMessagesAPI([response(read), response(edit), response(text("Done."))]) as api:
        _, terminal = await run_script(api, "set b to 3", workspace, context=context, can_use_tool=allow)
    assert terminal.reason == "completed"
    [(name, diff, reads_at_ask)] = asked
    assert name == "NotebookEdit" and "-b = 2" in diff and "+b = 3" in diff
    assert reads_at_ask == 2 and doc.reads == 2  # Read's, then the edit's one plan
    assert [c["source"] for c in doc.cells] == ["a = 1", "b = 3"]


async def test_a_notebook_changed_while_the_user_decides_is_refused_not_overwritten(workspace):
    path, doc, context = _counting_notebook(workspace)
    read = tool_use("Read", {"file_path": str(path)})
    edit = tool_use("NotebookEdit", {"notebook_path": str(path), "cell_id": "second", "new_source": "b = 3"})

    async def user_types_then_allows(name, input, ask):
        await doc.replace_cell("first", "a = 100")  # the user edits the notebook meanwhile
        return PermissionAllow()

    with FakeMessagesAPI([response(read), response(edit), response(text("I will read it again."))]) as api:
        _, terminal = await run_script(api, "set b to 3", workspace, context=context,
                                       can_use_tool=user_types_then_allows)
    assert terminal.reason == "completed"
    refused = results_sent(api, 2)[edit["id"]]
    assert refused.get("is_error") and "read" in result_text(refused).lower(), refused
    assert [c["source"] for c in doc.cells] == ["a = 100", "b = 2"]  # the user's edit kept, the plan not applied
