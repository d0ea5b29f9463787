"""A tool that changes something runs once, even when the stream breaks (issue 7.5).

While the model streams, only calls that change nothing start; a call that changes
something waits until the model has moved on (the next block started, or
``stop_reason: tool_use``), because a cut-off reply closes its last block too. When
a stream breaks after such a call started, the finished part of the response and the
call's result stay in the history and the loop goes on from there; nothing that had
an effect is thrown away and asked for again.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from jupyter_agent import ModelRetry, Notice, StreamEvent, TerminalReason, ToolStart, query
from jupyter_agent.loop.permission_result import PermissionAllow
from jupyter_agent.loop.tool import ToolCheckPolicy
from jupyter_agent.notebook import KernelPool, ToolSession, close_session, tool_session
from jupyter_agent.testing import (
    FakeMessagesAPI, cut_stream, pause, response, stall, stream_error, text, tool_use,
)
from jupyter_agent.replay.sse import build_events
from jupyter_agent.loop.services import Services
from jupyter_agent.loop.tool import ToolContext

from .conftest import model_for, run_query


def events_through(resp, kind: str, index: int) -> int:
    """How many SSE events the fake API sends up to and including the ``kind`` event of
    block ``index`` (what ``cut_stream(after=...)`` counts)."""
    events = [e for e in build_events(resp, model="m", message_id="msg", usage={}) if isinstance(e, tuple)]
    for n, (name, data) in enumerate(events):
        if name == kind and data.get("index") == index:
            return n + 1
    raise AssertionError(f"no {kind} for block {index}")


def assert_paired(messages) -> None:
    """Every tool_use has exactly one tool_result, in the very next message."""
    for i, message in enumerate(messages):
        uses = [b["id"] for b in message["content"] if isinstance(message["content"], list)
                and b.get("type") == "tool_use"] if message["role"] == "assistant" else []
        if not uses:
            continue
        following = messages[i + 1]
        results = Counter(b["tool_use_id"] for b in following["content"] if b.get("type") == "tool_result")
        assert set(results) == set(uses) and all(n == 1 for n in results.values()), (uses, results)


def tool_uses(messages) -> list[dict]:
    return [b for m in messages if m["role"] == "assistant" and isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_use"]


def cell_sources(path: Path) -> list[str]:
    cells = json.loads(path.read_text())["cells"]
    return [c["source"] if isinstance(c["source"], str) else "".join(c["source"]) for c in cells]


@pytest.fixture
def notebook(tmp_path: Path, jupyter_dirs) -> tuple[Path, Path]:
    """A notebook whose cell ``count`` appends one ``x`` to ``runs.txt`` per run."""
    work = tmp_path / "work"
    work.mkdir()
    runs = work / "runs.txt"
    cells = [new_code_cell("warm = 1", id="warm"),
             new_code_cell(f"open({str(runs)!r}, 'a').write('x')", id="count")]
    path = work / "analysis.ipynb"
    path.write_text(nbformat.writes(new_notebook(cells=cells)) + "\n")
    return path, runs


async def run_notebook_script(api, path: Path, max_retries: int = 2):
    kernels = KernelPool(transport="ipc", kernel_name="python3")
    context = ToolContext(cwd=path.parent, services=Services(ToolSession(kernels=kernels)))
    try:
        run = query("count", model=model_for(api, max_retries=max_retries), cwd=path.parent,
                    permission_mode="acceptEdits", context=context,
                    can_use_tool=lambda name, input, ask: PermissionAllow())
        events = [e async for e in run]
    finally:
        await close_session(tool_session(context))
    return run, events


def read_and_warm(path: Path):
    """Turn 1: read the notebook and run a cell, so the kernel is up (a cell run during
    the later pause would then surely happen before the stream breaks)."""
    return response(tool_use("Read", {"file_path": str(path)}),
                    tool_use("NotebookRun", {"notebook_path": str(path), "cell_id": "warm"}))


async def test_a_cut_right_after_a_notebook_run_block_runs_the_cell_once(notebook):
    path, runs = notebook
    run_input = {"notebook_path": str(path), "cell_id": "count"}
    # The stream stops 1 s after the NotebookRun block closed, with no further block:
    # a tool started at its content_block_stop would have run the cell by then.
    broken = response(tool_use("NotebookRun", run_input), pause(1.0), text("It ran."))
    cut = cut_stream(after=events_through(broken, "content_block_stop", 0), base=broken)
    asked_again = tool_use("NotebookRun", run_input)  # the retried request's answer
    script = [read_and_warm(path), cut, response(asked_again), response(text("Done."))]
    with FakeMessagesAPI(script) as api:
        run, events = await run_notebook_script(api, path)
        assert api.rejections == []
    assert run.terminal.reason == TerminalReason.COMPLETED
    assert any(isinstance(e, ModelRetry) for e in events)
    assert runs.read_text() == "x"  # the cell ran once
    assert_paired(run.state.messages)
    runs_in_history = [b["id"] for b in tool_uses(run.state.messages) if b["input"] == run_input]
    assert runs_in_history == [asked_again["id"]]


async def test_a_stall_right_after_a_notebook_edit_insert_inserts_once(notebook):
    path, _ = notebook
    insert_input = {"notebook_path": str(path), "cell_id": "count", "edit_mode": "insert",
                    "cell_type": "markdown", "new_source": "## Results"}
    broken = response(tool_use("NotebookEdit", insert_input), text("Inserted."))
    stalled = stall(after=events_through(broken, "content_block_stop", 0), seconds=5, base=broken)
    script = [response(tool_use("Read", {"file_path": str(path)})), stalled,
              response(tool_use("NotebookEdit", insert_input)), response(text("Done."))]
    with FakeMessagesAPI(script) as api:
        run = query("add a heading", model=model_for(api, stall_timeout_s=2.5), cwd=path.parent,
                    permission_mode="acceptEdits")
        events = [e async for e in run]
        assert api.rejections == []
    assert run.terminal.reason == TerminalReason.COMPLETED
    assert any(isinstance(e, ModelRetry) for e in events)
    sources = cell_sources(path)
    assert sources.count("## Results") == 1  # inserted once
    assert_paired(run.state.messages)


async def test_a_stream_cut_after_a_cell_ran_keeps_the_call_and_goes_on(notebook):
    """The next block had started, so the NotebookRun ran; then the stream broke. The
    finished part of the response and the cell's result stay in the history, and the
    next request goes on from there instead of asking for the cell again."""
    path, runs = notebook
    run_call = tool_use("NotebookRun", {"notebook_path": str(path), "cell_id": "count"})
    said = text("Let me run the counting cell.")
    broken = response(said, run_call, pause(1.0), text("While it runs, here is a long explanation " * 20))
    cut = cut_stream(after=events_through(broken, "content_block_start", 2) + 3, base=broken)
    never_sent = response(tool_use("NotebookRun", {"notebook_path": str(path), "cell_id": "count"}))
    script = [read_and_warm(path), cut, response(text("Done: it ran once.")), never_sent]
    with FakeMessagesAPI(script, strict=False) as api:
        run, events = await run_notebook_script(api, path)
        requests = [r.body for r in api.requests]
        assert api.rejections == []
    assert run.terminal.reason == TerminalReason.COMPLETED
    assert runs.read_text() == "x"
    assert len(requests) == 3  # no identical retry of the broken request was sent
    assert not any(isinstance(e, ModelRetry) for e in events)
    assert any(isinstance(e, Notice) and e.kind == "partial_response_kept" for e in events)
    kept, results = requests[2]["messages"][-2], requests[2]["messages"][-1]
    assert kept["role"] == "assistant" and [b["type"] for b in kept["content"]] == ["text", "tool_use"]
    assert kept["content"][0]["text"] == said["text"] and kept["content"][1]["id"] == run_call["id"]
    assert [b["tool_use_id"] for b in results["content"]] == [run_call["id"]]
    assert not results["content"][0].get("is_error")
    assert_paired(run.state.messages)
    assert run.state.turn_count == 3 and run.state.transition.reason == "partial_response_kept"


async def test_a_call_held_when_the_stream_broke_gets_an_error_result(notebook):
    """Two edits: the first was released when the second block started, the second
    was still held when the stream broke. The first's effect is kept; the second never
    ran and says so, so the model can ask again."""
    path, _ = notebook
    first = tool_use("NotebookEdit", {"notebook_path": str(path), "cell_id": "count", "edit_mode": "insert",
                                      "cell_type": "markdown", "new_source": "## One"})
    second = tool_use("NotebookEdit", {"notebook_path": str(path), "cell_id": "count", "edit_mode": "insert",
                                       "cell_type": "markdown", "new_source": "## Two"})
    broken = response(first, second, pause(0.5), text("tail"))
    cut = cut_stream(after=events_through(broken, "content_block_stop", 1), base=broken)
    with FakeMessagesAPI([response(tool_use("Read", {"file_path": str(path)})), cut,
                          response(text("ok"))], strict=False) as api:
        run = query("two headings", model=model_for(api), cwd=path.parent, permission_mode="acceptEdits")
        await run.wait()
        last = api.requests[-1].body["messages"][-1]["content"]
        assert api.rejections == []
    sources = cell_sources(path)
    assert sources.count("## One") == 1 and "## Two" not in sources
    by_id = {b["tool_use_id"]: b for b in last}
    assert not by_id[first["id"]].get("is_error")
    assert by_id[second["id"]]["is_error"] and "Ask for it again" in by_id[second["id"]]["content"]
    assert_paired(run.state.messages)


class Stamped:
    """The real model, noting when the loop received each stream event (first of a kind)."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.seen = inner, inner.name, {}

    async def stream(self, request):
        async for event in self.inner.stream(request):
            if isinstance(event, StreamEvent):
                self.seen.setdefault((event.type, event.index), time.perf_counter())
            yield event


