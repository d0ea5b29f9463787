"""The renderer is a function of the run's events: hand-made sequences (built through
the model layer's own accumulator) go in, and what a person would see comes out."""

from __future__ import annotations

import asyncio
import base64

import pytest

from jupyter_agent.loop.events import (
    ModelRetry, Notice, RequestStart, ToolOutcome, ToolProgress, ToolResult, ToolStart, UserMessage,
)
from jupyter_agent.loop.state import Terminal, TerminalReason
from jupyter_agent.loop.usage import Usage
from jupyter_agent.view.style import ICONS, MUTED, STATE_SVG, SUCCESS
from jupyter_agent.view.runmodel import RunModel
from jupyter_agent.view.items import BlockItem, NoticeItem, TextItem, ThinkingItem, ToolItem
from jupyter_agent.view.transcript import fence, transcript_bundle, transcript_markdown

from .helpers import record_widget_messages, response_events, updates

PNG = base64.b64encode(b"\x89PNG fake").decode()


def run_events(terminal_reason: TerminalReason = TerminalReason.COMPLETED) -> list:
    """A two-turn run: think, say something, edit a file (image in the result), answer."""
    usage = Usage(input_tokens=300, output_tokens=120, cache_read_input_tokens=40, cost_usd=0.0123)
    return [
        RequestStart(1, 1, "claude-test", 1),
        *response_events([
            {"type": "thinking", "thinking": "I should look at the file first."},
            {"type": "text", "text": "Let me **fix** it."},
            {"type": "tool_use", "id": "toolu_1", "name": "Edit",
             "input": {"file_path": "src/app.py", "old_string": "a", "new_string": "b"}},
            {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"q": "x"}},
        ]),
        ToolStart("toolu_1", "Edit", {"file_path": "src/app.py", "old_string": "a", "new_string": "b"}),
        ToolProgress("toolu_1", "Edit", "halfway"),
        ToolResult("toolu_1", "Edit", {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
            {"type": "text", "text": "The file src/app.py has been updated."},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}]}, 0.25),
        UserMessage({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]}),
        RequestStart(2, 2, "claude-test", 3),
        *response_events([{"type": "text", "text": "Done: `value` is now 2."}]),
        Terminal(terminal_reason, 2, "Done", None, usage),
    ]


def test_events_fold_into_what_a_person_sees():
    model = RunModel(prompt="Set value to 2", model="claude-test", permission_mode="default")
    for event in run_events():
        model.handle(event)
    kinds = [type(i).__name__ for i in model.items]
    assert kinds == ["PromptItem", "ThinkingItem", "TextItem", "ToolItem", "BlockItem", "TextItem"]
    thinking, text, tool, block, answer = model.items[1:]
    assert isinstance(thinking, ThinkingItem) and thinking.done and thinking.text.startswith("I should")
    assert isinstance(text, TextItem) and text.text == "Let me **fix** it."
    assert isinstance(tool, ToolItem) and tool.state == "done" and tool.summary == "src/app.py"
    assert tool.duration_s == 0.25 and tool.progress == ["halfway"]
    assert isinstance(block, BlockItem) and block.block_type == "server_tool_use"
    assert isinstance(answer, TextItem) and answer.text == "Done: `value` is now 2."
    assert model.turn_count == 2 and model.usage.cost_usd == pytest.approx(0.0123)
    assert model.status == "ended: completed"


def test_tool_card_follows_the_call_through_its_states():
    model = RunModel()
    seen = []
    model.listen(lambda kind, item: seen.append(item.state)
                 if isinstance(item, ToolItem) and kind == "update" else None)
    events = response_events([{"type": "tool_use", "id": "t9", "name": "Write",
                               "input": {"file_path": "x.txt", "content": "hi"}}])
    for event in events:
        model.handle(event)
    tool = model.tools()[0]
    assert tool.state == "pending" and tool.input == {"file_path": "x.txt", "content": "hi"}
    model.handle(ToolStart("t9", "Write", tool.input))
    assert tool.state == "running"
    model.handle(ToolResult("t9", "Write", {"type": "tool_result", "tool_use_id": "t9",
                                            "content": "permission denied", "is_error": True}))
    assert tool.state == "error" and "input" in seen and "running" in seen


def test_a_retry_throws_away_the_partial_response():
    model = RunModel()
    partial = response_events([{"type": "text", "text": "half an ans"}])[:-3]  # cut before the end
    for event in partial:
        model.handle(event)
    assert [i.text for i in model.items if isinstance(i, TextItem)] == ["half an ans"]
    model.handle(ModelRetry(1, 3, 0.5, "overloaded", 529))
    model.handle(Notice("history_repaired", "Repaired the history"))
    for event in response_events([{"type": "text", "text": "The whole answer."}]):
        model.handle(event)
    texts = [i.text for i in model.items if isinstance(i, TextItem)]
    assert texts == ["The whole answer."]
    notices = [i.text for i in model.items if isinstance(i, NoticeItem)]
    assert any("retrying (1/3)" in n for n in notices) and any("Repaired" in n for n in notices)


