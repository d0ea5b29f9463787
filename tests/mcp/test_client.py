"""MCP servers' tools, end to end: a real server (the ``mcp`` SDK's MCPServer) over stdio and
over streamable HTTP, the real ``anthropic`` SDK against the fake Messages API."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from typing import Any

import pytest

from jupyter_agent import Conversation
from jupyter_agent.loop.events import Notice
from jupyter_agent.permissions import ApprovalBroker, Rule
from jupyter_agent.testing import response, text, tool_use

from .servers import process_alive, start_http_server, stdio_server

pytestmark = pytest.mark.timeout(150)  # (a loaded machine: each server is a Python process that imports the SDK)


def results_of(run: Any) -> dict[str, dict[str, Any]]:
    """tool_use id -> its tool_result block, from the run's history."""
    return {b["tool_use_id"]: b for m in run.state.messages if isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_result"}


def result_text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


async def events_of(run: Any) -> list[Any]:
    return [event async for event in run]


async def test_a_stdio_servers_tool_is_offered_with_its_schema_called_and_its_result_paired(fake_api, tmp_path):
    call = tool_use("mcp__calc__add", {"a": 2, "b": 3})
    shown = tool_use("mcp__calc__mixed", {})
    fake_api.add(response(call, shown), response(text("5")))
    conv = Conversation(fake_api.model(), cwd=tmp_path, allow=("mcp__calc",),
                        mcp_servers={"calc": stdio_server(tmp_path)})
    try:
        run = conv.send("add 2 and 3")
        events = await events_of(run)
        assert run.terminal is not None and run.terminal.reason.value == "completed", events[-1]
        tools = {t["name"]: t for t in fake_api.requests[0].body["tools"]}
        schema = tools["mcp__calc__add"]["input_schema"]
        assert schema["type"] == "object" and set(schema["properties"]) == {"a", "b"}
        assert schema["properties"]["a"]["type"] == "integer" and sorted(schema["required"]) == ["a", "b"]
        assert tools["mcp__calc__add"]["description"] == "Add two whole numbers."
        results = results_of(run)
        assert result_text(results[call["id"]]) == "sum=5" and not results[call["id"]].get("is_error")
        blocks = results[shown["id"]]["content"]
        assert [b["type"] for b in blocks] == ["text", "image", "text"]
        assert blocks[1]["source"]["media_type"] == "image/png"
        assert blocks[2]["text"] == "[resource file:///notes.txt]\nthe notes"
        # the second request carries the results, paired by id
        sent = fake_api.requests[1].body["messages"][-1]["content"]
        assert {b["tool_use_id"] for b in sent} == {call["id"], shown["id"]}
        pid = int((tmp_path / "pid").read_text())
        assert process_alive(pid)
        status = conv.mcp_servers.status()[0]
        assert status.state.value == "running" and "mcp__calc__add" in status.tools
        assert status.log_path and "calc server started" in open(status.log_path).read()
    finally:
        await conv.aclose()
    assert not process_alive(pid)


async def test_without_a_rule_an_mcp_tool_asks_and_an_unattended_run_does_not_call_it(fake_api, tmp_path):
    call = tool_use("mcp__calc__touch", {"name": "made.txt"})
    fake_api.add(response(call), response(text("could not")))
    conv = Conversation(fake_api.model(), cwd=tmp_path, mcp_servers={"calc": stdio_server(tmp_path)})
    try:
        run = conv.send("touch it")  # no can_use_tool: nobody to ask
        await run.wait()
        result = results_of(run)[call["id"]]
        assert result["is_error"] and "needs approval" in result_text(result)
        assert not (tmp_path / "made.txt").exists()

        # with someone to ask: the card offers the tool's own rule; a deny rule wins over a yes
        call2 = tool_use("mcp__calc__touch", {"name": "made.txt"})
        fake_api.add(response(call2), response(text("ok")))
        seen = []
        broker = ApprovalBroker(conv.permissions, on_request=lambda r: (seen.append(r), r.allow_always()))
        run = conv.send("touch it now", can_use_tool=broker)
        await run.wait()
        assert seen[0].suggested_rules == ("mcp__calc__touch",) and "'calc'" in seen[0].message
        assert (tmp_path / "made.txt").exists() and not results_of(run)[call2["id"]].get("is_error")

        conv.permissions.deny.append(Rule.parse("mcp__calc"))
        call3 = tool_use("mcp__calc__add", {"a": 1, "b": 1})
        fake_api.add(response(call3), response(text("denied")))
        run = conv.send("add", can_use_tool=broker)
        await run.wait()
        denied = results_of(run)[call3["id"]]
        assert denied["is_error"] and "mcp__calc" in result_text(denied) and len(seen) == 1
    finally:
        await conv.aclose()


async def test_stop_cancels_an_mcp_call_and_a_server_that_dies_mid_call_is_an_error_and_a_notice(fake_api, tmp_path):
    wait = tool_use("mcp__calc__wait", {})
    fake_api.add(response(wait))
    conv = Conversation(fake_api.model(), cwd=tmp_path, allow=("mcp__calc",),
                        mcp_servers={"calc": stdio_server(tmp_path)})
    try:
        run = conv.send("wait")
        ending = asyncio.ensure_future(run.wait())
        # Stop once the call is under way and the response has ended: the tool starts while the
        # model still streams, and a stop before the stream ends is ``aborted_streaming``.
        for _ in range(3000):
            if ((tmp_path / "waiting").exists() and run.record.phase == "tools") or ending.done():
                break
            await asyncio.sleep(0.01)
        run.stop()
        terminal = await asyncio.wait_for(ending, 10)
        assert terminal.reason.value == "aborted_tools"
        assert results_of(run)[wait["id"]]["is_error"]
        # the connection survives a cancelled call: the next run uses the same server
        pid = int((tmp_path / "pid").read_text())
        add = tool_use("mcp__calc__add", {"a": 1, "b": 1})
        fake_api.add(response(add), response(text("2")))
        run = conv.send("add")
        await run.wait()
        assert result_text(results_of(run)[add["id"]]) == "sum=2" and int((tmp_path / "pid").read_text()) == pid

        # a server that dies during a call: an error result and a notice, and the run goes on
        crash = tool_use("mcp__calc__crash", {})
        fake_api.add(response(crash), response(text("it crashed")))
        run = conv.send("crash it")
        events = await events_of(run)
        assert run.terminal is not None and run.terminal.reason.value == "completed"
        result = results_of(run)[crash["id"]]
        assert result["is_error"] and "'calc'" in result_text(result) and "log" in result_text(result)
        assert any(isinstance(e, Notice) and e.kind == "mcp_server_failed" for e in events)
        assert conv.mcp_servers.status()[0].state.value == "failed" and not process_alive(pid)
    finally:
        await conv.aclose()


async def test_a_streamable_http_server(fake_api, tmp_path):
    process, port = await start_http_server(tmp_path)
    try:
        call = tool_use("mcp__web__shout", {"text": "hi"})
        fake_api.add(response(call), response(text("HI")))
        conv = Conversation(fake_api.model(), cwd=tmp_path, allow=("mcp__web__shout",),
                            mcp_servers={"web": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp",
                                                 "headers": {"Authorization": "Bearer secret-token-123456"}}})
        try:
            run = conv.send("shout")
            await run.wait()
            tools = {t["name"]: t for t in fake_api.requests[0].body["tools"]}
            assert set(tools["mcp__web__shout"]["input_schema"]["properties"]) == {"text"}
            assert result_text(results_of(run)[call["id"]]) == "HI"
        finally:
            await conv.aclose()
    finally:
        process.kill()
        await process.wait()


