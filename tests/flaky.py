"""``./dev flaky [-k EXPR] [--runs N] [--load N] [PYTEST ARGS...]``: hunt flaky tests.

Runs the chosen tests ``--runs`` times (default 5), each time in a new random order and
as CI runs them (two workers, one module per worker), with no re-runs, while ``--load``
busy loops (default 2, one per core of the CI machine) keep the CPU as loaded as a busy CI
machine. Prints each test's pass rate, lowest first, and exits 1 when any test failed at
least once: a test below 100 % races the machine, and the fix belongs in the test (wait
on the event it means) or in the product, not in a longer timeout.

Examples::

    ./dev flaky -k test_lab_browser --runs 10
    ./dev flaky tests/jupyter/test_gateway.py --runs 3 --load 0
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def busy_loop() -> None:  # pragma: no cover - runs in a child process, killed at the end
    while True:
        pass


def outcomes(junit_xml: Path) -> dict[str, str]:
    """test id -> "passed" | "failed" | "skipped", read from pytest's JUnit XML report."""
    result: dict[str, str] = {}
    if not junit_xml.exists():
        return result
    for case in ET.parse(junit_xml).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        kinds = {child.tag for child in case}
        if kinds & {"failure", "error"}:
            result[name] = "failed"  # a failed teardown is a failure too
        elif "skipped" in kinds:
            result.setdefault(name, "skipped")
        else:
            result.setdefault(name, "passed")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./dev flaky", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-k", dest="expr", help="pytest's -k expression: which tests")
    parser.add_argument("--runs", type=int, default=5, help="how many times (default 5)")
    parser.add_argument("--load", type=int, default=2, help="busy loops beside the tests (default 2)")
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers, as CI (default 2)")
    args, pytest_args = parser.parse_known_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    loops = [multiprocessing.Process(target=busy_loop, daemon=True) for _ in range(max(0, args.load))]
    for p in loops:
        p.start()
    runs: dict[str, list[str]] = defaultdict(list)
    try:
        with tempfile.TemporaryDirectory(prefix="flaky-") as tmp:
            for n in range(1, args.runs + 1):
                seed = random.randrange(2**31)
                report = Path(tmp) / f"run{n}.xml"
                cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "randomly",
                       f"--randomly-seed={seed}", f"--junitxml={report}", "-o", "junit_family=xunit2"]
                if args.workers > 1:
                    cmd += ["-n", str(args.workers), "--dist", "loadfile"]
                if args.expr:
                    cmd += ["-k", args.expr]
                cmd += pytest_args
                start = time.monotonic()
                proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                seen = outcomes(report)
                failed = sorted(t for t, o in seen.items() if o == "failed")
                print(f"run {n}/{args.runs}: seed {seed}, {len(seen)} tests, {len(failed)} failed, "
                      f"{time.monotonic() - start:.0f} s (pytest exit {proc.returncode})", flush=True)
                for t in failed:
                    print(f"    failed: {t}", flush=True)
                if not seen:
                    print(proc.stdout[-3000:])
                    print("no test ran: check -k and the paths", file=sys.stderr)
                    return 2
                for test, outcome in seen.items():
                    runs[test].append(outcome)
    finally:
        for p in loops:
            p.kill()
            p.join()

    rows = []
    for test, seen_outcomes in runs.items():
        counted = [o for o in seen_outcomes if o != "skipped"]
        if counted:
            rows.append((counted.count("passed") / len(counted), counted.count("passed"), len(counted), test))
    rows.sort()
    print(f"\npass rate over {args.runs} run(s) with {args.load} busy loop(s), lowest first:")
    for rate, passed, total, test in rows:
        print(f"{rate:7.1%}  {passed:>3}/{total:<3} {test}")
    below = [r for r in rows if r[1] < r[2]]
    print(f"\n{len(below)} of {len(rows)} tests below 100 %" if below else f"\nall {len(rows)} tests at 100 %")
    return 1 if below else 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
