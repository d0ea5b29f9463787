"""The fake Messages API, seen through the real anthropic SDK (and raw HTTP) on 127.0.0.1.

What matters to a user: the SDK reads our streams exactly as it reads the real API's, the
fake rejects the histories the real API rejects, and each fault reaches the SDK the way
docs/design.md ("The Anthropic SDK") says the real one does.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import anthropic
import httpx2
import pytest

from jupyter_agent.testing import (
    FAKE_API_KEY,
    FakeMessagesAPI,
    cut_stream,
    http_error,
    pause,
    raw_block,
    response,
    stall,
    stream_error,
    text,
    thinking,
    tool_use,
)

USER = [{"role": "user", "content": "hi"}]


def client(api: FakeMessagesAPI, **kw) -> anthropic.AsyncAnthropic:
    """A raw SDK client for ``api``. Its own httpx2 client without keep-alive, so nothing
    is left open for a later test's garbage collection to close on the wrong loop."""
    http = anthropic.DefaultAsyncHttpxClient(limits=httpx2.Limits(max_keepalive_connections=0))
    return anthropic.AsyncAnthropic(api_key=kw.pop("api_key", FAKE_API_KEY), base_url=api.base_url,
                                    max_retries=0, http_client=http, **kw)


def parse_sse(raw: bytes) -> list[tuple[str, dict]]:
    """Split an SSE body into (event line, data JSON), checking every event has both."""
    out = []
    for chunk in raw.decode().split("\n\n"):
        if not chunk.strip():
            continue
        lines = chunk.split("\n")
        assert lines[0].startswith("event: "), f"event without an event: line: {chunk!r}"
        assert lines[1].startswith("data: "), f"event without a data: line: {chunk!r}"
        out.append((lines[0][len("event: "):], json.loads(lines[1][len("data: "):])))
    return out


# -- wire format ---------------------------------------------------------------------------------

def test_sse_wire_format_every_event_has_event_and_data_lines(fake_api):
    fake_api.add(response(thinking("Let me look."), text("Reading the file now."),
                          tool_use("Read", {"file_path": "notes.txt"}, id="toolu_01abc")))
    r = httpx2.post(fake_api.base_url + "/v1/messages", headers={"x-api-key": "k"},
                    json={"model": "m", "max_tokens": 100, "messages": USER, "stream": True})
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    assert r.headers["request-id"].startswith("req_")
    events = parse_sse(r.content)
    for name, data in events:
        assert data["type"] == name
    names = [n for n, _ in events]
    assert names[:3] == ["message_start", "content_block_start", "ping"]
    assert names[-2:] == ["message_delta", "message_stop"]
    assert events[0][1]["message"]["usage"]["input_tokens"] > 0
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    # three blocks, each started and stopped in order
    starts = [d["index"] for n, d in events if n == "content_block_start"]
    stops = [d["index"] for n, d in events if n == "content_block_stop"]
    assert starts == stops == [0, 1, 2]
    deltas = [d["delta"] for n, d in events if n == "content_block_delta"]
    assert [d["type"] for d in deltas if d["type"] in ("signature_delta",)] == ["signature_delta"]
    json_parts = [d["partial_json"] for d in deltas if d["type"] == "input_json_delta"]
    assert json_parts[0] == "" and len(json_parts) > 2
    assert json.loads("".join(json_parts)) == {"file_path": "notes.txt"}


async def test_sdk_accumulates_our_stream_into_the_scripted_message(fake_api):
    blocks = [thinking("Check the file first.", signature="sig-123"), text("I will read it. " * 5),
              tool_use("Read", {"file_path": "notes.txt", "limit": 10}, id="toolu_01xyz")]
    fake_api.add(response(*blocks))
    async with client(fake_api).messages.stream(model="claude-sonnet-5-5", max_tokens=100, messages=USER) as s:
        msg = await s.get_final_message()
    assert [b.to_dict() for b in msg.content] == blocks
    assert msg.stop_reason == "tool_use"
    assert msg.usage.output_tokens > 1


