"""Where a bridge round trip goes, hop by hop, and what the page does for an agent insert (issue 23).

    python benchmarks/bench_bridge_hops.py [--cells 50] [--repeat 15]

Opens a notebook of ``--cells`` cells in JupyterLab in Debian's chromium (and waits until
JupyterLab has built all of them), the page's WebSocket wrapped by an init script that
records the wall-clock time of each frame on the kernel's channels. A task in the page's
kernel then sends, one every 0.3 s, a ``version`` request (the smallest there is), an
insert and a replace through the live backend, and records when each request left (the
comm's send), when its reply settled it (in the kernel's comm handler) and when the
awaiting code went on. Each round trip is split into:

* **kernel -> page**: from the kernel's send to the frame's arrival in the page (ipykernel's
  IOPub thread, jupyter_server's websocket, Chromium's network process);
* **page**: from that arrival to the page's reply leaving (the bridge's own work);
* **page -> kernel**: to the kernel's comm handler (the same way back, then ipykernel's
  shell channel);
* **kernel**: from the handler to the awaiting code going on (ipykernel finishing the message).

Then one insert more, with the page's JavaScript profiled (CDP ``Profiler``, 0.1 ms
samples, for about a second from just before the request): the page's main-thread busy
time, the part spent in this package's extension code, and the part JupyterLab spends
creating the new cell's editor (``createEditor``). Kernel and page clocks are the same
machine's wall clock (``time.time()`` and ``performance.timeOrigin + performance.now()``).

The kernel side wraps the bridge's comm and its ``_settle`` to read the times: a benchmark's
instrument, not something the package does.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from quiet import wait_quiet  # noqa: E402
from tests.jupyter.lab import Lab, run_and_wait, run_cell, write_notebook  # noqa: E402

NAME = "hops.ipynb"
KINDS = ("version", "insert", "replace")

#: The page: the time and size of each frame on the kernel channels' websocket.
RECORD_FRAMES = r"""
(() => {
  const Base = window.WebSocket;
  const now = () => performance.timeOrigin + performance.now();
  window.__frames = [];
  window.WebSocket = class extends Base {
    constructor(...args) {
      super(...args);
      this.__kernel = String(args[0]).includes('/channels');
      if (this.__kernel) this.addEventListener('message', () => window.__frames.push(['in', now()]));
    }
    send(data) {
      if (this.__kernel) window.__frames.push(['out', now()]);
      return super.send(data);
    }
  };
})();
"""

#: The kernel: version, insert and replace in turn, each request's times in hops.json.
KERNEL_DRIVER = r'''
import asyncio, json, time
from pathlib import Path
from jupyter_agent.jupyter.kernel.agent_session import get_bridge
from jupyter_agent.notebook.live_backend import LiveNotebook
_bridge = get_bridge()
_client = get_ipython().kernel.get_parent()["header"]["session"]
_times = []
_settle = _bridge._settle
def _timed_settle(c, data):
    _times.append(("settled", time.time() * 1000))
    return _settle(c, data)
_bridge._settle = _timed_settle
async def _drive(rounds):
    await asyncio.sleep(0.5)
    comm = _bridge.pages[_client].comm
    send = comm.send
    def timed_send(*args, **kwargs):
        _times.append(("sent", time.time() * 1000))
        return send(*args, **kwargs)
    comm.send = timed_send
    doc = LiveNotebook(Path("NAME").resolve(), _bridge, _client)
    version = (await doc.snapshot()).version
    for i in range(rounds * 3):
        kind = ("version", "insert", "replace")[i % 3]
        _times.append(("op", kind))
        if kind == "version":
            await _bridge.request(_client, "version")
        elif kind == "insert":
            done = await doc.insert_cell(3, "code", f"hop_{i} = 1", expected_version=version)
            last, version = done.cell.id, done.version
        else:
            version = (await doc.replace_cell(last, f"hop_{i} = 2", expected_version=version)).version
        _times.append(("resumed", time.time() * 1000))
        version = (await doc.snapshot()).version
        await asyncio.sleep(0.3)
    Path("hops.json").write_text(json.dumps(_times))
    while not Path("profile.go").exists():
        await asyncio.sleep(0.02)
    await doc.insert_cell(3, "code", "hop_profiled = 1", expected_version=version)
    Path("profile.done").write_text("")
_hops_task = asyncio.get_running_loop().create_task(_drive(ROUNDS))
'''


def split(times: list[list[Any]], frames: list[list[Any]]) -> dict[str, list[float]]:
    """Each request's hops, by kind: ``kind: hop`` -> ms."""
    out: dict[str, list[float]] = defaultdict(list)
    request: dict[str, Any] = {}
    for name, value in times:
        request[name] = value
        if name != "resumed":
            continue
        sent, settled, kind = request["sent"], request["settled"], request["op"]
        arrived = next((t for d, t in frames if d == "in" and t >= sent - 2), None)
        left = next((t for d, t in frames if d == "out" and arrived is not None and t >= arrived), None)
        if arrived is not None and left is not None and left <= settled:
            out[f"{kind}: kernel -> page"].append(arrived - sent)
            out[f"{kind}: page"].append(left - arrived)
            out[f"{kind}: page -> kernel"].append(settled - left)
        out[f"{kind}: kernel"].append(value - settled)
        out[f"{kind}: round trip"].append(value - sent)
        request = {}
    return out


