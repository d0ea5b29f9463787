"""EVALS.md's tables, from the saved outcomes in ``results/``: one row per task, two labels
side by side (``before`` and ``after`` unless told others, e.g. ``blind-before`` and ``after``)."""

from __future__ import annotations

import json
from pathlib import Path

from .harness import RESULTS, task_names

EVALS_MD = Path(__file__).resolve().parents[2] / "EVALS.md"
COMMAND = "python -m benchmarks.evals.run --table"
END = "<!-- end of table -->"


def start_marker(before: str = "before", after: str = "after") -> str:
    """The line above a table in EVALS.md: it names the command (and labels) that rewrite it."""
    labels = "" if (before, after) == ("before", "after") else f" --before {before} --after {after}"
    return f"<!-- table: written by {COMMAND}{labels} -->"


def _cell(result: dict | None) -> str:
    if result is None:
        return "not run"
    m = result["measures"]
    return (f"{'✓' if result['success'] else '✗'} · {m['requests']} req · {m['tool_calls']} calls "
            f"· {m['tool_errors']} err · {m['refusals']} ref · ~{m['input_tokens'] // 1000}k tok")


def _total(found: list[dict | None]) -> str:
    done = [r for r in found if r]
    if not done:
        return "not run"
    m = [r["measures"] for r in done]
    return (f"{sum(r['success'] for r in done)}/{len(done)} ✓ · {sum(x['requests'] for x in m)} req · "
            f"{sum(x['tool_calls'] for x in m)} calls · {sum(x['tool_errors'] for x in m)} err · "
            f"{sum(x['refusals'] for x in m)} ref · ~{sum(x['input_tokens'] for x in m) // 1000}k tok")


def table(results: Path = RESULTS, before: str = "before", after: str = "after") -> str:
    """The Markdown table: per task, the outcomes labelled ``before`` and ``after``, and a total
    over the tasks each label has."""
    rows = [f"| task | {before} | {after} | date ({before} / {after}) |", "|---|---|---|---|"]
    columns: dict[str, list[dict | None]] = {before: [], after: []}
    for name in task_names():
        found = {}
        for label in (before, after):
            path = results / f"{name}.{label}.json"
            found[label] = json.loads(path.read_text()) if path.exists() else None
            columns[label].append(found[label])
        dates = " / ".join(r["date"] if r else "–" for r in found.values())
        rows.append(f"| {name} | {_cell(found[before])} | {_cell(found[after])} | {dates} |")
    rows.append(f"| all | {_total(columns[before])} | {_total(columns[after])} | |")
    return "\n".join(rows)


def write_table(path: Path = EVALS_MD, before: str = "before", after: str = "after",
                results: Path = RESULTS) -> bool:
    """Replace the table between its markers in ``path`` (:func:`start_marker` and ``END``);
    False when ``path`` has no such markers (nothing written)."""
    text = path.read_text(encoding="utf-8")
    start = start_marker(before, after)
    if start not in text:
        return False
    head, rest = text.split(start, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{start}\n{table(results, before, after)}\n{END}{tail}", encoding="utf-8")
    return True
