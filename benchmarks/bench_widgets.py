"""Widget messages per streamed token, and the cost of ``%load_ext jupyter_agent``.

    python benchmarks/bench_widgets.py

1. In process: a :class:`RunView` fed a text stream at a fixed token rate (20 to
   20,000 tokens/s); every comm message the widgets send is counted. Target: at most
   one update per 50 ms of streaming, whatever the rate (docs/design.md, "Streaming updates").
2. In a real kernel: ``%%agent`` against the fake Messages API streaming fast; the
   comm messages the kernel sends on iopub while the text streams are counted.
3. ``%load_ext jupyter_agent`` in fresh kernels (target <= 100 ms).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import comm  # noqa: E402
from comm.base_comm import BaseComm  # noqa: E402

from jupyter_agent.view.runmodel import RunModel  # noqa: E402
from tests.jupyter.helpers import stream_response  # noqa: E402

FRAME_S = 0.05


class CountingComm(BaseComm):
    sent: list[float] = []

    def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
        CountingComm.sent.append(time.monotonic())


async def in_process(rate: float, seconds: float = 1.0) -> dict:
    """Stream ``rate`` tokens/s for about ``seconds`` into a RunView; count messages."""
    from jupyter_agent.jupyter.widgets.runview import RunView

    model = RunModel(prompt="bench", model="bench")
    view = RunView(model)  # the default frame interval
    tokens = max(10, int(rate * seconds))
    events = stream_response([{"type": "text", "text": "tok " * tokens}], chunk=4)  # 1 token per delta
    CountingComm.sent = []
    loop = asyncio.get_running_loop()
    start = loop.time()
    fed = 0
    for event in events:
        model.handle(event)
        if getattr(event, "type", "") == "content_block_delta":
            fed += 1
            due = start + fed / rate
            if due > loop.time():
                await asyncio.sleep(due - loop.time())
            elif fed % 50 == 0:
                await asyncio.sleep(0)  # let frames run even when we are behind
    streaming = loop.time() - start
    messages = len(CountingComm.sent)
    # the worst 50 ms window
    times = CountingComm.sent
    worst = max((sum(1 for u in times if t <= u < t + FRAME_S) for t in times), default=0)
    view.finish()
    view.close()
    return {"rate": rate, "tokens": fed, "seconds": streaming, "messages": messages,
            "per_token": messages / fed, "per_50ms": messages / (streaming / FRAME_S), "worst_50ms": worst}


async def in_kernel() -> dict:
    """``%%agent`` in a real kernel, the fake API streaming ~2,000 deltas fast."""
    from jupyter_agent.testing import FakeMessagesAPI, response, text
    from tests.jupyter.frontend import Frontend, isolated_env

    tmp = Path(tempfile.mkdtemp())
    body = "word " * 6000  # 30,000 chars in 24-char deltas: 1,250 deltas
    with FakeMessagesAPI([response(text(body), delay_s=0.001)]) as api:
        frontend = await Frontend(tmp, isolated_env(tmp, **api.env())).start()
        try:
            await frontend.execute("%load_ext jupyter_agent")
            first = len(frontend.messages)
            result = await frontend.execute("%%agent\nStream a lot")
            display = next(o for o in result["outputs"] if o["msg_type"] == "display_data")
            display_id = display["transient"]["display_id"]
            await frontend.until(lambda: frontend.display_updates(display_id), 60, "the end")
            msgs = frontend.messages[first:]
            comm_times = [m["header"]["date"].timestamp() for m in msgs if m["msg_type"] in ("comm_msg", "comm_open")]
            deltas = (len(body) + 23) // 24
        finally:
            await frontend.stop()
    span = max(comm_times) - min(comm_times)
    return {"deltas": deltas, "seconds": span, "messages": len(comm_times),
            "per_token": len(comm_times) / deltas, "per_50ms": len(comm_times) / (span / FRAME_S)}


async def load_ext_ms(kernels: int = 3) -> list[float]:
    from tests.jupyter.frontend import Frontend, isolated_env

    out = []
    for _ in range(kernels):
        tmp = Path(tempfile.mkdtemp())
        frontend = await Frontend(tmp, isolated_env(tmp)).start()
        try:
            await frontend.execute("import time\n_t = time.perf_counter()\n"
                                   "get_ipython().run_line_magic('load_ext', 'jupyter_agent')\n"
                                   "_ms = (time.perf_counter() - _t) * 1000")
            out.append(float(await frontend.value("_ms")))
        finally:
            await frontend.stop()
    return out


async def main() -> None:
    comm.create_comm = lambda *a, **k: CountingComm(*a, **k)
    print("1. in process: RunView fed a text stream (1 token per delta), default frame interval")
    print(f"{'tokens/s':>9} {'tokens':>7} {'stream s':>9} {'messages':>9} {'msg/token':>10} "
          f"{'msg/50ms':>9} {'worst 50ms':>10}")
    for rate in (20, 100, 1000, 5000, 20000):
        r = await in_process(rate, seconds=2.0)
        print(f"{r['rate']:>9,.0f} {r['tokens']:>7,} {r['seconds']:>9.2f} {r['messages']:>9} "
              f"{r['per_token']:>10.4f} {r['per_50ms']:>9.2f} {r['worst_50ms']:>10}")
    print("   target: msg/50ms <= 1.00")
    print()
    print("2. real kernel: %%agent, fake API streaming 1,250 text deltas (24 chars each)")
    k = await in_kernel()
    print(f"   {k['deltas']:,} deltas over {k['seconds']:.2f} s -> {k['messages']} widget messages "
          f"(comm_open + comm_msg, whole run): {k['per_token']:.4f} per delta, {k['per_50ms']:.2f} per 50 ms")
    print()
    ms = await load_ext_ms()
    print(f"3. %load_ext jupyter_agent in a fresh kernel: median {statistics.median(ms):.1f} ms "
          f"(runs: {', '.join(f'{m:.1f}' for m in ms)}); target <= 100 ms")


if __name__ == "__main__":
    asyncio.run(main())
