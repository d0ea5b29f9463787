"""Issue 37's Bash findings through the public entry point: ``query()`` with a permission
policy, the fake Messages API scripting the model's calls, real bash.

In each row the person approves an ordinary command once with "Always allow" (the rule
the card offers is added), then the model runs a dangerous form of the same command: it
must ask, and nothing may be written or run. Also: an MCP rule names one server exactly.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent import query
from jupyter_agent.loop.permission_result import PermissionAllow, PermissionAsk, PermissionDeny
from jupyter_agent.permissions import Permissions, Rule
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use

ROWS = [  # approved once, the rule it offers, then the model runs
    ("sort data.txt", "Bash(sort:*)", "sort -o {home}/.bashrc payload.txt"),
    ("git diff HEAD", "Bash(git diff:*)", "git diff --no-index --output={home}/.bashrc /dev/null payload.txt"),
    ("git log --oneline", "Bash(git log:*)", "git log --output={home}/.bashrc"),
    ("sed -n 1p notes.txt", "Bash(sed:*)", "sed -n '1e touch PWNED' payload.txt"),
]


class AlwaysThenDeny:
    """Answers the first ask with "Always allow" (its offered rules), and denies the rest."""

    def __init__(self) -> None:
        self.asks: list[PermissionAsk] = []

    async def __call__(self, name: str, input: dict[str, Any], ask: PermissionAsk) -> Any:
        self.asks.append(ask)
        if len(self.asks) == 1:
            return PermissionAllow(always=ask.suggested_rules)
        return PermissionDeny("Not that.", interrupt=False)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of its own for the commands (the canary ``.bashrc``)."""
    folder = Path(os.path.realpath(tmp_path / "home"))
    folder.mkdir()
    (folder / ".bashrc").write_text("# canary\n")
    monkeypatch.setenv("HOME", str(folder))
    return folder


def _repository(workspace: Path) -> None:
    for name, content in (("data.txt", "b\na\n"), ("notes.txt", "one\ntwo\n"), ("payload.txt", "echo pwned\n")):
        (workspace / name).write_text(content)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}
    for argv in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "start"]):
        subprocess.run(argv, cwd=workspace, env=env, check=True)


@pytest.mark.parametrize(("approved", "offered", "attack"), ROWS)
async def test_a_rule_offered_for_an_ordinary_command_does_not_allow_its_dangerous_form(
        workspace, home, approved, offered, attack):
    _repository(workspace)
    command = attack.replace("{home}", str(home))
    first = tool_use("Bash", {"command": approved, "description": "look"})
    second = tool_use("Bash", {"command": command, "description": "look again"})
    answers = AlwaysThenDeny()
    permissions = Permissions(cwd=workspace)
    with FakeMessagesAPI([response(first), response(second), response(text("Done."))]) as api:
        run = query("look at the data", model=api.model(), cwd=workspace, permissions=permissions,
                    can_use_tool=answers)
        terminal = await run.wait()
    assert terminal.reason == "completed"
    assert answers.asks[0].suggested_rules == (offered,)
    assert Rule.parse(offered) in permissions.session_allow
    assert len(answers.asks) == 2 and answers.asks[1].message.endswith(command)  # the dangerous form asked
    question = answers.asks[1].message[:-len(command)]
    assert "\n" not in question.rstrip(":\n")  # the card says why, on the question's line
    assert "is a protected path" in question or "Only a rule naming the whole command allows it" in question
    assert (home / ".bashrc").read_text() == "# canary\n" and not (workspace / "PWNED").exists()


async def test_an_exact_rule_allows_what_it_names(workspace, home):
    """The person who writes the whole command allows it; the file it writes is still judged
    as an edit (outside the working folder: asks)."""
    _repository(workspace)
    permissions = Permissions(cwd=workspace, mode="acceptEdits", allow=["Bash(sort -o sorted.txt data.txt)"])
    call = tool_use("Bash", {"command": "sort -o sorted.txt data.txt"})
    answers = AlwaysThenDeny()
    with FakeMessagesAPI([response(call), response(text("Done."))]) as api:
        await query("sort", model=api.model(), cwd=workspace, permissions=permissions, can_use_tool=answers).wait()
    assert answers.asks == [] and (workspace / "sorted.txt").read_text() == "a\nb\n"


@pytest.mark.parametrize(("command", "offered"), [
    ("python train.py", "Bash(python train.py)"),           # not in the tables: only the command itself
    ("sort *.txt", "Bash(sort '*.txt')"),                    # a glob may expand to an option
    ("timeout 5 ls", "Bash(timeout 5 ls)"),                  # a runner: what it runs is another command
    ("git -C sub status", "Bash(git -C sub status)"),        # the subcommand is not the second word
    ("grep -rn TODO .", "Bash(grep:*)"),
    ("git status --short", "Bash(git status:*)"),
])
async def test_always_allow_offers_no_wider_rule_than_the_command_needs(workspace, home, command, offered):
    call = tool_use("Bash", {"command": command})
    answers = AlwaysThenDeny()
    with FakeMessagesAPI([response(call), response(text("Done."))]) as api:
        await query("go", model=api.model(), cwd=workspace, permissions=Permissions(cwd=workspace),
                    can_use_tool=answers).wait()
    assert answers.asks[0].suggested_rules == (offered,)


def test_an_mcp_server_rule_names_that_server_only():
    """``mcp__github`` must not name the tools of a server called ``github_`` (whose tool
    ``x`` is ``mcp__github___x``), nor the tools of ``githubx``."""
    rule = Rule.parse("mcp__github")
    assert rule.names("mcp__github__search", "github")
    assert not rule.names("mcp__github___x", "github_")
    assert not rule.names("mcp__githubx__search", "githubx")
    # by name alone, only a name that can belong to no other server counts
    assert rule.names("mcp__github__search")
    assert not rule.names("mcp__github___x")
    assert Rule.parse("mcp__github_").names("mcp__github___x", "github_")
