"""A finished item of a run's transcript is drawn to Markdown once (the fallback output
redraws the whole run every 2 s, on the kernel's loop), and drawn again if it changes."""

from __future__ import annotations

from jupyter_agent.view.items import TextItem, ToolItem
from jupyter_agent.view.transcript import finished_item_markdown, item_markdown


def test_a_finished_text_is_drawn_once_and_again_when_it_changes():
    item = TextItem("text", text="Hello **there**", done=True)
    first = finished_item_markdown(item)
    assert first == item_markdown(item)
    assert finished_item_markdown(item) is first  # the same string: not drawn again
    item.text = "Hello again"
    assert finished_item_markdown(item) == item_markdown(item) != first


def test_a_text_still_streaming_is_drawn_every_time():
    item = TextItem("text", text="Hel", done=False)
    assert finished_item_markdown(item) == item_markdown(item)
    item.text = "Hello"
    assert finished_item_markdown(item) == item_markdown(item)


def test_a_tool_call_is_kept_only_once_finished_and_follows_its_result():
    tool = ToolItem("tool", id="toolu_1", name="Read", input={"file_path": "a.txt"}, state="running")
    assert finished_item_markdown(tool) == item_markdown(tool)
    tool.state, tool.result = "done", "first result"
    first = finished_item_markdown(tool)
    assert "first result" in first and finished_item_markdown(tool) is first
    tool.result = "second result"
    assert "second result" in finished_item_markdown(tool)
