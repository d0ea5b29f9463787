"""Loop benchmarks (issue 2): four ratios, each measured in one run against the fake API.

    python benchmarks/bench_loop.py

1. loop overhead per turn at a 50-turn history vs a bare four-step loop (same SDK,
   same server, same responses)                                   target <= 1.10
2. 8 concurrency-safe tools of 200 ms vs one such tool (tool phase) target <= 1.15
3. streaming executor: delay from a tool_use block's content_block_stop reaching us
   to the tool starting                                             target <= 10 ms
   and a turn whose model streams 1 s more after a 1 s tool call,
   streaming executor vs wait-then-run                              target <= 0.60
   (both with a read-only tool: only those start at their block's stop)
3c. a tool that changes something is held while the model may still be writing its
   block: delay from the next block's content_block_start to its start target <= 10 ms
   (and it did not start during the 0.3 s between its block's stop and that start)
4. share of each request's bytes that are a byte-identical prefix of the next
   request (API cache order: tools, system, messages; cache_control left out) target >= 99%
Also: the gap from a response's message_stop to the next request (server side), which
was measured for Claude Code (docs/design.md, "Claude Code, measured": median 33 ms, max 68 ms).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jupyter_agent import ToolResult, ToolStart, query  # noqa: E402
from jupyter_agent.loop.permission_result import PermissionAllow  # noqa: E402
from jupyter_agent.model import AnthropicModel  # noqa: E402
from jupyter_agent.testing import FakeMessagesAPI, pause, response, text, tool_use  # noqa: E402
from jupyter_agent.loop.tool import Tool, ToolCheckPolicy, ToolInput, ToolOutput  # noqa: E402

STARTS: dict[str, float] = {}


class SleepInput(ToolInput):
    seconds: float = 0.0


class Sleep(Tool):
    name = "Sleep"
    description = "Sleep for a number of seconds, then say so."
    Input = SleepInput

    def is_read_only(self, input: Any) -> bool:
        return True

    def is_concurrency_safe(self, input: Any) -> bool:
        return True

    async def call(self, input: SleepInput, context, prepared) -> ToolOutput:
        STARTS[context.tool_use_id] = time.perf_counter()
        await asyncio.sleep(input.seconds)
        return ToolOutput(content=f"slept {input.seconds}")


class Change(Sleep):
    """Like Sleep, but it changes something (not read-only), and it is allowed."""

    name = "Change"

    def is_read_only(self, input: Any) -> bool:
        return False

    def is_concurrency_safe(self, input: Any) -> bool:
        return False

    async def check_permissions(self, input: Any, context, prepared) -> Any:
        return PermissionAllow()


class StampedModel:
    """Delegates to the real model and notes when each tool_use block's stop arrived,
    and when each block started (by index)."""

    def __init__(self, inner: AnthropicModel) -> None:
        self.inner, self.name, self.block_stops, self.block_starts = inner, inner.name, {}, {}

    async def stream(self, request):
        async for event in self.inner.stream(request):
            if getattr(event, "type", None) == "content_block_stop":
                block = event.block or {}
                if block.get("type") == "tool_use":
                    self.block_stops[block["id"]] = time.perf_counter()
            elif getattr(event, "type", None) == "content_block_start":
                self.block_starts.setdefault(event.index, time.perf_counter())
            yield event


def model(api: FakeMessagesAPI) -> AnthropicModel:
    return AnthropicModel("claude-bench", api_key="bench-key", base_url=api.base_url)


def history(turns: int) -> list[dict[str, Any]]:
    """A realistic 50-turn history: a tool call and its (largish) result per turn."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Start the analysis."}]
    for i in range(turns):
        tid = f"toolu_hist_{i:04d}"
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Step {i}: reading the next part."},
            {"type": "tool_use", "id": tid, "name": "Sleep", "input": {"seconds": 0}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tid, "content": f"line {i}\n" * 60}]})
    messages.append({"role": "user", "content": "Go on."})
    return messages


def turn_script(n: int) -> list[Any]:
    return [response(text(f"turn {i}"), tool_use("Sleep", {"seconds": 0})) for i in range(n)] + [
        response(text("done"))]


