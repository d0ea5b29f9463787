"""The tests and benchmarks start only programs this project installed, by their path
(``sys.executable``, :func:`tests.programs.installed`), never a name looked up on PATH:
on a fresh machine the venv is not on PATH and ``jupyter`` may be missing or another one."""

from __future__ import annotations

import ast
import os
from pathlib import Path

from tests.programs import SCRIPTS

ROOT = Path(__file__).resolve().parent.parent

# module.function calls that start a program (or look one up on PATH)
LAUNCHERS = {
    "subprocess": {"run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput"},
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
    "os": {"system", "popen", "execlp", "execlpe", "execvp", "execvpe", "spawnlp", "spawnlpe",
           "spawnvp", "spawnvpe", "posix_spawnp"},
    "shutil": {"which"},
}


def program_of(call: ast.Call) -> str | None:
    """The program a launcher call names literally, if it does (else None: a path computed
    at run time, such as sys.executable or installed("jupyter"))."""
    first = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg in ("args", "cmd")), None)
    if isinstance(first, (ast.List, ast.Tuple)) and first.elts:
        first = first.elts[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value.split()[0] if first.value.split() else first.value
    return None


def programs_found_on_path(source: str) -> list[tuple[int, str]]:
    """(line, program) of every launch in ``source`` that leaves finding the program to PATH."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.attr in LAUNCHERS.get(node.func.value.id, ())):
            if node.func.value.id == "shutil":
                found.append((node.lineno, "shutil.which"))
                continue
            program = program_of(node)
            if program is not None and not os.path.isabs(program):
                found.append((node.lineno, program))
    return found


def test_the_check_sees_a_program_left_to_path():
    source = ('import subprocess, asyncio, shutil, sys\n'
              'subprocess.run(["jupyter", "agent"])\n'
              'subprocess.Popen(args=("rg", "x"))\n'
              'asyncio.create_subprocess_exec("node", "x")\n'
              'shutil.which("jupyter")\n'
              'subprocess.run([sys.executable, "-m", "jupyterlab"])\n'
              'subprocess.run(["/usr/bin/chromium", "--version"])\n')
    assert programs_found_on_path(source) == [(2, "jupyter"), (3, "rg"), (4, "node"), (5, "shutil.which")]


def test_tests_and_benchmarks_start_programs_by_path():
    offenders = [f"{path.relative_to(ROOT)}:{line}: {program}"
                 for folder in ("tests", "benchmarks") for path in sorted((ROOT / folder).rglob("*.py"))
                 for line, program in programs_found_on_path(path.read_text(encoding="utf-8"))]
    assert not offenders, ("started through PATH; use sys.executable or tests.programs.installed(): "
                           + ", ".join(offenders))


def test_the_suite_runs_with_the_venv_off_path():
    # tests/conftest.py takes it off, as on a fresh machine: a test that still relies on it fails
    entries = {os.path.realpath(e) for e in os.environ.get("PATH", "").split(os.pathsep) if e}
    assert os.path.realpath(SCRIPTS) not in entries
