"""Many live ``%%agent`` runs at once in one JupyterLab server (issue 20): the code path of
``benchmarks/bench_load.py`` and of its CI smoke test (``test_many_runs.py``).

:class:`ManyRuns` writes N notebooks (``nb-00.ipynb`` ...), opens them in one or more
JupyterLab pages (several notebooks share a page as tabs; each notebook has its own
kernel), and runs each notebook's ``%%agent`` cell, one at a time or all at once. The fake
Messages API answers every run with the same script, by :class:`LoadScript`: Read the
notebook, insert ``print("ran", NAME, PHASE)`` right under the ``%%agent`` cell, run it,
finish. Allow rules (bypassPermissions for the edit, an allow rule for NotebookRun) mean
nobody clicks. In a phase run "together", every run's first model request waits for all
of the others' at the fake API, so the runs are in flight at the same time.

What proves a run did its work is the saved file: :meth:`ManyRuns.check` saves every
notebook and reads it back; each must hold exactly its own runs' cells, each with its
output, and no cell of another run. The kernels time every bridge request
(``KernelBridge.timings``) and :meth:`ManyRuns.timings` collects them.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from jupyter_agent.testing import FakeMessagesAPI, ScriptedResponse, response, text, tool_use

from .lab import END_REASON, Lab, save, write_notebook

#: The index of the %%agent cell; the agent inserts its cell right under it.
AGENT_CELL = 1
#: How a run's cell reads: print("ran", "nb-03", "load") -> "ran nb-03 load".
RAN_SOURCE = re.compile(r'^print\("ran", "(?P<name>[\w-]+)", "(?P<phase>\w+)"\)$')
#: The token in each %%agent prompt that tells the fake API which notebook asks.
PROMPT_TOKEN = re.compile(r"LOADRUN\[(?P<name>[\w-]+)\]")

SETUP = """%load_ext jupyter_agent
%config AgentConfig.allow = ["NotebookRun"]
__import__("jupyter_agent.jupyter.kernel.agent_session", fromlist=["get_bridge"]).get_bridge().timings = []"""
DUMP = """import json as _json
from jupyter_agent.jupyter.kernel.agent_session import get_bridge as _get_bridge
with open("{name}.timings.json", "w") as _f:
    _json.dump(_get_bridge().timings, _f)"""


@dataclass
class Step:
    """Which run a tool call belongs to, and which step of the script it was."""

    name: str
    phase: str
    index: int


@dataclass
class LoadScript:
    """The fake model of every run (a script item the fake API calls per request).

    Which run asks is in its prompt (``LOADRUN[name]``); which step comes next, in the id of
    the tool_use its last tool_result answers (ids this script made). A tool_result that is
    an error is recorded in ``problems``: the runs must complete cleanly.
    """

    root: Path
    phase: str = ""
    barrier: threading.Barrier | None = None
    problems: list[str] = field(default_factory=list)
    #: (name, phase) -> monotonic times of the run's first request and of its last answer
    started: dict[tuple[str, str], float] = field(default_factory=dict)
    finished: dict[tuple[str, str], float] = field(default_factory=dict)
    _steps: dict[str, Step] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, body: dict[str, Any]) -> ScriptedResponse:
        messages = body.get("messages") or []
        found = PROMPT_TOKEN.search(json.dumps(messages))
        if found is None:
            self.problems.append("a request without a LOADRUN[...] prompt")
            return response(text("No run named here."))
        name = found["name"]
        last = messages[-1].get("content") if messages else None
        answered = [b for b in last if b.get("type") == "tool_result"] if isinstance(last, list) else []
        if not answered:
            return self._first(name)
        with self._lock:
            step = self._steps.get(str(answered[-1].get("tool_use_id")))
        if step is None or step.name != name:
            self.problems.append(f"{name}: a tool_result for a call this run did not make: {answered[-1]}")
            return response(text("Confused."))
        if answered[-1].get("is_error"):
            self.problems.append(f"{name} ({step.phase}), step {step.index}: {json.dumps(answered[-1])[:600]}")
        path = str(self.root / f"{name}.ipynb")
        if step.index == 0:
            return self._call(step, "NotebookEdit", {
                "notebook_path": path, "cell_id": "agent", "cell_type": "code", "edit_mode": "insert",
                "new_source": f'print("ran", "{name}", "{step.phase}")'})
        if step.index == 1:
            return self._call(step, "NotebookRun", {"notebook_path": path, "cell_id": f"cell-{AGENT_CELL + 1}"})
        with self._lock:
            self.finished[(name, step.phase)] = time.monotonic()
        return response(text(f"Done: {name} ran its cell."))

    def _first(self, name: str) -> ScriptedResponse:
        phase = self.phase
        with self._lock:
            self.started[(name, phase)] = time.monotonic()
        if self.barrier is not None:
            try:  # every run of the phase is in flight before any goes on
                self.barrier.wait()
            except threading.BrokenBarrierError:
                self.problems.append(f"{name} ({phase}): not every run started within the barrier's time")
        return self._call(Step(name, phase, -1), "Read", {"file_path": str(self.root / f"{name}.ipynb")})

    def _call(self, after: Step, tool: str, arguments: dict[str, Any]) -> ScriptedResponse:
        block = tool_use(tool, arguments)
        with self._lock:
            self._steps[block["id"]] = Step(after.name, after.phase, after.index + 1)
        return response(block)


def page_config_exposing_app(lab: Lab) -> None:
    """Let the harness reach JupyterLab's app in the page (tabs, panels, kernels)."""
    config = lab.tmp / "cfg/labconfig/page_config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "exposeAppInBrowser": True}))


