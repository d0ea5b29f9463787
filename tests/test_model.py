"""AnthropicModel through the real anthropic SDK against the fake Messages API.

Each test checks something a user would see: the message the loop gets, the retries
the UI shows, the error text when it gives up, the cost, a Stop that stops.
"""

from __future__ import annotations

import asyncio
import copy
import gc
import json
import os
import time
import warnings
from pathlib import Path

import pytest

from jupyter_agent.agent import resolve_model
from jupyter_agent.loop.events import AssistantMessage, ModelFallback, ModelRetry, Notice, StreamEvent
from jupyter_agent.loop.permission_result import DENIED
from jupyter_agent.loop.model_protocol import Model, ModelError, ModelRequest, PromptTooLongError
from jupyter_agent.model import DEFAULT_MODEL, AnthropicModel, price_for
from jupyter_agent.testing import (
    DEMO_TRANSCRIPT,
    FakeMessagesAPI,
    ReplayModel,
    cut_stream,
    http_error,
    load_transcript,
    overloaded,
    prompt_too_long,
    rate_limited,
    raw_block,
    response,
    stall,
    stream_error,
    text,
    thinking,
    tool_use,
)


def req(*messages, system=None, tools=None, **kw) -> ModelRequest:
    msgs = list(messages) or [{"role": "user", "content": "hi"}]
    return ModelRequest(messages=msgs, system=system or [], tools=tools or [], **kw)


async def collect(model, request):
    return [ev async for ev in model.stream(request)]


def final(events) -> AssistantMessage:
    assert isinstance(events[-1], AssistantMessage), events[-1]
    assert sum(isinstance(e, AssistantMessage) for e in events) == 1
    return events[-1]


# -- round trips -------------------------------------------------------------------------------------

async def test_text_response_streams_and_snapshot_grows(fake_api):
    words = "The quick brown fox jumps over the lazy dog, twice over for good measure."
    fake_api.add(response(text(words), chunk_chars=10))
    model = fake_api.model()
    assert isinstance(model, Model)
    events = await collect(model, req())
    msg = final(events)
    assert msg.text == words
    assert msg.message == {"role": "assistant", "content": [{"type": "text", "text": words}]}
    assert msg.stop_reason == "end_turn" and msg.model == DEFAULT_MODEL
    assert msg.request_id.startswith("req_fake_")
    stream = [e for e in events if isinstance(e, StreamEvent)]
    assert [e.type for e in stream][:2] == ["message_start", "content_block_start"]
    assert stream[-1].type == "message_stop"
    # one live snapshot that keeps growing; every text delta is visible in it
    lengths = [len(e.block["text"]) for e in stream if e.type == "content_block_delta"]
    assert len(lengths) == 8 and lengths == sorted(lengths) and lengths[-1] == len(words)
    assert all(e.snapshot is stream[0].snapshot for e in stream)
    assert [e.delta["text"] for e in stream if e.type == "content_block_delta"][0] == words[:10]


async def test_tool_use_input_is_parsed_from_the_fragments(fake_api):
    big = {"file_path": "src/app.py", "old_string": "a = 1\n" * 20, "new_string": "a = 2\n" * 20}
    fake_api.add(response(text("Editing."), tool_use("Edit", big, id="toolu_01Edit"),
                          tool_use("Glob", {}, id="toolu_01Glob")))
    msg = final(await collect(fake_api.model(), req()))
    assert msg.stop_reason == "tool_use"
    assert [(t["id"], t["name"], t["input"]) for t in msg.tool_uses] == [
        ("toolu_01Edit", "Edit", big), ("toolu_01Glob", "Glob", {})]


async def test_thinking_and_unknown_blocks_come_back_unchanged_in_history(fake_api):
    think = thinking("I should search.", signature="EqQBCkYIBxgCKkB...")
    server = raw_block({"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search",
                        "input": {"query": "jupyter"}})
    novel = raw_block({"type": "a_block_from_the_future", "payload": {"x": [1, 2]}})
    fake_api.add(response(think, server, novel, text("Found it."),
                          extra_events=[{"type": "context_management_event", "applied": []}]),
                 response(text("ok")))
    model = fake_api.model()
    events = await collect(model, req())
    msg = final(events)
    assert msg.message["content"] == [think, server, novel, text("Found it.")]
    unknown = [e for e in events if isinstance(e, StreamEvent) and e.type == "context_management_event"]
    assert unknown and unknown[0].delta == {"type": "context_management_event", "applied": []}
    history = [{"role": "user", "content": "search"}, msg.message, {"role": "user", "content": "thanks"}]
    final(await collect(model, req(*history)))
    sent = fake_api.requests[1]["messages"][1]["content"]
    assert sent == [think, server, novel, text("Found it.")]


