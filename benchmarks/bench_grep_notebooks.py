"""Grep inside notebooks by cell, against ripgrep over the same bytes as plain files.

    python benchmarks/bench_grep_notebooks.py [--repeat 5]

* one notebook of 5,000 cells (1.5 MB), and 200 notebooks of 300 cells (21 MB in all);
* "cold": the first search after the notebooks were written: each notebook whose bytes may
  hold a hit is parsed (``nbsearch.Needle``); "cold, all parsed": the same with every notebook
  parsed (what Grep did before the needle);
  "warm": a later search, the notebooks unchanged (their views are reused);
* "plain": the same files renamed ``.json``, searched as they are (what Grep did before).

Times are through ``search()`` (what Grep runs), the minimum and median of ``--repeat`` runs.
The machine is shared and noisy: compare within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook, new_output

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jupyter_agent.tools import nbsearch  # noqa: E402
from jupyter_agent.tools.search import SearchRequest, search  # noqa: E402


def notebook(cells: int, output_lines: int) -> nbformat.NotebookNode:
    return new_notebook(cells=[
        new_code_cell(f"value_{i} = {i}\nprint(value_{i})",
                      outputs=[new_output("stream", name="stdout", text=f"{i}\n" * output_lines)])
        for i in range(cells)])


async def timed(root: Path, pattern: str, repeat: int, cold: bool, needle: bool = True) -> tuple[float, float]:
    times = []
    of = nbsearch.Needle.__dict__["of"]
    if not needle:
        nbsearch.Needle.of = classmethod(lambda cls, pattern, ignore_case: None)
    try:
        for _ in range(repeat):
            if cold:
                nbsearch._cache.clear()
                nbsearch._cache_chars = 0
            start = time.perf_counter()
            await search(SearchRequest(pattern=pattern, root=str(root), mode="content"))
            times.append((time.perf_counter() - start) * 1000)
    finally:
        nbsearch.Needle.of = of
    return min(times), statistics.median(times)


async def main(repeat: int) -> None:
    sets = {"1 notebook, 5,000 cells": [(notebook(5000, 1), "big")],
            "200 notebooks, 300 cells each": [(notebook(300, 5), f"n{i}") for i in range(200)]}
    print("| search | cold, all parsed | cold | warm | same bytes as .json (plain rg) |")
    print("|---|---|---|---|---|")
    for label, books in sets.items():
        with tempfile.TemporaryDirectory() as tmp:
            nbs, plain = Path(tmp, "nbs"), Path(tmp, "plain")
            nbs.mkdir()
            plain.mkdir()
            for nb, name in books:
                nbformat.write(nb, nbs / f"{name}.ipynb")
                shutil.copy(nbs / f"{name}.ipynb", plain / f"{name}.json")
            size = sum(p.stat().st_size for p in nbs.iterdir()) / 1e6
            for pattern in ("value_4321 =", "no_such_name", "value_42 ="):
                every = await timed(nbs, pattern, repeat, cold=True, needle=False)
                cold = await timed(nbs, pattern, repeat, cold=True)
                warm = await timed(nbs, pattern, repeat, cold=False)
                raw = await timed(plain, pattern, repeat, cold=False)
                cells = " | ".join(f"{low:.0f} ms (median {mid:.0f})" for low, mid in (every, cold, warm, raw))
                print(f"| {label} ({size:.1f} MB), `{pattern}` | {cells} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    asyncio.run(main(parser.parse_args().repeat))
