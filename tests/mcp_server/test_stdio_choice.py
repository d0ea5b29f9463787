"""``jupyter agent mcp`` without ``--url`` chooses a server only from runtime files the user owns,
in a runtime folder only the user can write to (issue 42, finding 2). A planted
``jpserver-4242.json`` (``"pid": 1``, ``"url"`` a logging server of the test's, ``"token":
"attacker-token"``) in a world-writable runtime folder, or owned by another uid in the user's own
folder: the program refuses, saying why, and the logging server receives nothing (not the
endpoint's own token from ``$JUPYTER_AGENT_MCP_TOKEN``, not the client's name, not a call). The
user's own file in a private folder is chosen (the same logging server then hears the call: the
test would see a leak)."""

from __future__ import annotations

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from mcp_types import Implementation

from jupyter_agent.mcp_server.protocol import TOKEN_ENV

ENDPOINT_TOKEN = "endpoint-own-token-9f3b1c"


class Logger:
    """An HTTP server that records every request it gets and answers 404."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        seen = self.requests

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                seen.append({"method": self.command, "path": self.path, "headers": dict(self.headers),
                             "body": self.rfile.read(length).decode(errors="replace") if length else ""})
                self.send_response(404)
                self.send_header("content-length", "0")
                self.end_headers()

            do_GET = do_POST = do_DELETE = _any

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def logger():
    running = Logger()
    yield running
    running.close()


def plant(folder: Path, url: str, uid: int | None = None, pid: int = 1) -> Path:
    path = folder / "jpserver-4242.json"
    path.write_text(json.dumps({"pid": pid, "root_dir": "/", "url": url, "token": "attacker-token",
                                "base_url": "/", "port": int(url.rsplit(":", 1)[1].strip("/")), "secure": False}))
    path.chmod(0o600)
    if uid is not None:
        os.chown(path, uid, uid)
    return path


def env_for(runtime: Path, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER_", "JPY_"))}
    env.update({"JUPYTER_RUNTIME_DIR": str(runtime), "JUPYTER_CONFIG_DIR": str(tmp_path / "cfg"),
                "JUPYTER_DATA_DIR": str(tmp_path / "data"), TOKEN_ENV: ENDPOINT_TOKEN})
    return env


async def call_through(runtime: Path, tmp_path: Path) -> tuple[Any, str]:
    """``jupyter agent mcp`` started by the ``mcp`` SDK's stdio client (as Claude Code starts it),
    which calls ``insert_cell``: its result (or the exception of a program that would not
    start), and what the program wrote on stderr."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "jupyter_agent.cli", "mcp"],
                                   env=env_for(runtime, tmp_path), cwd="/")
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as errlog:
        try:
            async with Client(stdio_client(params, errlog=errlog), client_info=Implementation(
                    name="victim-client", version="1")) as client:
                outcome: Any = await client.call_tool("insert_cell", {
                    "notebook_path": "work.ipynb", "cell_type": "code", "source": "secret_plan = 1"})
        except Exception as exc:  # (the program refused to start: the client's connection closed)
            outcome = exc
    return outcome, errors.read_text()


@pytest.mark.skipif(os.name != "posix", reason="file owners and modes")
async def test_a_file_in_a_shared_runtime_folder_is_not_followed(logger, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # as /tmp: anyone may add a file
    plant(shared, logger.url)
    outcome, stderr = await call_through(shared, tmp_path)
    assert logger.requests == []  # (before: the token, the client's name and the call)
    assert isinstance(outcome, Exception), outcome
    assert f"runtime folder {shared} is not yours alone" in stderr and "mode 1777" in stderr, stderr
    assert "nothing was sent" in stderr and "--url" in stderr
    assert logger.requests == []


@pytest.mark.skipif(os.name != "posix" or os.getuid() != 0, reason="needs root to give a file to another uid")
async def test_a_file_another_user_owns_is_not_followed(logger, tmp_path):
    private = tmp_path / "runtime"
    private.mkdir(mode=0o700)
    plant(private, logger.url, uid=4242)
    outcome, stderr = await call_through(private, tmp_path)
    assert logger.requests == []
    assert isinstance(outcome, Exception), outcome
    assert "jpserver-4242.json (it belongs to uid 4242, not to you)" in stderr, stderr
    assert logger.requests == []


async def test_the_users_own_file_in_a_private_folder_is_chosen(logger, tmp_path):
    """The control: the same file, the user's own, in a folder of theirs: chosen, and the call
    goes there with the endpoint's token (so the two tests above would see a leak)."""
    private = tmp_path / "runtime"
    private.mkdir(mode=0o700)
    plant(private, logger.url, pid=os.getpid())
    result, _ = await call_through(private, tmp_path)
    assert result.is_error  # (a logging server is no MCP endpoint)
    assert logger.requests and logger.requests[0]["headers"].get("Authorization") == f"token {ENDPOINT_TOKEN}"


@pytest.mark.skipif(os.name != "posix" or os.getuid() != 0, reason="needs root to give a folder to another group")
def test_a_folder_its_group_can_write_is_the_users_only_if_the_group_is_theirs(logger, tmp_path):
    """Debian and Fedora give each user a group of their own, and umask 002 makes folders 775
    there: such a folder is the user's. A group of others' may not write to it."""
    from jupyter_agent.mcp_server.stdio import trusted_servers
    from jupyter_agent.mcp_server.tools import OutsideError

    grouped = tmp_path / "runtime"
    grouped.mkdir()
    grouped.chmod(0o770)  # (root's group: named as the user, no other members)
    plant(grouped, logger.url, pid=os.getpid())
    servers, skipped = trusted_servers(grouped)
    assert [s["url"] for s in servers] == [logger.url] and skipped == []
    os.chown(grouped, 0, 4242)
    with pytest.raises(OutsideError, match="other users can write to it: mode 770"):
        trusted_servers(grouped)
    assert logger.requests == []