async def test_a_server_of_mcp_json_starts_only_after_approval(fake_api, tmp_path):
    settings = stdio_server(tmp_path)
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "calc": {**settings, "env": {"API_TOKEN": "tok-1234567890abcdef"}}}}))
    fake_api.add(response(text("no tools")))
    conv = Conversation(fake_api.model(), cwd=tmp_path)
    try:
        run = conv.send("hello")  # unattended: the server is not started
        events = await events_of(run)
        assert any(isinstance(e, Notice) and e.kind == "mcp_server_needs_approval" for e in events)
        assert not (tmp_path / "pid").exists()
        assert not any(t["name"].startswith("mcp__") for t in fake_api.requests[0].body["tools"])
        assert conv.mcp_servers.status()[0].state.value == "needs approval"

        call = tool_use("mcp__calc__add", {"a": 1, "b": 2})
        fake_api.add(response(call), response(text("3")))
        seen, started = [], []

        def answer(request: Any) -> None:
            seen.append(request)
            started.append((tmp_path / "pid").exists())  # asked before anything started?
            request.allow()

        run = conv.send("add", can_use_tool=ApprovalBroker(conv.permissions, on_request=answer))
        await run.wait()
        server_ask = seen[0]
        assert server_ask.tool_name == "mcp__calc" and server_ask.input["command"] == sys.executable
        assert server_ask.input["args"] == settings["args"] and settings["args"][0] in server_ask.message
        assert server_ask.input["env"] == {"API_TOKEN": "[redacted]"}
        assert [r.tool_name for r in seen] == ["mcp__calc", "mcp__calc__add"] and started == [False, True]
        assert result_text(results_of(run)[call["id"]]) == "sum=3"
    finally:
        await conv.aclose()


