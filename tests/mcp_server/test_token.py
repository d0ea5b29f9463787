"""The MCP endpoint's own token (``mcp_server/auth.py``), in a real Jupyter server started with
``JUPYTER_AGENT_MCP_TOKEN``: it opens the endpoint (over HTTP, and through ``jupyter agent mcp``),
no other API of the server; the server's token still opens the endpoint; a wrong or missing one
is refused with a message saying what to send, never a redirect to the login page."""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request

import pytest

from .server import TOKEN, Server
from .test_endpoint import http_client, text_of

MCP_TOKEN = "mcp-only-token-0123456789abcdef"
BODY = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'


@pytest.fixture(scope="module")
def token_server(tmp_path_factory):
    running = Server(tmp_path_factory.mktemp("mcptoken"), env_extra={"JUPYTER_AGENT_MCP_TOKEN": MCP_TOKEN})
    yield running
    running.close()


def refused(url: str, token: str | None, method: str = "POST") -> tuple[int, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"token {token}"
    request = urllib.request.Request(url, data=BODY if method == "POST" else None, method=method, headers=headers)
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(request, timeout=30)
    return error.value.code, error.value.read().decode(errors="replace")


async def test_the_mcp_token_opens_the_endpoint_and_nothing_else(token_server):
    token_server.open_session("tok.ipynb", ["t = 1"])
    async with http_client(token_server, token=MCP_TOKEN) as client:
        listed = await client.call_tool("list_notebooks", {})
        assert not listed.is_error and "tok.ipynb" in text_of(listed)
    async with http_client(token_server, token=TOKEN) as client:  # the server's own still works
        assert "tok.ipynb" in text_of(await client.call_tool("list_notebooks", {}))

    for path in ("/api/contents", "/api/sessions", "/api/kernels"):
        code, _ = refused(f"{token_server.url}{path}", MCP_TOKEN, method="GET")
        assert code in (401, 403), path


def test_a_wrong_or_missing_token_is_refused_with_what_to_send(token_server):
    for token, method in [("wrong-token", "POST"), (None, "POST"), ("wrong-token", "GET"), ("", "DELETE")]:
        code, body = refused(token_server.mcp_url, token, method)
        assert code == 401, (token, method, code)
        message = json.loads(body)["message"]
        said = "no token was sent" if not token else "the token is wrong"
        assert said in message and "JUPYTER_AGENT_MCP_TOKEN" in message, message
        assert "wrong-token" not in message


async def test_jupyter_agent_mcp_sends_the_mcp_token(token_server):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    token_server.open_session("stdio.ipynb", ["s = 1"])
    env = {**token_server.env, "JUPYTER_AGENT_MCP_TOKEN": MCP_TOKEN}  # (no --token: taken from here)
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "jupyter_agent.cli", "mcp", "--url", token_server.url], env=env)
    async with Client(stdio_client(params)) as client:
        listed = await client.call_tool("list_notebooks", {})
    assert not listed.is_error and "stdio.ipynb" in text_of(listed), text_of(listed)


def test_the_token_is_a_config_option_or_the_environment(monkeypatch):
    from traitlets.config import Config

    from jupyter_agent.mcp_server.auth import JupyterAgentMcp, matches, token_given

    monkeypatch.setenv("JUPYTER_AGENT_MCP_TOKEN", "from-the-environment")
    assert JupyterAgentMcp().token == "from-the-environment"
    assert JupyterAgentMcp(config=Config({"JupyterAgentMcp": {"token": "from-the-config"}})).token == "from-the-config"
    monkeypatch.delenv("JUPYTER_AGENT_MCP_TOKEN")
    assert JupyterAgentMcp().token == ""
    assert token_given({"Authorization": "Bearer abc"}) == "abc" and token_given({}, "q") == "q"
    assert not matches(None, "abc") and not matches("abc", "") and matches("abc", "abc")
