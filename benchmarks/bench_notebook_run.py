"""NotebookRun under floods of output, in a real kernel: what is kept, how long it takes.

    python benchmarks/bench_notebook_run.py [--mb 270]

1. A cell that prints ``--mb`` megabytes (the 270 MB print of issue 8.13): the saved
   notebook's size, the result's size, the wall time, and this process's peak memory.
2. A tqdm bar with 20,000 updates (``mininterval=0``, so each update is one iopub message):
   the same figures.

Each cell also times itself (written to a file, not printed): the kernel's own time is
the floor, and the ratio of the run's wall time to it is the cost of collecting outputs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jupyter_agent.notebook import KernelPool, ToolSession, close_session  # noqa: E402
from jupyter_agent.permissions import Permissions  # noqa: E402
from jupyter_agent.loop.services import Services  # noqa: E402
from jupyter_agent.loop.tool import ToolContext  # noqa: E402
from tests.tools.conftest import call_tool  # noqa: E402


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


TIMED = "import time as _t\n_t0 = _t.perf_counter()\n{body}\nopen('inner.txt', 'w').write(str(_t.perf_counter() - _t0))"


async def run_cell(folder: Path, session: ToolSession, source: str) -> tuple[float, int, str]:
    path = folder / "bench.ipynb"
    path.write_text(nbformat.writes(new_notebook(cells=[new_code_cell(source, id="c")])) + "\n")
    policy = Permissions(mode="bypassPermissions", cwd=folder)
    ctx = ToolContext(cwd=folder, permissions=policy, services=Services(session))
    await call_tool(ctx, "Read", {"file_path": str(path)})
    started = time.perf_counter()
    result = await call_tool(ctx, "NotebookRun", {"notebook_path": str(path), "cell_id": "c"})
    elapsed = time.perf_counter() - started
    assert not result.get("is_error"), result["content"][:500]
    return elapsed, path.stat().st_size, str(result["content"])


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=270)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(os.path.realpath(tmp))
        for var in ("IPYTHONDIR", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR"):
            os.environ[var] = str(folder / var.lower())
        session = ToolSession(kernels=KernelPool(transport="ipc", kernel_name="python3"))
        try:
            await run_cell(folder, session, "1")  # start the kernel outside the timings
            base = peak_rss_mb()
            flood = f"import sys\nfor _ in range({args.mb}):\n    sys.stdout.write('x' * 1_000_000)\nprint('end')"
            t, size, content = await run_cell(folder, session, TIMED.format(body=flood))
            inner = float((folder / "inner.txt").read_text())
            print(f"print of {args.mb} MB: {t:.1f} s (the kernel's own {inner:.1f} s), notebook {size / 1e3:,.0f} kB "
                  f"(target <= 600 kB), result {len(content):,} chars {content[:150]!r}, "
                  f"peak RSS {peak_rss_mb():,.0f} MB "
                  f"(was {base:,.0f} MB before)")
            bar = "from tqdm import tqdm\nfor _ in tqdm(range(20_000), mininterval=0):\n    pass"
            t, size, content = await run_cell(folder, session, TIMED.format(body=bar))
            inner = float((folder / "inner.txt").read_text())
            print(f"tqdm, 20,000 updates: {t:.1f} s (the kernel's own {inner:.1f} s: ratio {t / inner:.2f}), "
                  f"notebook {size / 1e3:,.1f} kB, result {content!r}")
        finally:
            await close_session(session)


if __name__ == "__main__":
    asyncio.run(main())
