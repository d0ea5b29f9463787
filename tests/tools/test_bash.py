"""The Bash tool: rules judged on a real shell parse, output bounded and streamed, the
process group ended by Stop and the time limit, the sandbox.

Calls go through the loop's own per-call pipeline (``call_tool``) or the whole loop
against the fake Messages API; commands really run in bash.
"""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent import query
from jupyter_agent.loop.events import ToolProgress, ToolResult
from jupyter_agent.loop.permission_result import PermissionAllow, PermissionAsk, PermissionDeny
from jupyter_agent.permissions import Rule
from jupyter_agent.testing import FakeMessagesAPI, response, tool_use
from jupyter_agent.tools.bash import BashSettings, enable_sandbox, sandbox_unavailable

from .conftest import call_tool, make_ctx, text_of


class Asks:
    """A ``can_use_tool`` that records every ask and answers with ``answer``."""

    def __init__(self, answer: Any = None) -> None:
        self.asks: list[PermissionAsk] = []
        self.answer = answer or PermissionDeny("no", interrupt=False)

    async def __call__(self, name: str, input: dict[str, Any], ask: PermissionAsk) -> Any:
        self.asks.append(ask)
        return self.answer


async def bash(ctx: Any, command: str, asks: Asks | None = None, **extra: Any) -> dict[str, Any]:
    return await call_tool(ctx, "Bash", {"command": command, **extra}, can_use_tool=asks or Asks())


# -- rules: every part of a compound command must be allowed ---------------------------------


async def test_a_second_command_after_an_exact_rule_does_not_run(workspace):
    ctx = make_ctx(workspace, "bypassPermissions", allow=["Bash(git status)"])
    asks = Asks()
    result = await bash(ctx, "git status; touch PWNED", asks)
    assert result["is_error"] and len(asks.asks) == 1
    assert not (workspace / "PWNED").exists()


async def test_every_part_allowed_runs(workspace):
    ctx = make_ctx(workspace, allow=["Bash(echo:*)"])
    asks = Asks()
    result = await bash(ctx, "echo hi && echo there", asks)
    assert not asks.asks and not result.get("is_error")
    assert text_of(result) == "hi\nthere\nExit code 0"


@pytest.mark.parametrize("command", [
    "echo $(touch PWNED)",
    "echo `touch PWNED`",
    "(touch PWNED)",
    "echo hi | touch PWNED",
    "echo hi\ntouch PWNED",
    "echo hi || touch PWNED &",
    "echo <(touch PWNED)",
    "echo ${x:-$(touch PWNED)}",
    "cat <<EOF\n$(touch PWNED)\nEOF",
    "FOO=1 echo hi; PATH=. touch PWNED",
    "echo $'\\x27'; touch PWNED",
    "case x in x) touch PWNED;; esac",
    "echo > $(touch PWNED)",
])
async def test_each_hidden_part_is_judged(workspace, command):
    ctx = make_ctx(workspace, "bypassPermissions", allow=["Bash(echo:*)", "Bash(cat:*)"])
    asks = Asks()
    result = await bash(ctx, command, asks)
    assert result["is_error"] and len(asks.asks) == 1, command
    assert not (workspace / "PWNED").exists()


async def test_substitutions_of_allowed_commands_run(workspace):
    ctx = make_ctx(workspace, allow=["Bash(echo:*)"])
    result = await bash(ctx, "echo $(echo inner) `echo tick` | (echo sub)")
    assert text_of(result) == "sub\nExit code 0"


async def test_prefix_rules_match_whole_words(workspace):
    ctx = make_ctx(workspace, allow=["Bash(ech:*)", "Bash(echo one)"])
    asks = Asks()
    await bash(ctx, "echo two", asks)
    assert len(asks.asks) == 1  # `ech:*` is not a prefix of the word echo; `echo one` is exact
    assert text_of(await bash(ctx, "echo one")) == "one\nExit code 0"


async def test_a_redirection_into_git_hooks_asks_in_every_mode(workspace):
    (workspace / ".git" / "hooks").mkdir(parents=True)
    ctx = make_ctx(workspace, "bypassPermissions", allow=["Bash", "Edit(./**)"])
    asks = Asks()
    await bash(ctx, "echo evil > .git/hooks/pre-commit", asks)
    assert len(asks.asks) == 1 and "protected path" in asks.asks[0].message
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()


async def test_a_redirection_writes_only_where_an_edit_may(workspace):
    asks = Asks()
    await bash(make_ctx(workspace, allow=["Bash(echo:*)"]), "echo hi > out.txt", asks)
    assert len(asks.asks) == 1 and not (workspace / "out.txt").exists()  # default mode: an edit asks
    result = await bash(make_ctx(workspace, "acceptEdits", allow=["Bash(echo:*)"]), "echo hi > out.txt 2>/dev/null")
    assert not result.get("is_error") and (workspace / "out.txt").read_text() == "hi\n"


