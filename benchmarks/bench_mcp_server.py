"""Our MCP server against jupyter-mcp-server's, the same operations from the same kind of
caller, side by side in one run (issue 29).

    python benchmarks/bench_mcp_server.py [--cells 50 2000] [--repeat 7]

Both sides are MCP endpoints in the Jupyter server that serves a JupyterLab page showing the
notebook (``--cells`` cells), each called by this process with one JSON-RPC ``tools/call``
request per call over a kept-alive HTTP connection (no SDK on either side of the caller):

* **ours**: ``/jupyter-agent/mcp`` (``jupyter_agent/mcp_server/``): the call goes to the
  notebook's kernel, runs as the agent's own tool call there (permissions, the stale check,
  the change record; the rules allow NotebookEdit and NotebookRun, so no card waits for a
  click) and reaches the page over the live-notebook bridge. ``insert`` is ``insert_cell``,
  ``replace`` is ``replace_cell``, ``insert + run`` is ``insert_cell`` then ``run_cell``
  (two calls: ours has no one-call form), ``read all`` is ``read_cells`` pages of 500 cells.
* **theirs**: jupyter-mcp-server 2.2.4 exactly as ``bench_vs_mcp_server.py`` runs it (its
  own virtual environment, jupyter-collaboration so the page shows its edits):
  ``insert_cell``, ``overwrite_cell_source``, ``insert_execute_code_cell``, ``read_notebook``.

``move`` (issue 38): ours one ``move_cell`` (the cell moved as it is by the page, named by the
cell it goes after or before; NotebookEdit's rules allow it), theirs its ``move_cell``
(``source_index``, ``target_index``): the cell after the inserted ones moved down one place
and back, in turns, on each side.

**page**: when the change shows in the page, from the caller's start (a MutationObserver).
Repetitions are interleaved, each operation started with both sides idle (``--settle``).
A command, never a test: its figures go to BENCHMARKS.md with the command and the date.
Target: ours at least as fast as theirs on every operation, at 50 and 2,000 cells.
"""

from __future__ import annotations

import http.client
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_vs_mcp_server import (NAME, OPS, PAGE_WATCHER, _json_rpc, command_line, compare,  # noqa: E402
                                 measure_each, ratio_rows)

#: Issue 38's operations beside the first four: scratch code in the notebook's kernel (ours
#: ``execute_code``, the agent's KernelRun; theirs ``execute_code``) and the two code cells of a
#: range run in order (ours one ``run_cells``, NotebookRunCells, asked once; theirs two
#: ``execute_cell``: it has no range form).
ALL_OPS = (*OPS, "scratch run", "run range", "move")
from tests.jupyter.lab import Lab, run_and_wait, write_notebook  # noqa: E402

PAGE = 500


def our_sources(cells: int) -> list[str]:
    allow = "['NotebookEdit', 'NotebookRun', 'KernelRun', 'NotebookRunCells']"
    sources = ["%load_ext jupyter_agent", f"%config AgentConfig.allow = {allow}", "1 + 1"]
    return sources + [f"# cell {i}\nvalue_{i} = {i} * 2" for i in range(cells - len(sources))]