_PANEL_ID = """path => { for (const w of window.jupyterapp.shell.widgets('main'))
                           if (w.context && w.context.path === path) return w.id;
                         return null; }"""
_KERNEL_IDLE = """path => { for (const w of window.jupyterapp.shell.widgets('main'))
                              if (w.context && w.context.path === path)
                                return w.sessionContext.session?.kernel?.connectionStatus === 'connected'
                                       && w.sessionContext.session?.kernel?.status === 'idle';
                            return false; }"""
#: The text of a panel's cell (inputs and outputs, rendered or not: the panel may be a hidden tab).
_CELL_TEXT = """([id, i]) => { const c = document.getElementById(id)?.querySelectorAll('.jp-Cell')[i];
                                return c ? c.textContent : ''; }"""
#: How the run's end reads in the %%agent cell's output (see lab.END_REASON).
_ENDED = """([id, i]) => { const c = document.getElementById(id)?.querySelectorAll('.jp-Cell')[i];
                           return !!c && Array.from(c.querySelectorAll('.jp-OutputArea code'))
                                                  .some(e => END_REASON.test(e.textContent)); }"""
_ENDED = _ENDED.replace("END_REASON", "/" + END_REASON.pattern + "/")
_COUNT_SHOWN = """([id, i]) => { const c = document.getElementById(id)?.querySelectorAll('.jp-Cell')[i];
                                 const p = c && c.querySelector('.jp-InputPrompt');
                                 return !!p && /\\[\\d+\\]/.test(p.textContent); }"""