def test_a_model_that_does_not_stream_still_shows_its_answer():
    model = RunModel()
    model.handle(response_events([{"type": "text", "text": "No stream here."}])[-1])
    assert [i.text for i in model.items if isinstance(i, TextItem)] == ["No stream here."]


def test_an_unfinished_tool_is_not_left_running_when_the_run_ends():
    model = RunModel()
    for event in response_events([{"type": "tool_use", "id": "t1", "name": "NotebookRun",
                                   "input": {"notebook_path": "a.ipynb", "cell_id": "c1"}}]):
        model.handle(event)
    model.handle(ToolStart("t1", "NotebookRun", {}))
    model.finish(Terminal(TerminalReason.ABORTED_TOOLS, 1, "Stopped"))
    assert model.tools()[0].state == "stopped"  # not "error": nothing failed, the run ended first


def test_transcript_shows_everything_and_says_what_the_end_means():
    model = RunModel(prompt="Set value to 2", model="claude-test", permission_mode="acceptEdits")
    for event in run_events():
        model.handle(event)
    md = transcript_markdown(model)
    assert "> **Prompt:** Set value to 2" in md
    assert "<details><summary>Thinking</summary>" in md
    assert "Let me **fix** it." in md and "Done: `value` is now 2." in md
    assert "<b>Edit</b> <code>src/app.py</code> — done" in md
    assert f"![image](data:image/png;base64,{PNG})" in md
    assert "server_tool_use block" in md
    assert "✓ *Finished*" in md and "not a promise" not in md  # a normal end: no lecture
    assert "mode `acceptEdits`" in md and "2 turns" in md and "$0.0123" in md
    bundle = transcript_bundle(model)
    assert set(bundle) == {"text/markdown", "text/plain"} and "completed" in bundle["text/plain"]


def test_fences_survive_backticks_in_results():
    text = "a ``` fence and ```` four"
    block = fence(text)
    assert block.startswith("`````\n") and block.endswith("\n`````")


