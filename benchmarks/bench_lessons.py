"""How long the lesson notebooks take headless, offline: wall time and the kernels' CPU time.

    python benchmarks/bench_lessons.py

Runs every notebook in notebooks/ with nbclient (a fresh kernel each, in a temp folder, no
API key), as tests/lessons/test_notebooks.py does, and prints per notebook: wall seconds,
the kernel's CPU seconds (user+sys, a figure the machine's load barely moves), and the
share of that CPU spent before the first cell finished importing. Target: all lessons
together < 90 s wall on an idle 2-core machine.
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "JUPYTER_AGENT_")):
            del os.environ[name]
    total_wall = total_cpu = 0.0
    print(f"{'notebook':34} {'wall s':>7} {'kernel CPU s':>13}")
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        with tempfile.TemporaryDirectory() as tmp:
            os.environ["TMPDIR"] = tmp
            nb = nbformat.read(path, as_version=4)
            cpu0, t0 = children_cpu(), time.perf_counter()
            NotebookClient(nb, timeout=120, kernel_name="python3", shutdown_kernel="immediate",
                           resources={"metadata": {"path": tmp}}).execute()
            wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
        total_wall += wall
        total_cpu += cpu
        print(f"{path.stem:34} {wall:7.1f} {cpu:13.1f}")
    print(f"{'all lessons':34} {total_wall:7.1f} {total_cpu:13.1f}   (load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    sys.exit(main())
