"""The notebook tool path against jupyter-mcp-server, side by side in one run (issue 23).

    python benchmarks/bench_vs_mcp_server.py [--cells 50 2000] [--repeat 7]

What it compares, on the same notebook (``--cells`` cells), open in a JupyterLab 4.6 page
in Debian's chromium on each side, repetitions interleaved (ours, theirs, ours, ...), each
operation started once the processes of both sides are idle (the first once JupyterLab
has built every cell of the freshly opened notebook in each page: minutes at 2,000 cells)
and at least ``--settle``
seconds after the last (an agent's tool calls are a model turn apart; jupyter-collaboration
saves a document a second after each change, work that must not land in the next figure):

* **ours**: the tool path as the agent takes it, end to end from the caller: the loop's
  tool pipeline (validation, plan, permission policy, call) in the page's kernel, through
  the live-notebook bridge to the page. ``insert`` and ``replace`` are NotebookEdit,
  ``insert + run`` is NotebookEdit then NotebookRun of a ``1 + 1`` cell (timed until the
  result is back), ``read all`` is Read of the whole notebook by a fresh conversation.
* **theirs**: jupyter-mcp-server (pinned below) as a Jupyter server extension
  (its MCP endpoint ``/mcp`` in the server that serves the page, with
  jupyter-collaboration, which it requires, so the page shows its edits): one MCP
  ``tools/call`` request per operation over a kept-alive HTTP connection, timed by the
  caller (this process): ``insert_cell``, ``overwrite_cell_source``,
  ``insert_execute_code_cell`` (its one-call insert and run) and ``read_notebook``.

**page**: when the change shows in the page (the inserted or replaced source, the run's
``2``), from the caller's start, seen by a MutationObserver in each page.

jupyter-mcp-server is installed into its own virtual environment under the cache folder
(``--cache-dir``, default ``$XDG_CACHE_HOME/jupyter-agent/bench``), reused on the next run,
never into this project's environment. A command, never a test: its figures go to
BENCHMARKS.md with the load average, the command and the date.

Targets: the tool path at least 2x faster than the server extension on every operation,
at 50 and 2,000 cells; NotebookRun of a trivial cell at 2,000 cells <= 150 ms result back.
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from quiet import wait_quiet  # noqa: E402
from tests.jupyter.lab import Lab, cell, run_and_wait, run_cell, write_notebook  # noqa: E402

MCP_PACKAGES = ("jupyter-mcp-server==2.2.4", "jupyter-collaboration==5.0.4", "jupyterlab==4.6.6")
OPS = ("insert", "replace", "insert + run", "read all")
#: The operations whose change the page shows (the others' figures are the caller's only).
PAGE_OPS = ("insert", "replace", "insert + run")
NAME = "bench.ipynb"

#: The kernel side of "ours": waits for a command file, runs the operation through the
#: loop's tool pipeline, writes how long it took (and when it started, for the page figure).
KERNEL_DRIVER = r'''
import asyncio, json, os, re, time, traceback
from pathlib import Path
from jupyter_agent.jupyter.kernel.agent_session import get_bridge, get_session
from jupyter_agent.loop.services import Services
from jupyter_agent.loop.tool import ToolContext
from jupyter_agent.loop.tool_execution import ToolRunEnv, execute_tool_call
from jupyter_agent.notebook import ToolSession, register_document
from jupyter_agent.notebook.live_backend import LiveNotebook
from jupyter_agent.permissions import Permissions
from jupyter_agent.tools import default_tools

_client = get_ipython().kernel.get_parent()["header"]["session"]
# NotebookRun: the kernel runs the cell itself; BENCH_PAGE_RUNS=1: through the page, as before
_run_here = None if os.environ.get("BENCH_PAGE_RUNS") else get_session().links.self_client.runner()
_path = Path("NAME").resolve()
if STATUS_CHURN:  # as before the bridge kept ipykernel from publishing status for its replies
    from jupyter_agent.jupyter.bridge.bridge_status import restore_status
    restore_status(get_ipython().kernel)
_tools = {t.name: t for t in default_tools()}

class _Counting:
    """The kernel's bridge, counting the round trips of the operation being timed."""
    def __init__(self, bridge):
        self.bridge = bridge
    def __getattr__(self, name):
        return getattr(self.bridge, name)
    async def request(self, client_id, op, **arguments):
        t = time.perf_counter()
        before = len(self.bridge.page_ms)
        try:
            return await self.bridge.request(client_id, op, **arguments)
        finally:
            parts = _op.parts
            parts[f"{op} round trips"] = parts.get(f"{op} round trips", 0) + 1
            parts[f"{op} ms"] = parts.get(f"{op} ms", 0) + (time.perf_counter() - t) * 1000
            if len(self.bridge.page_ms) > before:  # the page's own time answering it
                parts[f"{op} ms in the page"] = parts.get(f"{op} ms in the page", 0) + self.bridge.page_ms[-1]