# -- request building ------------------------------------------------------------------------------

async def test_cache_control_placement_and_caller_request_untouched(fake_api):
    fake_api.add("ok")
    tools = [{"name": "Read", "description": "read", "input_schema": {"type": "object"}}]
    system = [{"type": "text", "text": "You are an agent."}, {"type": "text", "text": "Be brief."}]
    messages = [{"role": "user", "content": "read a.txt"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01A", "name": "Read",
                                                   "input": {"file_path": "a.txt"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01A", "content": "x"}]}]
    request = req(*messages, system=system, tools=tools)
    before = json.dumps([request.messages, request.system, request.tools])
    final(await collect(fake_api.model(), request))
    assert json.dumps([request.messages, request.system, request.tools]) == before
    body = fake_api.requests[0].body
    assert body["tools"] == tools  # never a marker on tools
    assert [("cache_control" in b) for b in body["system"]] == [False, True]
    marked = [(i, j) for i, m in enumerate(body["messages"]) for j, b in enumerate(m["content"])
              if isinstance(b, dict) and "cache_control" in b]
    assert marked == [(2, 0)]
    assert body["messages"][2]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][:2] == messages[:2]


async def test_second_turn_reads_the_cache_and_costs_less(fake_api):
    fake_api.add("first", "second")
    model = fake_api.model()
    system = [{"type": "text", "text": "Long system prompt. " * 200}]
    m1 = final(await collect(model, req({"role": "user", "content": "q1"}, system=system)))
    history = [{"role": "user", "content": "q1"}, m1.message, {"role": "user", "content": "q2"}]
    m2 = final(await collect(model, req(*history, system=system)))
    assert m1.usage.cache_creation_input_tokens > 900 and m1.usage.cache_read_input_tokens == 0
    assert m2.usage.cache_read_input_tokens >= m1.usage.cache_creation_input_tokens
    assert m2.usage.cost_usd < m1.usage.cost_usd


async def test_thinking_max_tokens_and_extra_reach_the_api(fake_api):
    fake_api.add("a", "b")
    model = fake_api.model(max_tokens=1234, thinking={"type": "enabled", "budget_tokens": 1024})
    final(await collect(model, req(extra={"temperature": 1, "metadata": {"user_id": "u1"}})))
    final(await collect(model, req(max_tokens=20000, thinking={"type": "enabled", "budget_tokens": 2048})))
    first, second = (r.body for r in fake_api.requests)
    assert first["max_tokens"] == 1234 and first["thinking"]["budget_tokens"] == 1024
    assert first["temperature"] == 1 and first["metadata"] == {"user_id": "u1"}
    assert second["max_tokens"] == 20000 and second["thinking"]["budget_tokens"] == 2048


async def test_a_thinking_budget_is_fitted_under_a_lowered_max_tokens(fake_api):
    """A model's own thinking budget (4,096) and requests whose ``max_tokens`` a small window
    lowered: the budget goes under it; under the API's minimum, the request goes without."""
    fake_api.add("a", "b", "c")
    model = fake_api.model(thinking={"type": "enabled", "budget_tokens": 4096})
    for max_tokens in (2000, 1000, 8000):
        final(await collect(model, req(max_tokens=max_tokens)))
    bodies = [r.body for r in fake_api.requests]
    assert [(b["max_tokens"], b.get("thinking", {}).get("budget_tokens")) for b in bodies] == [
        (2000, 1999), (1000, None), (8000, 4096)]
    assert fake_api.rejections == []


# -- retries --------------------------------------------------------------------------------------------

FAULTS = {
    "429": (rate_limited(), 429),
    "529": (overloaded(), 529),
    "500": (http_error(500), 500),
    "503": (http_error(503), 503),
    "mid-stream overloaded": (stream_error(after=4), None),
    "cut stream": (cut_stream(after=5), None),
    "abrupt cut": (cut_stream(after=5, abrupt=True), None),
    "stall": (stall(after=3, seconds=5), None),
}


@pytest.mark.parametrize("case", list(FAULTS))
async def test_fault_then_retry_then_success(fake_api, case):
    fault, status = FAULTS[case]
    fake_api.add(fault, response(text("recovered")))
    # a short stall limit only where the stall is the fault: elsewhere a loaded machine's gap
    # between two events would count as a stall and retry once more
    model = fake_api.model(stall_timeout_s=0.25 if case == "stall" else 30)
    events = await collect(model, req())
    retries = [e for e in events if isinstance(e, ModelRetry)]
    assert len(retries) == 1 and retries[0].attempt == 1 and retries[0].max_retries == 4
    assert retries[0].status == status
    assert final(events).text == "recovered"
    first, second = fake_api.requests
    assert first.body == second.body  # the identical request, sent again


@pytest.mark.parametrize("fault,kind", [
    (overloaded(), "overloaded"), (rate_limited(), "rate_limit"), (http_error(500), "api_error"),
    (stream_error(after=3), "overloaded"), (stream_error(after=3, error_type="api_error", message="boom"),
                                           "api_error"),
    (cut_stream(after=3), "stream_cut"), (stall(after=2, seconds=5), "stream_stalled"),
])
async def test_exhausted_retries_raise_model_error_with_kind(fake_api, fault, kind):
    fake_api.add(fault, fault, fault)
    events = []
    with pytest.raises(ModelError) as e:
        # (a short stall limit only where the stall is the fault, as above)
        model = fake_api.model(max_retries=2, stall_timeout_s=0.2 if kind == "stream_stalled" else 30)
        async for ev in model.stream(req()):
            events.append(ev)
    assert e.value.kind == kind and e.value.retryable
    assert "Gave up after 3 attempts" in str(e.value)
    assert [ev.attempt for ev in events if isinstance(ev, ModelRetry)] == [1, 2]
    assert not any(isinstance(ev, AssistantMessage) for ev in events)
    assert len(fake_api.requests) == 3


async def test_connection_refused_is_retried_then_a_connection_error():
    api = FakeMessagesAPI().start()
    base_url = api.base_url
    api.close()  # nothing listens there any more
    model = AnthropicModel(api_key="k", base_url=base_url, max_retries=1, retry_base_delay_s=0.001)
    events = []
    with pytest.raises(ModelError) as e:
        async for ev in model.stream(req()):
            events.append(ev)
    assert e.value.kind == "connection"
    assert "Could not reach the API" in str(e.value)
    assert [type(ev) for ev in events] == [ModelRetry]


async def test_retry_after_is_honoured(fake_api):
    fake_api.add(rate_limited(retry_after=0.3), "ok")
    events = await collect(fake_api.model(), req())
    assert events[0].delay_s == pytest.approx(0.3)
    gap = fake_api.requests[1].received_at - fake_api.requests[0].finished_at
    assert gap >= 0.28


async def test_backoff_doubles_with_jitter(fake_api):
    fake_api.add(overloaded(), overloaded(), overloaded(), "ok")
    model = fake_api.model(retry_base_delay_s=0.02, retry_max_delay_s=0.05)
    delays = [e.delay_s for e in await collect(model, req()) if isinstance(e, ModelRetry)]
    for got, nominal in zip(delays, [0.02, 0.04, 0.05]):
        assert 0.75 * nominal <= got <= nominal


async def test_fallback_after_repeated_overload(fake_api):
    fake_api.add(overloaded(), stream_error(after=2), "answer from the fallback", "still the fallback")
    model = fake_api.model("claude-opus-4-8", fallback_model="claude-haiku-4-5", fallback_after=2)
    events = await collect(model, req())
    assert [type(e) for e in events if not isinstance(e, StreamEvent)] == [ModelRetry, ModelFallback, AssistantMessage]
    fb = next(e for e in events if isinstance(e, ModelFallback))
    assert (fb.from_model, fb.to_model) == ("claude-opus-4-8", "claude-haiku-4-5")
    assert final(events).model == "claude-haiku-4-5"
    assert [r["model"] for r in fake_api.requests] == ["claude-opus-4-8", "claude-opus-4-8", "claude-haiku-4-5"]
    # the switch holds for the rest of the session
    final(await collect(model, req()))
    assert fake_api.requests[-1]["model"] == "claude-haiku-4-5" and model.active_model == "claude-haiku-4-5"


# -- errors that are not retried -------------------------------------------------------------------------

async def test_401_says_to_check_the_key_and_never_shows_it(fake_api_factory):
    api = fake_api_factory(["never sent"], strict=False, api_key="sk-ant-right")
    secret = "sk-ant-api03-SECRET-do-not-print"
    model = AnthropicModel(api_key=secret, base_url=api.base_url, max_retries=3)
    with pytest.raises(ModelError) as e:
        await collect(model, req())
    assert e.value.kind == "authentication" and e.value.status == 401
    assert "ANTHROPIC_API_KEY" in str(e.value)
    assert secret not in str(e.value) and secret not in repr(model) and secret not in repr(e.value)
    assert len(api.requests) == 1  # not retried


async def test_400_from_a_broken_history_is_an_invalid_request(fake_api):
    fake_api.expect_rejections = True
    orphan = [{"role": "user", "content": "go"},
              {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01X", "name": "Read", "input": {}}]},
              {"role": "user", "content": "no result here"}]
    with pytest.raises(ModelError) as e:
        await collect(fake_api.model(), req(*orphan))
    assert e.value.kind == "invalid_request" and e.value.status == 400
    assert "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_01X" in str(e.value)
    assert len(fake_api.requests) == 1


async def test_prompt_too_long_raises_its_own_error(fake_api):
    fake_api.add(prompt_too_long(tokens=250_000))
    with pytest.raises(PromptTooLongError) as e:
        await collect(fake_api.model(), req())
    assert isinstance(e.value, ModelError) and e.value.kind == "prompt_too_long"
    assert "prompt is too long: 250000 tokens > 200000 maximum" in str(e.value)


async def test_no_api_key_gives_one_friendly_message(fake_api, monkeypatch, tmp_path):
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE", "ANTHROPIC_CONFIG_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    model = AnthropicModel(base_url=fake_api.base_url)
    with pytest.raises(ModelError) as e:
        await collect(model, req())
    msg = str(e.value)
    assert e.value.kind == "no_api_key"
    assert "export ANTHROPIC_API_KEY=" in msg and "JUPYTER_AGENT_REPLAY=path/to/transcript.json" in msg
    assert "ReplayModel" in msg and "Traceback" not in msg
    assert fake_api.requests == []  # nothing was sent without a key


# -- Stop -------------------------------------------------------------------------------------------------

def established_to(port: int) -> int:
    """Client connections to 127.0.0.1:port that are still open (Linux /proc/net/tcp)."""
    if not os.path.exists("/proc/net/tcp"):
        pytest.skip("needs /proc/net/tcp")
    with open("/proc/net/tcp") as f:
        rows = [line.split() for line in f.readlines()[1:]]
    return sum(1 for r in rows if r[3] == "01" and int(r[2].split(":")[1], 16) == port)


async def test_aclose_mid_stream_closes_the_response_promptly_and_cleanly(fake_api):
    fake_api.add(response(text("x" * 1000), chunk_chars=4, delay_s=0.02))  # ~5 s if read to the end
    model = fake_api.model()
    # Collect earlier tests' garbage now: an unfinished async generator (or SDK client) that
    # another test left behind gets a close task on whatever loop runs when it is collected,
    # created one loop iteration later (measured: after test_fake_api in file order).
    gc.collect()
    await asyncio.sleep(0)
    tasks_before = set(asyncio.all_tasks())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gen = model.stream(req())
        seen = 0
        async for ev in gen:
            seen += isinstance(ev, StreamEvent)
            if seen == 5:
                break
        assert established_to(fake_api.port) == 1
        t0 = time.monotonic()
        await gen.aclose()
        assert time.monotonic() - t0 < 2.5  # generous: shared machines are noisy
        # closed by the time aclose() returns, not later by a garbage-collection task
        assert established_to(fake_api.port) == 0
        for _ in range(50):  # the server notices the closed socket at its next write
            if fake_api.requests[0].outcome == "client_disconnected":
                break
            await asyncio.sleep(0.02)
        gc.collect()
        # The SDK's SSE decoder nests async generators (decoder -> httpx2 -> httpcore2) that
        # `async for` leaves suspended when the outer one closes; the garbage collector
        # finalizes them with short close tasks of their own (measured). Let those finish
        # (a warning from them would be caught here); then nothing may be left running.
        await asyncio.sleep(0)
        finalizing = asyncio.all_tasks() - tasks_before
        if finalizing:
            await asyncio.wait(finalizing, timeout=2)
    assert fake_api.requests[0].outcome == "client_disconnected"
    assert fake_api.requests[0].message_stop_at is None
    assert asyncio.all_tasks() - tasks_before == set()  # nothing of ours left running
    assert [str(w.message) for w in caught] == []


async def test_cancelling_the_consuming_task_closes_the_response(fake_api):
    fake_api.add(response(text("y" * 400), chunk_chars=4, delay_s=0.02))
    model = fake_api.model()
    got: list = []

    async def consume():
        async for ev in model.stream(req()):
            got.append(ev)

    task = asyncio.create_task(consume())
    while len(got) < 5:
        await asyncio.sleep(0.01)
    task.cancel()  # what the widget's Stop button does
    with pytest.raises(asyncio.CancelledError):
        await task
    assert established_to(fake_api.port) == 0
    assert not any(isinstance(e, AssistantMessage) for e in got)


async def test_a_closed_model_opens_a_new_client_when_used_again(fake_api):
    fake_api.add("before", "after")
    model = fake_api.model()
    assert final(await collect(model, req())).text == "before"
    await model.aclose()  # what a finished run does with a model it created
    assert final(await collect(model, req())).text == "after"


def test_the_same_model_works_across_event_loops(fake_api):
    fake_api.add("one", "two")
    model = fake_api.model()
    assert final(asyncio.run(collect(model, req()))).text == "one"
    assert final(asyncio.run(collect(model, req()))).text == "two"


def _tls_context_of(model: AnthropicModel):
    """The TLS context the model's HTTP client verifies servers with (httpx2's pool keeps it)."""
    return model._get_client()._client._transport._pool._ssl_context


def test_every_client_shares_one_verifying_tls_context_built_for_the_environment(monkeypatch, tmp_path):
    import ssl

    from jupyter_agent.model.tls import shared_tls_context

    async def context_of_a_new_model():
        return _tls_context_of(AnthropicModel("m", api_key="k", base_url="https://api.example.invalid"))

    first, second = asyncio.run(context_of_a_new_model()), asyncio.run(context_of_a_new_model())
    assert first is second is shared_tls_context()  # built once, not once per client or loop
    assert first.verify_mode == ssl.CERT_REQUIRED and first.check_hostname  # the library's default, verifying
    # SSL_CERT_FILE is read when the context is built, as the HTTP library reads it
    with monkeypatch.context() as env:
        env.setenv("SSL_CERT_FILE", str(tmp_path / "no-such-bundle.pem"))
        with pytest.raises(ModelError, match=r"SSL_CERT_FILE \(.*no-such-bundle.pem\).*or unset it") as e:
            asyncio.run(context_of_a_new_model())
        assert e.value.kind == "tls_config"
    assert asyncio.run(context_of_a_new_model()) is first  # the environment as it was: the same context


# -- usage and cost ------------------------------------------------------------------------------------

async def test_usage_and_cost(fake_api):
    usage = {"input_tokens": 1000, "output_tokens": 500, "cache_read_input_tokens": 2000,
             "cache_creation_input_tokens": 100}
    fake_api.add(response(text("priced"), usage=usage), response(text("unpriced"), usage=usage))
    msg = final(await collect(fake_api.model("claude-sonnet-4-6"), req()))
    u = msg.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_input_tokens, u.cache_creation_input_tokens,
            u.requests) == (1000, 500, 2000, 100, 1)
    # $3/MTok in, $15 out, cache write 1.25x, cache read 0.1x
    assert u.cost_usd == pytest.approx((1000 * 3 + 100 * 3.75 + 2000 * 0.3 + 500 * 15) / 1e6)
    other = final(await collect(fake_api.model("some-unknown-model"), req()))
    assert other.usage.cost_usd == 0.0 and other.usage.output_tokens == 500


# -- replay and recording ----------------------------------------------------------------------------

async def test_replay_model_plays_the_demo_through_a_real_loop_shape():
    model = ReplayModel(DEMO_TRANSCRIPT)
    try:
        assert isinstance(model, Model) and model.name == DEFAULT_MODEL
        history = [{"role": "user", "content": model.prompt}]
        tools_called, notices = [], []
        for _ in range(3):
            events = await collect(model, req(*history))
            notices += [e.text for e in events if isinstance(e, Notice)]
            msg = final(events)
            history.append(msg.message)
            if not msg.tool_uses:
                break
            results = []
            for tu in msg.tool_uses:
                tools_called.append((tu["name"], tu["input"]))
                results.append({"type": "tool_result", "tool_use_id": tu["id"], "content": "ok"})
            history.append({"role": "user", "content": results})
        scratch = model.run.scratch
        # the run works in its own scratch folder, where the transcript's file was written
        assert scratch is not None and (scratch / "notes.txt").read_text() == "# demo settings\nvalue = 1\n"
        assert tools_called == [
            ("Read", {"file_path": f"{scratch}/notes.txt"}),
            ("Edit", {"file_path": f"{scratch}/notes.txt", "old_string": "value = 1", "new_string": "value = 2"})]
        assert "value = 2" in msg.text
        assert notices == [f"Offline replay — your prompt is not used; this replays demo_read_edit.json "
                           f"({model.transcript['description']}). It works in a new scratch folder, {scratch}. "
                           "Set ANTHROPIC_API_KEY to have your own prompts answered."]
        # a next prompt is a new run: the recording starts over, in a new folder, with new ids
        again = final(await collect(model, req(*history, {"role": "user", "content": "more?"})))
        assert model.run.scratch != scratch and not scratch.exists()
        assert again.tool_uses[0]["id"] == history[1]["content"][1]["id"] + "_2"
        assert again.tool_uses[0]["input"] == {"file_path": f"{model.run.scratch}/notes.txt"}
    finally:
        model.close()
    assert not model.run.scratch.exists()  # closing the replay removes its scratch folder


async def test_a_replayed_run_completes_through_query_and_costs_nothing(tmp_path):
    """The loop's usage meter prices each streamed response with ``model.price(model, usage)``
    (a static function: a bound method there once made every replayed run end model_error).
    An offline replay spends nothing: its tokens are counted, its cost is 0 (it once ended
    with the recorded model's list price, ~$0.0066, against the docs)."""
    from jupyter_agent import query
    from jupyter_agent.loop.permission_result import PermissionAllow
    from jupyter_agent.loop.usage import Usage

    async def allow(name, input, ask):
        return PermissionAllow()

    model = ReplayModel(DEMO_TRANSCRIPT)
    try:
        assert price_for(model.name) is not None  # the recorded model has a list price...
        assert model.price(model.name, Usage(input_tokens=1000, output_tokens=100)) == 0.0  # ...not charged
        terminal = await query("anything", model=model, can_use_tool=allow, cwd=tmp_path).wait()
        assert terminal.reason == "completed", terminal.message
        assert terminal.usage.total_tokens > 0 and terminal.usage.requests >= 2
        assert terminal.usage.cost_usd == 0.0
    finally:
        model.close()


async def test_a_denied_call_ends_the_replayed_run_with_a_closing_answer():
    model = ReplayModel(DEMO_TRANSCRIPT)
    try:
        history = [{"role": "user", "content": "go"}]
        for denied in (False, True):
            msg = final(await collect(model, req(*history)))
            history.append(msg.message)
            tu = msg.tool_uses[0]
            note = f"{DENIED.split(' STOP')[0]} To tell you how to proceed, the user said:\nuse 3"
            history.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": tu["id"], "is_error": denied,
                 "content": note if denied else "value = 1"}]})
        closing = final(await collect(model, req(*history)))
        assert closing.stop_reason == "end_turn" and not closing.tool_uses
        assert "You denied Edit, so this recorded run ends here" in closing.text
        # a failure that is not a person's Deny still stops the replay as a mismatch
        model2 = ReplayModel(DEMO_TRANSCRIPT)
        try:
            first = final(await collect(model2, req({"role": "user", "content": "go"})))
            broken = [{"role": "user", "content": "go"}, first.message, {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": first.tool_uses[0]["id"], "is_error": True,
                 "content": "File does not exist."}]}]
            with pytest.raises(ModelError) as e:
                await collect(model2, req(*broken))
            assert e.value.kind == "replay_mismatch" and "Read succeeded; it failed here" in str(e.value)
        finally:
            model2.close()
    finally:
        model.close()


