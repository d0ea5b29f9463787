"""TodoWrite: Claude Code's schema, clear errors for bad input, never asks, the list in the
result and after a compaction; and the plan as every front draws it (widget card, side
panel, terminal, transcript), escaped."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from jupyter_agent import Conversation, TerminalReason
from jupyter_agent.cli import TerminalDisplay
from jupyter_agent.jupyter.widgets.cards import plan_html
from jupyter_agent.jupyter.panel.panel_json import item_json
from jupyter_agent.loop.events import ToolOutcome, ToolResult, ToolStart
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use
from jupyter_agent.tools.todo_write import TodoList
from jupyter_agent.view.runmodel import RunModel
from jupyter_agent.view.items import PlanItem, ToolItem
from jupyter_agent.view.transcript import transcript_markdown

from .conftest import TOOLS, call_tool, make_ctx, text_of

PLAN = [{"content": "Load the data", "status": "completed", "activeForm": "Loading the data"},
        {"content": "Fit the model", "status": "in_progress", "activeForm": "Fitting the model"},
        {"content": "Plot <b>residuals</b>", "status": "pending", "activeForm": "Plotting residuals"}]


def test_the_schema_is_claude_codes():
    schema = TOOLS["TodoWrite"].to_api()["input_schema"]
    item = schema["properties"]["todos"]["items"]
    assert schema["required"] == ["todos"] and schema["additionalProperties"] is False
    assert item["properties"]["status"] == {"type": "string", "enum": ["pending", "in_progress", "completed"]}
    assert item["required"] == ["content", "status", "activeForm"] and item["additionalProperties"] is False
    assert "$ref" not in json.dumps(schema)


@pytest.mark.parametrize(("todos", "says"), [
    ([{"content": "a", "status": "pending"}], "`todos.0.activeForm` is missing"),
    ([{"content": "a", "status": "doing", "activeForm": "A-ing"}], "`todos.0.status` is invalid"),
    ([{"content": "", "status": "pending", "activeForm": "A-ing"}], "`todos.0.content` is invalid"),
    ([{"content": "   ", "status": "pending", "activeForm": "A-ing"}], "todos[0].content is blank"),
    ([{"content": "a", "status": "pending", "activeForm": "A-ing", "priority": "high"}],
     "unexpected parameter `todos.0.priority`"),
    ([{"content": f"t{i}", "status": "pending", "activeForm": "x"} for i in range(101)], "at most 100 are kept"),
    ([{"content": "x" * 1001, "status": "pending", "activeForm": "x"}], "at most 1,000"),
    ("not a list", "`todos` is invalid"),
])
async def test_bad_input_is_an_error_result_that_names_the_field(workspace, todos, says):
    ctx = make_ctx(workspace)
    result = await call_tool(ctx, "TodoWrite", {"todos": todos})
    assert result.get("is_error") and says in text_of(result), text_of(result)
    assert ctx.services.get(TodoList).todos == []  # nothing was kept


@pytest.mark.parametrize("mode", ["default", "plan"])
async def test_it_never_asks_and_the_result_holds_the_list(workspace, mode):
    ctx = make_ctx(workspace, mode)

    def ask(*_args):
        raise AssertionError("TodoWrite asked")

    result = await call_tool(ctx, "TodoWrite", {"todos": PLAN}, can_use_tool=ask)
    assert not result.get("is_error"), text_of(result)
    assert text_of(result).endswith("1. [x] Load the data\n2. [>] Fit the model (in progress)\n"
                                    "3. [ ] Plot <b>residuals</b>")
    assert ctx.services.get(TodoList).todos == PLAN


async def test_the_list_survives_a_compaction(tmp_path: Path):
    script = [response(tool_use("TodoWrite", {"todos": PLAN})), response(text("Planned.")),
              response(text("Summary of the planning.")), response(text("Next."))]
    with FakeMessagesAPI(script) as api:
        conv = Conversation(model=api.model(), cwd=tmp_path)
        await conv.send("Plan the analysis.").wait()
        compacted = await conv.compact().wait()
        await conv.send("Go on.").wait()
        after = json.dumps(api.messages_requests[3].body["messages"])
        await conv.model.aclose()
    assert compacted.reason == TerminalReason.COMPLETED
    assert "tool_use" not in after  # the call itself is summarised away...
    assert "The todo list (TodoWrite) as it stands" in after  # ...the list is not
    assert "2. [>] Fit the model (in progress)" in after


def _block(content: str) -> dict[str, str]:
    return {"type": "tool_result", "tool_use_id": "toolu", "content": content}


def _plan_run(*lists: list[dict[str, str]]) -> RunModel:
    """A run model that saw one TodoWrite call per list, each with a text after it."""
    model = RunModel(prompt="plan it")
    for n, todos in enumerate(lists):
        model.handle(ToolStart(f"toolu_{n}", "TodoWrite", {"todos": todos}))
        model.handle(ToolResult(f"toolu_{n}", "TodoWrite", _block("ok"), 0.0, ToolOutcome.OK))
        model.notice(f"after call {n}")
    return model


def test_the_plan_follows_the_latest_call_and_a_failed_call_changes_nothing():
    later = [{**PLAN[0]}, {**PLAN[1], "status": "completed"}, {**PLAN[2], "status": "in_progress"}]
    model = _plan_run(PLAN, later)
    plans = [i for i in model.items if isinstance(i, PlanItem)]
    assert len(plans) == 1 and plans[0].todos[2]["status"] == "in_progress"
    kinds = [type(i).__name__ for i in model.items]
    assert kinds[-3:] == ["ToolItem", "PlanItem", "NoticeItem"]  # moved to just after the latest call
    model.handle(ToolStart("toolu_bad", "TodoWrite", {"todos": []}))
    model.handle(ToolResult("toolu_bad", "TodoWrite", _block("bad"), 0.0, ToolOutcome.ERROR))
    assert model.plan is plans[0] and len(model.plan.todos) == 3
    tool = next(i for i in model.items if isinstance(i, ToolItem))
    assert tool.summary == "3 tasks, 1 done"


def test_every_front_draws_the_checklist_and_escapes_the_tasks():
    model = _plan_run(PLAN)
    plan = model.plan
    assert plan is not None
    card = plan_html(plan)
    assert "Plan · 1 of 3 done" in card and "&lt;b&gt;residuals&lt;/b&gt;" in card and "<b>residuals" not in card
    assert "<b>Fitting the model</b>" in card  # the task in progress, as it is being done
    assert "<s " in card and "Load the data" in card and card.count("<svg") == 4  # title + one sign per task
    panel = item_json(plan, "k1")
    assert panel["kind"] == "plan" and panel["title"] == "Plan · 1 of 3 done"
    assert [t["status"] for t in panel["todos"]] == ["completed", "in_progress", "pending"]
    assert panel["todos"][1]["text"] == "Fitting the model" and panel["todos"][2]["text"] == "Plot <b>residuals</b>"
    md = transcript_markdown(model)
    assert "**Plan · 1 of 3 done**  \n✓ Load the data  \n▸ **Fitting the model** (in progress)  \n" in md
    assert "○ Plot &lt;b\\>residuals" in md
    err = io.StringIO()
    display = TerminalDisplay(io.StringIO(), err)
    display.handle(ToolStart("toolu_0", "TodoWrite", {"todos": [{**PLAN[2], "content": "Plot \x1b[2J now"}]}))
    display.handle(ToolResult("toolu_0", "TodoWrite", _block("ok"), 0.0, ToolOutcome.OK))
    printed = err.getvalue()
    assert "Plan · 0 of 1 done\n  ○ Plot ␛[2J now\n" in printed and "\x1b" not in printed
