"""Compaction that fits any window, through the real SDK against the fake Messages API.

A new user's session: twelve real files of about 6,000 tokens each on disk, read one by one
with the real Read tool (the default tools, the default system prompt), then an answer, in
an 8k, 16k or 30k window the fake API enforces (HTTP 400 ``prompt is too long: N tokens > M
maximum``, counted as its usage would be). The run must complete with at most one request
over the window, the user's words in every later request, every ``tool_use`` paired. Also:
the API refuses at 30k a run that assumed 200k (the window is learned, the run recovers), and
the user's own words alone too long for the window end ``prompt_too_long`` saying so.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent import TerminalReason, query
from jupyter_agent.loop.compaction import SUMMARY_REQUEST_MARKER
from jupyter_agent.loop.context_window import ContextBudget
from jupyter_agent.loop.events import (
    Compaction, CompactionKind, CompactionOutcome, CompactionTrigger, ContextNotice, Notice, RequestStart,
)
from jupyter_agent.loop.messages import ensure_tool_result_pairing
from jupyter_agent.loop.tool_execution import WINDOW_CUT_NOTE
from jupyter_agent.replay.validation import prompt_tokens
from jupyter_agent.testing import FakeMessagesAPI, http_error, prompt_too_long, response, text, tool_use
from jupyter_agent.view.labels import end_explanation, end_title

PROMPT = ("Read the twelve reports report_00.txt to report_11.txt one by one and tell me which one "
          "mentions penguins. Keep my wording: zebra-42.")
FILES = 12
SUMMARY = "Summary: the reports read so far mention no penguins. Next: read the next report."
DOCS = Path(__file__).resolve().parents[2] / "docs" / "context.md"


def write_reports(folder: Path) -> list[Path]:
    """Twelve files of about 24,000 characters (about 6,000 tokens) each."""
    paths = []
    for n in range(FILES):
        lines = [f"report {n} line {i}: the quarterly figures went up and down as expected" for i in range(330)]
        path = folder / f"report_{n:02d}.txt"
        path.write_text("\n".join(lines) + "\n")
        paths.append(path)
    return paths


def is_summary_request(body: dict[str, Any]) -> bool:
    return SUMMARY_REQUEST_MARKER in json.dumps(body["messages"][-1])


def scripted(turns: list[Any], limit: int | None = None, refusal: str = "") -> list[Any]:
    """The model: a summary request gets a summary, any other the next of ``turns``. With
    ``limit``, a request over it is refused with ``refusal`` instead (a server that gives no
    numbers), without consuming a turn."""
    queue = list(turns)

    def answer(body: dict[str, Any]) -> Any:
        if limit is not None and prompt_tokens(body) > limit:
            return http_error(400, message=refusal)
        return response(text(SUMMARY)) if is_summary_request(body) else queue.pop(0)

    return [answer] * (4 * len(turns))


def reads(paths: list[Path]) -> list[Any]:
    return [response(tool_use("Read", {"file_path": str(p)})) for p in paths] + [
        response(text("None of the twelve mentions penguins."))]


def workspace(tmp_path: Path) -> Path:
    return Path(os.path.realpath(tmp_path))


@pytest.mark.parametrize(("window", "density"), [(8_000, 1.0), (16_000, 1.0), (30_000, 1.0), (32_000, 1.0),
                                                 (16_000, 1.4), (30_000, 1.4)])
async def test_twelve_files_complete_in_a_small_window(window, density, tmp_path, monkeypatch):
    """``density``: the API counts 1.4 tokens where the agent estimates one (code, another
    language): the agent learns it from the usage, and its budgets follow."""
    folder = workspace(tmp_path)
    paths = write_reports(folder)
    assert all(5_500 < len(p.read_text()) / 4 < 6_500 for p in paths)  # about 6k tokens each
    monkeypatch.setenv("JUPYTER_AGENT_CONTEXT_WINDOW", str(window))  # as a new user sets it
    with FakeMessagesAPI(scripted(reads(paths)), strict=False, context_window=window, token_density=density) as api:
        run = query(PROMPT, model=api.model(), cwd=folder)
        events = [e async for e in run]
        refused = [r for r in api.requests if r.outcome == "prompt_too_long"]
        bodies = [r.body for r in api.messages_requests]
        assert api.rejections == []  # no orphan tool_use or tool_result ever reached the API
        assert api.problems == []
    assert run.terminal.reason == TerminalReason.COMPLETED, run.terminal.message
    assert len(refused) <= 1
    assert all(PROMPT in json.dumps(body["messages"]) for body in bodies)  # word for word, every request
    # every request fits with its answer: the prompt and max_tokens together stay in the window
    assert all(round(prompt_tokens(body) * density) + body["max_tokens"] <= window for body in bodies)
    summaries = [e for e in events if isinstance(e, Compaction) and e.kind is CompactionKind.SUMMARY]
    assert summaries and all(e.outcome is CompactionOutcome.COMPACTED for e in summaries)
    # every file reached the model (whole or cut to fit): it read them all, one by one
    seen = "\n".join(json.dumps(body["messages"]) for body in bodies)
    assert [n for n in range(FILES) if f"report {n} line 0:" not in seen] == []
    assert {e.context.window for e in events if isinstance(e, RequestStart)} == {window}
    _, repairs = ensure_tool_result_pairing(list(run.state.messages))
    assert repairs == []
    if window < 16_000:  # a 6k-token file does not fit beside the rest: it was cut, with a way to the rest
        assert WINDOW_CUT_NOTE.split(":")[0] in seen and "Read with offset and limit" in seen


@pytest.mark.parametrize("density", [1.0, 1.4])
async def test_the_api_refuses_at_30k_a_run_that_assumed_200k(density, tmp_path):
    folder = workspace(tmp_path)
    paths = write_reports(folder)
    with FakeMessagesAPI(scripted(reads(paths)), strict=False, context_window=30_000, token_density=density) as api:
        run = query(PROMPT, model=api.model(), cwd=folder, context_window=200_000)
        events = [e async for e in run]
        requests = list(api.requests)
        assert api.rejections == []
    assert run.terminal.reason == TerminalReason.COMPLETED, run.terminal.message
    refused = [i for i, r in enumerate(requests) if r.outcome == "prompt_too_long"]
    assert len(refused) == 1
    learned = [e for e in events if isinstance(e, Notice) and e.kind == ContextNotice.WINDOW_LEARNED]
    assert len(learned) == 1 and "30,000" in learned[0].text
    reactive = [e for e in events if isinstance(e, Compaction) and e.trigger is CompactionTrigger.REACTIVE]
    assert [e.outcome for e in reactive] == [CompactionOutcome.COMPACTED]
    assert reactive[0].tokens_before == int(requests[refused[0]].error.split()[4])  # the API's own count
    assert reactive[0].window == 30_000  # the summary request fitted what the API accepts
    windows = [e.context.window for e in events if isinstance(e, RequestStart)]
    assert windows[0] == 200_000 and windows[-1] == 30_000  # learned for the rest of the run
    later = [r.body for r in requests[refused[0] + 1:]]
    assert later and all(PROMPT in json.dumps(body["messages"]) for body in later)
    assert all(round(prompt_tokens(body) * density) <= 30_000 for body in later)


async def test_a_refusal_without_numbers_is_learned_from_what_the_api_accepted(tmp_path):
    """A local server says only that the prompt is too long: the window is taken from the
    largest prompt it accepted (or ¾ of the refused one), and the run recovers."""
    folder = workspace(tmp_path)
    paths = write_reports(folder)
    script = scripted(reads(paths), limit=30_000, refusal="prompt is too long for the context size")
    with FakeMessagesAPI(script, strict=False) as api:
        run = query(PROMPT, model=api.model(), cwd=folder, context_window=200_000)
        events = [e async for e in run]
        bodies = [(r.body, r.outcome) for r in api.requests]
    assert run.terminal.reason == TerminalReason.COMPLETED, run.terminal.message
    assert sum(outcome == "http_error" for _, outcome in bodies) == 1
    learned = [e for e in events if isinstance(e, Notice) and e.kind == ContextNotice.WINDOW_LEARNED]
    window = [e.context.window for e in events if isinstance(e, RequestStart)][-1]
    assert len(learned) == 1 and 20_000 < window <= 30_000


async def test_the_users_words_alone_too_long_end_prompt_too_long_saying_so(tmp_path):
    long_prompt = "Summarise this log, zebra-42:\n" + "log line with some words in it\n" * 1_200  # ~9k tokens
    with FakeMessagesAPI([], context_window=8_000) as api:
        run = query(long_prompt, model=api.model(), cwd=workspace(tmp_path), context_window=8_000)
        events = [e async for e in run]
        sent = len(api.messages_requests)
    assert run.terminal.reason == TerminalReason.PROMPT_TOO_LONG
    assert run.terminal.error == ContextNotice.USER_WORDS_TOO_LONG.value
    notices = [e for e in events if isinstance(e, Notice) and e.kind == ContextNotice.USER_WORDS_TOO_LONG]
    assert len(notices) == 1 and run.terminal.message.startswith(notices[0].text)  # then what to do
    assert "8,000" in run.terminal.message and "read it in parts" in run.terminal.message
    assert sent == 0  # known too long: nothing was sent
    # the fronts choose their words by the typed value
    assert end_title(run.terminal) == "Message too long"
    assert "read it in parts" in end_explanation(run.terminal)


async def test_the_users_words_too_long_for_a_window_learned_from_the_api(tmp_path):
    long_prompt = "Summarise this log, zebra-42:\n" + "log line with some words in it\n" * 900  # ~7k tokens
    with FakeMessagesAPI([], context_window=8_000) as api:
        run = query(long_prompt, model=api.model(), cwd=workspace(tmp_path), context_window=200_000)
        events = [e async for e in run]
        outcomes = [r.outcome for r in api.requests]
    assert outcomes == ["prompt_too_long"]  # one refusal, then no compaction can help: it says why
    assert run.terminal.reason == TerminalReason.PROMPT_TOO_LONG
    assert run.terminal.error == ContextNotice.USER_WORDS_TOO_LONG.value
    assert [e.kind for e in events if isinstance(e, Notice)] == [ContextNotice.WINDOW_LEARNED,
                                                                 ContextNotice.USER_WORDS_TOO_LONG]
    assert not [e for e in events if isinstance(e, Compaction)]


FIXED = 4_000  # about what the default tools and system prompt weigh


@pytest.mark.parametrize("window", [8_000, 16_000, 32_000, 200_000])
def test_every_budget_scales_with_the_window(window):
    budget = ContextBudget(window, max_tokens=8192, fixed=FIXED)
    assert budget.compact_at + budget.answer_room + budget.margin == window
    assert budget.fixed < budget.microcompact_target < budget.microcompact_at < budget.compact_at
    # a rebuilt history (summary, files read again, older user messages) leaves room to work
    rebuilt = budget.summary_tokens + budget.reread_room + budget.user_messages_room
    assert rebuilt <= budget.room * 7 // 10 or window < 10_000
    assert budget.reread_file_tokens <= budget.reread_room
    assert budget.tool_result_tokens < budget.message_results_tokens < budget.room
    assert budget.request_max_tokens(budget.compact_at) + budget.compact_at <= window
    smaller = ContextBudget(window // 2, max_tokens=8192, fixed=FIXED)
    for name in ("summary_tokens", "reread_room", "user_messages_room", "tool_result_tokens", "compact_at"):
        assert getattr(smaller, name) <= getattr(budget, name), name


def test_the_docs_table_is_the_budgets():
    """docs/context.md states the budgets for 8k, 16k, 32k and 200k: they are the code's."""
    table = DOCS.read_text().split("<!-- budgets -->")[1]
    rows = {cells[0]: cells[1:] for line in table.splitlines() if line.startswith("| ")
            for cells in [[c.strip() for c in line.strip("|").split("|")]]}
    header = rows.pop("budget")
    windows = [int(h.removesuffix("k")) * 1000 for h in header]
    for name, values in rows.items():
        attr = re.search(r"`(\w+)`", name)
        assert attr, name
        for window, shown in zip(windows, values):
            value = getattr(ContextBudget(window, max_tokens=8192, fixed=FIXED), attr.group(1))
            assert shown == f"{value:,}", (name, window, shown, value)


