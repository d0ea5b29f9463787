"""Finding 8.3: no pattern may freeze the kernel.

Glob patterns are matched in linear time (``tools.globmatch``); a Grep runs ripgrep
(linear-time regexes, ``.gitignore`` lines included) in a child process that the time
limit and Stop kill, as a stand-in ``rg`` that never answers shows. Each test also
watches the event loop: a ticker must keep ticking while the search runs (Python's
``re`` holds the GIL, so a backtracking regex in a thread froze the loop as well).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

from jupyter_agent import ToolStart, query
from jupyter_agent.loop.tool_execution import ToolRunEnv, execute_tool_call
from jupyter_agent.loop.tool import ToolContext
from jupyter_agent.tools import Grep
from jupyter_agent.tools.globmatch import compile_glob
from jupyter_agent.tools.search import ripgrep_path
from jupyter_agent.testing import FakeMessagesAPI, response, tool_use

from .conftest import call_tool, make_ctx, text_of

EVIL_GLOB = "*a*a*a*a*a*a*a*a*b"
LONG_NAME = "a" * 60 + ".txt"


class Ticker:
    """Measures the longest gap between event-loop ticks while a block runs."""

    async def __aenter__(self):
        self.longest, self._last = 0.0, time.monotonic()
        self._task = asyncio.ensure_future(self._tick())
        return self

    async def _tick(self):
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            self.longest, self._last = max(self.longest, now - self._last), now

    async def __aexit__(self, *exc):
        self._task.cancel()


async def test_glob_with_many_stars_does_not_backtrack(workspace):
    (workspace / LONG_NAME).write_text("x")
    ctx = make_ctx(workspace, "plan")  # read-only: it runs without asking, even in plan mode
    started = time.monotonic()
    async with Ticker() as ticker:
        result = await call_tool(ctx, "Glob", {"pattern": EVIL_GLOB})
    assert text_of(result) == "No files found"
    assert time.monotonic() - started < 10 and ticker.longest < 1.0


def test_the_matcher_agrees_with_the_glob_rules():
    assert compile_glob(EVIL_GLOB).match("xaaaaaaaayb") and not compile_glob(EVIL_GLOB).match(LONG_NAME)
    assert compile_glob("src/**").match("src/a/b") and not compile_glob("src/**").match("src")
    assert compile_glob("**/x/**/*.py").match("x/a.py") and compile_glob("**/x/**/*.py").match("p/x/q/r/a.py")
    assert compile_glob("a*b*c").match("abc") and not compile_glob("a*b*c").match("acb")
    assert compile_glob(r"\*\*/x.txt").match("**/x.txt") and not compile_glob(r"\*\*/x.txt").match("a/x.txt")


async def test_brace_explosion_is_refused_not_expanded(workspace):
    result = await call_tool(make_ctx(workspace), "Glob", {"pattern": "{a,b}" * 30})
    assert result.get("is_error") and "alternatives" in text_of(result)


def _grep_env(ctx: ToolContext, timeout_s: float) -> ToolRunEnv:
    grep = Grep()
    grep.timeout_s = timeout_s
    return ToolRunEnv(tools_by_name={"Grep": grep}, context=ctx)


@pytest.fixture
def hung_rg(tmp_path, monkeypatch):
    """An ``rg`` that never answers (it waits for a signal): what a search too slow to end is."""
    script = tmp_path / "hung-rg"
    script.write_text(f"#!{sys.executable}\nimport signal\nsignal.pause()\n")
    script.chmod(0o755)
    monkeypatch.setenv("JUPYTER_AGENT_RIPGREP", str(script))
    ripgrep_path.cache_clear()
    yield str(script).encode()
    monkeypatch.undo()
    ripgrep_path.cache_clear()


async def test_a_grep_that_never_ends_is_killed_by_the_time_limit(workspace, hung_rg):
    (workspace / "a.txt").write_text("a" * 40 + "!\n")
    ctx = make_ctx(workspace)
    block = {"type": "tool_use", "id": "t1", "name": "Grep", "input": {"pattern": "(a+)+$"}}
    started = time.monotonic()
    async with Ticker() as ticker:
        result = await execute_tool_call(block, _grep_env(ctx, 1.0))
    assert result["is_error"] and "timed out after 1 s" in text_of(result)
    assert time.monotonic() - started < 5 and ticker.longest < 1.0
    assert not _child_running(hung_rg), "the search process outlived its call"


async def test_ripgrep_finds_it_at_once(workspace):
    (workspace / "a.txt").write_text("a" * 40 + "!\n" + "a" * 40 + "\n")
    ctx = make_ctx(workspace)
    result = await execute_tool_call({"type": "tool_use", "id": "t1", "name": "Grep",
                                      "input": {"pattern": "(a+)+$", "output_mode": "count"}}, _grep_env(ctx, 5.0))
    assert text_of(result).startswith("a.txt:1")


def _child_running(marker: bytes) -> bool:
    """A child process of this one whose command line holds ``marker`` is running."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue  # it ended while we looked
        if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid() and marker in cmdline:
            return True
    return False


async def test_stop_ends_a_running_grep_at_once(workspace, hung_rg):
    (workspace / "a.txt").write_text("a" * 40 + "!\n")
    grep = tool_use("Grep", {"pattern": "(a+)+$"})
    with FakeMessagesAPI([response(grep)]) as api:
        run = query("search", model=api.model(), cwd=workspace)
        stopped = None
        async for event in run:
            if isinstance(event, ToolStart):
                deadline = time.monotonic() + 30
                while not _child_running(hung_rg) and time.monotonic() < deadline:
                    await asyncio.sleep(0.02)  # until the search's process runs
                assert _child_running(hung_rg), "the search never started"
                stopped = time.monotonic()
                run.stop()
        terminal = run.terminal
    assert terminal.reason in ("aborted_tools", "aborted_streaming")
    assert stopped is not None and time.monotonic() - stopped < 3
    assert not _child_running(hung_rg), "the search process outlived the Stop"


async def test_grep_multiline_spans_lines(workspace):
    (workspace / "s.go").write_text("type S struct {\n    a int\n    field string\n}\nother\n")
    ctx = make_ctx(workspace)
    one_line = await call_tool(ctx, "Grep", {"pattern": r"struct \{.*field", "output_mode": "content"})
    assert text_of(one_line) == "No matches found"
    spanning = await call_tool(ctx, "Grep", {"pattern": r"struct \{.*?field", "output_mode": "content",
                                             "multiline": True})
    assert text_of(spanning) == "s.go:1:type S struct {\ns.go:2:    a int\ns.go:3:    field string"


def test_the_regex_fast_path_and_the_segment_walk_agree():
    patterns = ["**", "*.py", "**/*.py", "src/**", "a/**/b", "**/x/*.txt", "a*/b?/c[0-9]", "{a,b}/**/*.{py,md}",
                "a/*", "*/b/**", "**/a*b", r"\*\*/x", "[!a]*/**"]
    paths = ["a.py", "src", "src/a.py", "src/a/b/c.py", "a/b", "a/x/y/b", "x/t.txt", "p/x/t.txt", "ab/bc/c7",
             "a/q/b.md", "b/b/x/a.py", "a/x", "q/b", "q/b/r", "xab", "d/eab", "**/x", "b/c/d"]
    for pattern in patterns:
        matcher = compile_glob(pattern)
        assert matcher._regex is not None, pattern
        for path in paths:
            fast = matcher.match(path)
            matcher_slow = type(matcher)(pattern)
            matcher_slow._regex = None
            assert fast == matcher_slow.match(path), (pattern, path)