def profile_split(profile: dict[str, Any]) -> dict[str, float]:
    """The page's main-thread ms in a CDP profile: busy, in this package's extension, in
    JupyterLab's ``createEditor``."""
    nodes = {n["id"]: n for n in profile["nodes"]}
    parent = {child: n["id"] for n in profile["nodes"] for child in n.get("children", [])}
    figures = {"busy": 0.0, "in jupyter-agent's extension": 0.0, "in JupyterLab's createEditor": 0.0}
    for sample, delta in zip(profile["samples"][1:], profile["timeDeltas"][1:]):
        frame = nodes[sample]["callFrame"]["functionName"]
        if frame in ("(idle)", "(root)"):
            continue
        ms = delta / 1000
        figures["busy"] += ms
        stack, node = [], sample
        while node is not None:
            stack.append(nodes[node]["callFrame"])
            node = parent.get(node)
        if any("/extensions/jupyter-agent/" in f["url"] for f in stack):
            figures["in jupyter-agent's extension"] += ms
        if any(f["functionName"].rsplit(".", 1)[-1] == "createEditor" for f in stack):
            figures["in JupyterLab's createEditor"] += ms
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cells", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    print(f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; load average {os.getloadavg()}; "
          f"{' '.join(sys.argv)}", flush=True)
    lab = Lab(Path(tempfile.mkdtemp(prefix="bench-hops-")))
    try:
        driver = KERNEL_DRIVER.replace("NAME", NAME).replace("ROUNDS", str(args.repeat))
        sources = ["%load_ext jupyter_agent", driver, "1 + 1"]
        write_notebook(lab.root / NAME, sources + [f"# cell {i}\nvalue_{i} = {i}" for i in range(args.cells - 3)])
        context = lab.browser.new_context(viewport={"width": 1200, "height": 1000})
        context.add_init_script(RECORD_FRAMES)
        page = lab.open(NAME, context=context)
        run_and_wait(page, 0)
        wait_quiet(0, window=2.0, most=600)  # JupyterLab has built every cell of the page
        page.evaluate("() => { window.__frames = []; }")
        run_cell(page, 1)
        done = lab.root / "hops.json"
        deadline = time.monotonic() + 60 + args.repeat * 3
        while not done.exists():
            if time.monotonic() > deadline:
                raise SystemExit(f"the kernel's driver did not finish: {lab.log_tail()}")
            time.sleep(0.1)
        figures = split(json.loads(done.read_text()), page.evaluate("() => window.__frames"))
        cdp = page.context.new_cdp_session(page)
        cdp.send("Profiler.enable")
        cdp.send("Profiler.setSamplingInterval", {"interval": 100})
        cdp.send("Profiler.start")
        (lab.root / "profile.go").write_text("")
        while not (lab.root / "profile.done").exists():
            time.sleep(0.01)
        time.sleep(1.0)  # the page builds and draws the new cell after its reply
        page_work = profile_split(cdp.send("Profiler.stop")["profile"])
    finally:
        lab.close()
    print(f"load average after: {os.getloadavg()}")
    print(f"{args.cells} cells; median (min-max) ms of {args.repeat} requests each")
    for key, values in figures.items():
        print(f"  {key:28}{statistics.median(values):7.2f} ({min(values):.1f}-{max(values):.1f})")
    print("one insert, the page's main thread in the second after it (ms):")
    for key, value in page_work.items():
        print(f"  {key:34}{value:7.1f}")


if __name__ == "__main__":
    main()