async def test_the_live_cell_transcript_fills_the_notebook_and_cells_from_the_request():
    """``live_cell`` names the open notebook and the %%agent cell as the request gave them to
    the model, and runs the cell its insert created (the id the insert's result gave)."""
    from jupyter_agent.prompts import user_context
    from jupyter_agent.loop.messages import prepend_user_context

    model = ReplayModel("live_cell")
    try:
        context = user_context(Path("/work"), "/work/start.ipynb", "agent-cell-7")
        first = prepend_user_context([{"role": "user", "content": "hi"}], context)
        read = final(await collect(model, req(*first)))
        assert read.tool_uses[0]["input"] == {"file_path": "/work/start.ipynb"}
        history = [*first, read.message, {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": read.tool_uses[0]["id"], "content": "cells"}]}]
        edit = final(await collect(model, req(*history)))
        assert edit.tool_uses[0]["input"]["cell_id"] == "agent-cell-7"
        history += [edit.message, {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": edit.tool_uses[0]["id"],
             "content": "Inserted cell 3f2a (code, 1 line) at cell-1."}]}]
        run = final(await collect(model, req(*history)))
        assert run.tool_uses[0]["input"] == {"notebook_path": "/work/start.ipynb", "cell_id": "3f2a"}
    finally:
        model.close()



