"""Where an outside agent's edit goes, hop by hop, and the least those hops cost (issue 29).

    python benchmarks/bench_mcp_hops.py [--repeat 30]

``bench_mcp_server.py`` times whole calls, ours against jupyter-mcp-server's. This command
splits ours: one JupyterLab page showing a notebook of 50 cells (the size where ours is
slower for the caller), jupyter-mcp-server's server beside it in the same browser, and per
repetition, on both, the same calls as one JSON-RPC ``tools/call`` over kept-alive HTTP:
``list_notebooks`` (the endpoint alone), ours' ``list_variables`` (the endpoint and one
round trip to the kernel, no page), then ``replace_cell`` and ``insert_cell``.

Each of our edits is split by timestamps taken in three processes (one machine's wall
clock): the Jupyter server (the endpoint, our backend's call, the kernel's answer as the
server reads it, and the page's websocket frames as the server passes them on), the kernel
(the call's handler, the request to the page and its reply, the answer) and this caller:

* **endpoint in / out**: HTTP and the MCP SDK, to our backend's call and back;
* **server -> kernel** and **kernel -> server**: ipykernel's shell and IOPub channels;
* **kernel, before / after the page**: the call's own work (permissions, the stale check,
  the plan, the change record, the answer);
* **kernel -> page -> kernel**: the bridge request, as ipykernel's IOPub, the server's
  websocket, the page applying the edit and its reply back the same way take it.

The **floor** adds what an edit through the page with its decisions in the kernel cannot
avoid, measured in this run with no work of ours in it: the endpoint (``list_notebooks``),
a kernel round trip (``list_variables`` less the kernel's work), and the kernel -> page ->
kernel round trip of the edit (the page's apply included). jupyter-mcp-server changes a
document in the server's own process and answers before the page has it: no kernel or page
hop is on its caller's path.

The instruments are this benchmark's (a server config file that wraps functions, a cell
that wraps functions in the kernel), not something the package does. A command, never a
test: its figures go to BENCHMARKS.md with the command and the date.
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_mcp_server import Ours, _inserted  # noqa: E402
from bench_vs_mcp_server import Theirs, cache_dir, mcp_environment  # noqa: E402
from quiet import wait_quiet  # noqa: E402

CELLS = 50

#: The Jupyter server: times of the endpoint, our backend and the page's frames (written at exit).
SERVER_INSTRUMENT = r'''
import atexit, json, time
from jupyter_agent.mcp_server import http as _http, kernel_link as _link
from jupyter_server.services.kernels.connection import channels as _channels
_T = []
atexit.register(lambda: open(OUT, "w").write(json.dumps(_T)))
_handle = _http.McpApp.handle
async def handle(self, scope, receive, send):
    _T.append(("http in", time.time()))
    async def timed_send(message):
        if message.get("type") == "http.response.body" and message.get("body"):
            _T.append(("body", time.time()))
        await send(message)
    await _handle(self, scope, receive, timed_send)
_http.McpApp.handle = handle
_call = _link.ServerBackend.call
async def call(self, *args, **kwargs):
    _T.append(("backend", time.time()))
    try:
        return await _call(self, *args, **kwargs)
    finally:
        _T.append(("backend out", time.time()))
_link.ServerBackend.call = call
_dispatch = _link.KernelComms._dispatch
def dispatch(self, kind, content):
    if kind == "comm_msg" and content.get("comm_id") in self.waiting:
        _T.append(("answer read", time.time()))
    return _dispatch(self, kind, content)
_link.KernelComms._dispatch = dispatch
_in = _channels.ZMQChannelsWebsocketConnection.handle_incoming_message
def incoming(self, message):
    _T.append(("page frame in", time.time()))
    _in(self, message)
    _T.append(("page frame to kernel", time.time()))
_channels.ZMQChannelsWebsocketConnection.handle_incoming_message = incoming
_out = _channels.ZMQChannelsWebsocketConnection.handle_outgoing_message
def outgoing(self, stream, message):
    _T.append(("page frame out", time.time()))
    _out(self, stream, message)
_channels.ZMQChannelsWebsocketConnection.handle_outgoing_message = outgoing
'''

#: The kernel: times of each outside call's handler, its request to the page, and its answer.
KERNEL_INSTRUMENT = r'''
import asyncio, json, time
from jupyter_agent.jupyter.outside import outside_hub as _outside
from jupyter_agent.notebook import live_backend as _live
_hop_times = []
_serve = _outside.OutsideHub._serve
async def _timed_serve(self, comm, data):
    _hop_times.append(("kernel in", time.time()))
    send = comm.send
    def timed_send(*args, **kwargs):
        if args and isinstance(args[0], dict) and "ok" in args[0]:
            _hop_times.append(("answer", time.time()))
        return send(*args, **kwargs)
    comm.send = timed_send
    await _serve(self, comm, data)
_outside.OutsideHub._serve = _timed_serve
_ask = _live.LiveNotebook._ask
async def _timed_ask(self, op, **arguments):
    _hop_times.append(("page ask", time.time()))
    try:
        return await _ask(self, op, **arguments)
    finally:
        _hop_times.append(("page reply", time.time()))
_live.LiveNotebook._ask = _timed_ask
from jupyter_agent.jupyter.bridge import self_client as _self_run
_execute = _self_run.SelfClient.execute
async def _timed_execute(self, *args, **kwargs):
    _hop_times.append(("execute", time.time()))
    try:
        return await _execute(self, *args, **kwargs)
    finally:
        _hop_times.append(("executed", time.time()))
_self_run.SelfClient.execute = _timed_execute
'''

PHASES = ("endpoint in", "server -> kernel", "kernel, before the page", "kernel -> page -> kernel",
          "  kernel -> server (IOPub)", "  server -> page -> server (the page applies)",
          "  server -> kernel (shell)", "kernel, after the page", "kernel, before the run",
          "the run (its execute request to its idle)", "kernel, after the run", "kernel -> server", "endpoint out",
          "whole call")


def _first(events: list[tuple[float, str]], name: str, after: float = 0.0) -> float | None:
    return next((t for t, n in events if n == name and t >= after), None)


def phases(t0: float, t1: float, events: list[tuple[float, str]]) -> dict[str, float] | None:
    """One call's phases in ms (None: a timestamp is missing, e.g. a frame of something else)."""
    got = {name: _first(events, name) for name in ("backend", "kernel in", "answer", "answer read", "backend out")}
    if any(v is None for v in got.values()):
        return None
    out = {"endpoint in": got["backend"] - t0, "server -> kernel": got["kernel in"] - got["backend"],  # type: ignore[operator]
           "kernel -> server": got["answer read"] - got["answer"],  # type: ignore[operator]
           "endpoint out": t1 - got["answer read"], "whole call": t1 - t0}  # type: ignore[operator]
    ask, reply = _first(events, "page ask"), _first(events, "page reply")
    execute, executed = _first(events, "execute"), _first(events, "executed")
    if execute is not None and executed is not None:
        out["kernel, before the run"] = execute - got["kernel in"]  # type: ignore[operator]
        out["the run (its execute request to its idle)"] = executed - execute
        out["kernel, after the run"] = got["answer"] - executed  # type: ignore[operator]
    elif ask is None or reply is None:
        out["kernel, before the page"] = got["answer"] - got["kernel in"]  # type: ignore[operator]
    else:
        out["kernel, before the page"] = ask - got["kernel in"]  # type: ignore[operator]
        out["kernel -> page -> kernel"] = reply - ask
        out["kernel, after the page"] = got["answer"] - reply  # type: ignore[operator]
        sent = _first(events, "page frame out", ask)
        back = _first(events, "page frame in", sent or ask)
        passed = _first(events, "page frame to kernel", back or ask)
        if sent is not None and back is not None and passed is not None and passed <= reply:
            out["  kernel -> server (IOPub)"] = sent - ask
            out["  server -> page -> server (the page applies)"] = back - sent
            out["  server -> kernel (shell)"] = reply - passed
    return {k: v * 1000 for k, v in out.items()}


