"""The endpoint as clients that nobody here wrote reach it, in a real Jupyter server: every
protocol version of the ``initialize`` handshake (2024-11-05 .. 2025-11-25) and the 2026-07-28
``server/discover`` answered with headers that match the body; the official conformance suite
(its scenarios for what the endpoint offers must pass); the Python SDK's 1.x client and the MCP
Inspector's CLI listing and calling tools; a refusal for each way a request can be wrong
(no token: 401 with ``WWW-Authenticate``; a forged Host: said as such); the session's GET
stream answering at once.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import httpx
import pytest

from . import outside_clients as oc
from .server import TOKEN
from .test_endpoint import text_of

ACCEPT = "application/json, text/event-stream"
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
#: The conformance suite's server scenarios for what the endpoint offers: each must pass.
#: docs/mcp-server.md ("The conformance suite") lists the others, and why they do not apply.
REQUIRED_SCENARIOS = ("server-initialize", "ping", "tools-list", "tools-call-error",
                      "server-sse-multiple-streams", "dns-rebinding-protection", "resources-list")


def body_of(response: httpx.Response) -> Any:
    """The JSON-RPC message of an answer, read as its Content-Type says (JSON, or the data of
    its last server-sent event): a body that does not match its header fails here."""
    kind = response.headers.get("content-type", "")
    if kind.startswith("application/json"):
        return response.json()
    assert kind.startswith("text/event-stream"), kind
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    assert data and data[-1], response.text
    return json.loads(data[-1])


def post(client: httpx.Client, url: str, message: dict[str, Any], **headers: str) -> httpx.Response:
    return client.post(url, json=message, headers={"Accept": ACCEPT, "Authorization": f"token {TOKEN}", **headers})


@pytest.mark.parametrize("version", HANDSHAKE_VERSIONS)
def test_every_handshake_version_gets_headers_that_match_its_body(server, version):
    with httpx.Client(timeout=60) as client:
        init = post(client, server.mcp_url, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
        assert init.status_code == 200, init.text
        answer = body_of(init)
        assert answer["result"]["protocolVersion"] == version and answer["id"] == 1
        session = {"Mcp-Session-Id": init.headers["mcp-session-id"], "MCP-Protocol-Version": version}
        ack = post(client, server.mcp_url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, **session)
        assert ack.status_code == 202 and not ack.content
        tools = post(client, server.mcp_url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, **session)
        assert tools.status_code == 200
        listed = body_of(tools)["result"]["tools"]
        assert {"run_cell", "read_cells"} <= {t["name"] for t in listed}
        assert all(t.get("title") for t in listed), [t["name"] for t in listed if not t.get("title")]
        gone = client.delete(server.mcp_url, headers={"Authorization": f"token {TOKEN}", **session})
        assert gone.status_code == 200


def test_server_discover_of_2026_answers_json(server):
    with httpx.Client(timeout=60) as client:
        found = post(client, server.mcp_url, {"jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": {
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {},
                      "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}}}},
            **{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"})
    assert found.status_code == 200, found.text
    answer = body_of(found)
    assert answer["id"] == 7 and "2026-07-28" in json.dumps(answer["result"]), answer


async def test_the_sdks_client_in_either_mode(server):
    """mcp 2.x's own client: on the handshake ('legacy') and on server/discover ('auto')."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    for mode in ("legacy", "auto"):
        http = create_mcp_http_client(headers={"Authorization": f"token {TOKEN}"})
        async with Client(streamable_http_client(server.mcp_url, http_client=http), mode=mode) as client:
            listed = await client.call_tool("list_notebooks", {})
            assert not listed.is_error and "notebook" in text_of(listed), (mode, text_of(listed))