async def test_a_prompt_the_recording_cannot_play_from_replays_the_demo_instead_and_says_so():
    """A prompt from the side panel (no %%agent cell) or with no notebook in its request, on
    a replay of ``live_cell``: the packaged demo plays (it needs only its scratch folder),
    and the notice says why; the next prompt from a cell plays live_cell again."""
    from jupyter_agent.prompts import user_context
    from jupyter_agent.loop.messages import prepend_user_context

    model = ReplayModel("live_cell")
    try:
        panel = prepend_user_context([{"role": "user", "content": "hi"}],
                                     user_context(Path("/work"), "/work/start.ipynb", None))
        events = await collect(model, req(*panel))
        notice = next(e.text for e in events if isinstance(e, Notice))
        assert notice.startswith("Offline replay — your prompt is not used; live_cell.json plays only from an "
                                 "%%agent cell of a notebook open in JupyterLab (it needs the id of its %%agent "
                                 "cell), so this replays demo_read_edit.json")
        assert notice.endswith("Set ANTHROPIC_API_KEY to have your own prompts answered.")
        read = final(events)
        assert read.tool_uses[0]["input"] == {"file_path": f"{model.run.scratch}/notes.txt"}
        # the same conversation, now from the %%agent cell: live_cell from its start
        history = [*panel, read.message, {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": read.tool_uses[0]["id"], "content": "value = 1"}]},
            {"role": "user", "content": "from the cell"}]
        cell = prepend_user_context(history, user_context(Path("/work"), "/work/start.ipynb", "agent-cell-7"))
        events = await collect(model, req(*cell))
        assert "this replays live_cell.json" in next(e.text for e in events if isinstance(e, Notice))
        assert final(events).tool_uses[0]["input"] == {"file_path": "/work/start.ipynb"}
    finally:
        model.close()
    bare = ReplayModel("live_cell")  # no notebook named at all: the demo too
    try:
        assert final(await collect(bare, req({"role": "user", "content": "hi"}))).tool_uses[0]["name"] == "Read"
        assert bare.playing == str(DEMO_TRANSCRIPT)
    finally:
        bare.close()


async def test_after_a_stop_or_an_error_the_next_prompt_replays_from_the_start():
    """A run stopped while its card waited (or ended by an error) leaves its calls answered
    by the loop, not by a person; the next prompt is merged into that results message by the
    API's rules. It is a new run: the recording plays from its start, not "no longer matches"."""
    from jupyter_agent.loop.messages import normalize_messages_for_api

    model = ReplayModel(DEMO_TRANSCRIPT)
    try:
        history = [{"role": "user", "content": "go"}]
        for _ in range(2):  # the Read (allowed), then the Edit, whose card the Stop answers
            msg = final(await collect(model, req(*history)))
            tu = msg.tool_uses[0]
            stopped = tu["name"] == "Edit"
            history += [msg.message, {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": tu["id"], "is_error": stopped,
                 "content": "Stopped by the user." if stopped else "value = 1"}]}]
        first_scratch = model.run.scratch
        history.append({"role": "user", "content": "again"})
        events = await collect(model, req(*normalize_messages_for_api(history)))
        assert any(isinstance(e, Notice) and "this replays demo_read_edit.json" in e.text for e in events)
        again = final(events)
        assert again.tool_uses[0]["name"] == "Read" and model.played == 1
        assert model.run.scratch != first_scratch
    finally:
        model.close()


