"""The stepper widget, in Python: what it shows at each step, its buttons, its approval cards."""

from __future__ import annotations

import asyncio

from jupyter_agent.lessons import Stepper
from jupyter_agent.lessons.widget import StepperView
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use


async def _until(predicate, timeout=10.0):
    for _ in range(int(timeout / 0.02)):
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("timed out")


async def test_widget_lights_the_step_and_highlights_what_changed(tmp_path):
    (tmp_path / "notes.txt").write_text("value = 1\n")
    read = tool_use("Read", {"file_path": str(tmp_path / "notes.txt")})
    with FakeMessagesAPI([response(text("Reading."), read), response(text("It says 1."))]) as api:
        model = api.model()
        view = StepperView(Stepper.start("Read notes.txt", model=model, cwd=tmp_path))
        assert "Not started" in view.header.value and view.buttons["Back"].disabled
        await view.step()
        assert 'data-step="1" data-lit="true"' in view.diagram.value
        assert "turn_count" in view.state.value and "1 messages" in view.state.value
        await view.step()
        assert 'data-step="2" data-lit="true"' in view.diagram.value
        assert view.views.get_title(1) == "assistant_messages (1)  +1 changed"
        assert "(new)" in view.view_panes["assistant_messages"].value
        assert read["id"] in view.pairs.value and "waiting" in view.pairs.value
        await view.step()
        assert "ok" in view.pairs.value and view.views.get_title(2) == "tool_results (1)  +1 changed"
        assert view.views.get_title(1) == "assistant_messages (1)"  # unchanged since step 2
        view.buttons["Back"].click()
        await _until(lambda: view.stepper.position == 1)
        assert 'data-step="2" data-lit="true"' in view.diagram.value and "looking back" in view.status.value
        await view.run_to_end()
        assert 'data-step="end" data-lit="true"' in view.diagram.value
        assert "Ended: <code>completed</code>" in view.end.value and "not that the task is done" in view.end.value
        assert all(view.buttons[b].disabled for b in ("Next step", "Next turn", "Run to end"))
        static = view._static_html()
        assert view.static_class in static and "Ended: <code>completed</code>" in static
        assert f".{view.static_class}{{display:none" in view.header.value
        await model.aclose()


async def test_widget_approval_card_allows_the_write(tmp_path):
    target = tmp_path / "out.txt"
    write = tool_use("Write", {"file_path": str(target), "content": "hi"})
    with FakeMessagesAPI([response(write), response(text("done"))]) as api:
        model = api.model()
        view = StepperView(Stepper.start("write hi", model=model, cwd=tmp_path))
        view.buttons["Run to end"].click()
        await _until(lambda: view.approvals.children)
        [card] = view.approvals.children
        assert [b.description for b in (card.allow, card.always, card.deny)] == ["Allow", "Always allow", "Deny"]
        assert "waiting inside step 3" in view.status.value and not target.exists()
        card.allow.click()
        await _until(lambda: view.stepper.at_end)
        assert target.read_text() == "hi" and view.approvals.children == ()
        assert view.stepper.current.end_reason == "completed"
        await model.aclose()