async def test_deny_rules_win(workspace):
    ctx = make_ctx(workspace, "bypassPermissions", allow=["Bash"], deny=["Bash(rm:*)"])
    (workspace / "keep").write_text("x")
    result = await bash(ctx, "echo ok; rm keep")
    assert result["is_error"] and "denied by the rule 'Bash(rm:*)'" in text_of(result)
    assert (workspace / "keep").exists()


async def test_always_allow_suggests_a_prefix_of_the_leading_words(workspace):
    asks = Asks()
    await bash(make_ctx(workspace), "git diff HEAD~1 -- a.py | head -5", asks, description="Show\nthe diff")
    ask = asks.asks[0]
    assert ask.suggested_rules == ("Bash(git diff:*)", "Bash(head:*)")
    question, _, command = ask.message.partition(":\n")
    assert "(Show the diff)" in question and command == "git diff HEAD~1 -- a.py | head -5"


def test_bash_rules_parse():
    assert Rule.parse("Bash(git diff:*)").pattern == "git diff:*"
    assert Rule.parse("Bash(ls *)").pattern == "ls *"  # words, not a glob: it covers `ls *` itself
    with pytest.raises(ValueError):
        Rule.parse("Bash(:*)")


# -- running ------------------------------------------------------------------------------------


async def test_environment_has_no_credentials_and_runs_in_the_working_folder(workspace, monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "abcdefghijklmnop-secret")
    ctx = make_ctx(workspace, allow=["Bash"])
    result = await bash(ctx, 'echo "${MY_SERVICE_TOKEN:-none}"; pwd; exit 3')
    assert result["is_error"]
    assert text_of(result) == f"none\n{workspace}\nExit code 3"


async def test_progress_bars_keep_their_last_state(workspace):
    ctx = make_ctx(workspace, allow=["Bash"])
    result = await bash(ctx, r"printf 'step 1\rstep 2\rstep 3\ndone\n'")
    assert text_of(result) == "step 3\ndone\nExit code 0"


async def test_output_that_comes_just_after_a_report_is_shown_while_the_command_waits(tmp_path):
    """Reports are at most every 0.1 s; output that comes sooner after one must still reach
    the card once the interval has passed, not only at the next output (a command that prints,
    then waits, showed only its first line: seen in CI)."""
    from jupyter_agent.tools.shell_run import run_shell

    go = tmp_path / "go"
    seen: list[str] = []
    script = f"echo one; sleep 0.02; echo two; while [ ! -f {go} ]; do sleep 0.05; done"
    task = asyncio.ensure_future(run_shell(["bash", "-c", script], cwd=tmp_path, env=dict(os.environ),
                                           timeout_s=30, on_output=seen.append, spill_dir=lambda: tmp_path,
                                           spill_name="out.txt"))
    for _ in range(200):  # the command waits for `go`; the card should show both lines meanwhile
        if seen and "two" in seen[-1]:
            break
        await asyncio.sleep(0.05)
    shown_while_waiting = bool(seen) and "two" in seen[-1]
    go.touch()
    result = await task
    assert shown_while_waiting, seen
    assert result.exit_code == 0


async def test_a_huge_output_is_capped_and_spilled_whole(workspace, tmp_path):
    ctx = make_ctx(workspace, allow=["Bash"])
    ctx.tool_results_dir = tmp_path / "results"
    result = await bash(ctx, "head -c 30000000 /dev/zero | tr '\\0' a; echo; echo END")
    content = text_of(result)
    assert len(content) < 32_000 and content.startswith("a" * 1000) and "END\n" in content
    spill = next((tmp_path / "results").glob("Bash-*.txt"))
    assert str(spill) in content and spill.stat().st_size == 30_000_005


def _group_members(pgid: int) -> list[int]:
    """Processes whose process group is ``pgid`` (read from /proc)."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry))
    return members


def _running(marker: str) -> list[int]:
    """Live processes whose command line holds ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if marker in cmdline and stat[stat.rindex(")") + 2] != "Z":
                found.append(int(entry))
    return found


#: The command's process group, then a child that leaves the group and session, and one that stays.
_DETACHING = "cut -d' ' -f5 /proc/$$/stat; setsid sleep {detached} & sleep 60 & wait"


