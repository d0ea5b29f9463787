"""EVALS.md's table, from the saved outcomes in ``results/`` (one row per task, before and after)."""

from __future__ import annotations

import json
from pathlib import Path

from .harness import RESULTS, task_names

EVALS_MD = Path(__file__).resolve().parents[2] / "EVALS.md"
START, END = "<!-- table: written by python -m benchmarks.evals.run --table -->", "<!-- end of table -->"


def _cell(result: dict | None) -> str:
    if result is None:
        return "not run"
    m = result["measures"]
    return (f"{'✓' if result['success'] else '✗'} · {m['requests']} req · {m['tool_calls']} calls "
            f"· {m['tool_errors']} err · {m['refusals']} ref · ~{m['input_tokens'] // 1000}k tok")


def table(results: Path = RESULTS) -> str:
    """The Markdown table: per task, the before and after outcomes."""
    rows = ["| task | before | after | date (before / after) |", "|---|---|---|---|"]
    for name in task_names():
        found = {}
        for label in ("before", "after"):
            path = results / f"{name}.{label}.json"
            found[label] = json.loads(path.read_text()) if path.exists() else None
        dates = " / ".join(r["date"] if r else "–" for r in found.values())
        rows.append(f"| {name} | {_cell(found['before'])} | {_cell(found['after'])} | {dates} |")
    return "\n".join(rows)


def write_table(path: Path = EVALS_MD) -> Path:
    """Replace the table between EVALS.md's markers."""
    text = path.read_text(encoding="utf-8")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{START}\n{table()}\n{END}{tail}", encoding="utf-8")
    return path
