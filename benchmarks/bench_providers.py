"""What each provider's stream costs the client (issue 30), in one run.

    python benchmarks/bench_providers.py [--events 4000] [--repeat 7]

Streams one long answer (``--events`` text deltas) from the project's fake Messages API
through ``AnthropicModel`` and the SDK's own client for each provider: the Anthropic API
(Server-Sent Events), Bedrock (AWS event-stream frames decoded by botocore, each payload
base64 JSON), Vertex and Foundry (SSE, other paths and auth). Prints the median wall time
per response and per event, and each provider's ratio to the Anthropic API's time measured
in the same run. Target: Bedrock's decoding <= 2x the SSE path's time per response (a
stream is read as the model writes it, so what matters is that the client never falls
behind: the per-event time is printed against the 5-20 ms between events of a real stream).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jupyter_agent.loop.model_protocol import ModelRequest  # noqa: E402
from jupyter_agent.testing import FakeMessagesAPI, response, text  # noqa: E402

PROVIDERS = ("anthropic", "bedrock", "vertex", "foundry")


async def one(api: FakeMessagesAPI, provider: str, events: int) -> float:
    os.environ.update(api.env(provider))
    model = api.model("claude-sonnet-4-5", provider=provider)
    request = ModelRequest(messages=[{"role": "user", "content": "go"}], system=[{"type": "text", "text": "s"}],
                           tools=[])
    api.add(response(text("x" * events), chunk_chars=1))
    t = time.perf_counter()
    n = 0
    async for _ in model.stream(request):
        n += 1
    elapsed = time.perf_counter() - t
    await model.aclose()
    assert n >= events, (provider, n)
    return elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    times: dict[str, list[float]] = {p: [] for p in PROVIDERS}
    async with FakeMessagesAPI() as api:
        for provider in PROVIDERS:  # warm-up: imports, the first client
            await one(api, provider, 50)
        for _ in range(args.repeat):  # interleaved, so load on the machine hits every provider alike
            for provider in PROVIDERS:
                times[provider].append(await one(api, provider, args.events))
    base = statistics.median(times["anthropic"])
    print(f"{args.events} text deltas per response, median of {args.repeat} (interleaved)")
    for provider in PROVIDERS:
        med = statistics.median(times[provider])
        print(f"  {provider:<9} {med * 1000:8.1f} ms/response  {med / args.events * 1e6:6.1f} us/event  "
              f"ratio to anthropic {med / base:.2f}")
    ratio = statistics.median(times["bedrock"]) / base
    print(f"Bedrock's event-stream vs SSE: {ratio:.2f} (target <= 2.0): {'met' if ratio <= 2.0 else 'MISSED'}")


if __name__ == "__main__":
    asyncio.run(main())
