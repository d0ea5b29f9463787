"""The invariant that matters most, under random scripts and random faults:
every ``tool_use`` gets exactly one ``tool_result`` with its id, and the API never
sees an orphan, whatever happens (tool errors, denials, model errors, cut streams,
Stop at any event, a compaction of the history at any turn)."""

from __future__ import annotations

import asyncio
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_agent import PermissionAllow, PermissionDeny, Terminal
from jupyter_agent.loop.tool import ToolCheckPolicy
from jupyter_agent.testing import (
    FakeMessagesAPI, cut_stream, http_error, prompt_too_long, response, stream_error, text, tool_use,
)

from .conftest import Boom, Change, Echo, Sleep, model_for

CALLS = st.sampled_from([
    ("Echo", {"text": "hi"}),
    ("Echo", {"wrong": 1}),
    ("Sleep", {"seconds": 0.01}),
    ("Sleep", {"seconds": 0.3}),
    ("Change", {"seconds": 0.01}),
    ("Boom", {"text": "surprise"}),
    ("Missing", {}),
])
FAULTS = st.sampled_from(["none", "http_500", "stream_error", "cut"])


@st.composite
def scenarios(draw):
    turns = draw(st.lists(st.lists(CALLS, max_size=4), min_size=1, max_size=3))
    fault_at = draw(st.integers(min_value=0, max_value=len(turns)))
    fault = draw(FAULTS)
    stop_after = draw(st.one_of(st.none(), st.integers(min_value=0, max_value=60)))
    deny = draw(st.sampled_from(["allow", "deny", "deny_interrupt"]))
    streaming = draw(st.booleans())
    # where the stream breaks (in events), and whether the model layer retries: a retry
    # after a call that changes something (Change) keeps the partial response instead
    fault_after = draw(st.integers(min_value=1, max_value=40))
    retries = draw(st.sampled_from([0, 1]))
    # the API says "prompt is too long" before this turn's response: the loop compacts
    # the history (one summary request) and sends the request again
    too_long_at = draw(st.one_of(st.none(), st.integers(min_value=0, max_value=len(turns))))
    return turns, fault_at, fault, stop_after, deny, streaming, fault_after, retries, too_long_at


def build_script(turns, fault_at, fault, fault_after=4, too_long_at=None):
    script = []
    for i, calls in enumerate(turns + [[]]):
        if i == too_long_at:
            script += [prompt_too_long(), response(text("Summary of the work so far."))]
        blocks = [text(f"turn {i}")] + [tool_use(name, dict(inp)) for name, inp in calls]
        item = response(*blocks)
        if i == fault_at and fault == "http_500":
            item = http_error(500)
        elif i == fault_at and fault == "stream_error":
            item = stream_error(after=fault_after, base=item, error_type="api_error", message="boom")
        elif i == fault_at and fault == "cut":
            item = cut_stream(after=fault_after, base=item)
        script.append(item)
    return script


async def play(turns, fault_at, fault, stop_after, deny, streaming, fault_after=4, retries=0, too_long_at=None):
    from jupyter_agent import query

    def can_use_tool(name, input, ask):
        if deny == "allow":
            return PermissionAllow()
        return PermissionDeny("no", interrupt=deny == "deny_interrupt")

    with FakeMessagesAPI(build_script(turns, fault_at, fault, fault_after, too_long_at), strict=False) as api:
        run = query("go", model=model_for(api, max_retries=retries),
                    tools=[Echo(), Sleep(), Change(), Boom()], permissions=ToolCheckPolicy(),
                    can_use_tool=can_use_tool, streaming_tools=streaming)
        count = 0
        last = None
        async for event in run:
            last = event
            count += 1
            if stop_after is not None and count == stop_after:
                run.stop()
        assert isinstance(last, Terminal) and run.terminal is last
        rejections = list(api.rejections)
    await asyncio.sleep(0.05)  # let closed HTTP streams finish their own clean-up
    leftover = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]
    return run, rejections, leftover


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_every_tool_use_gets_exactly_one_result(scenario):
    run, rejections, leftover = asyncio.run(play(*scenario))
    assert rejections == []  # the fake API answers 400 to an orphan, as the real one does
    assert leftover == []  # no tool task outlives the run
    messages = run.state.messages
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        uses = [b["id"] for b in message["content"] if b.get("type") == "tool_use"]
        if not uses:
            continue
        following = messages[i + 1]
        results = Counter(b["tool_use_id"] for b in following["content"] if b.get("type") == "tool_result")
        assert set(results) == set(uses) and all(n == 1 for n in results.values())
