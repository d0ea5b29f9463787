"""The evaluation harness: notebook tasks run through the real CLI against a relay model.

A task is a folder of ``tasks/``: ``task.py`` (``PROMPT``, ``NOTEBOOK``, optional ``ALLOW``,
``PERMISSION_MODE``, ``MAX_TURNS``, ``env(work)``, ``setup(work)`` that writes the starting notebook
and files, and ``check(work, relay) -> list[str]``, the problems found in the outcome: none is a
success), optionally ``files/`` (copied in as they are) and ``scripted.json`` (answers for an
offline run). A run:

1. copies the task into ``RUN/work`` and calls its ``setup``;
2. serves a :class:`~jupyter_agent.replay.relay.RelayAPI` on ``RUN/relay`` and starts
   ``jupyter agent run NOTEBOOK -p PROMPT --permission-mode ... --allow ...`` with stdin closed
   (asks are denied, as in CI), pointed at it;
3. whoever plays the model answers through the relay folder (``python -m
   jupyter_agent.replay.relay next|answer --dir RUN/relay``), or ``scripted.json`` does;
4. when the CLI exits, runs the check and measures the run from the requests the relay saw.

    python -m benchmarks.evals.run TASK [--label before|after] [--scripted] [--run-dir DIR]
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from jupyter_agent.replay.relay import RelayAPI
from jupyter_agent.replay.relay_folder import PendingRequest, RelayFolder
from tests.programs import installed

TASKS = Path(__file__).resolve().parent / "tasks"
RESULTS = Path(__file__).resolve().parent / "results"

#: A tool result counted as a refusal: the call was not run because a rule, a mode or an
#: unanswered approval stopped it. The wire carries no outcome value, so this reads the words
#: the permission layer and the headless CLI write (today's and the shapes they may take).
REFUSAL = re.compile(r"needs approval|doesn't want to proceed|was not run|not allowed|not permitted|denied"
                     r"|refused|cannot run|can't run|no one (is|can)|blocked", re.IGNORECASE)


@dataclass
class Task:
    """One task folder, loaded."""

    name: str
    folder: Path
    module: ModuleType

    @property
    def prompt(self) -> str:
        return str(self.module.PROMPT)

    @property
    def notebook(self) -> str:
        return str(self.module.NOTEBOOK)

    def command(self, work: Path) -> list[str]:
        """The ``jupyter agent run`` command line for this task in ``work``."""
        m = self.module
        cmd = [installed("jupyter"), "agent", "run", str(work / self.notebook), "-p", self.prompt,
               "--permission-mode", getattr(m, "PERMISSION_MODE", "bypassPermissions"),
               "--max-turns", str(getattr(m, "MAX_TURNS", 40)), "--cwd", str(work)]
        for rule in getattr(m, "ALLOW", ("NotebookRun",)):
            cmd += ["--allow", rule]
        return cmd

    def setup(self, work: Path) -> None:
        """Fill ``work`` with the task's starting files."""
        files = self.folder / "files"
        if files.is_dir():
            shutil.copytree(files, work, dirs_exist_ok=True)
        self.module.setup(work)

    def env(self, work: Path) -> dict[str, str]:
        return dict(self.module.env(work)) if hasattr(self.module, "env") else {}

    def check(self, work: Path, relay: RelayFolder) -> list[str]:
        return list(self.module.check(work, relay))

    def scripted(self, work: Path) -> list[Any]:
        """The task's scripted answers, with ``{work}`` spelled as the run's folder."""
        text = (self.folder / "scripted.json").read_text(encoding="utf-8")
        return json.loads(text.replace("{work}", str(work)))


def load_task(name: str) -> Task:
    folder = TASKS / name
    spec = importlib.util.spec_from_file_location(f"eval_task_{name}", folder / "task.py")
    if spec is None or spec.loader is None or not folder.is_dir():
        raise FileNotFoundError(f"no task {name!r}: the tasks are {', '.join(task_names())}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return Task(name, folder, module)


def task_names() -> list[str]:
    return sorted(p.name for p in TASKS.iterdir() if (p / "task.py").exists())


@dataclass
class Measures:
    """What one run cost, from the requests the relay saw."""

    requests: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    refusals: int = 0
    input_tokens: int = 0  # estimate: the bytes of every request / 4
    tools_used: dict[str, int] = field(default_factory=dict)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in content or [] if isinstance(b, dict))