async def test_raw_sdk_events_show_json_fragments_starting_with_empty_string(fake_api):
    fake_api.add(response(tool_use("Edit", {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"})))
    stream = await client(fake_api).messages.create(model="m", max_tokens=10, messages=USER, stream=True)
    fragments = [ev.delta.partial_json async for ev in stream
                 if ev.type == "content_block_delta" and ev.delta.type == "input_json_delta"]
    assert fragments[0] == ""
    assert json.loads("".join(fragments))["new_string"] == "x = 2"


async def test_non_streaming_request_gets_a_json_message(fake_api):
    fake_api.add(response(text("plain answer")))
    msg = await client(fake_api).messages.create(model="m", max_tokens=10, messages=USER)
    assert msg.content[0].text == "plain answer"
    assert msg.stop_reason == "end_turn"
    assert fake_api.requests[0].stream is False


def test_unknown_blocks_and_events_go_out_untouched(fake_api):
    block = raw_block({"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"q": "x"}})
    fake_api.add(response(block, text("after"), extra_events=[{"type": "brand_new_event", "n": 1}]))
    r = httpx2.post(fake_api.base_url + "/v1/messages?beta=true", headers={"authorization": "Bearer k"},
                    json={"model": "m", "max_tokens": 10, "messages": USER, "stream": True})
    events = parse_sse(r.content)
    assert events[1] == ("brand_new_event", {"type": "brand_new_event", "n": 1})
    starts = [d["content_block"] for n, d in events if n == "content_block_start"]
    assert starts[0] == block
    assert fake_api.requests[0].path == "/v1/messages?beta=true"


async def test_requests_are_recorded_in_order_with_headers_and_body(fake_api):
    fake_api.add("one", "two")
    c = client(fake_api)
    for word in ("first", "second"):
        await c.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": word}])
    assert [r["messages"][0]["content"] for r in fake_api.requests] == ["first", "second"]
    assert fake_api.requests[0].headers["anthropic-version"]
    assert fake_api.requests[0].headers["authorization"] == f"Bearer {FAKE_API_KEY}"
    assert fake_api.requests[0].path == "/v1/messages"
    # The server's handler records its end just after the client has read the last byte.
    deadline = time.monotonic() + 5
    while fake_api.requests[1].finished_at is None and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert fake_api.requests[1].finished_at >= fake_api.requests[1].received_at


# -- authentication ---------------------------------------------------------------------------------

def test_401_without_key_like_the_real_api(fake_api):
    r = httpx2.post(fake_api.base_url + "/v1/messages", json={"model": "m", "max_tokens": 1, "messages": USER})
    assert r.status_code == 401
    assert r.json()["error"] == {"type": "authentication_error", "message": "x-api-key header is required"}
    assert fake_api.requests[0].outcome == "unauthorized"


async def test_wrong_key_is_an_authentication_error_in_the_sdk(fake_api_factory):
    api = fake_api_factory(api_key="sk-right")
    with pytest.raises(anthropic.AuthenticationError) as e:
        await client(api, api_key="sk-wrong").messages.create(model="m", max_tokens=1, messages=USER)
    assert e.value.status_code == 401
    assert api.requests[0].headers["authorization"] == "<redacted>"  # a real key is never kept


# -- validation -------------------------------------------------------------------------------------

TU = {"type": "tool_use", "id": "toolu_01A", "name": "Read", "input": {"file_path": "x"}}
TU2 = {"type": "tool_use", "id": "toolu_01B", "name": "Read", "input": {"file_path": "y"}}


def result(tid: str) -> dict:
    return {"type": "tool_result", "tool_use_id": tid, "content": "ok"}


INVALID = {
    "orphan tool_use": (
        {"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [TU]},
                      {"role": "user", "content": "and?"}]},
        "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01A. "
        "Each `tool_use` block must have a corresponding `tool_result` block in the next message."),
    "one of two results missing": (
        {"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [TU, TU2]},
                      {"role": "user", "content": [result("toolu_01A")]}]},
        "immediately after: toolu_01B."),
    "tool_use as the last message": (
        {"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [TU]}]},
        "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_01A"),
    "result for an unknown id": (
        {"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [TU]},
                      {"role": "user", "content": [result("toolu_01A"), result("toolu_01Z")]}]},
        "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_01Z"),
    "missing model": ({"model": None}, "model: Field required"),
    "missing max_tokens": ({"max_tokens": None}, "max_tokens: Field required"),
    "missing messages": ({"messages": None}, "messages: Field required"),
    "empty messages": ({"messages": []}, "messages: at least one message is required"),
    "first message from assistant": (
        {"messages": [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "x"}]},
        'first message must use the "user" role'),
    "empty content": (
        {"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": []},
                      {"role": "user", "content": "x"}]},
        "messages.1: all messages must have non-empty content"),
    "thinking budget not under max_tokens": (
        {"max_tokens": 2000, "thinking": {"type": "enabled", "budget_tokens": 2000}},
        "`max_tokens` must be greater than `thinking.budget_tokens`"),
    "thinking budget under the minimum": (
        {"max_tokens": 2000, "thinking": {"type": "enabled", "budget_tokens": 500}},
        "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"),
    "five cache breakpoints": (
        {"system": [{"type": "text", "text": str(i), "cache_control": {"type": "ephemeral"}} for i in range(5)]},
        "A maximum of 4 blocks with cache_control may be provided. Found 5."),
}


@pytest.mark.parametrize("case", list(INVALID))
def test_invalid_requests_get_the_real_apis_400(fake_api_factory, case):
    api = fake_api_factory(expect_rejections=True)
    change, expected = INVALID[case]
    body = {"model": "m", "max_tokens": 10, "messages": USER, **change}
    body = {k: v for k, v in body.items() if v is not None}
    r = httpx2.post(api.base_url + "/v1/messages", headers={"x-api-key": "k"}, json=body)
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error"
    assert expected in err["message"]
    assert [x.error for x in api.rejections] == [err["message"]]


async def test_rejection_reaches_the_sdk_and_does_not_consume_the_script(fake_api):
    fake_api.expect_rejections = True
    fake_api.add("answer for the fixed history")
    bad = INVALID["orphan tool_use"][0]["messages"]
    c = client(fake_api)
    with pytest.raises(anthropic.BadRequestError, match="tool_use` ids were found"):
        await c.messages.create(model="m", max_tokens=5, messages=bad)
    good = [*bad[:2], {"role": "user", "content": [result("toolu_01A")]}]
    msg = await c.messages.create(model="m", max_tokens=5, messages=good)
    assert msg.content[0].text == "answer for the fixed history"


def test_an_unexpected_rejection_fails_a_strict_server_on_exit():
    with pytest.raises(AssertionError, match="rejected with 400: messages.2: `tool_use` ids"):
        with FakeMessagesAPI(["never used"]) as api:
            httpx2.post(api.base_url + "/v1/messages", headers={"x-api-key": "k"},
                        json={"model": "m", "max_tokens": 1, **INVALID["orphan tool_use"][0]})
            api.add()  # the unused response is reported too


# -- script discipline --------------------------------------------------------------------------------

async def test_request_past_the_script_gets_500_and_fails_on_exit():
    with pytest.raises(AssertionError, match=r"script exhausted at request #2"):
        async with FakeMessagesAPI(["only one"]) as api:
            c = client(api)
            await c.messages.create(model="m", max_tokens=5, messages=USER)
            with pytest.raises(anthropic.InternalServerError, match="script exhausted at request #2"):
                await c.messages.create(model="m", max_tokens=5, messages=USER)


def test_unused_responses_fail_on_exit_unless_not_strict():
    with pytest.raises(AssertionError, match=r"2 scripted response\(s\) were never requested"):
        with FakeMessagesAPI(["a", "b"]):
            pass
    with FakeMessagesAPI(["a", "b"], strict=False) as api:
        pass
    assert api.pending == 2


def test_a_failing_test_keeps_its_own_error_and_gets_a_note():
    with pytest.raises(ZeroDivisionError) as e:
        with FakeMessagesAPI(["unused"]):
            raise ZeroDivisionError("the test's own error")
    assert any("never requested" in n for n in e.value.__notes__)


async def test_callable_script_items_see_the_request(fake_api):
    fake_api.add(lambda body: text("you said " + body["messages"][-1]["content"]))
    msg = await client(fake_api).messages.create(model="m", max_tokens=5,
                                                 messages=[{"role": "user", "content": "banana"}])
    assert msg.content[0].text == "you said banana"


# -- faults as the SDK sees them (docs/design.md, "The Anthropic SDK") -----------------------------

@pytest.mark.parametrize("status,cls,etype", [
    (429, anthropic.RateLimitError, "rate_limit_error"),
    (529, anthropic.OverloadedError, "overloaded_error"),
    (500, anthropic.InternalServerError, "api_error"),
    (400, anthropic.BadRequestError, "invalid_request_error"),
    (401, anthropic.AuthenticationError, "authentication_error"),
])
async def test_http_errors_reach_the_sdk_with_status_and_type(fake_api, status, cls, etype):
    fake_api.add(http_error(status, retry_after=7 if status == 429 else None))
    with pytest.raises(cls) as e:
        await client(fake_api).messages.create(model="m", max_tokens=5, messages=USER, stream=True)
    assert e.value.status_code == status
    assert e.value.body["error"]["type"] == etype
    if status == 429:
        assert e.value.response.headers["retry-after"] == "7"


async def test_mid_stream_error_event_is_an_api_status_error_with_status_200(fake_api):
    fake_api.add(stream_error(after=3, error_type="overloaded_error", message="Overloaded"))
    stream = await client(fake_api).messages.create(model="m", max_tokens=5, messages=USER, stream=True)
    seen = []
    with pytest.raises(anthropic.APIStatusError) as e:
        async for ev in stream:
            seen.append(ev.type)
    assert e.value.status_code == 200
    assert e.value.body["error"]["type"] == "overloaded_error"
    assert seen == ["message_start", "content_block_start"]  # the ping (event 3) is not shown by the SDK


async def test_cut_stream_raises_nothing_and_leaves_stop_reason_none(fake_api):
    fake_api.add(cut_stream(after=4))
    async with client(fake_api).messages.stream(model="m", max_tokens=5, messages=USER) as s:
        msg = await s.get_final_message()
    assert msg.stop_reason is None
    assert fake_api.requests[0].outcome == "cut"


#: What the SDK's typed stream raises when the body cannot be read: the raw transport error up
#: to anthropic 2.16, wrapped as the SDK's own error since 2.17 (the model layer reads raw
#: events, AsyncStream.raw_events, and sees the raw one either way: docs/design.md).
CUT = (httpx2.TransportError, anthropic.APIConnectionError)
STALLED = (httpx2.ReadTimeout, anthropic.APITimeoutError)


async def test_abrupt_cut_is_a_transport_error(fake_api):
    fake_api.add(cut_stream(after=4, abrupt=True))
    stream = await client(fake_api).messages.create(model="m", max_tokens=5, messages=USER, stream=True)
    with pytest.raises(CUT):
        async for _ in stream:
            pass


async def test_stall_raises_raw_httpx2_read_timeout(fake_api):
    fake_api.add(stall(after=2, seconds=10))
    c = client(fake_api, timeout=anthropic.Timeout(0.3, connect=2))
    stream = await c.messages.create(model="m", max_tokens=5, messages=USER, stream=True)
    t0 = time.monotonic()
    with pytest.raises(STALLED):
        async for _ in stream:
            pass
    assert 0.25 < time.monotonic() - t0 < 5  # (the stall is 10 s)


async def test_slow_stream_and_pause_after_a_tool_use_block(fake_api):
    fake_api.add(response(tool_use("Bash", {"command": "sleep 1"}), pause(0.5), text("still streaming")))
    stream = await client(fake_api).messages.create(model="m", max_tokens=5, messages=USER, stream=True)
    times = {}
    async for ev in stream:
        if ev.type in ("content_block_stop", "content_block_start"):
            times[(ev.type, ev.index)] = time.monotonic()
    gap = times[("content_block_start", 1)] - times[("content_block_stop", 0)]
    # Times are taken where the events are read: a busy test process reads the stop late and the gap
    # looks shorter than the pause (0.27 s for 0.3 s was seen under load). Without the pause it is ~0.
    assert gap >= 0.35


async def test_delay_between_events_makes_a_slow_stream(fake_api):
    fake_api.add(response(text("abcdefgh"), chunk_chars=2, delay_s=0.04))  # 10 events -> ~0.36 s
    t0 = time.monotonic()
    stream = await client(fake_api).messages.create(model="m", max_tokens=5, messages=USER, stream=True)
    arrivals = [time.monotonic() - t0 async for _ in stream]
    assert arrivals[-1] - arrivals[0] >= 0.3


async def test_a_stalled_request_does_not_block_others_and_close_is_prompt():
    api = FakeMessagesAPI([stall(after=1, seconds=30), response(text("fast"))]).start()
    try:
        stalled = await client(api).messages.create(model="m", max_tokens=5, messages=USER, stream=True)
        t0 = time.monotonic()
        msg = await client(api).messages.create(model="m", max_tokens=5, messages=USER)
        assert msg.content[0].text == "fast"
        assert time.monotonic() - t0 < 5  # (the stall is 30 s; a loaded machine takes ~1 s)
    finally:
        t0 = time.monotonic()
        await asyncio.to_thread(api.close)
        assert time.monotonic() - t0 < 5
    with pytest.raises(CUT):  # the stalled stream is dropped, not left hanging
        async for _ in stalled:
            pass
    assert api.requests[0].outcome == "stall"


def test_clients_in_other_processes_can_use_it(fake_api):
    fake_api.add("from another process")
    code = ("import json, os, urllib.request as u\n"
            "r = u.Request(os.environ['ANTHROPIC_BASE_URL'] + '/v1/messages', method='POST',\n"
            "  headers={'x-api-key': os.environ['ANTHROPIC_API_KEY'], 'content-type': 'application/json'},\n"
            "  data=json.dumps({'model': 'm', 'max_tokens': 5,\n"
            "                   'messages': [{'role': 'user', 'content': 'hi'}]}).encode())\n"
            "print(json.load(u.urlopen(r))['content'][0]['text'])\n")
    out = subprocess.run([sys.executable, "-c", code], env={**fake_api.env(), "PATH": ""},
                         capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "from another process", out.stderr


# -- usage and prompt caching ------------------------------------------------------------------------

async def test_cache_usage_is_emulated_across_requests(fake_api):
    fake_api.add("one", "two", "three")
    c = client(fake_api)
    system = [{"type": "text", "text": "You are a careful agent. " * 40, "cache_control": {"type": "ephemeral"}}]
    m1 = [{"role": "user", "content": [{"type": "text", "text": "first question " * 20,
                                        "cache_control": {"type": "ephemeral"}}]}]
    r1 = await c.messages.create(model="m", max_tokens=5, system=system, messages=m1)
    assert r1.usage.cache_creation_input_tokens > 200 and r1.usage.cache_read_input_tokens == 0
    # next turn: same prefix, marker moved to the new last message
    m2 = [{"role": "user", "content": [{"type": "text", "text": "first question " * 20}]},
          {"role": "assistant", "content": [{"type": "text", "text": "one"}]},
          {"role": "user", "content": [{"type": "text", "text": "second", "cache_control": {"type": "ephemeral"}}]}]
    r2 = await c.messages.create(model="m", max_tokens=5, system=system, messages=m2)
    assert r2.usage.cache_read_input_tokens == r1.usage.cache_creation_input_tokens
    assert 0 < r2.usage.cache_creation_input_tokens < r1.usage.cache_creation_input_tokens
    assert r2.usage.input_tokens < 10
    # a different system prompt shares no prefix
    other = [{"type": "text", "text": "Something else entirely.", "cache_control": {"type": "ephemeral"}}]
    r3 = await c.messages.create(model="m", max_tokens=5, system=other, messages=m1)
    assert r3.usage.cache_read_input_tokens == 0


async def test_input_tokens_grow_with_the_request(fake_api):
    fake_api.add("a", "b")
    c = client(fake_api)
    small = await c.messages.create(model="m", max_tokens=5, messages=USER)
    big = await c.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "word " * 400}])
    assert big.usage.input_tokens > small.usage.input_tokens + 300