def measure(repeat: int, settle: float) -> tuple[dict[str, dict[str, list[float]]], dict[str, list[float]]]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-mcp-hops-"))
    server_times = tmp / "server-times.json"
    (tmp / "ours" / "cfg").mkdir(parents=True)
    (tmp / "ours" / "cfg" / "jupyter_server_config.py").write_text(
        f"OUT = {str(server_times)!r}\n" + SERVER_INSTRUMENT)
    ours = Ours(tmp / "ours", CELLS)
    theirs = None
    calls: dict[str, list[tuple[float, float]]] = {}
    their_ms: dict[str, list[float]] = {}
    try:
        theirs = Theirs(tmp / "theirs", CELLS, mcp_environment(cache_dir(None)), ours.lab.browser)
        wait_quiet(0, window=2.0, most=600)
        kernel_times = tmp / "ours" / "root" / "kernel-times.json"
        ours.last = _inserted(ours.call("insert_cell", after_cell_id="c2", cell_type="code", source=KERNEL_INSTRUMENT))
        ours.call("run_cell", cell_id=ours.last)
        ours.read_all(CELLS)
        ours.last = _inserted(ours.call("insert_cell", after_cell_id="c2", cell_type="code", source="hop = 0"))
        ours.call("read_cells", start=0, limit=1)
        mine = {
            "list_notebooks": lambda i: ours.rpc("tools/call", {"name": "list_notebooks", "arguments": {}}),
            "list_variables": lambda i: ours.call("list_variables"),
            "replace": lambda i: ours.call("replace_cell", cell_id=ours.last, source=f"hop_{i} = 2"),
            "insert": lambda i: setattr(ours, "fresh", _inserted(ours.call(
                "insert_cell", after_cell_id="c2", cell_type="code", source=f"1 + 1  # hop_{i}"))),
            "run": lambda i: ours.call("run_cell", cell_id=ours.fresh),
        }
        assert theirs is not None
        yours = {
            "list_notebooks": lambda i: theirs.call("list_notebooks"),
            "replace": lambda i: theirs.call("overwrite_cell_source", cell_index=3, cell_source=f"hop_{i} = 2"),
            "insert": lambda i: theirs.call("insert_cell", cell_index=3, cell_type="code", cell_source=f"hop_{i} = 1"),
        }
        for rep in range(repeat + 1):  # the first round warms both up and is not counted
            for op in mine:
                t0 = time.time()
                mine[op](rep)
                t1 = time.time()
                if rep:
                    calls.setdefault(op, []).append((t0, t1))
                time.sleep(settle)
                if op in yours:
                    started = time.perf_counter()
                    yours[op](rep)
                    if rep:
                        their_ms.setdefault(op, []).append((time.perf_counter() - started) * 1000)
                    time.sleep(settle)
        dump = _inserted(ours.call("insert_cell", after_cell_id="c2", cell_type="code", source=(
            "import json, pathlib\n"
            f"pathlib.Path({kernel_times.name!r}).write_text(json.dumps(_hop_times))")))
        ours.call("run_cell", cell_id=dump)
        kernel_events = json.loads(kernel_times.read_text())
    finally:
        if theirs is not None:
            theirs.close()
        ours.close()  # (the server writes its times as it exits)
    server_events = json.loads(server_times.read_text())
    events = sorted((t, n) for n, t in server_events + kernel_events)
    split: dict[str, dict[str, list[float]]] = {}
    for op, spans in calls.items():
        for t0, t1 in spans:
            if op == "list_notebooks":
                split.setdefault(op, {}).setdefault("whole call", []).append((t1 - t0) * 1000)
                continue
            found = phases(t0, t1, [(t, n) for t, n in events if t0 <= t <= t1])
            for name, ms in (found or {}).items():
                split.setdefault(op, {}).setdefault(name, []).append(ms)
    return split, their_ms


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--settle", type=float, default=0.15, help="seconds between two calls")
    args = parser.parse_args()
    print(f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; load average {os.getloadavg()}; "
          f"{' '.join(sys.argv)}", flush=True)
    split, theirs = measure(args.repeat, args.settle)
    print(f"load average after: {os.getloadavg()}")
    print(f"{CELLS} cells; median ms of {args.repeat} calls each")
    for op in ("replace", "insert", "run", "list_variables"):
        print(f"ours: {op}")
        for name in PHASES:
            if split.get(op, {}).get(name):
                print(f"  {name:48}{med(split[op][name]):7.2f}")
    endpoint = med(split["list_notebooks"]["whole call"])
    variables = split["list_variables"]
    kernel = med([a + b for a, b in zip(variables["server -> kernel"], variables["kernel -> server"])])
    print(f"ours: list_notebooks (the endpoint alone){endpoint:17.2f}")
    print(f"theirs: list_notebooks{med(theirs['list_notebooks']):35.2f}")
    for op in ("replace", "insert"):
        bridge = med(split[op]["kernel -> page -> kernel"])
        floor = endpoint + kernel + bridge
        ours_ms, their_ms = med(split[op]["whole call"]), med(theirs[op])
        print(f"{op}: ours {ours_ms:.2f}, theirs {their_ms:.2f} (ratio {their_ms / ours_ms:.2f}); the floor "
              f"{floor:.2f} = endpoint {endpoint:.2f} + kernel there and back {kernel:.2f} + kernel -> page -> "
              f"kernel {bridge:.2f} (theirs / floor {their_ms / floor:.2f}); ours above the floor "
              f"{ours_ms - floor:.2f}")


if __name__ == "__main__":
    main()
