"""Compaction figures (issue 18), against the fake API with its prompt-cache emulation.

    python benchmarks/bench_compaction.py [--window 30000] [--pages 24] [--density 1.0]

A session reads ``--pages`` pages of about 5,000 tokens each, one per turn, in a window
the fake API enforces (``prompt is too long`` past it), counting ``--density`` of its tokens
where the agent estimates one (1.4: a tokenizer denser than four characters a token). Reported:

- every compaction: its kind and trigger, the prompt's size before and after;
- the requests: how many, how many were summary requests, how many the API refused;
- the cache-read share (cache read / whole prompt, as ``usage`` reports it) of the
  requests before the first summary, of the summary requests (they reuse the
  conversation's cached prefix: same tools, same system prompt, same history start),
  and of the requests after a summary (the new prefix is stable again);
- the gap from a response's ``message_stop`` to the next request (server side), and the
  loop's own cost of knowing the prompt's size per turn (what compaction adds to a turn
  without one).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jupyter_agent import AssistantMessage, Compaction, query  # noqa: E402
from jupyter_agent.loop.compaction import SUMMARY_REQUEST_MARKER  # noqa: E402
from jupyter_agent.loop.context_window import PromptSize  # noqa: E402
from jupyter_agent.loop.usage import Usage  # noqa: E402
from jupyter_agent.loop.tool import Tool, ToolCheckPolicy, ToolInput, ToolOutput  # noqa: E402
from jupyter_agent.model import AnthropicModel  # noqa: E402
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use  # noqa: E402


class PageInput(ToolInput):
    n: int


class Page(Tool):
    name = "Page"
    description = "Return page n of the report."
    Input = PageInput

    def is_read_only(self, input: Any) -> bool:
        return True

    async def call(self, input: PageInput, context: Any, prepared: Any) -> ToolOutput:
        return ToolOutput(content=f"page {input.n}\n" + f"figures of page {input.n}: 1 2 3 " * 700)


class Recorder:
    """The real model, noting every response's usage and whether it was a summary."""

    def __init__(self, inner: AnthropicModel) -> None:
        self.inner, self.name = inner, inner.name
        self.responses: list[tuple[bool, Any]] = []

    async def stream(self, request: Any) -> Any:
        summary = SUMMARY_REQUEST_MARKER in json.dumps(request.messages[-1])
        async for event in self.inner.stream(request):
            if isinstance(event, AssistantMessage):
                self.responses.append((summary, event.usage))
            yield event


def script(pages: int) -> list[Any]:
    queue = [response(tool_use("Page", {"n": n})) for n in range(pages)] + [response(text("Done."))]

    def answer(body: dict) -> Any:
        if SUMMARY_REQUEST_MARKER in json.dumps(body["messages"][-1]):
            return response(text("Summary: pages read so far hold figures only. Next: the next page."))
        return queue.pop(0)

    return [answer] * (3 * pages + 2)


def share(usages: list[Any]) -> str:
    read = sum(u.cache_read_input_tokens for u in usages)
    whole = sum(u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens for u in usages)
    return f"{100 * read / whole:5.1f} % of {whole:,} tokens ({len(usages)} requests)" if whole else "-"


async def session(window: int | None, pages: int,
                  density: float = 1.0) -> tuple[Recorder, list[Compaction], float, FakeMessagesAPI]:
    with FakeMessagesAPI(script(pages), strict=False, context_window=window, token_density=density) as api:
        model = Recorder(AnthropicModel("claude-bench", api_key="bench-key", base_url=api.base_url))
        run = query("Read every page, then tell me the total.", model=model, tools=[Page()],
                    permissions=ToolCheckPolicy(), context_window=window or 10_000_000,
                    system_prompt="You are a benchmark.")
        compactions = []
        async for event in run:
            if isinstance(event, Compaction):
                compactions.append(event)
        await model.inner.aclose()
    gaps = [(b.received_at - a.message_stop_at) * 1000 for a, b in zip(api.requests, api.requests[1:])
            if a.message_stop_at is not None and b.received_at is not None]
    return model, compactions, statistics.median(gaps) if gaps else 0.0, api


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=30_000)
    parser.add_argument("--pages", type=int, default=24)
    parser.add_argument("--density", type=float, default=1.0)
    args = parser.parse_args()

    model, compactions, gap, api = await session(args.window, args.pages, args.density)
    refused = sum(r.outcome == "prompt_too_long" for r in api.requests)
    print(f"window {args.window:,} tokens, {args.pages} pages of about 5,000 tokens each, density {args.density}")
    for c in compactions:
        print(f"  {c.kind.value:12} {c.trigger.value:8} {c.outcome.value:10} "
              f"{c.tokens_before:7,} -> {c.tokens_after:7,} tokens")
    summaries = [c for c in compactions if c.kind.value == "summary"]
    print(f"requests: {len(model.responses)} ({sum(s for s, _ in model.responses)} summary requests), "
          f"refused by the API: {refused}")
    first = next((i for i, (s, _) in enumerate(model.responses) if s), len(model.responses))
    before = [u for s, u in model.responses[:first]]
    during = [u for s, u in model.responses if s]
    after = [u for s, u in model.responses[first:] if not s]
    print(f"cache-read share before the first summary: {share(before)}")
    print(f"cache-read share of the summary requests:   {share(during)}")
    print(f"cache-read share after a summary:           {share(after)}")
    if summaries:
        print(f"median prompt after a summary: {statistics.median(c.tokens_after for c in summaries):,.0f} tokens "
              f"(before: {statistics.median(c.tokens_before for c in summaries):,.0f})")
    print(f"message_stop -> next request, server side: median {gap:.1f} ms")
    _, _, plain_gap, _ = await session(None, min(args.pages, 8))
    print(f"  (without a window, 8 pages: median {plain_gap:.1f} ms)")
    per_turn, first = size_cost()
    print(f"the loop's own cost of knowing the prompt's size, at a 50-turn history: {per_turn:.0f} µs a turn "
          f"(the last usage plus the new messages); {first:.0f} µs for a run's first request (all estimated)")


def size_cost(turns: int = 50, repeat: int = 500) -> tuple[float, float]:
    """Microseconds per estimate: the usual one (after a response) and the first of a run."""
    history: list[dict[str, Any]] = [{"role": "user", "content": "Start."}]
    for i in range(turns):
        history += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "Page",
                                                       "input": {"n": i}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}",
                                                  "content": f"line {i}\n" * 60}]}]
    first = PromptSize(500)
    start = time.perf_counter()
    for _ in range(repeat):
        first.estimate(history)
    whole = (time.perf_counter() - start) / repeat
    usual = PromptSize(500)
    usual.observe(history[:-2], Usage(input_tokens=20_000))
    start = time.perf_counter()
    for _ in range(repeat):
        usual.estimate(history)
    return (time.perf_counter() - start) / repeat * 1e6, whole * 1e6


if __name__ == "__main__":
    asyncio.run(main())
