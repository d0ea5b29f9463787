"""The Bash sandbox holds (issue 37, item 2): as root, for safety paths at any depth and
for ones that do not exist yet, and for unix sockets outside the working folder.

Every test goes through the public entry points: ``query()`` with a ``ToolContext`` whose
sandbox is on (``enable_sandbox``), the fake Messages API scripting the model's Bash call,
and real bubblewrap (the CI runs as root, where bwrap used to keep every capability).
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent import query
from jupyter_agent.loop.tool import ToolContext
from jupyter_agent.permissions import Permissions
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use
from jupyter_agent.tools.bash import enable_sandbox
from jupyter_agent.tools.sandbox import BLOCKED_SUFFIX, PLACEHOLDER_DIRS, PLACEHOLDER_FILES

from .test_bash import needs_bwrap

pytestmark = needs_bwrap

HOOK = "#!/bin/sh\ntouch PWNED\n"


async def run_sandboxed(workspace: Path, command: str, **extra: Any) -> tuple[str, bool]:
    """The model runs ``command`` with Bash in the sandbox (default mode, no rules: the
    sandbox is what lets it run); the tool_result's text and whether it is an error."""
    # (in a script: what the command does is hidden from the rules' parser, as an attacker's would be)
    (workspace / "attack.sh").write_text(command + "\n")
    context = ToolContext(cwd=workspace, permissions=Permissions(cwd=workspace))
    enable_sandbox(context)
    call = tool_use("Bash", {"command": "bash attack.sh", "description": "try the sandbox", **extra})
    with FakeMessagesAPI([response(call), response(text("done"))]) as api:
        terminal = await query("go", model=api.model(), context=context).wait()
    assert terminal.reason == "completed"
    (result,) = [b for b in api.requests[1].body["messages"][-1]["content"] if b.get("type") == "tool_result"]
    content = result["content"]
    body = content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)
    return body, bool(result.get("is_error"))


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside the working folder and outside /tmp (the sandbox's /tmp is its own)."""
    folder = Path(tempfile.mkdtemp(dir="/var/tmp"))
    (folder / "secret.txt").write_text("top secret\n")
    yield folder
    shutil.rmtree(folder)


async def test_as_root_mount_and_umount_fail_and_nothing_outside_is_written(workspace, outside):
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / "hook.sh").write_text(HOOK)
    body, _ = await run_sandboxed(workspace, (
        "id -u; grep CapEff /proc/self/status; "
        "umount $PWD/.git && echo UMOUNTED; cp hook.sh .git/hooks/post-checkout && echo HOOKED; "
        f"mount -o remount,bind,rw / && echo REMOUNTED; touch {outside}/there && echo OUTSIDE; "
        "unshare -Urm true && echo NESTED; "
        f"cat {outside}/secret.txt; echo end"))
    assert "CapEff:\t0000000000000000" in body
    assert body.splitlines()[0] != "0"  # root is mapped to an unprivileged uid
    for word in ("UMOUNTED", "HOOKED", "REMOUNTED", "OUTSIDE", "NESTED"):
        assert word not in body
    assert not (workspace / ".git" / "hooks" / "post-checkout").exists() and not (outside / "there").exists()
    assert "top secret" in body and body.rstrip().endswith("end\nExit code 0")  # reads outside: allowed (SECURITY.md)


