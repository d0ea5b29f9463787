"""Conventions the code keeps, checked on the source: nothing swallowed silently, one
logger per module, no comment that cites a document outside the repository, and no module
too long to read in one sitting."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "jupyter_agent"

#: How many broad handlers may still swallow without logging, per file: only for a file
#: another branch is changing (a count, not lines: it holds while the code above moves).
#: Empty: every broad handler in the package logs why, says why, or is narrowed.
KNOWN_SILENT: dict[str, int] = {}
#: Citations of documents outside the repository, per file, that may stay for now (none).
KNOWN_CITATIONS: dict[str, int] = {}

BROAD = {"Exception", "BaseException"}
LOG_METHODS = {"debug", "info", "warning", "error", "exception", "critical", "log"}
# Built from pieces so that this file does not match itself.
OUTSIDE_CITATION = re.compile(r"\b" + "DESIGN" + r"(\s*§|\.md|\s+section|'s\b)|/work/" + "shared")


def python_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


#: The most lines a module of the package may have. One that passes it holds more than one
#: thing: split it by what it holds (docs/architecture.md, "Length"), not by line count.
LONGEST_MODULE = 500


def _caught(node: ast.expr | None) -> set[str]:
    if node is None:
        return {"BaseException"}  # a bare except
    if isinstance(node, ast.Tuple):
        return set().union(*(_caught(e) for e in node.elts))
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute):
        return {node.attr}
    return set()


def _only_gives_up(body: list[ast.stmt]) -> bool:
    """The handler's body only passes, continues, breaks or returns a name or a constant."""
    for stmt in body:
        if isinstance(stmt, ast.Pass | ast.Continue | ast.Break):
            continue
        if isinstance(stmt, ast.Return) and (stmt.value is None or isinstance(stmt.value, ast.Constant | ast.Name)):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        return False
    return True


def _logs(handler: ast.ExceptHandler) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in LOG_METHODS
               and isinstance(n.func.value, ast.Name) and n.func.value.id in ("log", "logger")
               for n in ast.walk(handler))


