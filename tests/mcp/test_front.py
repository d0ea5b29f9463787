"""The Jupyter front's side of MCP: ``AgentConfig.mcp_servers``, ``%agent mcp`` and the side
panel's list (each server, its state, its tools, its log)."""

from __future__ import annotations

import json

import pytest
from traitlets import TraitError

from jupyter_agent.jupyter.kernel.agent_config import AgentConfig
from jupyter_agent.jupyter.kernel.mcp_status import mcp_payload, mcp_text
from jupyter_agent.jupyter.kernel.agent_session import AgentSession
from jupyter_agent.testing import response, text

from .servers import stdio_server

pytestmark = pytest.mark.timeout(150)  # (a loaded machine: each server is a Python process that imports the SDK)


class _Shell:
    """What AgentSession reads of IPython here: nothing but a namespace."""

    user_ns: dict = {}


async def test_agent_mcp_lists_the_servers_their_state_tools_and_log(fake_api_env, tmp_path):
    session = AgentSession(_Shell())
    session.config.cwd = str(tmp_path)
    session.config.mcp_servers = {"calc": stdio_server(tmp_path)}
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"repo": {"command": "repo-server",
                                                                            "args": ["--root", "."]}}}))
    conv = session.conversation
    try:
        before = mcp_text(session)
        assert "calc  [not started]" in before and "repo  [needs approval]  stdio: repo-server --root ." in before
        fake_api_env.add(response(text("hello")))
        await conv.send("hello").wait()
        shown = mcp_text(session)
        assert "calc  [running]" in shown and "tools: mcp__calc__add, mcp__calc__touch" in shown
        log = next(line for line in shown.splitlines() if line.strip().startswith("log: "))
        assert "calc server started" in open(log.split("log: ", 1)[1]).read()
        panel = {s["name"]: s for s in mcp_payload(session)}
        assert panel["calc"]["state"] == "running" and "mcp__calc__add" in panel["calc"]["tools"]
        assert panel["repo"]["state"] == "needs approval" and panel["repo"]["source"].endswith(".mcp.json")
    finally:
        await conv.aclose()
    assert "calc  [not started]" in mcp_text(session)  # the conversation ended: its servers stopped


def test_a_bad_mcp_servers_setting_says_what_is_wrong():
    with pytest.raises(TraitError, match="'command' must be the program to run"):
        AgentConfig().mcp_servers = {"calc": {"args": ["x"]}}
