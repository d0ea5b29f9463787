"""Run one evaluation task through the real CLI against the relay, and record its outcome.

    python -m benchmarks.evals.run TASK [--label before] [--scripted] [--run-dir DIR] [--no-save]
    python -m benchmarks.evals.run --list
    python -m benchmarks.evals.run --table        # rewrite EVALS.md's table from results/
    python -m benchmarks.evals.run --table --before blind-before --after after   # any two labels

Without ``--scripted``, play the model from another terminal while it waits::

    python -m jupyter_agent.replay.relay next --dir RUN/relay
    python -m jupyter_agent.replay.relay answer --dir RUN/relay N answer.json

The outcome goes to ``benchmarks/evals/results/TASK.LABEL.json`` (``--table`` puts them in EVALS.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from .harness import RESULTS, load_task, recheck, run_task, scripted_answerer, task_names
from .table import END, start_marker, table, write_table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.evals.run")
    parser.add_argument("task", nargs="?")
    parser.add_argument("--label", default="before", help="saved as results/TASK.LABEL.json")
    parser.add_argument("--scripted", action="store_true", help="answer from the task's scripted.json")
    parser.add_argument("--run-dir", type=Path, help="where the run's work and relay folders go")
    parser.add_argument("--no-save", action="store_true", help="do not write results/")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--table", action="store_true",
                        help="print the table of two labels and rewrite it in EVALS.md where its markers are")
    parser.add_argument("--before", default="before", help="with --table: the left column's label")
    parser.add_argument("--after", default="after", help="with --table: the right column's label")
    parser.add_argument("--recheck", action="store_true",
                        help="judge the finished run in --run-dir again (after a fix to the check)")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(task_names()))
        return 0
    if args.table:
        print(table(before=args.before, after=args.after))
        if write_table(before=args.before, after=args.after):
            print("(rewritten in EVALS.md)")
        else:
            print(f"(EVALS.md has no such table: put these two lines where it should go, then run again)\n"
                  f"{start_marker(args.before, args.after)}\n{END}")
        return 0
    if not args.task:
        parser.error("name a task (--list lists them)")
    task = load_task(args.task)
    if args.recheck:
        saved = RESULTS / f"{task.name}.{args.label}.json"
        outcome = recheck(task, args.run_dir, json.loads(saved.read_text()))
        print(f"{task.name}: {'success' if outcome.success else 'FAILED'} {outcome.problems}")
        print(f"saved {outcome.save()}")
        return 0 if outcome.success else 1
    run_dir = args.run_dir or Path(tempfile.mkdtemp(prefix=f"eval-{args.task}-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    answerer = scripted_answerer(task.scripted(run_dir / "work")) if args.scripted else None

    def started(relay, cmd):
        print(f"task {task.name}: relay {relay.base_url}, folder {relay.folder.path}", flush=True)
        if answerer is None:
            print(f"play the model: python -m jupyter_agent.replay.relay next --dir {relay.folder.path}", flush=True)

    outcome = run_task(task, run_dir, label=args.label, answerer=answerer, on_start=started)
    m = outcome.measures
    print(f"{task.name}: {'success' if outcome.success else 'FAILED'} · {m.requests} requests · "
          f"{m.tool_calls} tool calls, {m.tool_errors} errors, {m.refusals} refusals · ~{m.input_tokens:,} "
          f"input tokens · CLI exit {outcome.exit_code}")
    for problem in outcome.problems:
        print(f"  - {problem}")
    if not args.no_save:
        print(f"saved {outcome.save()}")
    return 0 if outcome.success else 1


if __name__ == "__main__":
    sys.exit(main())