def silent_handlers(source: str) -> list[int]:
    """Lines of broad ``except`` handlers (bare, ``Exception``, ``BaseException``) whose body
    only gives up, with no logging call and no ``# why:`` comment in the handler."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ExceptHandler) or not _caught(node.type) & BROAD:
            continue
        if not _only_gives_up(node.body) or _logs(node):
            continue
        end = node.end_lineno or node.lineno
        if any("# why:" in line for line in lines[node.lineno - 1:end]):
            continue
        found.append(node.lineno)
    return found


def logger_problems(path: Path) -> list[str]:
    """A module that logs has one module-level ``log = logging.getLogger(__name__)`` and
    logs through it, never through the root logger."""
    tree = ast.parse(path.read_text())
    loggers = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == "getLogger"]
    problems = []
    if len(loggers) > 1:
        problems.append("more than one getLogger()")
    if loggers and not any(isinstance(s, ast.Assign) and s.value is loggers[0]
                           and ast.unparse(s) == "log = logging.getLogger(__name__)" for s in tree.body):
        problems.append("the logger is not `log = logging.getLogger(__name__)` at module level")
    problems += [f"line {n.lineno} logs through the root logger" for n in ast.walk(tree)
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in LOG_METHODS
                 and isinstance(n.func.value, ast.Name) and n.func.value.id == "logging"]
    return problems


def test_no_broad_except_swallows_silently_and_modules_log_through_their_own_logger():
    # the rule itself: a silent handler is found, a logged, explained or narrow one is not
    silent = "try:\n    f()\nexcept Exception:\n    pass\n"
    logged = "try:\n    f()\nexcept Exception:\n    log.debug('f failed', exc_info=True)\n"
    explained = "try:\n    f()\nexcept Exception:  # why: at interpreter exit logging is gone\n    pass\n"
    narrow = "try:\n    f()\nexcept FileNotFoundError:\n    return None\n"
    bare = "try:\n    f()\nexcept:\n    return\n"
    assert silent_handlers(silent) == [3] and silent_handlers(bare) == [3]
    assert silent_handlers(logged) == silent_handlers(explained) == silent_handlers(narrow) == []
    found = {rel(path): silent_handlers(path.read_text()) for path in python_files()}
    counts = {path: len(lines) for path, lines in found.items() if lines}
    new = {path: sorted(found[path]) for path, n in counts.items() if n > KNOWN_SILENT.get(path, 0)}
    assert not new, (f"broad except handlers that only pass/return (lines): {new}. Log the reason "
                     "(log.debug(..., exc_info=True)) or say why in a '# why:' comment")
    fixed = {path: n for path, n in KNOWN_SILENT.items() if counts.get(path, 0) < n}
    assert not fixed, f"fewer silent handlers than KNOWN_SILENT says, lower it: {fixed}"
    loggers = {rel(path): problems for path in python_files() if (problems := logger_problems(path))}
    assert not loggers, loggers


def test_comments_cite_only_documents_in_the_repository():
    files = [*python_files(), *sorted((ROOT / "tests").rglob("*.py")),
             *sorted(p for p in (ROOT / "labextension" / "src").rglob("*") if p.is_file())]
    counts = Counter()
    for path in files:
        for line in path.read_text(errors="replace").splitlines():
            if OUTSIDE_CITATION.search(line):
                counts[rel(path)] += 1
    assert dict(counts) == KNOWN_CITATIONS, (
        "cite docs/ (e.g. docs/design.md and a section name) instead of a document outside the "
        f"repository: {dict(counts)}")
    assert (ROOT / "docs" / "design.md").is_file()


def test_every_module_of_the_package_is_short_enough_to_read_in_one_sitting():
    lengths = {rel(path): len(path.read_text(encoding="utf-8").splitlines()) for path in python_files()}
    assert len(lengths) > 100 and max(lengths.values()) > LONGEST_MODULE // 2  # the files were read
    long = {path: n for path, n in sorted(lengths.items()) if n > LONGEST_MODULE}
    assert not long, (f"modules over {LONGEST_MODULE} lines: {long}. Move a part that is its own thing to a "
                      "module named for what it holds (re-export its public names from the old place)")


#: A fixed sleep longer than this, in a test, is a wait on wall time (seconds).
LONGEST_SLEEP_S = 0.2
#: The mark that says a longer sleep is part of the scenario (a person reading a card before
#: clicking, a page that answers late), not a wait for something to have happened.
SCENARIO_MARK = "# scenario:"


def _fixed_sleeps(tree: ast.AST) -> list[tuple[int, str, float]]:
    """(line, call, seconds) of each ``time.sleep(N)``, ``asyncio.sleep(N)``, ``sleep(N)`` and
    Playwright ``page.wait_for_timeout(MS)`` whose argument is a number literal."""
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, int | float)):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        value = float(node.args[0].value)
        if name == "sleep":
            found.append((node.lineno, ast.unparse(func), value))
        elif name == "wait_for_timeout":
            found.append((node.lineno, ast.unparse(func), value / 1000))
    return found


def test_tests_wait_on_events_not_on_wall_time():
    """CI runs on 2 loaded cores: a test that sleeps a fixed time for something to happen
    fails whenever the machine is slower than the sleep. Wait on the event meant (the page's
    notice, the kernel's idle, a Future) instead. A longer sleep that is itself the scenario
    says so on its line (or the line above): ``# scenario: <why>``."""
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for lineno, call, seconds in _fixed_sleeps(ast.parse("\n".join(lines))):
            if seconds <= LONGEST_SLEEP_S:
                continue
            near = lines[lineno - 1] + (lines[lineno - 2] if lineno >= 2 else "")
            if SCENARIO_MARK not in near:
                found.append(f"{rel(path)}:{lineno}: {call}({seconds:g} s)")
    assert not found, ("fixed sleeps over 0.2 s in tests: wait on the event instead, or mark a sleep that is "
                       f"the scenario itself with '{SCENARIO_MARK} ...':\n  " + "\n  ".join(found))