class Ours:
    """Our endpoint in the server of a page whose kernel loaded jupyter-agent."""

    def __init__(self, tmp: Path, cells: int, browser: Any = None) -> None:
        self.lab = Lab(tmp, browser=browser)
        self.cells = cells
        write_notebook(self.lab.root / NAME, our_sources(cells))  # ids c0, c1, ...
        self.page = self.lab.open(NAME)
        self.page.evaluate(PAGE_WATCHER)
        run_and_wait(self.page, 0)
        run_and_wait(self.page, 1)
        self.http = http.client.HTTPConnection("127.0.0.1", self.lab.port, timeout=300)
        self.ids, self.session = 0, ""
        init = self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                       "clientInfo": {"name": "bench", "version": "1"}})
        self.protocol = init["result"]["protocolVersion"]
        self.rpc("notifications/initialized", None, notify=True)
        self.read_all(cells)
        self.last = ""
        self.moved = False

    def rpc(self, method: str, params: Any, notify: bool = False) -> Any:
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            body["params"] = params
        if not notify:
            self.ids += 1
            body["id"] = self.ids
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.session:
            headers.update({"mcp-session-id": self.session, "mcp-protocol-version": self.protocol})
        self.http.request("POST", "/jupyter-agent/mcp", body=json.dumps(body), headers=headers)
        response = self.http.getresponse()
        data = response.read().decode()
        self.session = response.getheader("mcp-session-id") or self.session
        if notify:
            return None
        if response.status != 200:
            raise SystemExit(f"ours {method}: HTTP {response.status}: {data[:500]}")
        return _json_rpc(data)

    def call(self, tool: str, **arguments: Any) -> str:
        reply = self.rpc("tools/call", {"name": tool, "arguments": {"notebook_path": NAME, **arguments}})
        result = reply.get("result") or {}
        text = "\n".join(b.get("text", "") for b in result.get("content") or [])
        if "error" in reply or result.get("isError"):
            raise SystemExit(f"ours {tool}: {json.dumps(reply)[:800]}")
        return text

    def read_all(self, cells: int) -> str:
        return "\n".join(self.call("read_cells", start=start, limit=PAGE) for start in range(0, cells + 50, PAGE))

    def do(self, op: str, tok: int) -> tuple[float, float, dict[str, float]]:
        started = time.time() * 1000
        t = time.perf_counter()
        if op == "insert":
            self.last = _inserted(self.call("insert_cell", after_cell_id="c2", cell_type="code",
                                            source=f"bench_tok_{tok} = 1"))
        elif op == "replace":
            self.call("replace_cell", cell_id=self.last, source=f"bench_tok_{tok} = 2")
        elif op == "insert + run":
            self.last = _inserted(self.call("insert_cell", after_cell_id="c2", cell_type="code",
                                            source=f"1 + 1  # bench_tok_{tok}"))
            if "2" not in self.call("run_cell", cell_id=self.last):
                raise SystemExit("our run did not bring 2 back")
        elif op == "scratch run":
            if str(tok * 1000 + 7) not in self.call("execute_code", code=f"{tok} * 1000 + 7"):
                raise SystemExit("our execute_code did not answer")
        elif op == "run range":
            if "Ran 2 of 2 code cells" not in self.call("run_cells", start_cell_id="c1", end_cell_id="c2"):
                raise SystemExit("our run_cells did not run the two cells")
        elif op == "move":  # c3 one place down (after c4), then back (before c4)
            where = {"before_cell_id": "c4"} if self.moved else {"after_cell_id": "c4"}
            if "Moved cell c3" not in self.call("move_cell", cell_id="c3", **where):
                raise SystemExit("our move_cell did not move the cell")
            self.moved = not self.moved
        elif "bench_tok_" not in self.read_all(self.cells + tok):
            raise SystemExit("our read did not show the cells")
        return (time.perf_counter() - t) * 1000, started, {}

    def close(self) -> None:
        self.http.close()
        self.lab.close()


def _inserted(text: str) -> str:
    found = re.search(r"Inserted cell (\S+?)[.\s]", text + " ")
    if found is None:
        raise SystemExit(f"our insert did not name its cell: {text[:300]}")
    return found.group(1)


def measure(cells: int, repeat: int, python: Path, settle: float,
            ops: tuple[str, ...] = ALL_OPS) -> dict[str, dict[str, list[float]]]:
    return compare(lambda folder: Ours(folder, cells), cells, python, repeat, settle, "bench-mcp-server-", ops)


def main() -> None:
    parser = command_line()
    parser.add_argument("--ops", nargs="+", choices=ALL_OPS, default=list(ALL_OPS),
                        help="the operations to measure (default: all; replace needs insert before it)")
    args = parser.parse_args()
    ops = tuple(args.ops)
    results = measure_each(args, lambda cells, python: measure(cells, args.repeat, python, args.settle, ops))
    print("median (min-max) ms; ratio = theirs / ours (at least 1 meets the target)")
    print(f"{'':26}{'ours (MCP)':>22}{'jupyter-mcp-server':>26}{'ratio':>8}")
    verdicts = []
    for cells, figures in results.items():
        for op in ops:
            verdicts += ratio_rows(cells, op, figures, "ours at least as fast", 1)
    for label, ok in verdicts:
        print(f"{'PASS' if ok else 'FAIL'}  {label}")


if __name__ == "__main__":
    main()
