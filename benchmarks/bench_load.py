"""Many live runs at once (issue 20): the bridge's latency under load beside idle, in one run.

    python benchmarks/bench_load.py [--kernels 10] [--pages 1]

One JupyterLab server, ``--kernels`` notebooks open in ``--pages`` pages of Debian's
chromium (notebooks sharing a page are its tabs), each with its own kernel, and the
project's fake Messages API. Each notebook's ``%%agent`` run reads its notebook, inserts a
cell under the ``%%agent`` cell and runs it (tests/jupyter/many_runs.py; allow rules, no
clicks). First the runs go one at a time ("idle": no other run in flight), then all of
them at once (every run's first model request waits at the fake API until all have
arrived). Then every notebook is saved and checked: all runs completed, each notebook
holds its own runs' cells and outputs and no other run's.

The latency is each bridge request's round trip as the kernel's tools wait for it: from
the kernel sending it on the comm to the page's answer in the kernel's event loop
(``KernelBridge.timings``, off unless a benchmark sets it). "run" includes the cell's
execution (a print) and is shown apart.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jupyter_agent.testing import FakeMessagesAPI  # noqa: E402
from tests.jupyter.lab import Lab  # noqa: E402
from tests.jupyter.many_runs import ManyRuns, page_config_exposing_app  # noqa: E402

PHASES = ("idle", "load")


def p95(values: list[float]) -> float:
    """The 95th percentile (inclusive method: within the sample's range)."""
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(values, n=20, method="inclusive")[18]


def figures(values: list[float]) -> str:
    if not values:
        return f"{'-':>31}"
    return f"{len(values):5d} {statistics.median(values):8.1f} {p95(values):8.1f} {max(values):8.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernels", type=int, default=10, help="notebooks, each with its own kernel and run")
    parser.add_argument("--pages", type=int, default=1, help="browser pages the notebooks are spread over")
    parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for any one step")
    args = parser.parse_args()
    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    with FakeMessagesAPI() as api:
        lab = Lab(Path(tempfile.mkdtemp(prefix="bench-load-")), api.env())
        page_config_exposing_app(lab)
        runs = ManyRuns(lab, api, args.kernels, pages=args.pages, timeout=args.timeout)
        try:
            stage = time.monotonic()
            print(f"opening {args.kernels} notebooks in {runs.pages_wanted} page(s) ...", flush=True)
            runs.open()
            print(f"  {time.monotonic() - stage:.0f} s; runs one at a time ...", flush=True)
            stage = time.monotonic()
            runs.run_phase("idle", together=False)
            print(f"  {time.monotonic() - stage:.0f} s; {args.kernels} runs at once ...", flush=True)
            stage = time.monotonic()
            runs.run_phase("load", together=True)
            print(f"  {time.monotonic() - stage:.0f} s; collecting, saving and checking ...", flush=True)
            timings = runs.timings()
            seconds = {phase: runs.run_seconds(phase) for phase in PHASES}
            try:
                runs.check(list(PHASES))
                verdict = f"PASS  all {2 * args.kernels} runs completed; each notebook holds only its own runs' cells"
            except AssertionError as e:
                verdict = f"FAIL  {e}"
        finally:
            runs.close()
            lab.close()
    load_after = os.getloadavg()
    by_op: dict[str, dict[str, list[float]]] = defaultdict(lambda: {p: [] for p in PHASES})
    for phase, op, ms in timings:
        by_op[op][phase].append(ms)
        if op != "run":
            by_op["all but run"][phase].append(ms)
    print()
    print(f"bridge request latency, ms: {args.kernels} kernels in {runs.pages_wanted} page(s), {started}, "
          f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after")
    print(f"{'request':14}  {'idle (one run at a time)':>32}   {f'{args.kernels} runs at once':>32}   "
          f"{'median ratio':>12}")
    columns = f"{'n':>5} {'median':>8} {'p95':>8} {'max':>8}"
    print(f"{'':14}  {columns}   {columns}")
    order = sorted((op for op in by_op if op not in ("run", "all but run")), key=lambda op: op)
    for op in [*order, "all but run", "run"]:
        idle, load = by_op[op]["idle"], by_op[op]["load"]
        ratio = f"{statistics.median(load) / statistics.median(idle):12.2f}" if idle and load else ""
        print(f"{op:14}  {figures(idle)}   {figures(load)}   {ratio}")
    print(f"{'a whole run, s':14}  {figures(seconds['idle'])}   {figures(seconds['load'])}")
    print(verdict)
    if verdict.startswith("FAIL"):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