async def ours_per_turn(n: int, prior: list[dict[str, Any]]) -> float:
    with FakeMessagesAPI(turn_script(n)) as api:
        run = query(prior, model=model(api), tools=[Sleep()], permissions=ToolCheckPolicy(),
                    system_prompt="You are a benchmark.")
        await run.wait()
        return _per_turn(api, n)


async def bare_per_turn(n: int, prior: list[dict[str, Any]]) -> float:
    """The seed's pseudo-code loop: call, look for tool_use, run, append, repeat."""
    import anthropic

    tool = Sleep()
    with FakeMessagesAPI(turn_script(n)) as api:
        import httpx2

        # The same transport policy as AnthropicModel on a loopback URL (a fresh connection
        # per request), so the two loops differ only in the loop.
        http_client = httpx2.AsyncClient(limits=httpx2.Limits(max_keepalive_connections=0))
        client = anthropic.AsyncAnthropic(api_key="bench-key", base_url=api.base_url, max_retries=0,
                                          http_client=http_client)
        messages = list(prior)
        while True:
            async with client.messages.stream(model="claude-bench", max_tokens=8192, messages=messages,
                                              system="You are a benchmark.", tools=[tool.to_api()]) as stream:
                final = await stream.get_final_message()
            content = [b.model_dump(exclude_none=True) for b in final.content]
            uses = [b for b in content if b["type"] == "tool_use"]
            if not uses:
                break
            results = []
            for use in uses:
                out = await tool.call(tool.Input.model_validate(use["input"]), _Ctx(use["id"]), None)
                results.append({"type": "tool_result", "tool_use_id": use["id"], "content": out.content})
            messages = [*messages, {"role": "assistant", "content": content},
                        {"role": "user", "content": results}]
        per_turn = _per_turn(api, n)
        await client.close()
        return per_turn


def _per_turn(api: FakeMessagesAPI, n: int) -> float:
    """Seconds per turn from the run's first request reaching the server to its end (now).

    Both loops are timed from the same point: what each does before its first request
    (building its HTTP client, whose TLS context alone is 18-60 ms) is a per-run cost, not a
    per-turn one, and it used to be inside our loop's time only (the bare loop built its
    client before its clock started), ~4 ms per turn of an 11-turn run.
    """
    return (time.monotonic() - api.requests[0].received_at) / (n + 1)


class _Ctx:
    def __init__(self, tool_use_id: str) -> None:
        self.tool_use_id = tool_use_id


async def bench_overhead() -> tuple[float, float, float]:
    prior = history(50)
    ours, bare = [], []
    await ours_per_turn(3, prior)  # warm up imports and connections
    await bare_per_turn(3, prior)
    for _ in range(5):  # interleaved, so machine noise hits both alike
        bare.append(await bare_per_turn(10, prior))
        ours.append(await ours_per_turn(10, prior))
    o, b = statistics.median(ours), statistics.median(bare)
    return o * 1000, b * 1000, o / b


async def tool_phase(n_tools: int) -> float:
    calls = [tool_use("Sleep", {"seconds": 0.2}) for _ in range(n_tools)]
    with FakeMessagesAPI([response(*calls)]) as api:
        run = query("go", model=model(api), tools=[Sleep()], permissions=ToolCheckPolicy(), max_turns=1)
        first = last = None
        async for event in run:
            if isinstance(event, ToolStart) and first is None:
                first = time.perf_counter()
            if isinstance(event, ToolResult):
                last = time.perf_counter()
        return last - first


async def bench_parallel() -> tuple[float, float, float]:
    one = statistics.median([await tool_phase(1) for _ in range(3)])
    eight = statistics.median([await tool_phase(8) for _ in range(3)])
    return one * 1000, eight * 1000, eight / one


async def streaming_turn(streaming: bool) -> tuple[float, list[float]]:
    """A 1 s tool call, after which the model streams for 1 s more."""
    call = tool_use("Sleep", {"seconds": 1.0})
    # the model goes on streaming for 1 s after the tool_use block is complete
    script = [response(call, pause(1.0), text("And that is the plan."))]
    with FakeMessagesAPI(script) as api:
        stamped = StampedModel(model(api))
        run = query("go", model=stamped, tools=[Sleep()], permissions=ToolCheckPolicy(),
                    streaming_tools=streaming, max_turns=1)
        start = time.perf_counter()
        await run.wait()
        elapsed = time.perf_counter() - start
        delays = [(STARTS[i] - t) * 1000 for i, t in stamped.block_stops.items() if i in STARTS]
        return elapsed, delays


