"""Context organisation through the real SDK against the fake API: a session that
outgrows a small window keeps going (old results cleared, then summarised), the API's
``prompt is too long`` leads to one compaction and a retry, the user's words survive
word for word, and a file read before a compaction can be edited after it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent import HookResult, TerminalReason, query
from jupyter_agent.loop.compaction import SUMMARY_REQUEST_MARKER, user_messages_to_keep
from jupyter_agent.loop.context_window import CLEARED_MARKER, ContextBudget, microcompact
from jupyter_agent.loop.events import (
    Checkpoint, Compaction, CompactionKind, CompactionOutcome, CompactionTrigger, RequestStart,
)
from jupyter_agent.loop.messages import ensure_tool_result_pairing
from jupyter_agent.loop.tool import Tool, ToolInput, ToolOutput
from jupyter_agent.testing import FakeMessagesAPI, prompt_too_long, response, text, tool_use

from .conftest import Echo, run_query

PROMPT = "Read the twelve reports and tell me which one mentions penguins. Keep my wording: zebra-42."


class PageInput(ToolInput):
    n: int


class Page(Tool):
    """Read-only: returns about 27 KB of text (about 7,000 tokens) for page ``n``."""

    name = "Page"
    description = "Return a long page."
    Input = PageInput

    def is_read_only(self, input: Any) -> bool:
        return True

    async def call(self, input: PageInput, context, prepared) -> ToolOutput:
        return ToolOutput(content=f"page {input.n}\n" + f"line of report {input.n} " * 1_600)


def is_summary_request(body: dict) -> bool:
    return SUMMARY_REQUEST_MARKER in json.dumps(body["messages"][-1])


def session(turns: list[Any], summary: str = "Summary: pages were read; none mentions penguins yet."):
    """A script that answers every request: a summary request gets ``summary``, any other
    the next of ``turns``."""
    queue = list(turns)

    def answer(body: dict) -> Any:
        return response(text(summary)) if is_summary_request(body) else queue.pop(0)

    return [answer] * (len(turns) * 2)


def requests_after_summary(api: FakeMessagesAPI) -> list[dict]:
    bodies = [r.body for r in api.messages_requests]
    first = next(i for i, b in enumerate(bodies) if is_summary_request(b))
    return [b for b in bodies[first + 1:] if not is_summary_request(b)]


async def test_a_session_several_times_the_window_completes(monkeypatch):
    monkeypatch.setenv("JUPYTER_AGENT_CONTEXT_WINDOW", "30000")
    turns = [response(tool_use("Page", {"n": n})) for n in range(12)] + [response(text("Report 11."))]
    with FakeMessagesAPI(session(turns), strict=False, context_window=30_000) as api:
        run = run_query(api, PROMPT, [Page()])
        events = [e async for e in run]
        assert [r.error for r in api.requests if r.outcome == "prompt_too_long"] == []
        assert api.rejections == []  # no orphan tool_use or tool_result reached the API
        after = requests_after_summary(api)
    assert run.terminal.reason == TerminalReason.COMPLETED
    summaries = [e for e in events if isinstance(e, Compaction) and e.kind is CompactionKind.SUMMARY]
    assert summaries and all(e.outcome is CompactionOutcome.COMPACTED for e in summaries)
    assert all(e.tokens_after < e.tokens_before for e in summaries)
    assert after and all(PROMPT in json.dumps(body["messages"]) for body in after)  # word for word
    assert [e.context for e in events if isinstance(e, RequestStart)][-1].window == 30_000
    assert run.state.transition is not None
    _, repairs = ensure_tool_result_pairing(list(run.state.messages))
    assert repairs == []


async def test_old_results_are_cleared_first_and_stay_cleared():
    turns = [response(tool_use("Page", {"n": n})) for n in range(8)] + [response(text("Done."))]
    with FakeMessagesAPI(turns, context_window=60_000) as api:
        run = run_query(api, PROMPT, [Page()], context_window=60_000)
        events = [e async for e in run]
        bodies = [json.dumps(r.body["messages"]) for r in api.messages_requests]
    assert run.terminal.reason == TerminalReason.COMPLETED
    cleared = [e for e in events if isinstance(e, Compaction)]
    assert cleared and {(e.kind, e.outcome) for e in cleared} == {(CompactionKind.MICROCOMPACT,
                                                                   CompactionOutcome.COMPACTED)}
    assert not any(SUMMARY_REQUEST_MARKER in body for body in bodies)  # no model call was needed
    counts = [body.count(CLEARED_MARKER) for body in bodies]
    assert counts == sorted(counts) and counts[-1] >= 1  # once cleared, cleared in every later request
    assert "Call Page again" in bodies[-1]


async def test_prompt_too_long_compacts_once_and_retries():
    turns = [response(tool_use("Page", {"n": n})) for n in range(6)] + [response(text("Done."))]
    # the loop believes in a big window; the API enforces a small one
    with FakeMessagesAPI(session(turns), strict=False, context_window=30_000) as api:
        run = run_query(api, PROMPT, [Page()], context_window=1_000_000)
        events = [e async for e in run]
        refused = [r for r in api.requests if r.outcome == "prompt_too_long"]
    assert run.terminal.reason == TerminalReason.COMPLETED
    assert refused and refused[0].error.startswith("prompt is too long: ")
    reactive = [e for e in events if isinstance(e, Compaction) and e.trigger is CompactionTrigger.REACTIVE]
    assert reactive and reactive[0].outcome is CompactionOutcome.COMPACTED
    assert reactive[0].tokens_before == int(refused[0].error.split()[4])  # the API's own count


async def test_a_compaction_is_a_step_4_checkpoint_the_stepper_shows(tools):
    """The seed's context organisation in the four steps: after a compaction the loop
    stops at step 4 with the transition that says why it goes round, and the State it
    goes round from is the summarised history."""
    script = [response(tool_use("Echo", {"text": "a"})), prompt_too_long(), response(text("A summary.")),
              response(text("Done."))]
    with FakeMessagesAPI(script) as api:
        run = run_query(api, "go", tools, checkpoints=True)
        events = [e async for e in run]
    assert run.terminal.reason == TerminalReason.COMPLETED
    step4 = [e for e in events if isinstance(e, Checkpoint) and e.step == 4]
    assert [c.transition.reason for c in step4] == ["next_turn", "reactive_compact_retry"]
    assert "A summary." in json.dumps(step4[-1].state.messages)


async def test_a_second_refusal_ends_prompt_too_long_with_advice(tools):
    script = [response(tool_use("Echo", {"text": "a"})), prompt_too_long(), response(text("A summary.")),
              prompt_too_long()]
    with FakeMessagesAPI(script) as api:
        run = run_query(api, "go", tools)
        events = [e async for e in run]
        retried = api.messages_requests[3].body
    assert run.terminal.reason == TerminalReason.PROMPT_TOO_LONG
    assert "%agent new" in run.terminal.message
    assert "A summary." in json.dumps(retried["messages"])  # the retry went from the summary
    assert [e.trigger for e in events if isinstance(e, Compaction)] == [CompactionTrigger.REACTIVE]


async def test_read_then_compaction_then_edit_without_a_new_read(tmp_path: Path):
    workspace = Path(os.path.realpath(tmp_path))
    target = workspace / "notes.txt"
    target.write_text("alpha\nbeta\n")
    read = tool_use("Read", {"file_path": str(target)})
    edit = tool_use("Edit", {"file_path": str(target), "old_string": "gamma", "new_string": "delta"})

    def summarise(body: dict) -> Any:
        assert is_summary_request(body)
        target.write_text("alpha\ngamma\n")  # changed after the Read: only a fresh read lets Edit on
        return response(text("Read notes.txt; the user wants gamma renamed."))

    script = [response(read), prompt_too_long(), summarise, response(edit), response(text("Done."))]
    with FakeMessagesAPI(script) as api:
        run = query("Rename gamma to delta in notes.txt.", model=api.model(), cwd=workspace,
                    permission_mode="acceptEdits")
        events = [e async for e in run]
        retry = json.dumps(api.messages_requests[3].body["messages"])
        edit_result = json.dumps(api.messages_requests[4].body["messages"][-1])
    assert run.terminal.reason == TerminalReason.COMPLETED
    assert "gamma" in retry and "notes.txt" in retry  # the file as it is now, in the context
    assert "is_error" not in edit_result, edit_result
    assert target.read_text() == "alpha\ndelta\n"
    compaction = next(e for e in events if isinstance(e, Compaction))
    assert compaction.files_reread == ("notes.txt",) or compaction.files_reread[0].endswith("notes.txt")


async def test_pre_compact_hook_adds_instructions_or_vetoes(tools):
    def keep_plots(compact_input):
        return HookResult(message="Keep the plotting details.")

    script = [response(tool_use("Echo", {"text": "a"})), prompt_too_long(), response(text("A summary.")),
              response(text("Done."))]
    with FakeMessagesAPI(script) as api:
        run = run_query(api, "go", tools, hooks={"PreCompact": [keep_plots]})
        await run.wait()
        summary_request = json.dumps(api.messages_requests[2].body["messages"][-1])
    assert run.terminal.reason == TerminalReason.COMPLETED
    assert "Keep the plotting details." in summary_request

    def veto(compact_input):
        return HookResult(decision="deny", message="not now")

    with FakeMessagesAPI(script[:2]) as api:
        run = run_query(api, "go", tools, hooks={"PreCompact": [veto]})
        events = [e async for e in run]
    assert run.terminal.reason == TerminalReason.PROMPT_TOO_LONG
    vetoed = [e for e in events if isinstance(e, Compaction)]
    assert [(e.outcome, e.detail) for e in vetoed] == [(CompactionOutcome.VETOED, "not now")]


def _history(n_results: int, size: int) -> list[dict]:
    history: list[dict] = [{"role": "user", "content": "start"}]
    for i in range(n_results):
        history.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{i}", "name": "Page", "input": {"n": i}}]})
        history.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{i}", "content": "x" * size * (1 + i % 3)}]})
    return history


def test_microcompact_clears_the_largest_old_results_and_keeps_the_latest():
    history = _history(8, 4_000)
    out, cleared, saved = microcompact(history, {"Page": Page()}, size=20_000, target=12_000)
    results = [m["content"][0] for m in out if m["role"] == "user" and isinstance(m["content"], list)]
    gone = [r["tool_use_id"] for r in results if r["content"].startswith(CLEARED_MARKER)]
    assert cleared == len(gone) and saved >= 8_000 and gone
    assert not {"t5", "t6", "t7"} & set(gone)  # the latest three stay whole
    assert all("Call Page again" in r["content"] for r in results if r["tool_use_id"] in gone)
    assert out[0] is history[0]  # unchanged messages are the same objects (cache bytes)
    assert microcompact(history, {"Page": Page()}, size=20_000, target=12_000)[0] == out  # deterministic
    assert microcompact(history, {}, size=1_000, target=12_000)[1] == 0  # under target: nothing


def test_user_messages_are_kept_newest_first_within_their_room():
    history = [{"role": "user", "content": f"message {i} " + "w" * 400} for i in range(10)]
    kept = user_messages_to_keep(history, room=320)
    assert kept == history[-3:]  # oldest first, the latest always
    assert user_messages_to_keep(history[:1], room=1) == history[:1]


@pytest.mark.parametrize("window", [30_000, 200_000, 1_000_000])
def test_thresholds_leave_room_for_the_answer(window):
    budget = ContextBudget(window, max_tokens=8192)
    assert budget.microcompact_target < budget.microcompact_at < budget.compact_at
    assert budget.compact_at + budget.answer_room < window


async def test_compact_now_keeps_the_users_words_and_the_conversation_goes_on(tmp_path: Path):
    from jupyter_agent import Conversation

    script = [response(tool_use("Echo", {"text": "a"})), response(text("First answer.")),
              response(text("Summary of the first run.")), response(text("Second answer."))]
    with FakeMessagesAPI(script) as api:
        conv = Conversation(model=api.model(), tools=[Echo()], cwd=tmp_path)
        await conv.send("Please echo a, my-words-1.").wait()
        compacted = conv.compact("keep the echo details")
        events = [e async for e in compacted]
        summary_request = json.dumps(api.messages_requests[2].body["messages"][-1])
        second = await conv.send("And now?").wait()
        sent = json.dumps(api.messages_requests[3].body["messages"])
        await conv.model.aclose()
    assert compacted.terminal.reason == TerminalReason.COMPLETED
    assert [(e.trigger, e.outcome) for e in events if isinstance(e, Compaction)] == [
        (CompactionTrigger.MANUAL, CompactionOutcome.COMPACTED)]
    assert "keep the echo details" in summary_request
    assert second.reason == TerminalReason.COMPLETED
    assert "Summary of the first run." in sent and "Please echo a, my-words-1." in sent
    assert "tool_use" not in sent  # the compacted part is gone, pairs and all