async def test_read_only_calls_start_while_streaming_and_writes_wait_for_the_model(tools, timeline, allow_all):
    read = tool_use("Sleep", {"seconds": 0.01, "label": "read"})
    write = tool_use("Change", {"seconds": 0.01, "label": "write"})
    last_write = tool_use("Change", {"seconds": 0.01, "label": "last"})
    script = [response(read, pause(0.5), write, pause(0.5), text("more"), last_write, pause(0.5)),
              response(text("ok"))]
    with FakeMessagesAPI(script) as api:
        model = Stamped(model_for(api))
        run = query("go", model=model, tools=tools, permissions=ToolCheckPolicy(), can_use_tool=allow_all)
        assert (await run.wait()).reason == TerminalReason.COMPLETED
    span, seen = {k: v[0] for k, v in timeline.spans.items()}, model.seen
    # the read-only call started at its block's stop, before the next block began
    assert seen[("content_block_stop", 0)] < span["read"] < seen[("content_block_start", 1)]
    # the write waited for the next block to start (not its own stop, 0.5 s before)...
    assert span["write"] > seen[("content_block_start", 2)]
    # ...and the last write for message_delta's stop_reason: tool_use
    assert span["last"] > seen[("message_delta", None)]


async def test_a_write_started_by_stop_reason_tool_use_is_kept_when_message_stop_never_comes(tools, timeline,
                                                                                           allow_all):
    write = tool_use("Change", {"seconds": 0.01, "label": "write"})
    full = response(write)
    cut = cut_stream(after=events_through(full, "content_block_stop", 0) + 1, base=full)  # after message_delta
    with FakeMessagesAPI([cut, response(text("ok"))], strict=False) as api:
        run = run_query(api, "go", tools, can_use_tool=allow_all)
        events = [e async for e in run]
        assert api.rejections == [] and len(api.requests) == 2
    assert "write" in timeline.spans
    assert [e.tool_use_id for e in events if isinstance(e, ToolStart)] == [write["id"]]
    assert run.terminal.reason == TerminalReason.COMPLETED
    assert run.state.transition.reason == "partial_response_kept"
    assert_paired(run.state.messages)
    assert [b["id"] for b in tool_uses(run.state.messages)] == [write["id"]]