def _context():
    session = ToolSession()
    register_document(session, LiveNotebook(_path, _Counting(get_bridge()), _client,
                                              run_here=_run_here))
    policy = Permissions(mode="bypassPermissions", cwd=_path.parent, allow=["NotebookRun"])
    return ToolContext(cwd=_path.parent, permissions=policy, services=Services(session))

async def _tool(ctx, name, args):
    block = {"type": "tool_use", "id": "toolu_bench", "name": name, "input": args}
    result = await execute_tool_call(block, ToolRunEnv(tools_by_name=_tools, context=ctx))
    content = result["content"]
    text = content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)
    if result.get("is_error"):
        raise RuntimeError(f"{name}: {text[:500]}")
    return text

async def _op(ctx, op, tok):
    nb = str(_path)
    if op == "insert":
        text = await _tool(ctx, "NotebookEdit", {"notebook_path": nb, "cell_id": "cell-2", "edit_mode": "insert",
                                                 "cell_type": "code", "new_source": f"bench_tok_{tok} = 1"})
        _op.last = re.search(r"Inserted cell (\S+)", text).group(1)
    elif op == "replace":
        await _tool(ctx, "NotebookEdit", {"notebook_path": nb, "cell_id": _op.last,
                                          "new_source": f"bench_tok_{tok} = 2"})
    elif op == "insert + run":
        text = await _tool(ctx, "NotebookEdit", {"notebook_path": nb, "cell_id": "cell-2", "edit_mode": "insert",
                                                 "cell_type": "code", "new_source": f"1 + 1  # bench_tok_{tok}"})
        _op.last = re.search(r"Inserted cell (\S+)", text).group(1)
        t = time.perf_counter()
        text = await _tool(ctx, "NotebookRun", {"notebook_path": nb, "cell_id": _op.last})
        _op.parts["NotebookRun"] = (time.perf_counter() - t) * 1000
        if "2" not in text:
            raise RuntimeError(f"the run did not bring 2 back: {text[:300]}")
    else:  # read all: a fresh conversation, so the whole notebook comes over
        text = await _tool(_context(), "Read", {"file_path": nb})
        if "bench_tok_" not in text:
            raise RuntimeError(f"the read did not show the agent's cells: {text[:300]}")

async def _serve():
    _op.parts = {}
    ctx = _context()
    await _tool(ctx, "Read", {"file_path": str(_path)})
    done = Path("bench-ready.json")
    done.write_text("{}")
    seq = 0
    while True:
        command = Path(f"bench-cmd-{seq}.json")
        if not command.exists():
            await asyncio.sleep(0.003)
            continue
        order = json.loads(command.read_text())
        if order["op"] == "stop":
            return
        started = time.time()
        t = time.perf_counter()
        _op.parts = {}
        try:
            await _op(ctx, order["op"], order["tok"])
            answer = {"ms": (time.perf_counter() - t) * 1000, "start": started * 1000, "parts": _op.parts}
        except Exception:
            answer = {"error": traceback.format_exc()}
        Path(f"bench-res-{seq}.json.tmp").write_text(json.dumps(answer))
        Path(f"bench-res-{seq}.json.tmp").rename(f"bench-res-{seq}.json")
        seq += 1

