"""Live-notebook bridge latency (issue 10), against the file backend, in one run.

    python benchmarks/bench_bridge.py [--cells 2000] [--repeat 25]

Starts JupyterLab twice (the package's server extension sets TCP_NODELAY on kernel
websockets; the second server runs with JUPYTER_AGENT_NODELAY=0) and opens a notebook of
``--cells`` cells in Debian's chromium. A background task in the page's kernel (the kernel
idle, as during an agent run) times each operation through the bridge: read (the whole
notebook, by a fresh document object), re-read (of the unchanged notebook: the page
answers "unchanged"), version, insert, replace, delete, and a trivial cell's run; then
the same operations on a copy of the file through the file backend (runs in a kernel it
starts).
"after edit" is the version request sent right after an edit: the page answers an edit as
soon as its document holds it, and JupyterLab's view work for it comes after, so any of
it a next request waits for shows there.

Targets: median insert or replace <= 20 ms; a trivial cell's run <= 150 ms; read of a
2,000-cell open notebook <= 300 ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.jupyter.lab import Lab, cell, run_and_wait, run_cell, write_notebook  # noqa: E402

KERNEL_BENCH = r'''
import asyncio, json, os, shutil, statistics, time
from pathlib import Path
from jupyter_agent.jupyter.kernel.agent_session import get_bridge, get_session
from jupyter_agent.notebook import FileNotebook, KernelPool
from jupyter_agent.notebook.live_backend import LiveNotebook

_client = get_ipython().kernel.get_parent()["header"]["session"]
if STATUS_CHURN:  # as before the bridge kept ipykernel from publishing status for its replies
    from jupyter_agent.jupyter.bridge.bridge_status import restore_status
    restore_status(get_ipython().kernel)
# NotebookRun: the kernel runs the cell itself; BENCH_PAGE_RUNS=1: through the page, as before
_run_here = None if os.environ.get("BENCH_PAGE_RUNS") else get_session().links.self_client.runner()
_path = Path("bench.ipynb").resolve()

def _page_ms(results, name, doc):
    # the page's own handling time of the reply just received (live backend only)
    if getattr(doc, "live", False) and get_bridge().page_ms:
        results.setdefault(name + "@page", []).append(get_bridge().page_ms[-1])

async def _timed(results, name, fn, repeat, doc=None):
    for _ in range(repeat):
        t = time.perf_counter()
        await fn()
        results.setdefault(name, []).append((time.perf_counter() - t) * 1000)
        _page_ms(results, name, doc)

async def _version(doc):
    # the bridge's cheapest request (the page answers from its cache): a round trip's floor;
    # the file backend's version is its snapshot's
    if not hasattr(doc, "_ask"):
        return (await doc.snapshot()).version
    return str((await doc._ask("version")).get("version") or "")

async def _ops(doc, fresh, repeat, results, run=True):
    snap = await doc.snapshot()
    scratch = snap.cells[2].id
    # a first read (a fresh document object: the whole notebook comes over), then re-reads
    # of the unchanged notebook (the page answers "unchanged")
    await _timed(results, "read", lambda: fresh().snapshot(), max(5, repeat // 3), doc)
    await _timed(results, "re-read", doc.snapshot, max(5, repeat // 3), doc)
    await _timed(results, "version", lambda: _version(doc), repeat, doc)
    # the edits time one call each; the version read before it is the tool's own check
    for name in ("insert", "replace", "delete"):
        for i in range(repeat):
            t = time.perf_counter()
            v = await _version(doc)
            if i:  # the page answers an edit before its own view work: that lands here
                results.setdefault("after edit", []).append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            if name == "insert":
                r = await doc.insert_cell(3, "code", "1 + 1", expected_version=v)
                results.setdefault("_new", []).append(r.cell.id)
            elif name == "replace":
                await doc.replace_cell(scratch, f"1 + {time.time_ns() % 97}", expected_version=v)
            else:
                await doc.delete_cell(results["_new"].pop(), expected_version=v)
            results.setdefault(name, []).append((time.perf_counter() - t) * 1000)
            _page_ms(results, name, doc)
    if run:
        await doc.run_cell(scratch, timeout=60)  # warm (the file backend starts its kernel)
        await _timed(results, "run", lambda: doc.run_cell(scratch, timeout=60), repeat, doc)

async def _bench(repeat):
    out = {}
    fresh = lambda: LiveNotebook(_path, get_bridge(), _client, run_here=_run_here)
    out["live"] = {}
    await _ops(fresh(), fresh, repeat, out["live"])
    copy = _path.with_name("bench-copy.ipynb")
    shutil.copyfile(_path, copy)
    pool = KernelPool(transport="ipc")
    try:
        out["file"] = {}
        fresh = lambda: FileNotebook(copy, kernels=pool)
        await _ops(fresh(), fresh, repeat, out["file"])
    finally:
        await pool.aclose()
    for side in out.values():
        side.pop("_new", None)
    Path("bench-result.json").write_text(json.dumps(out))

async def _guarded(repeat):
    try:
        await _bench(repeat)
    except BaseException as exc:
        import traceback
        Path("bench-result.json").write_text(json.dumps({"error": traceback.format_exc()}))
        raise

_bench_task = asyncio.get_running_loop().create_task(_guarded(REPEAT))
'''


def measure(nodelay: bool, cells: int, repeat: int, windowing: str, untrack: bool = False,
            churn: bool = False) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="bench-bridge-"))
    if windowing:  # the user's Notebook setting "Windowing mode" (JupyterLab's default: defer)
        settings = tmp / "settings/@jupyterlab/notebook-extension"
        settings.mkdir(parents=True)
        (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": windowing}))
    env = {} if nodelay else {"JUPYTER_AGENT_NODELAY": "0"}
    lab = Lab(tmp, env)
    if untrack:  # JupyterLab's page option: no kernel status change for comm messages
        config = tmp / "cfg/labconfig/page_config.json"
        config.write_text(json.dumps({**json.loads(config.read_text()),
                                      "untracked_message_types": json.dumps(["comm_msg"])}))
    try:
        driver = KERNEL_BENCH.replace("REPEAT", str(repeat)).replace("STATUS_CHURN", str(churn))
        sources = ["%load_ext jupyter_agent", driver, "1 + 1"]
        sources += [f"# cell {i}\nvalue_{i} = {i} * 2" for i in range(cells - len(sources))]
        write_notebook(lab.root / "bench.ipynb", sources)
        page = lab.open("bench.ipynb")
        run_and_wait(page, 0)
        run_cell(page, 1)
        result = lab.root / "bench-result.json"
        deadline = time.monotonic() + 900
        while not result.exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        if not result.exists():
            raise SystemExit(f"no result; cell 1 shows: {cell(page, 1).inner_text()[-2000:]}")
        data = json.loads(result.read_text())
        if "error" in data:
            raise SystemExit(data["error"])
        return data
    finally:
        lab.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cells", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=25)
    parser.add_argument("--windowing", default="", choices=("", "defer", "full", "none"),
                        help="JupyterLab's notebook windowing mode for the page (default: the user default)")
    parser.add_argument("--untrack-comm-status", action="store_true",
                        help="set JupyterLab's page option untracked_message_types to [\"comm_msg\"]: the page "
                             "does not re-render the kernel's busy/idle around each bridge reply")
    parser.add_argument("--status-churn", action="store_true",
                        help="let the kernel publish busy/idle for the page's bridge replies, as before "
                             "jupyter_agent/jupyter/bridge/bridge_status.py (a before/after comparison)")
    parser.add_argument("--nodelay-only", action="store_true", help="skip the run with TCP_NODELAY off")
    args = parser.parse_args()
    rows = {}
    for nodelay in (True,) if args.nodelay_only else (True, False):
        print(f"measuring with TCP_NODELAY {'on' if nodelay else 'off'} ...", flush=True)
        data = measure(nodelay, args.cells, args.repeat, args.windowing, args.untrack_comm_status,
                       args.status_churn)
        label = f"bridge, TCP_NODELAY {'on' if nodelay else 'off'}"
        rows[label] = {k: v for k, v in data["live"].items() if "@" not in k}
        rows[f"  of which in the page ({'on' if nodelay else 'off'})"] = {
            k.split("@")[0]: v for k, v in data["live"].items() if k.endswith("@page")}
        if nodelay:
            rows["file backend"] = data["file"]
    ops = ("read", "re-read", "version", "insert", "replace", "delete", "run", "after edit")
    print(f"median (max) ms per operation, {args.cells}-cell notebook, {args.repeat} repeats, "
          f"windowing {args.windowing or 'default'}"
          f"{', comm_msg status untracked' if args.untrack_comm_status else ''}"
          f"{', busy/idle for bridge replies (as before)' if args.status_churn else ''}")
    print(f"{'':32}" + "".join(f"{op:>16}" for op in ops))
    for name, data in rows.items():
        line = f"{name:32}"
        for op in ops:
            values = data.get(op) or []
            line += f"{statistics.median(values):9.1f} ({max(values):4.0f})" if values else f"{'-':>16}"
        print(line)
    live = rows["bridge, TCP_NODELAY on"]
    checks = [("median insert <= 20 ms", statistics.median(live["insert"]) <= 20),
              ("median replace <= 20 ms", statistics.median(live["replace"]) <= 20),
              ("median trivial run <= 150 ms", statistics.median(live["run"]) <= 150),
              (f"median read of {args.cells} cells <= 300 ms", statistics.median(live["read"]) <= 300)]
    for label, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {label}")


if __name__ == "__main__":
    main()