class ManyRuns:
    """``count`` notebooks in ``pages`` JupyterLab pages of ``lab``, each with its own kernel,
    their runs answered by one :class:`LoadScript` on ``api`` (see the module docstring).
    ``lab``'s page config must expose the app (:func:`page_config_exposing_app`)."""

    def __init__(self, lab: Lab, api: FakeMessagesAPI, count: int, pages: int = 1, timeout: float = 300) -> None:
        self.lab = lab
        self.api = api
        self.names = [f"nb-{i:02d}" for i in range(count)]
        self.pages_wanted = max(1, min(pages, count))
        self.timeout = timeout
        self.script = LoadScript(lab.root)
        self.phases: dict[str, tuple[float, float]] = {}  # phase -> wall-clock start, end
        self.page: dict[str, Any] = {}  # notebook name -> its page
        self.panel: dict[str, str] = {}  # notebook name -> its panel's DOM id

    # -- opening --------------------------------------------------------------------------
    def open(self) -> None:
        """Write the notebooks, open them (page k shows notebooks k, k + pages, ...) and run
        each one's setup cell (the extension, the allow rule, the bridge's timing)."""
        for name in self.names:
            prompt = f"%%agent --permission-mode bypassPermissions\nLOADRUN[{name}]: add a cell below and run it"
            write_notebook(self.lab.root / f"{name}.ipynb", [SETUP, prompt, DUMP.format(name=name)],
                           ids=["setup", "agent", "dump"])
        for k in range(self.pages_wanted):
            mine = self.names[k::self.pages_wanted]
            page = self.lab.open(f"{mine[0]}.ipynb")
            for name in mine[1:]:
                page.evaluate("p => window.jupyterapp.commands.execute('docmanager:open', {path: p})",
                              f"{name}.ipynb")
            for name in mine:
                self.page[name] = page
                page.wait_for_function(_KERNEL_IDLE, arg=f"{name}.ipynb", timeout=self.timeout * 1000)
                self.panel[name] = page.evaluate(_PANEL_ID, f"{name}.ipynb")
        for name in self.names:
            self.run_cell(name, 0)
        for name in self.names:
            self._wait(name, _COUNT_SHOWN, 0, "its setup cell to run")

    def run_cell(self, name: str, index: int) -> None:
        """Show notebook ``name``'s tab, click into cell ``index`` and press Ctrl+Enter (run it,
        the selection stays: Shift+Enter on the last cell would add a cell)."""
        page = self.page[name]
        page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text=f"{name}.ipynb").click()
        page.locator(f'[id="{self.panel[name]}"] .jp-Cell').nth(index).locator(".jp-InputArea-editor").click()
        page.keyboard.press("Control+Enter")

    def _wait(self, name: str, predicate: str, index: int, what: str) -> None:
        try:
            self.page[name].wait_for_function(predicate, arg=[self.panel[name], index], timeout=self.timeout * 1000)
        except Exception as e:
            shown = self.page[name].evaluate(_CELL_TEXT, [self.panel[name], index])
            raise AssertionError(f"{name}: waited {self.timeout:.0f} s for {what}; the cell shows "
                                 f"{shown[-1500:]!r}; fake API problems: {self.script.problems}") from e

    # -- running ------------------------------------------------------------------------------
    def run_phase(self, phase: str, together: bool) -> None:
        """Run every notebook's %%agent cell, all at once (``together``) or one after another,
        each run to its end."""
        self.script.phase = phase
        self.script.barrier = threading.Barrier(len(self.names), timeout=self.timeout) if together else None
        self.api.add(*[self.script] * (4 * len(self.names)))  # Read, edit, run, the last answer
        start = time.time()
        if together:
            for name in self.names:
                self.run_cell(name, AGENT_CELL)
            for name in self.names:
                self._wait_run(name, phase)
        else:
            for name in self.names:
                self.run_cell(name, AGENT_CELL)
                self._wait_run(name, phase)
        self.phases[phase] = (start, time.time())

    def _wait_run(self, name: str, phase: str) -> None:
        deadline = time.monotonic() + self.timeout
        while (name, phase) not in self.script.finished:
            if time.monotonic() > deadline:
                raise AssertionError(f"{name}'s {phase} run did not finish within {self.timeout:.0f} s; "
                                     f"fake API problems: {self.script.problems}")
            self.page[name].wait_for_timeout(100)
        self._wait(name, _ENDED, AGENT_CELL, f"its {phase} run's end in the page")

    def run_seconds(self, phase: str) -> list[float]:
        """Each run's time from its first model request to its last answer."""
        return [self.script.finished[(n, phase)] - self.script.started[(n, phase)] for n in self.names]

    # -- checking ----------------------------------------------------------------------------
    def check(self, phases: list[str]) -> None:
        """Save every notebook and read the files: each holds exactly one cell per phase, its
        own, right under the %%agent cell, with its output; no other run's cell; every run
        ended "completed" in the page; the fake model saw no tool error."""
        assert not self.script.problems, self.script.problems
        for name in self.names:
            shown = self.page[name].evaluate(_CELL_TEXT, [self.panel[name], AGENT_CELL])
            assert "completed" in shown, f"{name}'s run did not complete: {shown[-1500:]!r}"
        for name in self.names:
            self.save(name)
        for name in self.names:
            nb = nbformat.read(self.lab.root / f"{name}.ipynb", as_version=4)
            ran = [(i, RAN_SOURCE.match(c.source)) for i, c in enumerate(nb.cells)]
            runs = [(i, m["name"], m["phase"]) for i, m in ran if m]
            # the newest run's cell is inserted right under the %%agent cell, above the older ones
            expected = [(AGENT_CELL + 1 + k, name, phase) for k, phase in enumerate(reversed(phases))]
            assert runs == expected, f"{name}.ipynb holds the runs' cells {runs}, expected {expected}"
            for i, _, phase in runs:
                printed = "".join(o.get("text", "") for o in nb.cells[i].outputs)
                assert printed == f"ran {name} {phase}\n", f"{name}.ipynb cell {i} printed {printed!r}"
            assert len(nb.cells) == 3 + len(phases), [c.source for c in nb.cells]

    def save(self, name: str) -> None:
        """Ctrl+S in notebook ``name``'s tab; waits for the file."""
        page = self.page[name]
        page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text=f"{name}.ipynb").click()
        page.locator(f'[id="{self.panel[name]}"] .jp-Notebook').click(position={"x": 5, "y": 5})
        save(page, self.lab.root / f"{name}.ipynb")
        assert page.locator(".jp-Dialog").count() == 0, f"saving {name} asked something"

    def timings(self) -> list[tuple[str, str, float]]:
        """Every bridge request the kernels timed, as (phase, op, ms): runs each notebook's
        last cell (it writes its kernel's timings to a file) and reads the files."""
        out: list[tuple[str, str, float]] = []
        for name in self.names:
            # the dump cell is the page's last (the file may not hold the runs' cells yet)
            last = self.page[name].locator(f'[id="{self.panel[name]}"] .jp-Cell').count() - 1
            path = self.lab.root / f"{name}.timings.json"
            self.run_cell(name, last)
            deadline = time.monotonic() + self.timeout
            while not _whole_json(path):
                if time.monotonic() > deadline:
                    raise AssertionError(f"{name}: no timings written")
                time.sleep(0.1)
            for op, at, ms in json.loads(path.read_text()):
                phase = next((p for p, (a, b) in self.phases.items() if a <= at <= b), "")
                if phase:
                    out.append((phase, op, ms))
        return out

    def close(self) -> None:
        for page in {id(p): p for p in self.page.values()}.values():
            page.context.close()


def _whole_json(path: Path) -> bool:
    try:
        json.loads(path.read_text())
        return True
    except (OSError, ValueError):
        return False