async def bench_streaming() -> tuple[float, float, float, float]:
    with_exec, delays = await streaming_turn(True)
    without, _ = await streaming_turn(False)
    return max(delays), with_exec, without, with_exec / without


async def bench_held_write() -> tuple[float, float]:
    """A Change call, then 0.3 s later the next block: (ms from that block's start to the
    call's start, s from the call's own block stop to its start)."""
    call = tool_use("Change", {"seconds": 0.0})
    script = [response(call, pause(0.3), text("Done."))]
    with FakeMessagesAPI(script) as api:
        stamped = StampedModel(model(api))
        run = query("go", model=stamped, tools=[Change()], permissions=ToolCheckPolicy(), max_turns=1)
        await run.wait()
    started = STARTS[call["id"]]
    return (started - stamped.block_starts[1]) * 1000, started - stamped.block_stops[call["id"]]


def cache_order_bytes(body: dict[str, Any]) -> str:
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "cache_control"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return json.dumps([strip(body.get("tools")), strip(body.get("system")), strip(body.get("messages"))],
                      ensure_ascii=False, separators=(",", ":"))


async def bench_prefix() -> tuple[float, float, list[float]]:
    with FakeMessagesAPI(turn_script(8)) as api:
        run = query("Start.", model=model(api), tools=[Sleep()], permissions=ToolCheckPolicy())
        await run.wait()
        requests = list(api.requests)
    shares = []
    for a, b in zip(requests, requests[1:]):
        x, y = cache_order_bytes(a.body), cache_order_bytes(b.body)
        common = next((i for i, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
        shares.append(common / len(x))
    gaps = [(b.received_at - a.message_stop_at) * 1000 for a, b in zip(requests, requests[1:])
            if a.message_stop_at is not None]
    return min(shares), statistics.median(gaps), gaps


async def main() -> int:
    print(f"jupyter-agent loop benchmark  {time.strftime('%Y-%m-%d')}  python {sys.version.split()[0]}")
    ours, bare, ratio1 = await bench_overhead()
    print(f"1. per-turn time at a 50-turn history: ours {ours:.2f} ms, bare loop {bare:.2f} ms, "
          f"ratio {ratio1:.3f} (target <= 1.10) {'OK' if ratio1 <= 1.10 else 'MISSED'}")
    one, eight, ratio2 = await bench_parallel()
    print(f"2. tool phase: 1 x 200 ms tool {one:.0f} ms, 8 x 200 ms safe tools {eight:.0f} ms, "
          f"ratio {ratio2:.3f} (target <= 1.15) {'OK' if ratio2 <= 1.15 else 'MISSED'}")
    delay, with_exec, without, ratio3 = await bench_streaming()
    print(f"3a. tool start after its content_block_stop: {delay:.2f} ms (target <= 10 ms) "
          f"{'OK' if delay <= 10 else 'MISSED'}")
    print(f"3b. 1 s tool + 1 s more streaming: streaming executor {with_exec:.2f} s, wait-then-run "
          f"{without:.2f} s, ratio {ratio3:.3f} (target <= 0.60) {'OK' if ratio3 <= 0.60 else 'MISSED'}")
    held_delay, held_for = await bench_held_write()
    held_ok = held_delay <= 10 and held_for >= 0.25
    print(f"3c. a tool that changes something: start {held_delay:.2f} ms after the next block's start "
          f"(target <= 10 ms), held {held_for:.2f} s after its own block's stop (pause 0.3 s) "
          f"{'OK' if held_ok else 'MISSED'}")
    share, gap, gaps = await bench_prefix()
    print(f"4. shared byte prefix with the next request: min {share * 100:.2f}% (target >= 99%) "
          f"{'OK' if share >= 0.99 else 'MISSED'}")
    print(f"   message_stop -> next request (server side): median {gap:.1f} ms, max {max(gaps):.1f} ms "
          "(Claude Code CLI 2.1.332, docs/design.md: median 33 ms, max 68 ms)")
    ok = ratio1 <= 1.10 and ratio2 <= 1.15 and delay <= 10 and ratio3 <= 0.60 and held_ok and share >= 0.99
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