async def test_stop_ends_the_whole_process_group(workspace):
    detached = f"{os.getpid() % 1000}7.71"  # a number of its own: `sleep 4127.71`
    call = tool_use("Bash", {"command": _DETACHING.format(detached=detached), "description": "wait"})
    with FakeMessagesAPI([response(call)]) as api:
        run = query("go", model=api.model(), cwd=workspace, permissions=_allow_all(workspace))
        events: list[Any] = []

        async def read() -> None:
            async for event in run:
                events.append(event)

        reader = asyncio.ensure_future(read())
        pgid = None
        # Stop once the shell runs and the response has ended (the tool starts while the model
        # still streams, and a stop before the stream ends is ``aborted_streaming``).
        for _ in range(3000):
            progress = [e for e in events if isinstance(e, ToolProgress) and e.data.strip()]
            if (progress and run.record.phase == "tools") or reader.done():
                break
            await asyncio.sleep(0.01)
        assert progress and not reader.done()
        pgid = int(progress[0].data.split()[0])
        for _ in range(3000):  # the detached sleep has started (its own session)
            if _running(f"sleep {detached}"):
                break
            await asyncio.sleep(0.01)
        assert _group_members(pgid) and _running(f"sleep {detached}")  # the shell and its sleeps run
        run.stop()
        await asyncio.wait_for(reader, 30)
    result = next(e for e in events if isinstance(e, ToolResult))
    assert run.terminal.reason == "aborted_tools" and result.outcome.value == "stopped"
    assert pgid is not None and _group_members(pgid) == []
    assert _running(f"sleep {detached}") == []  # the child that left the session ended too (issue 37.6)
    paired = [b for m in run.state.messages if m["role"] == "user" and isinstance(m["content"], list)
              for b in m["content"] if b.get("type") == "tool_result"]
    assert [b["tool_use_id"] for b in paired] == [call["id"]]


async def test_the_timeout_ends_the_whole_process_group(workspace):
    ctx = make_ctx(workspace, allow=["Bash"])
    detached = f"{os.getpid() % 1000}7.72"
    result = await bash(ctx, _DETACHING.format(detached=detached), timeout=1500)
    content = text_of(result)
    assert result["is_error"] and "timed out after 1.5 s" in content
    assert _group_members(int(content.split()[0])) == []
    assert _running(f"sleep {detached}") == []
    await asyncio.sleep(0)
    assert asyncio.all_tasks() == {asyncio.current_task()}  # no reader or waiter left behind


def _allow_all(workspace: Path) -> Any:
    from jupyter_agent.permissions import Permissions

    return Permissions(cwd=workspace, allow=["Bash"])


# -- the sandbox ----------------------------------------------------------------------------------


def test_without_bwrap_the_sandbox_says_it_is_unavailable(workspace, monkeypatch, tmp_path):
    from traitlets import TraitError

    from jupyter_agent.jupyter.kernel.agent_config import AgentConfig
    from jupyter_agent.loop.tool import ToolContext

    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it
    why = sandbox_unavailable()
    assert why and "bwrap (bubblewrap) is not installed" in why
    with pytest.raises(ValueError, match="unavailable"):
        enable_sandbox(ToolContext(cwd=workspace))
    with pytest.raises(TraitError, match="unavailable"):
        AgentConfig(bash_sandbox=True)


def _why_the_sandbox_tests_skip() -> str | None:
    """Why the sandbox tests cannot run here, or None. In CI (``$CI`` or
    ``$JUPYTER_AGENT_REQUIRE_BROWSER``, as .ci/run sets), where ./dev installed bwrap, they run
    whatever happens: a bwrap that cannot make a sandbox fails them with its reason."""
    why = sandbox_unavailable()
    in_ci = os.environ.get("CI") or os.environ.get("JUPYTER_AGENT_REQUIRE_BROWSER")
    installed = why is None or "is not installed" not in why  # (the product's own lookup, not the test's)
    return None if why and in_ci and installed else why


needs_bwrap = pytest.mark.skipif(_why_the_sandbox_tests_skip() is not None,
                                 reason=str(_why_the_sandbox_tests_skip()))


@needs_bwrap
async def test_sandboxed_commands_run_without_asking_and_write_only_inside(workspace, outside):
    ctx = make_ctx(workspace)
    enable_sandbox(ctx)
    assert ctx.services.get(BashSettings).sandbox
    (workspace / ".git").mkdir()
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        result = await bash(ctx, f"touch here; touch {outside}/there; touch .git/config; "
                                 f"(echo hi > /dev/tcp/127.0.0.1/{port}) && echo CONNECTED; echo end")
    content = text_of(result)
    assert (workspace / "here").exists() and not (outside / "there").exists()
    assert not (workspace / ".git" / "config").exists()  # the safety folders stay read-only inside
    assert "CONNECTED" not in content and "end\nExit code 0" in content