async def test_demo_transcript_edits_the_file_through_the_public_query(tmp_path):
    from jupyter_agent import query

    model = ReplayModel(DEMO_TRANSCRIPT)
    try:
        run = query(model.prompt, model=model, cwd=str(tmp_path), permission_mode="bypassPermissions")
        terminal = await asyncio.wait_for(run.wait(), 30)
        assert terminal.reason == "completed"
        assert (model.run.scratch / "notes.txt").read_text() == "# demo settings\nvalue = 2\n"
        assert list(tmp_path.iterdir()) == []  # nothing written in the working folder
        assert [r.outcome for r in model.requests] == ["ok", "ok", "ok"]  # the API accepted every history
    finally:
        model.close()


def test_preparing_a_replays_files_never_overwrites_the_users_file(tmp_path):
    """The replay model and the notebook/CLI path write a transcript's files the same way:
    only the missing ones (a file of that name the user has is theirs)."""
    from jupyter_agent.environment import prepare_replay_files

    (tmp_path / "notes.txt").write_text("mine\n")
    model = ReplayModel(DEMO_TRANSCRIPT)
    try:
        assert model.prepare_files(tmp_path) == []
        assert prepare_replay_files(str(DEMO_TRANSCRIPT), tmp_path) == []
        assert (tmp_path / "notes.txt").read_text() == "mine\n"
        fresh = tmp_path / "fresh"
        assert model.prepare_files(fresh) == [fresh / "notes.txt"]
        assert (fresh / "notes.txt").read_text() == "# demo settings\nvalue = 1\n"
    finally:
        model.close()