async def test_a_server_that_cannot_start_is_a_notice_and_the_run_goes_on(fake_api, tmp_path):
    fake_api.add(response(text("fine")))
    conv = Conversation(fake_api.model(), cwd=tmp_path,
                        mcp_servers={"broken": {"command": str(tmp_path / "no-such-program")}})
    try:
        run = conv.send("hello")
        events = await events_of(run)
        assert run.terminal is not None and run.terminal.reason.value == "completed"
        failed = [e for e in events if isinstance(e, Notice) and e.kind == "mcp_server_failed"]
        assert failed and "broken" in failed[0].text
    finally:
        await conv.aclose()


def test_bad_settings_are_refused_when_given(tmp_path):
    for bad in ({"x": {"args": []}}, {"a__b": {"command": "x"}}, {"x": {"type": "sse", "url": "http://h"}},
                {"x": {"type": "http", "url": "ftp://h"}}, {"x": {"command": "x", "cwd": "/"}}):
        with pytest.raises(ValueError):
            Conversation(cwd=tmp_path, mcp_servers=bad)


def test_rules_name_an_mcp_tool_or_all_tools_of_a_server():
    assert Rule.parse("mcp__calc").names("mcp__calc__add")
    assert Rule.parse("mcp__calc__add").names("mcp__calc__add")
    assert not Rule.parse("mcp__calc__add").names("mcp__calc__touch")
    assert not Rule.parse("mcp__cal").names("mcp__calc__add")
    assert not Rule.parse("mcp__calc").names("mcp__calculator__add")



def test_no_server_outlives_the_interpreter_that_started_it(tmp_path):
    """A kernel that exits without ending its conversation (its loop simply stops) leaves no
    MCP server behind, nor a process the server started: its process group is killed at exit."""
    script = tmp_path / "leave.py"
    script.write_text(
        "import asyncio, sys\n"
        "from jupyter_agent import Conversation\n"
        f"conv = Conversation(cwd={str(tmp_path)!r}, mcp_servers={{'calc': {stdio_server(tmp_path)!r}}})\n"
        "loop = asyncio.new_event_loop()\n"
        "tools, notices = loop.run_until_complete(conv.mcp_servers.load_tools(conv.context, None))\n"
        "loop.run_until_complete(conv.mcp_servers.connections['calc'].call_tool('spawn', {}))\n"
        "print(len(tools), notices, flush=True)\n"
        "sys.exit(0)  # no aclose, the loop left as it is: only the exit remains\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("6 []"), done.stdout + done.stderr
    pids = [int((tmp_path / name).read_text()) for name in ("pid", "child_pid")]
    for _ in range(500):  # (a killed process is reaped by init, not at once)
        if not any(map(process_alive, pids)):
            break
        time.sleep(0.01)
    assert not any(map(process_alive, pids))


async def test_stop_while_a_project_server_waits_for_approval_ends_the_run_at_once(fake_api, tmp_path):
    """Nothing hangs before the first request: Stop ends a run whose .mcp.json server waits for
    its card, the card's wait is cancelled, no request was sent and nothing started."""
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"calc": stdio_server(tmp_path)}}))
    conv = Conversation(fake_api.model(), cwd=tmp_path)
    seen = []
    try:
        run = conv.send("hello", can_use_tool=ApprovalBroker(conv.permissions, on_request=seen.append))
        ending = asyncio.ensure_future(run.wait())
        for _ in range(3000):
            if seen or ending.done():
                break
            await asyncio.sleep(0.01)
        assert seen and seen[0].tool_name == "mcp__calc"
        run.stop()
        terminal = await asyncio.wait_for(ending, 10)
        assert terminal.reason.value == "aborted_streaming" and seen[0].future.cancelled()
        assert fake_api.requests == [] and not (tmp_path / "pid").exists()
    finally:
        await conv.aclose()


async def test_a_rule_for_one_server_does_not_allow_a_server_whose_name_extends_it(fake_api, tmp_path):
    """``mcp__calc`` allows the server ``calc`` only: the tools of a server named ``calc_``
    (``mcp__calc___touch``) still ask (issue 37.5)."""
    call = tool_use("mcp__calc___touch", {"name": "made.txt"})
    fake_api.add(response(call), response(text("asked")))
    conv = Conversation(fake_api.model(), cwd=tmp_path, allow=("mcp__calc",),
                        mcp_servers={"calc_": stdio_server(tmp_path)})
    try:
        seen: list[Any] = []
        broker = ApprovalBroker(conv.permissions, on_request=lambda r: (seen.append(r), r.deny("no")))
        run = conv.send("touch it", can_use_tool=broker)
        await run.wait()
        assert [r.tool_name for r in seen] == ["mcp__calc___touch"]
        assert results_of(run)[call["id"]]["is_error"] and not (tmp_path / "made.txt").exists()
    finally:
        await conv.aclose()