@needs_bwrap
async def test_the_sandbox_still_asks_for_safety_paths_and_unreadable_lines(workspace):
    ctx = make_ctx(workspace)
    enable_sandbox(ctx)
    asks = Asks()
    await bash(ctx, "echo x > .git/hooks/post-checkout", asks)
    await bash(ctx, "echo $((count + 1))", asks)  # (a name in arithmetic: the rules cannot judge it)
    assert len(asks.asks) == 2


async def test_permission_decisions_are_values(workspace):
    """The policy's answer for a covered line is an allow, for an uncovered one an ask."""
    from jupyter_agent.tools.bash import Bash

    ctx = make_ctx(workspace, allow=["Bash(ls:*)"])
    tool = Bash()
    allowed = await ctx.permissions.check(tool, tool.Input(command="ls -la && ls"), ctx)
    asked = await ctx.permissions.check(tool, tool.Input(command="ls; id"), ctx)
    assert isinstance(allowed, PermissionAllow) and isinstance(asked, PermissionAsk)


def test_the_schema_is_claude_codes():
    from jupyter_agent.tools.bash import Bash

    schema = Bash().to_api()["input_schema"]
    assert schema["required"] == ["command"] and schema["additionalProperties"] is False
    assert {k: v["type"] for k, v in schema["properties"].items()} == {
        "command": "string", "timeout": "integer", "description": "string"}


async def test_a_command_that_ends_leaves_no_detached_process(workspace):
    """Background jobs end with the command, also one in a session of its own, and one
    whose parent exited first (an orphan: it is re-parented to the supervisor)."""
    ctx = make_ctx(workspace, allow=["Bash"])
    marker = f"{os.getpid() % 1000}7.73"
    result = await bash(ctx, f"setsid sleep {marker} & (setsid sleep {marker} &); echo started")
    assert text_of(result) == "started\nExit code 0"
    assert _running(f"sleep {marker}") == []


async def test_a_command_killed_by_a_signal_says_so(workspace):
    result = await bash(make_ctx(workspace, allow=["Bash"]), "kill -9 $$")
    assert result["is_error"] and text_of(result) == "Killed by signal 9"


async def test_plain_arithmetic_and_a_quoted_here_document_are_read(workspace):
    """Valid bash the parser used to refuse (issue 39): ``$((40+2))`` of numbers only, and a
    here-document whose delimiter is quoted and ends the command."""
    ctx = make_ctx(workspace, allow=["Bash(echo:*)", "Bash(cat:*)"])
    asks = Asks()
    assert text_of(await bash(ctx, "echo hello-$((40+2)) && echo second", asks)) == "hello-42\nsecond\nExit code 0"
    assert text_of(await bash(ctx, "cat <<'EOF'\nline $HOME\nEOF", asks)) == "line $HOME\nExit code 0"
    assert asks.asks == []


@pytest.mark.parametrize("command", [
    "x='a[$(touch PWNED)]'; echo $((x))",  # bash evaluates a name's text: it runs the substitution
    "echo $(($(touch PWNED)))",
    "cat <<'EOF'\n$(touch PWNED)\nEOF\ntouch PWNED",
])
async def test_arithmetic_with_names_or_commands_still_asks(workspace, command):
    ctx = make_ctx(workspace, allow=["Bash(echo:*)", "Bash(cat:*)"])
    asks = Asks()
    await bash(ctx, command, asks)
    assert len(asks.asks) == 1 and not (workspace / "PWNED").exists()


@needs_bwrap
async def test_the_timeout_ends_a_detached_process_in_the_sandbox_too(workspace):
    ctx = make_ctx(workspace)
    enable_sandbox(ctx)
    detached = f"{os.getpid() % 1000}7.74"
    result = await bash(ctx, f"setsid sleep {detached} & sleep 60", timeout=1500)
    assert result["is_error"] and "timed out after 1.5 s" in text_of(result)
    assert _running(f"sleep {detached}") == []


async def test_a_write_after_a_change_of_folder_asks(workspace, tmp_path):
    """``cd`` moves where a relative path points: ``cd ~ && echo x >> notes`` is not a
    write into the working folder."""
    ctx = make_ctx(workspace, "acceptEdits", allow=["Bash(cd:*)", "Bash(echo:*)", "Bash(tee:*)"])
    for command in (f"cd {tmp_path} && echo x >> notes", f"cd {tmp_path}; echo x | tee notes"):
        asks = Asks()
        await bash(ctx, command, asks)
        assert len(asks.asks) == 1 and not (tmp_path / "notes").exists(), command
    assert text_of(await bash(ctx, "cd . && echo x > /dev/null && echo ok")) == "ok\nExit code 0"
