"""A long run's record without a server: what the kernel's IOPub tells of it, and what
``run_cell`` (still running) and ``run_status`` say: compact, secrets redacted."""

from __future__ import annotations

import asyncio

from jupyter_agent.mcp_server.runs import SHOWN_CHARS, RunHandle, RunRegistry, RunState, status_reply, still_running


def text(reply):
    return "\n".join(b["text"] for b in reply["content"] if b["type"] == "text")


def test_a_run_is_waiting_then_running_with_its_outputs_so_far(monkeypatch):
    monkeypatch.setenv("RUNS_SERVICE_TOKEN", "tok-0123456789abcdef")
    run = RunHandle(path="a.ipynb", cell_id="c1", kernel_id="k", owner="me")
    assert run.state is RunState.WAITING and "waits for the user's approval" in text(still_running(run, 30))
    run.saw("execute_input", {"code": "x"})
    run.saw("stream", {"name": "stdout", "text": "step 1 tok-0123456789abcdef\n"})
    run.saw("execute_result", {"data": {"text/plain": "42"}})
    run.saw("display_data", {"data": {"image/png": "AAAA"}})
    run.saw("error", {"ename": "ValueError", "evalue": "bad"})
    said = text(status_reply(run))
    assert run.state is RunState.RUNNING and "running for" in said
    assert "step 1 [redacted RUNS_SERVICE_TOKEN]\n42\n[image/png]\nValueError: bad" in said, said
    assert "tok-0123456789abcdef" not in said


def test_long_outputs_keep_head_and_tail():
    run = RunHandle(path="a.ipynb", cell_id="c1", kernel_id="k", owner="me")
    run.saw("execute_input", {"code": "x"})
    run.saw("stream", {"text": "HEAD" + "x" * 10_000 + "TAIL"})
    said = text(status_reply(run))
    assert "HEAD" in said and "TAIL" in said and "characters left out" in said and len(said) < SHOWN_CHARS + 500


def test_an_ended_run_gives_its_result_and_a_failed_one_its_reason():
    async def go():
        registry = RunRegistry()

        async def answer():
            return {"ok": True, "content": [{"type": "text", "text": "the outputs"}]}

        async def fails():
            raise RuntimeError("The notebook's kernel restarted")

        ended = registry.start(RunHandle(path="a.ipynb", cell_id="c1", kernel_id="k", owner="me"), answer())
        failed = registry.start(RunHandle(path="a.ipynb", cell_id="c2", kernel_id="k", owner="me"), fails())
        assert registry.running("k", "me") == [ended, failed]
        await asyncio.wait({ended.task, failed.task})
        assert registry.running("k", "me") == [] and registry.get(ended.id) is ended
        reply = status_reply(ended)
        assert reply["ok"] and "ended after" in text(reply) and "the outputs" in text(reply)
        reply = status_reply(failed)
        assert not reply["ok"] and "kernel restarted" in reply["error"]

    asyncio.run(go())


def test_the_next_cell_of_a_range_can_be_interrupted_again():
    """run_cells runs several cells under one run: between two cells no interrupt is sent (it
    would hit the kernel's own work), and the next cell's start makes it interruptible again."""
    run = RunHandle(path="a.ipynb", cell_id="cells first..last", kernel_id="k", owner="me")
    run.saw("execute_input", {"code": "a = 1"})
    assert not run.cell_over
    run.saw("status", {"execution_state": "idle"})
    assert run.cell_over  # between cells: nothing to interrupt
    run.saw("execute_input", {"code": "while True: pass"})
    assert not run.cell_over and run.state is RunState.RUNNING