def test_a_result_over_the_windows_budget_is_cut_at_a_line_with_the_way_to_the_rest(tmp_path):
    from jupyter_agent.loop.tool import ToolContext
    from jupyter_agent.loop.tool_execution import _bounded_content
    from jupyter_agent.tools.read import Read

    numbered = "".join(f"{i:6}\treport line {i}\n" for i in range(1, 2001))  # as Read numbers lines
    context = ToolContext(cwd=tmp_path)
    cut = _bounded_content(Read(), numbered, "toolu_1", context, window_chars=4_000)
    shown, note = cut.rsplit("\n", 1)
    assert len(cut) <= 4_000 and numbered.startswith(shown + "\n")  # whole lines, from the start
    assert note.startswith("[Cut to fit the model's context window:") and f"of {len(numbered):,}" in note
    assert f"{len(shown):,} of" in note and "Read with offset and limit" in note
    assert _bounded_content(Read(), numbered, "toolu_1", context) == numbered  # no window cap: whole
    assert _bounded_content(Read(), "short", "toolu_1", context, window_chars=4_000) == "short"


def test_the_summary_request_keeps_the_users_latest_words_when_the_history_is_cut():
    from jupyter_agent.loop.compaction import _fit

    class Env:  # what _fit uses of a CompactionEnv
        tools_by_name: dict[str, Any] = {}

    history: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    for i in range(10):
        history += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "Read",
                                                       "input": {"file_path": f"f{i}"}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}",
                                                  "content": "x" * 40}]}]
    fitted = _fit(list(history), Env(), room=200)  # type: ignore[arg-type]
    assert fitted[0] == history[0]  # the user's words first, then what fits of the rest
    assert len(fitted) < len(history)
    assert ensure_tool_result_pairing(fitted)[1] == []