async def test_a_fallback_after_a_write_ran_keeps_it_and_goes_on_with_the_other_model(tools, timeline, allow_all):
    write = tool_use("Change", {"seconds": 0.01, "label": "write"})
    full = response(write, text("and then a long story " * 30))
    broken = stream_error(after=events_through(full, "content_block_start", 1) + 2, base=full)
    with FakeMessagesAPI([broken, response(text("ok"))], strict=False) as api:
        run = run_query(api, "go", tools, can_use_tool=allow_all,
                        model_options={"fallback_model": "claude-fallback", "fallback_after": 1})
        events = [e async for e in run]
        models = [r.body["model"] for r in api.requests]
        assert api.rejections == []
    assert run.terminal.reason == TerminalReason.COMPLETED
    assert models == ["claude-test", "claude-fallback"]  # the next request, on the fallback model
    assert [e.tool_use_id for e in events if isinstance(e, ToolStart)] == [write["id"]]
    notice = next(e for e in events if isinstance(e, Notice) and e.kind == "partial_response_kept")
    assert "claude-fallback" in notice.text
    assert [b["id"] for b in tool_uses(run.state.messages)] == [write["id"]]
    assert_paired(run.state.messages)


async def test_the_real_read_starts_while_streaming_and_the_real_write_waits(tmp_path):
    (tmp_path / "a.txt").write_text("alpha\n")
    target = tmp_path / "b.txt"
    context = ToolContext(cwd=tmp_path)
    script = [response(tool_use("Read", {"file_path": "a.txt"}), pause(0.3),
                       tool_use("Write", {"file_path": "b.txt", "content": "beta"}), pause(0.3), text("Done.")),
              response(text("ok"))]
    seen: dict[int, tuple[bool, bool]] = {}

    class Watching(Stamped):
        async def stream(self, request):
            async for event in self.inner.stream(request):
                if isinstance(event, StreamEvent) and event.type == "content_block_start":
                    # what had happened by the time the model began block `index`
                    seen[event.index] = (str(tmp_path / "a.txt") in context.read_file_state, target.exists())
                yield event

    with FakeMessagesAPI(script) as api:
        run = query("copy", model=Watching(model_for(api)), cwd=tmp_path, context=context,
                    permission_mode="acceptEdits")
        assert (await run.wait()).reason == TerminalReason.COMPLETED
    assert seen[1] == (True, False)  # Read ran during the pause after its block
    assert seen[2] == (True, False)  # Write had not run during the pause after its block
    assert target.read_text() == "beta"  # it ran once the next block began