def measure(folder: RelayFolder) -> Measures:
    """Count requests, tool calls, error results and refusals over the whole run (each call and
    result once, by id, whatever compaction later did to the history) and estimate tokens."""
    calls: dict[str, str] = {}
    results: dict[str, dict[str, Any]] = {}
    for body in folder.bodies():
        for m in body.get("messages") or []:
            for b in m.get("content") if isinstance(m.get("content"), list) else []:
                if b.get("type") == "tool_use":
                    calls[b["id"]] = b["name"]
                elif b.get("type") == "tool_result":
                    results[b["tool_use_id"]] = b
    # the last answer's calls are in no request when the run ended on them
    for n in folder.numbers():
        answer = folder.read_answer(n)
        for b in (answer or {}).get("content", []):
            if b["type"] == "tool_use":
                calls.setdefault(b["id"], b["name"])
    errors = [r for r in results.values() if r.get("is_error")]
    used: dict[str, int] = {}
    for name in calls.values():
        used[name] = used.get(name, 0) + 1
    return Measures(requests=len(folder.numbers()), tool_calls=len(calls), tool_errors=len(errors),
                    refusals=sum(1 for r in errors if REFUSAL.search(_text(r.get("content")))),
                    input_tokens=sum(folder.request_bytes()) // 4, tools_used=used)


@dataclass
class Outcome:
    """One run of one task: whether the check passed, and what it cost."""

    task: str
    label: str
    success: bool
    problems: list[str]
    exit_code: int | None
    measures: Measures
    date: str
    command: str
    run_dir: str

    def save(self, folder: Path = RESULTS) -> Path:
        """Write the outcome (``TASK.LABEL.json``) and the run as the model saw it (``TASK.LABEL.md``)."""
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.task}.{self.label}.json"
        data = asdict(self)
        data.pop("run_dir")  # a temporary folder of one machine
        path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        text = transcript(RelayFolder(Path(self.run_dir) / "relay")).replace(self.run_dir, "RUN")
        path.with_suffix(".md").write_text(text, encoding="utf-8")
        return path


Answerer = Callable[[PendingRequest], Any]


def scripted_answerer(answers: list[Any]) -> Answerer:
    """Answers the requests in order from ``answers``; past their end, says it has nothing more."""
    queue = list(answers)

    def answer(request: PendingRequest) -> Any:
        return queue.pop(0) if queue else [{"type": "text", "text": "(the scripted answers ran out)"}]

    return answer


def run_task(task: Task, run_dir: Path, *, label: str = "before", answerer: Answerer | None = None,
             timeout_s: float = 3600.0, on_start: Callable[[RelayAPI, list[str]], None] | None = None) -> Outcome:
    """Run ``task`` in ``run_dir`` (see the module docstring). ``answerer``: answers each
    request in this process (a script); without it, someone answers through the folder."""
    work, relay_dir = run_dir / "work", run_dir / "relay"
    work.mkdir(parents=True, exist_ok=True)
    task.setup(work)
    cmd = task.command(work)
    shown = " ".join(_quote(c) for c in ["jupyter", *cmd[1:]]).replace(str(work), "WORK")
    with RelayAPI(relay_dir) as relay:
        env = {**os.environ, **relay.env(), "JUPYTER_AGENT_STALL_TIMEOUT": "1200", **task.env(work)}
        for name in ("JUPYTER_AGENT_REPLAY", "ANTHROPIC_AUTH_TOKEN"):
            env.pop(name, None)
        if on_start is not None:
            on_start(relay, cmd)
        with open(run_dir / "cli.log", "w", encoding="utf-8") as log:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    env=env, cwd=work)
            player = None
            if answerer is not None:
                player = threading.Thread(target=_play, args=(relay, answerer), daemon=True)
                player.start()
            try:
                code: int | None = proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = None
            relay.finish(f"the CLI exited with {code}")
            if player is not None:
                player.join(30)
    problems = task.check(work, relay.folder)
    return Outcome(task=task.name, label=label, success=not problems, problems=problems, exit_code=code,
                   measures=measure(relay.folder), date=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                   command=shown, run_dir=str(run_dir))


def transcript(folder: RelayFolder) -> str:
    """The run as the model saw it: every request's new part and the last answer, the tools' long
    descriptions (the same in every run of a branch) cut to their names."""
    out = []
    for n in folder.numbers():
        sections = folder.request_text(n).read_text(encoding="utf-8").split("\n## ")
        for i, section in enumerate(sections):
            title, _, body = section.partition("\n")
            if i and title.startswith("tools"):
                names = re.findall(r"^### (\S+)", body, re.MULTILINE)
                section = f"{title}\n({', '.join(names)}: their descriptions left out here)\n"
            out.append(("## " if i else "") + section)
    last = folder.numbers()[-1:]
    answer = folder.read_answer(last[0]) if last else None
    if answer is not None:
        out.append(f"## the last answer\n{json.dumps(answer['content'], indent=1, ensure_ascii=False)}\n")
    return "\n".join(out)


def recheck(task: Task, run_dir: Path, outcome: dict[str, Any]) -> Outcome:
    """Judge a finished run again (after a fix to the task's check), keeping its date and exit code."""
    folder = RelayFolder(run_dir / "relay")
    problems = task.check(run_dir / "work", folder)
    return Outcome(task=task.name, label=outcome["label"], success=not problems, problems=problems,
                   exit_code=outcome["exit_code"], measures=measure(folder), date=outcome["date"],
                   command=outcome["command"], run_dir=str(run_dir))


def _play(relay: RelayAPI, answerer: Answerer) -> None:
    while (request := relay.wait_request(timeout_s=600)) is not None:
        relay.answer(request.number, answerer(request))


def _quote(arg: str) -> str:
    return arg if re.fullmatch(r"[\w@%+=:,./-]+", arg) else "'" + arg.replace("'", "'\\''") + "'"