async def test_credential_places_are_hidden_as_the_read_tool_asks_for_them(workspace, outside, monkeypatch):
    home = outside / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text("aws_secret_access_key = AKIAHOMESECRET\n")
    (home / ".netrc").write_text("machine x login me password NETRCSECRET\n")
    (home / "notes.txt").write_text("plain notes\n")
    monkeypatch.setenv("HOME", str(home))
    (workspace / "deploy" / ".ssh").mkdir(parents=True)
    (workspace / "deploy" / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nKEYSECRET\n")
    (workspace / "keys").mkdir()
    (workspace / "keys" / "id_rsa").write_text("RSASECRET\n")
    body, _ = await run_sandboxed(workspace, (
        f"cat {home}/.aws/credentials {home}/.netrc deploy/.ssh/id_ed25519 keys/id_rsa {home}/notes.txt; "
        "echo overwritten > keys/id_rsa; echo end"))
    for secret in ("AKIAHOMESECRET", "NETRCSECRET", "KEYSECRET", "RSASECRET"):
        assert secret not in body
    assert "plain notes" in body and "end" in body  # other files read as before
    assert (workspace / "keys" / "id_rsa").read_text() == "RSASECRET\n"
    assert (workspace / "deploy" / ".ssh" / "id_ed25519").exists()  # hidden, not renamed


async def test_safety_paths_at_any_depth_and_missing_ones_stay_unwritten(workspace):
    (workspace / "sub" / ".git" / "hooks").mkdir(parents=True)  # a nested repository
    (workspace / "hook.sh").write_text(HOOK)
    (workspace / "lib" / "site-packages").mkdir(parents=True)
    (workspace / "attack.sh").touch()
    before = set(os.listdir(workspace))
    body, _ = await run_sandboxed(workspace, (
        "cp hook.sh sub/.git/hooks/pre-commit; cp hook.sh .envrc; mkdir .vscode; cp hook.sh .git; "
        "mkdir -p deep/er && git init -q deep/er && cp hook.sh deep/er/.git/hooks/post-checkout; "
        "echo 'import os' > lib/site-packages/evil.pth; cp hook.sh deep/.bashrc; touch ok.txt; echo end"))
    assert not (workspace / "sub" / ".git" / "hooks" / "pre-commit").exists()
    # the missing ones at the top level were read-only placeholders, gone again
    assert set(os.listdir(workspace)) == before | {"deep", "ok.txt"}
    # deeper, what the command made is renamed after it, and the model is told
    for made in ("deep/er/.git", "lib/site-packages/evil.pth", "deep/.bashrc"):
        assert not (workspace / made).exists()
        assert (workspace / (made + BLOCKED_SUFFIX)).exists()
        assert f"{made}: renamed to {made}{BLOCKED_SUFFIX}" in body
    assert (workspace / "ok.txt").exists() and "end" in body


async def test_a_hooks_folder_named_by_git_config_is_protected(workspace):
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text('[core]\n\thooksPath = "tools/hooks"\n')
    (workspace / "sub" / ".git").mkdir(parents=True)
    (workspace / "sub" / ".git" / "config").write_text("[core]\n\tHooksPath = ../.husky/_\n")
    (workspace / ".husky").mkdir()  # (read-only whole already: no placeholder inside it)
    (workspace / "tools").mkdir()
    body, _ = await run_sandboxed(workspace, (
        "mkdir tools/hooks && echo MADE; cp attack.sh tools/hooks/pre-commit && echo HOOKED; echo end"))
    assert "MADE" not in body and "HOOKED" not in body and "end" in body
    assert os.listdir(workspace / "tools") == []  # the placeholder is gone again
    (workspace / "tools" / "hooks").mkdir()
    body, _ = await run_sandboxed(workspace, "cp attack.sh tools/hooks/pre-commit && echo HOOKED; echo end")
    assert "HOOKED" not in body and not (workspace / "tools" / "hooks" / "pre-commit").exists()


async def test_a_repository_moved_with_its_folder_is_left_alone(workspace):
    (workspace / "sub" / ".git").mkdir(parents=True)
    (workspace / "sub" / ".git" / "config").write_text("[core]\n")
    body, _ = await run_sandboxed(workspace, "mv sub sub2 && echo MOVED")
    assert "MOVED" in body and "sandbox blocked" not in body
    assert (workspace / "sub2" / ".git" / "config").read_text() == "[core]\n"


async def test_a_bare_repository_made_inside_is_defused(workspace):
    body, _ = await run_sandboxed(workspace, "git init -q --bare store.git && cp /dev/null store.git/hooks/x")
    assert not (workspace / "store.git" / "HEAD").exists()
    assert (workspace / "store.git" / ("HEAD" + BLOCKED_SUFFIX)).exists() and "store.git: renamed" in body


async def test_a_folder_too_big_to_check_is_refused_and_a_command_cannot_outgrow_the_check(workspace, monkeypatch):
    from jupyter_agent.tools import sandbox

    monkeypatch.setattr(sandbox, "MAX_ENTRIES", 40)
    body, _ = await run_sandboxed(workspace, "mkdir many && touch many/f{1..100} && mkdir -p d/.git/hooks; echo end")
    assert (workspace / "many" / "f100").exists() and "end" in body
    assert not (workspace / "d" / ".git").exists() and (workspace / "d" / (".git" + BLOCKED_SUFFIX)).exists()
    body, failed = await run_sandboxed(workspace, "touch should-not-run")
    assert failed and "more than 40 files and folders: too many for the sandbox to check" in body
    assert not (workspace / "should-not-run").exists()


def _running(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


async def test_nothing_of_the_command_outlives_it_so_the_check_after_it_sees_all(workspace):
    marker = f"{7_000_000 + os.getpid()}"
    body, _ = await run_sandboxed(workspace, f"setsid sleep {marker} </dev/null >/dev/null 2>&1 & echo started")
    assert "started" in body and _running(f"sleep\0{marker}") == []
    # ended by its time limit: what it made is checked all the same
    body, failed = await run_sandboxed(workspace, f"mkdir -p d/.git/hooks; echo made; sleep {marker}", timeout=3000)
    assert failed and "timed out" in body and _running(f"sleep\0{marker}") == []
    assert not (workspace / "d" / ".git").exists() and "d/.git: renamed to" in body


@pytest.fixture
def listening_sockets(workspace: Path) -> Iterator[dict[str, str]]:
    """Unix sockets listening outside the sandbox: by name, the address to connect to."""
    folders = [Path(tempfile.mkdtemp(dir=top)) for top in ("/var/tmp", "/run") if os.path.isdir(top)]
    servers, addresses = [], {}
    places = {f"outside-{i}": str(folder / "agent.sock") for i, folder in enumerate(folders)}
    places["inside"] = str(workspace / "mine.sock")
    places["abstract"] = f"\0jupyter-agent-test-{os.getpid()}"
    try:
        for name, address in places.items():
            server = socket.socket(socket.AF_UNIX)
            server.bind(address)
            server.listen()
            servers.append(server)
            addresses[name] = address
        yield addresses
    finally:
        for server in servers:
            server.close()
        for folder in folders:
            for child in folder.iterdir():
                child.unlink()
            folder.rmdir()


async def test_unix_sockets_outside_the_working_folder_are_out_of_reach(workspace, listening_sockets):
    probe = workspace / "probe.py"
    probe.write_text(
        "import socket, sys\n"
        "for name, address in zip(sys.argv[1::2], sys.argv[2::2]):\n"
        "    client = socket.socket(socket.AF_UNIX)\n"
        "    try:\n"
        "        client.connect(address.replace('@', '\\0', 1) if address.startswith('@') else address)\n"
        "        print('CONNECTED', name)\n"
        "    except OSError as exc:\n"
        "        print('refused', name, exc.errno)\n")
    args = " ".join(f"{name} '{address.replace(chr(0), '@')}'" for name, address in listening_sockets.items())
    body, _ = await run_sandboxed(workspace, f"{sys.executable} probe.py {args}")
    assert "CONNECTED inside" in body  # the working folder's own sockets work
    assert [line for line in body.splitlines() if line.startswith("CONNECTED")] == ["CONNECTED inside"]
    assert len(listening_sockets) >= 3


def test_placeholders_cover_every_top_level_safety_name():
    from jupyter_agent.tools.safety_names import SAFETY_DIRS, SAFETY_FILES

    dotted = {name for name in (*SAFETY_DIRS, *SAFETY_FILES) if name.startswith(".")}
    assert dotted <= set(PLACEHOLDER_DIRS) | set(PLACEHOLDER_FILES)
