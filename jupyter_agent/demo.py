"""``./dev demo``: an offline agent session on a real notebook, in the terminal.

A recorded session (``replay/transcripts/notebook_demo.json``) is replayed through the
project's fake Messages API and the real ``anthropic`` SDK; the tools are real: the agent
reads ``analysis.ipynb``, inserts a cell, runs it in a real kernel, and the notebook on
disk changes. In a terminal you approve the edit and the run yourself; without one
(CI, a pipe) the demo allows them and says so.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .cli import main as cli_main
from .environment import prepare_replay_files, resolve_transcript

TRANSCRIPT = "notebook_demo"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./dev demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workspace", default="demo-workspace",
                        help="folder for the demo notebook (default: ./demo-workspace)")
    parser.add_argument("--yes", action="store_true", help="allow every call without asking")
    args = parser.parse_args(argv)

    workspace = Path(args.workspace).resolve()
    workspace.mkdir(parents=True, exist_ok=True)
    notebook = workspace / "analysis.ipynb"
    if notebook.exists():
        notebook.unlink()  # start from the recorded notebook every time
    prepare_replay_files(resolve_transcript(TRANSCRIPT), workspace)
    interactive = sys.stdin.isatty() and not args.yes
    mode = "default" if interactive else "bypassPermissions"
    print(f"jupyter-agent demo (offline replay) in {workspace}")
    if not interactive:
        print("No terminal to ask: every edit and run is allowed "
              "(--permission-mode bypassPermissions --allow NotebookRun).")
    print()
    status = cli_main(["run", str(notebook), "--replay", TRANSCRIPT, "--cwd", str(workspace),
                       "--permission-mode", mode, *([] if interactive else ["--allow", "NotebookRun"])])
    if notebook.exists():
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        print(f"\n{notebook.name} now has {len(cells)} cells:")
        for cell in cells:
            outputs = "".join("".join(o.get("text", "")) or f"{o.get('ename')}: {o.get('evalue')}"
                              for o in cell.get("outputs", []) if o.get("output_type") in ("stream", "error"))
            source = "".join(cell["source"]).replace("\n", "\n    ")
            print(f"  [{cell['cell_type']}] {source}" + (f"\n    -> {outputs.strip()}" if outputs else ""))
    return status


if __name__ == "__main__":
    raise SystemExit(main())