_bench_task = asyncio.get_running_loop().create_task(_serve())
'''

#: In each page: when a cell showing ``bench_tok_N`` appears (``src N``) and when that cell
#: shows the output ``2`` (``out N``), wall-clock ms like the callers' time.time().
PAGE_WATCHER = r"""() => {
  if (window.__benchSeen) return;
  const seen = (window.__benchSeen = {});
  const re = /bench_tok_(\d+)/g;
  const note = el => {
    const cellEl = el && el.closest ? el.closest('.jp-Cell') : null;
    if (!cellEl) return;
    const t = performance.timeOrigin + performance.now();
    const input = cellEl.querySelector('.jp-InputArea');
    const text = input ? input.textContent : '';
    for (const m of text.matchAll(re)) {
      if (!(('src' + m[1]) in seen)) seen['src' + m[1]] = t;
      const outs = Array.from(cellEl.querySelectorAll('.jp-OutputArea-output'));
      if (!(('out' + m[1]) in seen) && outs.some(o => o.textContent.trim() === '2')) seen['out' + m[1]] = t;
    }
  };
  new MutationObserver(ms => {
    for (const m of ms) note(m.target.nodeType === 1 ? m.target : m.target.parentElement);
  }).observe(document.querySelector('.jp-Notebook'), { subtree: true, childList: true, characterData: true });
}"""


def cache_dir(given: str | None) -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    base = Path(given) if given else cache / "jupyter-agent" / "bench"
    base.mkdir(parents=True, exist_ok=True)
    return base


def mcp_environment(base: Path) -> Path:
    """The python of a virtual environment holding jupyter-mcp-server (made once, reused)."""
    venv = base / ("mcp-" + "-".join(p.split("==")[1] for p in MCP_PACKAGES))
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import jupyter_mcp_server, jupyter_collaboration, jupyterlab"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    print(f"installing {', '.join(MCP_PACKAGES)} into {venv} (once) ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *MCP_PACKAGES], check=True)
    subprocess.run(probe, check=True)
    return python


def notebook_sources(cells: int, driver: str) -> list[str]:
    sources = ["%load_ext jupyter_agent" if driver else "x = 0", driver or "# the other side's driver cell", "1 + 1"]
    return sources + [f"# cell {i}\nvalue_{i} = {i} * 2" for i in range(cells - len(sources))]


class Ours:
    """The page's kernel runs KERNEL_DRIVER; each operation is one command file."""

    def __init__(self, tmp: Path, cells: int, churn: bool = False) -> None:
        self.lab = Lab(tmp)
        self.seq = 0
        driver = KERNEL_DRIVER.replace("NAME", NAME).replace("STATUS_CHURN", str(churn))
        write_notebook(self.lab.root / NAME, notebook_sources(cells, driver))
        self.page = self.lab.open(NAME)
        self.page.evaluate(PAGE_WATCHER)
        run_and_wait(self.page, 0)
        run_cell(self.page, 1)
        ready = self.lab.root / "bench-ready.json"
        deadline = time.monotonic() + 300
        while not ready.exists():
            if time.monotonic() > deadline:
                raise SystemExit(f"our driver did not start: {cell(self.page, 1).inner_text()[-2000:]}")
            time.sleep(0.05)

    def do(self, op: str, tok: int) -> tuple[float, float, dict[str, float]]:
        """(caller ms, the start as wall-clock ms, the ms of the operation's parts)."""
        command = self.lab.root / f"bench-cmd-{self.seq}.json"
        result = self.lab.root / f"bench-res-{self.seq}.json"
        command.with_suffix(".tmp").write_text(json.dumps({"op": op, "tok": tok}))
        command.with_suffix(".tmp").rename(command)
        self.seq += 1
        deadline = time.monotonic() + 120
        while not result.exists():
            if time.monotonic() > deadline:
                raise SystemExit(f"no answer to {op}: {cell(self.page, 1).inner_text()[-2000:]}")
            time.sleep(0.002)
        answer = json.loads(result.read_text())
        if "error" in answer:
            raise SystemExit(f"ours, {op}: {answer['error']}")
        return answer["ms"], answer["start"], answer["parts"]

    def close(self) -> None:
        (self.lab.root / f"bench-cmd-{self.seq}.json").write_text(json.dumps({"op": "stop"}))
        self.lab.close()


class Theirs:
    """jupyter-mcp-server's server extension in the server that serves the page."""

    def __init__(self, tmp: Path, cells: int, python: Path, browser: Any) -> None:
        # Its environment's own config enables it and jupyter-collaboration; documents and
        # kernels "local" (this server's), its defaults. The same browser as ours.
        self.lab = Lab(tmp, python=str(python), browser=browser)
        write_notebook(self.lab.root / NAME, notebook_sources(cells, ""))
        self.page = self.lab.open(NAME)
        self.page.evaluate(PAGE_WATCHER)
        self.http = http.client.HTTPConnection("127.0.0.1", self.lab.port, timeout=300)
        self.ids = 0
        kernel = next(s["kernel"]["id"] for s in self.lab._api("/api/sessions") if s["path"].endswith(NAME))
        self.call("use_notebook", notebook_name="bench", notebook_path=NAME, use_mode="connect", kernel_id=kernel)
        self.call("read_notebook", notebook_name="bench", response_format="brief", limit=5)

    def call(self, tool: str, **arguments: Any) -> Any:
        self.ids += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self.ids, "method": "tools/call",
                           "params": {"name": tool, "arguments": arguments}})
        self.http.request("POST", "/mcp", body=body, headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        response = self.http.getresponse()
        data = response.read().decode()
        if response.status != 200:
            raise SystemExit(f"jupyter-mcp-server {tool}: HTTP {response.status}: {data[:500]}")
        reply = _json_rpc(data)
        if "error" in reply or (reply.get("result") or {}).get("isError"):
            raise SystemExit(f"jupyter-mcp-server {tool}: {json.dumps(reply)[:800]}")
        return reply["result"]

    def do(self, op: str, tok: int) -> tuple[float, float, dict[str, float]]:
        started = time.time() * 1000
        t = time.perf_counter()
        if op == "insert":
            self.call("insert_cell", cell_index=3, cell_type="code", cell_source=f"bench_tok_{tok} = 1")
        elif op == "replace":
            self.call("overwrite_cell_source", cell_index=3, cell_source=f"bench_tok_{tok} = 2")
        elif op == "insert + run":
            result = self.call("insert_execute_code_cell", cell_index=3, cell_source=f"1 + 1  # bench_tok_{tok}")
            if "2" not in json.dumps(result):
                raise SystemExit(f"jupyter-mcp-server's run did not bring 2 back: {json.dumps(result)[:300]}")
        elif op == "scratch run":  # its execute_code: the notebook's kernel, no cell
            result = self.call("execute_code", code=f"{tok} * 1000 + 7")
            if str(tok * 1000 + 7) not in json.dumps(result):
                raise SystemExit(f"jupyter-mcp-server's execute_code did not answer: {json.dumps(result)[:300]}")
        elif op == "run range":  # the range's two code cells, one execute_cell each (it has no range form)
            for index in (0, 2):
                self.call("execute_cell", cell_index=index)
        elif op == "move":  # its move_cell: the cell at index 3 one place down (then the one there now: back)
            self.call("move_cell", source_index=3, target_index=4)  # (an error raises)
        else:
            result = self.call("read_notebook", notebook_name="bench", response_format="detailed",
                               start_index=0, limit=100_000)
            if "bench_tok_" not in json.dumps(result):
                raise SystemExit(f"jupyter-mcp-server's read did not show the cells: {json.dumps(result)[:300]}")
        return (time.perf_counter() - t) * 1000, started, {}

    def close(self) -> None:
        self.http.close()
        self.lab.close()


def _json_rpc(data: str) -> dict[str, Any]:
    """The JSON-RPC reply of a plain JSON body or of a server-sent event stream."""
    data = data.strip()
    if data.startswith("{"):
        return json.loads(data)
    events = [line[5:].strip() for line in data.splitlines() if line.startswith("data:")]
    return json.loads(events[-1])


def measure(cells: int, repeat: int, python: Path, churn: bool = False,
            settle: float = 1.5) -> dict[str, dict[str, list[float]]]:
    return compare(lambda folder: Ours(folder, cells, churn), cells, python, repeat, settle, "bench-vs-mcp-")


def compare(open_ours: Callable[[Path], Any], cells: int, python: Path, repeat: int, settle: float,
            prefix: str, ops: tuple[str, ...] = OPS) -> dict[str, dict[str, list[float]]]:
    """Ours (``open_ours(folder)``: a side with ``lab``, ``page``, ``do(op, tok)``, ``close()``)
    beside theirs, on notebooks of ``cells`` cells: a warm-up round of ``ops``, then ``repeat``
    rounds, sides interleaved, each operation started with both sides idle (``settle``).
    The figures, by side then key: ``op`` (the caller's ms), ``op: part`` (ms of a part, as
    the side reports them), ``op @page`` (until the page showed it), ``op @page missed``."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    sides: dict[str, Any] = {}
    try:
        sides["ours"] = open_ours(tmp / "ours")
        sides["theirs"] = Theirs(tmp / "theirs", cells, python, sides["ours"].lab.browser)
        # JupyterLab builds every cell of a freshly opened notebook in the background (at
        # 2,000 cells, minutes of a whole core in each page): measure the steady state after it
        started = time.monotonic()
        wait_quiet(0, window=2.0, most=600)
        print(f"  both pages idle after {time.monotonic() - started:.0f} s", flush=True)
        figures: dict[str, dict[str, list[float]]] = {name: {} for name in sides}
        pending: dict[str, list[tuple[str, int, float]]] = {name: [] for name in sides}
        tok = 0
        for rep in range(repeat + 1):  # the first round warms both sides up and is not counted
            for op in ops:
                for name, side in sides.items():
                    tok += 1
                    ms, started, parts = side.do(op, tok)
                    if rep:
                        figures[name].setdefault(op, []).append(ms)
                        for part, value in parts.items():
                            figures[name].setdefault(f"{op}: {part}", []).append(value)
                        if op in PAGE_OPS:
                            pending[name].append((op, tok, started))
                    wait_quiet(settle)  # each operation starts with both sides idle
        time.sleep(3)
        for name, side in sides.items():
            seen = side.page.evaluate("() => window.__benchSeen")
            for op, tok, started in pending[name]:
                key = f"out{tok}" if op == "insert + run" else f"src{tok}"
                if key in seen:
                    figures[name].setdefault(f"{op} @page", []).append(seen[key] - started)
                else:
                    figures[name].setdefault(f"{op} @page missed", []).append(1)
        return figures
    finally:
        for side in reversed(list(sides.values())):  # ours last: its Lab owns the browser
            side.close()


def row(values: list[float]) -> str:
    return f"{statistics.median(values):7.1f} ({min(values):.0f}-{max(values):.0f})" if values else "      -"


def command_line() -> argparse.ArgumentParser:
    """The options both comparisons take: ``--cells``, ``--repeat``, ``--cache-dir``, ``--settle``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--cells", type=int, nargs="+", default=[50, 2000])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--settle", type=float, default=1.5,
                        help="seconds at least between operations, then until both sides are idle (default 1.5: "
                             "past jupyter-collaboration's 1 s save delay, whose work would otherwise land in the "
                             "next figure)")
    return parser


def measure_each(args: argparse.Namespace, measure: Callable[[int, Path], dict[str, dict[str, list[float]]]],
                 ) -> dict[int, dict[str, dict[str, list[float]]]]:
    """Prints the date, the load and the command, then ``measure(cells, python of
    jupyter-mcp-server)`` for each of ``args.cells``; the figures by number of cells."""
    python = mcp_environment(cache_dir(args.cache_dir))
    print(f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; load average {os.getloadavg()}; "
          f"{' '.join(sys.argv)}", flush=True)
    results = {}
    for cells in args.cells:
        print(f"measuring {cells} cells ...", flush=True)
        results[cells] = measure(cells, python)
    print(f"load average after: {os.getloadavg()}")
    return results


def ratio_rows(cells: int, op: str, figures: dict[str, dict[str, list[float]]], claim: str,
               target: float) -> list[tuple[str, bool]]:
    """Prints ``op``'s rows (the caller's time, then the page's): ours, theirs, theirs / ours;
    returns a verdict for each row measured on both sides (``claim``: met when the ratio is
    at least ``target``)."""
    verdicts = []
    for key in (op, f"{op} @page"):
        ours, theirs = figures["ours"].get(key, []), figures["theirs"].get(key, [])
        ratio = statistics.median(theirs) / statistics.median(ours) if ours and theirs else float("nan")
        label = f"{cells} cells: {key.replace(' @page', ', page')}"
        print(f"{label:26}{row(ours):>22}{row(theirs):>26}{ratio:8.2f}")
        if ours and theirs:
            verdicts.append((f"{label}: {claim}", ratio >= target))
    return verdicts


def main() -> None:
    parser = command_line()
    parser.add_argument("--status-churn", action="store_true",
                        help="ours: let the kernel publish busy/idle for the page's bridge replies, as before "
                             "jupyter_agent/jupyter/bridge/bridge_status.py (a before/after comparison)")
    args = parser.parse_args()
    results = measure_each(args, lambda cells, python: measure(cells, args.repeat, python, args.status_churn,
                                                               args.settle))
    print("median (min-max) ms; ratio = theirs / ours (above 2 meets the target)")
    print(f"{'':26}{'ours':>22}{'jupyter-mcp-server ext':>26}{'ratio':>8}")
    verdicts = []
    for cells, figures in results.items():
        for op in OPS:
            verdicts += ratio_rows(cells, op, figures, "ours at least 2x faster", 2)
            missed = {n: len(f.get(f"{op} @page missed", [])) for n, f in figures.items()}
            if any(missed.values()):
                print(f"{'':26}(the page never showed it: {missed})")
        print(f"{cells} cells, where our time goes (median per operation; round trips to the page, their ms "
              "as the kernel waited for them):")
        for key in sorted(k for k in figures["ours"] if ": " in k):
            print(f"    {key:40}{row(figures['ours'][key]):>22}")
        runs = figures["ours"].get("insert + run: NotebookRun", [])
        if cells == 2000:
            verdicts.append(("2000 cells: NotebookRun of 1 + 1, result back <= 150 ms",
                             bool(runs) and statistics.median(runs) <= 150))
    for label, ok in verdicts:
        print(f"{'PASS' if ok else 'FAIL'}  {label}")


if __name__ == "__main__":
    main()