async def test_replay_still_rejects_a_history_the_api_would_reject():
    model = ReplayModel(DEMO_TRANSCRIPT)
    try:
        first = final(await collect(model, req({"role": "user", "content": "go"})))
        bad = [{"role": "user", "content": "go"}, first.message, {"role": "user", "content": "forgot the result"}]
        with pytest.raises(ModelError) as e:
            await collect(model, req(*bad))
        assert e.value.kind == "invalid_request"
    finally:
        model.close()


async def test_record_to_writes_a_transcript_that_replays(fake_api, tmp_path):
    fake_api.add(response(tool_use("Read", {"file_path": "a.txt"}, id="toolu_01R")), "The file says hi.")
    path = tmp_path / "session.json"
    model = fake_api.model(record_to=path)
    m1 = final(await collect(model, req()))
    history = [{"role": "user", "content": "hi"}, m1.message,
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01R", "content": "hi"}]}]
    final(await collect(model, req(*history)))
    data = load_transcript(path)
    assert [r["stop_reason"] for r in data["responses"]] == ["tool_use", "end_turn"]
    replay = ReplayModel(path)
    try:
        again = final(await collect(replay, req()))
        assert again.message == m1.message
        assert final(await collect(replay, req(*history))).text == "The file says hi."
    finally:
        replay.close()


def test_resolve_model_picks_replay_or_live(monkeypatch):
    monkeypatch.setenv("JUPYTER_AGENT_REPLAY", str(DEMO_TRANSCRIPT))
    assert resolve_model("claude-opus-4-8").name == "claude-opus-4-8"  # an explicit id wins
    replay = resolve_model()
    assert isinstance(replay, ReplayModel)
    replay.close()
    monkeypatch.delenv("JUPYTER_AGENT_REPLAY")
    monkeypatch.setenv("JUPYTER_AGENT_MODEL", "claude-opus-4-8")
    live = resolve_model()
    assert isinstance(live, AnthropicModel) and live.name == "claude-opus-4-8"


def test_demo_transcript_is_valid_and_self_consistent():
    data = load_transcript(copy.deepcopy(json.loads(DEMO_TRANSCRIPT.read_text())))
    uses = [b for r in data["responses"] for b in r["content"] if b["type"] == "tool_use"]
    assert {u["name"] for u in uses} == {"Read", "Edit"}
    assert set(uses[0]["input"]) <= {"file_path", "offset", "limit"}
    assert set(uses[1]["input"]) <= {"file_path", "old_string", "new_string", "replace_all"}
    assert len({u["id"] for u in uses}) == 2
