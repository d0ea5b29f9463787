"""The per-message tool-result budget: the largest results make way, and the choice is
kept, so later requests carry the same bytes (the prompt cache keeps hitting)."""

from __future__ import annotations

from jupyter_agent.loop.budget import ToolResultBudget
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use

from .conftest import run_query


def results_in(body, message_index):
    content = body["messages"][message_index]["content"]
    return {b["tool_use_id"]: b["content"] for b in content if b.get("type") == "tool_result"}


async def test_an_over_budget_turn_drops_its_largest_results_the_same_way_every_time(tools):
    calls = [tool_use("Echo", {"text": "x" * 10}), tool_use("Echo", {"text": "y" * 60}),
             tool_use("Echo", {"text": "z" * 50})]
    script = [response(*calls), response(tool_use("Echo", {"text": "again"})), response(text("ok"))]
    with FakeMessagesAPI(script) as api:
        run = run_query(api, "go", tools)
        run.params.budget = ToolResultBudget(max_chars_per_message=80)
        await run.wait()
        second, third = api.requests[1].body, api.requests[2].body
    seen = results_in(second, 2)
    assert seen[calls[0]["id"]] == "echo: " + "x" * 10  # small enough to keep
    assert "left out to keep this turn's tool results within budget" in seen[calls[1]["id"]]
    assert seen[calls[2]["id"]] == "echo: " + "z" * 50  # 16 + 56 fit once the largest went
    later = results_in(third, 2)
    assert later == seen  # the same bytes in every later request
    # as in the seed, messages_for_query (budget applied) is the base of the next State
    kept = [b["content"] for b in run.state.messages[2]["content"]]
    assert kept == [seen[c["id"]] for c in calls]


def test_budget_leaves_small_turns_alone():
    budget = ToolResultBudget(max_chars_per_message=1000)
    message = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "ok"}]}
    assert budget.apply([message])[0] is message


def test_images_and_documents_count_without_their_base64_data():
    """A PDF or image bigger than the text budget is bounded by its tool, not left out."""
    budget = ToolResultBudget(max_chars_per_message=1000)
    media = [{"type": "text", "text": "PDF file: a.pdf, 3 pages"},
             {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "A" * 50_000}},
             {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "B" * 50_000}}]
    message = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": media},
                                            {"type": "tool_result", "tool_use_id": "b", "content": "x" * 2000}]}
    kept = budget.apply([message])[0]["content"]
    assert kept[0]["content"] == media  # kept whole
    assert "left out" in kept[1]["content"]  # the over-budget text still makes way
