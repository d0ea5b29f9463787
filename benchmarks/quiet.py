"""Waiting for a benchmark's processes to be idle before timing the next operation.

A freshly opened notebook keeps its page busy while JupyterLab builds every cell in the
background (at 2,000 cells, minutes of a whole core), and jupyter-collaboration saves a
changed document a second after the change: work that would otherwise land in whichever
figure is being taken then. Linux only (``/proc``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def _descendants_cpu_ticks(root: int) -> int:
    """CPU time (clock ticks, user + system) of every process below ``root``: both servers,
    their kernels, the browser and its pages."""
    children: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        pid = int(entry.name)
        children.setdefault(int(fields[1]), []).append(pid)  # fields[1]: the parent
        ticks[pid] = int(fields[11]) + int(fields[12])  # utime, stime
    total, stack = 0, list(children.get(root, []))
    while stack:
        pid = stack.pop()
        total += ticks.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total


def wait_quiet(least: float, window: float = 0.3, most: float = 10.0) -> None:
    """Wait ``least`` seconds, then until this process's children (servers, kernels, the
    browser and its pages) used under a tenth of a core over ``window`` seconds, ``most``
    seconds at the longest."""
    time.sleep(least)
    per_second = os.sysconf("SC_CLK_TCK")
    deadline = time.monotonic() + most
    before = _descendants_cpu_ticks(os.getpid())
    while time.monotonic() < deadline:
        time.sleep(window)
        now = _descendants_cpu_ticks(os.getpid())
        if (now - before) / per_second < 0.1 * window:
            return
        before = now