async def test_the_sessions_get_stream_sends_its_headers_at_once(server):
    """The headers come before any event (none may ever come): a client waits on them."""
    async with httpx.AsyncClient(timeout=60) as client:
        init = await client.post(server.mcp_url, headers={"Accept": ACCEPT, "Authorization": f"token {TOKEN}"}, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
        session = {"Mcp-Session-Id": init.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25",
                   "Authorization": f"token {TOKEN}"}
        async with client.stream("GET", server.mcp_url, headers={"Accept": "text/event-stream", **session}) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
        await client.delete(server.mcp_url, headers=session)


def test_refusals_say_what_is_wrong(server):
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    with httpx.Client(timeout=60) as client:
        missing = client.post(server.mcp_url, json=message, headers={"Accept": ACCEPT})
        assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
        assert "no token was sent" in missing.json()["message"]
        wrong = client.post(server.mcp_url, json=message, headers={"Accept": ACCEPT, "Authorization": "token nope"})
        assert wrong.status_code == 401 and 'error="invalid_token"' in wrong.headers["www-authenticate"]
        assert "the token is wrong" in wrong.json()["message"] and "nope" not in wrong.text
        forged = post(client, server.mcp_url, message, Host=f"evil.example:{server.port}")
        assert forged.status_code == 403
        said = forged.json()["message"]
        assert "Host header names a host this Jupyter server does not serve" in said, said
        assert "token is wrong" not in said and "no token" not in said
        by_query = client.post(f"{server.mcp_url}?token={TOKEN}", headers={"Accept": ACCEPT}, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "q", "version": "1"}}})
        assert by_query.status_code == 200 and body_of(by_query)["result"]["protocolVersion"] == "2025-06-18"


def test_the_official_conformance_suite(server, tmp_path):
    """``@modelcontextprotocol/conformance`` against the endpoint (it speaks HTTP only: it cannot
    start a stdio server, so ``jupyter agent mcp`` is checked by the SDK and the Inspector below)."""
    oc.need(oc.CONFORMANCE, oc.node())
    done = oc.run([str(oc.node()), str(oc.CONFORMANCE), "server", "--url", f"{server.mcp_url}?token={TOKEN}",
                   "-o", str(tmp_path)], timeout=300)
    statuses: dict[str, set[str]] = {}
    for checks in tmp_path.glob("server-*/checks.json"):
        scenario = re.sub(r"-\d{4}-\d\d-\d\dT.*$", "", checks.parent.name.removeprefix("server-"))
        statuses.setdefault(scenario, set()).update(c["status"] for c in json.loads(checks.read_text()))
    failed = [s for s in REQUIRED_SCENARIOS if not statuses.get(s) or not statuses[s] <= {"SUCCESS", "INFO"}]
    assert not failed, (failed, statuses, done.stdout[-4000:], done.stderr[-2000:])


def test_the_python_sdks_1x_client(server):
    server.open_session("one_x.ipynb", ["x = 1"])
    seen = oc.mcp1_session(server.mcp_url, TOKEN, "list_notebooks", {})
    assert seen["protocol"] in HANDSHAKE_VERSIONS and seen["server"] == "jupyter-agent"
    assert seen["tools"]["run_cell"] and not seen["is_error"] and "one_x.ipynb" in seen["text"], seen
    refused = oc.mcp1_session(server.mcp_url, TOKEN, "read_cells", {"notebook_path": "one_x.ipynb"})
    assert refused["is_error"] and "%load_ext jupyter_agent" in refused["text"], refused


def test_the_mcp_inspector_cli_over_http_and_stdio(server):
    server.open_session("inspected.ipynb", ["i = 1"])
    url = f"{server.mcp_url}?token={TOKEN}"  # (the Inspector 0.15 sends no headers: the query's token)
    listed = oc.inspector(url, "--method", "tools/list")
    assert {"list_notebooks", "run_cell", "read_cells"} <= {t["name"] for t in listed["tools"]}
    called = oc.inspector(url, "--method", "tools/call", "--tool-name", "list_notebooks")
    assert not called.get("isError") and "inspected.ipynb" in called["content"][0]["text"], called
    resources = oc.inspector(url, "--method", "resources/list")
    assert "notebook://inspected.ipynb" in [r["uri"] for r in resources["resources"]], resources
    oc.need(oc.INSPECTOR_CLI, oc.node())
    stdio = oc.run([str(oc.node()), str(oc.INSPECTOR_CLI), sys.executable, "-m", "jupyter_agent.cli", "mcp",
                    "--url", server.url, "--token", TOKEN, "--method", "tools/call", "--tool-name", "list_notebooks"])
    assert stdio.returncode == 0 and "inspected.ipynb" in stdio.stdout, (stdio.stdout[-2000:], stdio.stderr[-2000:])