async def test_a_window_the_system_prompt_and_tools_fill_ends_saying_so(tmp_path):
    with FakeMessagesAPI([]) as api:
        run = query("Hello.", model=api.model(), cwd=workspace(tmp_path), context_window=3_000)
        await run.wait()
        sent = len(api.messages_requests)
    assert run.terminal.reason == TerminalReason.PROMPT_TOO_LONG and sent == 0
    assert run.terminal.error == ContextNotice.SYSTEM_AND_TOOLS_TOO_LONG.value
    assert "fewer tools" in run.terminal.message and end_title(run.terminal) == "Window too small"


async def test_a_summary_request_the_api_counts_longer_is_sent_again_to_its_count(tmp_path):
    """The API refuses the summary request itself (it counts more than estimated): the
    compaction sends it once more, cut to the API's count, and the run goes on."""
    folder = workspace(tmp_path)
    paths = write_reports(folder)[:6]
    refused: list[int] = []

    def summary_once(body: dict[str, Any]) -> Any:
        if is_summary_request(body) and not refused:
            refused.append(prompt_tokens(body))
            return prompt_too_long(tokens=prompt_tokens(body) * 3 // 2, limit=30_000)
        return None

    queue = reads(paths)
    def answer(body: dict[str, Any]) -> Any:
        return summary_once(body) or (response(text(SUMMARY)) if is_summary_request(body) else queue.pop(0))

    with FakeMessagesAPI([answer] * 30, strict=False, context_window=30_000) as api:
        run = query(PROMPT, model=api.model(), cwd=folder, context_window=30_000)
        events = [e async for e in run]
        summaries = [prompt_tokens(r.body) for r in api.messages_requests if is_summary_request(r.body)]
    assert run.terminal.reason == TerminalReason.COMPLETED, run.terminal.message
    assert refused and summaries[0] == refused[0] and summaries[1] * 3 // 2 <= 30_000  # cut to the API's count
    first = next(e for e in events if isinstance(e, Compaction) and e.kind is CompactionKind.SUMMARY)
    assert first.outcome is CompactionOutcome.COMPACTED


async def test_the_fake_api_counts_with_its_token_density():
    import anthropic
    import httpx2

    def client(api: FakeMessagesAPI) -> anthropic.AsyncAnthropic:  # no keep-alive: nothing left open
        http = anthropic.DefaultAsyncHttpxClient(limits=httpx2.Limits(max_keepalive_connections=0))
        return anthropic.AsyncAnthropic(api_key=api.api_key, base_url=api.base_url, max_retries=0, http_client=http)

    words = [{"role": "user", "content": "a few words to count " * 50}]
    counts = {}
    for density in (1.0, 2.0):
        with FakeMessagesAPI([response(text("ok"))], token_density=density, context_window=1_000) as api:
            sdk = client(api)
            counted = await sdk.messages.count_tokens(model="m", messages=words)
            answer = await sdk.messages.create(model="m", max_tokens=10, messages=words)
            await sdk.close()
        counts[density] = (counted.input_tokens, answer.usage.input_tokens)
    assert counts[2.0] == (2 * counts[1.0][0], 2 * counts[1.0][1])
    with FakeMessagesAPI([], token_density=4.0, context_window=1_000) as api:  # over the window only when dense
        sdk = client(api)
        with pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
            await sdk.messages.create(model="m", max_tokens=10, messages=words)
        await sdk.close()


async def test_the_next_run_of_the_conversation_starts_in_the_learned_window(tmp_path):
    """A window learned from a refusal lasts for the conversation: its next run works to it
    from its first request, and the API refuses nothing more."""
    from jupyter_agent import Conversation

    folder = workspace(tmp_path)
    paths = write_reports(folder)
    turns = [*reads(paths[:8]), response(text("Report 3, as I said."))]
    with FakeMessagesAPI(scripted(turns), strict=False, context_window=30_000) as api:
        model = api.model()
        conv = Conversation(model, cwd=folder, context_window=200_000)
        first = conv.send(PROMPT)
        [e async for e in first]
        refusals = sum(r.outcome == "prompt_too_long" for r in api.requests)
        second = conv.send("Which one was it again?")
        events = [e async for e in second]
        assert api.rejections == []
        later = sum(r.outcome == "prompt_too_long" for r in api.requests) - refusals
    assert first.terminal.reason == second.terminal.reason == TerminalReason.COMPLETED, second.terminal.message
    assert refusals == 1 and later == 0
    assert conv.learned_windows == {model.name: 30_000}
    assert [e.context.window for e in events if isinstance(e, RequestStart)] == [30_000]
    assert not [e for e in events if isinstance(e, Notice) and e.kind == ContextNotice.WINDOW_LEARNED]
