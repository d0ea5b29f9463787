"""The cost of telling the agent the kernel's variables (``jupyter/kernel/kernel_context.py``).

    python benchmarks/bench_context.py

The listing runs on the kernel thread at the start of every run, so it must be cheap
whatever the namespace holds. Measured: 1,000 variables (ints, strings, lists, dicts,
functions, objects of a user class) plus a 1,000,000 × 50 pandas DataFrame, a 500-column
one and a large numpy array. Target: median ≤ 20 ms.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from jupyter_agent.jupyter.kernel.kernel_context import kernel_variables  # noqa: E402


class Point:
    def __init__(self, x: int) -> None:
        self.x = x


def namespace() -> dict:
    import numpy as np
    import pandas as pd

    ns: dict = {}
    kinds = (lambda i: i, lambda i: f"text {i}", lambda i: list(range(i % 7)), lambda i: {"k": i},
             lambda i: (lambda: i), lambda i: Point(i))
    for i in range(1000):
        ns[f"v{i}"] = kinds[i % len(kinds)](i)
    ns["big"] = pd.DataFrame(np.zeros((1_000_000, 50)), columns=[f"c{i}" for i in range(50)])
    ns["wide"] = pd.DataFrame(np.zeros((10, 500)))
    ns["arr"] = np.zeros((2000, 2000))
    return ns


def main() -> None:
    ns = namespace()
    kernel_variables(ns)  # warm up
    times = []
    for _ in range(50):
        start = time.perf_counter()
        lines = kernel_variables(ns)
        times.append((time.perf_counter() - start) * 1000)
    text = "\n".join(lines)
    print(f"{len(ns):,} variables incl. a 1,000,000 x 50 DataFrame: median {statistics.median(times):.2f} ms, "
          f"max {max(times):.2f} ms (target median <= 20 ms); listing {len(lines)} lines, {len(text):,} chars")


if __name__ == "__main__":
    main()