def test_secrets_never_reach_the_transcript(monkeypatch):
    secret = "sk-ant-api03-" + "x" * 40
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok_1234567890abcdef")
    model = RunModel(prompt="print the env")
    for event in response_events([{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": ".env"}}]):
        model.handle(event)
    content = f"KEY={secret}\nT=tok_1234567890abcdef\nother sk-ant-zzzzzzzzzzzzzz"
    model.handle(ToolResult("t1", "Read", {"type": "tool_result", "tool_use_id": "t1", "content": content}))
    md = transcript_markdown(model)
    assert secret not in md and "tok_1234567890abcdef" not in md and "sk-ant-zzzz" not in md
    assert "[redacted ANTHROPIC_API_KEY]" in md and "[redacted MY_SERVICE_TOKEN]" in md


# -- the live view, in process ----------------------------------------------------------------

async def test_view_redraws_per_frame_not_per_token(monkeypatch):
    log = record_widget_messages(monkeypatch)
    from jupyter_agent.jupyter.widgets.runview import RunView

    model = RunModel(prompt="write a poem", model="claude-test")
    view = RunView(model, frame_interval=0.05)
    text = "word " * 400  # 400 tokens of one char each... streamed in 2-char deltas
    events = response_events([{"type": "text", "text": text}], chunk=2)
    before = len(log)
    start = asyncio.get_running_loop().time()
    for event in events:  # 1000+ deltas in ~0.5 s: ~2000 tokens/s
        model.handle(event)
        await asyncio.sleep(0.0005)
    view.finish()
    elapsed = asyncio.get_running_loop().time() - start
    sent = len(log) - before
    # at most one update per widget per frame (+ the final draw of header and footer)
    output = next(v for v in view.body.children if v._model_name == "OutputModel")
    text_updates = [m for m in updates(log[before:]) if m["comm_id"] == output.comm.comm_id]
    frames = elapsed / 0.05
    assert len(events) > 1000 and 5 < len(text_updates) <= frames + 1, (len(text_updates), frames)
    assert sent <= frames + 8, (sent, frames)  # + widget creation, header, footer
    assert output.outputs[0]["data"]["text/markdown"] == text  # all of it, as Markdown
    assert "ja-end" in view.footer.value and view.stop_button.disabled


async def test_view_shows_thinking_folded_and_unknown_blocks(monkeypatch):
    record_widget_messages(monkeypatch)
    from jupyter_agent.jupyter.widgets.runview import RunView

    model = RunModel()
    view = RunView(model, frame_interval=0.01)
    for event in run_events():
        model.handle(event)
    view.finish()
    html = [getattr(c, "value", "") for c in view.body.children]
    assert any(h.startswith(f'<details style="color:{MUTED}"><summary>{ICONS["thinking"]} thinking') for h in html)
    assert any("server_tool_use" in h and "<details>" in h for h in html)
    tool_html = next(h for h in html if f'{STATE_SVG["done"]}</span> Edit</b>' in h)
    assert "<img src=\"data:image/png;base64," in tool_html and "has been updated" in tool_html
    assert "claude-test" in view.header.value and "2 turns" in view.header.value


async def test_closing_the_view_mid_run_calls_back(monkeypatch):
    record_widget_messages(monkeypatch)
    from jupyter_agent.jupyter.widgets.runview import RunView

    stopped = []
    model = RunModel()
    view = RunView(model, on_close=lambda: stopped.append(True))
    view.close()
    assert stopped == [True] and view.comm is None


async def test_the_front_end_closing_the_view_mid_run_calls_back_on_the_loop(monkeypatch):
    """The frontend closes the widget's comm (its message may arrive on another thread): the
    view closes on the event loop and the run is told, as when it is closed from Python."""
    record_widget_messages(monkeypatch)
    from jupyter_agent.jupyter.widgets.runview import RunView

    closed: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    view = RunView(RunModel(), on_close=lambda: closed.set_result(True))
    view.comm.handle_close({"content": {"comm_id": view.comm.comm_id, "data": {}}})
    assert await asyncio.wait_for(closed, 10) is True
    assert view.comm is None and view.header.comm is None


def test_a_cell_that_raised_says_so_with_the_exception_not_a_green_tick():
    from jupyter_agent.notebook.document import Cell
    from jupyter_agent.notebook.render import render_run
    from jupyter_agent.jupyter.widgets.cards import tool_html
    from jupyter_agent.view.transcript import tool_markdown

    cell = Cell(id="c7", index=2, cell_type="code", source="print(undefined_name)")
    error = {"output_type": "error", "ename": "NameError", "evalue": "name 'undefined_name' is not defined",
             "traceback": ["NameError: name 'undefined_name' is not defined"]}
    content = render_run(cell, [error], 3, "error")  # what NotebookRun returns (not is_error)
    model = RunModel(cwd="/work/project")
    for event in response_events([{"type": "tool_use", "id": "t1", "name": "NotebookRun",
                                   "input": {"notebook_path": "/work/project/a.ipynb", "cell_id": "c7"}}]):
        model.handle(event)
    model.handle(ToolResult("t1", "NotebookRun", {"type": "tool_result", "tool_use_id": "t1", "content": content}, 0.4,
                            outcome=ToolOutcome.RAISED, exception="NameError"))  # as the loop says it
    tool = model.tools()[0]
    assert tool.state == "raised" and tool.exception == "NameError"
    card = tool_html(tool)
    assert "ran, raised NameError" in card and STATE_SVG["done"] not in card and SUCCESS not in card  # no green tick
    assert STATE_SVG["raised"] in card
    assert "<code>a.ipynb cell_id=c7</code>" in card  # relative to the working folder
    assert "! <b>NotebookRun</b> <code>a.ipynb cell_id=c7</code> — ran, raised NameError" in tool_markdown(tool)


def test_the_header_keeps_cache_figures_in_a_tooltip():
    from jupyter_agent.jupyter.widgets.cards import header_html

    model = RunModel(model="claude-sonnet-4-5")
    for event in [RequestStart(1, 1, "claude-sonnet-4-5", 1), *response_events([{"type": "text", "text": "hi"}])]:
        model.handle(event)
    html = header_html(model)
    visible = html.split('">', 1)[1]
    assert "cache" not in visible and 'title="prompt cache: read' in html


async def test_the_plan_is_one_checklist_updated_live_where_the_run_is(monkeypatch):
    record_widget_messages(monkeypatch)
    from jupyter_agent.jupyter.widgets.runview import RunView

    model = RunModel()
    view = RunView(model, frame_interval=0.01)
    todos = [{"content": "Load", "status": "in_progress", "activeForm": "Loading"},
             {"content": "Plot <img src=x onerror=alert(1)>", "status": "pending", "activeForm": "Plotting"}]

    async def todo_write(n: int, plan: list) -> None:
        model.handle(ToolStart(f"toolu_{n}", "TodoWrite", {"todos": plan}))
        model.handle(ToolResult(f"toolu_{n}", "TodoWrite", {"type": "tool_result", "tool_use_id": f"toolu_{n}",
                                                            "content": "ok"}, 0.01, ToolOutcome.OK))
        await asyncio.sleep(0.05)  # (a few frames)

    await todo_write(1, todos)
    first = next(c for c in view.body.children if "ja-plan" in getattr(c, "value", ""))
    assert "Plan · 0 of 2 done" in first.value and "<b>Loading</b>" in first.value
    assert "&lt;img src=x" in first.value and "<img" not in first.value
    model.handle(Notice("note", "working"))
    await todo_write(2, [{**todos[0], "status": "completed"}, {**todos[1], "status": "in_progress"}])
    plans = [c for c in view.body.children if "ja-plan" in getattr(c, "value", "")]
    assert plans == [first] and "Plan · 1 of 2 done" in first.value and "<b>Plotting</b>" in first.value
    assert view.body.children[-1] is first  # moved to just after the call that changed it
    view.finish()
