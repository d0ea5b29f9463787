"""The timeline of a finished run, built from the events' arrival times."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from jupyter_agent import query
from jupyter_agent.lessons import Recording, Stepper, record_run
from jupyter_agent.lessons.timeline import build_timeline
from jupyter_agent.testing import FakeMessagesAPI, pause, response, text, tool_use


async def test_streamed_read_starts_before_the_response_ends(tmp_path):
    (tmp_path / "a.txt").write_text("A\n")
    read = tool_use("Read", {"file_path": str(tmp_path / "a.txt")})
    ghost = tool_use("NoSuchTool", {})
    with FakeMessagesAPI([response(read, pause(0.3), text("still talking"), ghost),
                          response(text("done"))]) as api:
        model = api.model()
        run = query("read a", model=model, cwd=tmp_path)
        timeline = build_timeline(await record_run(run))
        await model.aclose()
    first, second = timeline.model_spans()
    assert (first.label, second.label) == ("request 1", "request 2") and first.turn == 1 and second.turn == 2
    assert timeline.started_before_response_ended(read["id"])  # the executor did not wait for the end
    assert timeline.tool(read["id"]).start < first.end - 0.2
    assert timeline.tool(ghost["id"]).status == "not run"
    assert [n for n, _, _ in timeline.turns] == [1, 2] and timeline.end_reason == "completed"
    svg = timeline._repr_svg_()
    root = ET.fromstring(svg)  # well-formed
    assert root.tag.endswith("svg") and "request 1" in svg and "Read" in svg and "end: completed" in svg


async def test_approvals_waited_on_appear_with_their_outcome(tmp_path):
    write = tool_use("Write", {"file_path": str(tmp_path / "o.txt"), "content": "x"})
    with FakeMessagesAPI([response(write), response(text("ok"))]) as api:
        model = api.model()

        def answer_later(request):
            import asyncio
            asyncio.get_running_loop().call_later(0.2, request.allow)

        stepper = Stepper.start("write", model=model, cwd=tmp_path, on_approval=answer_later)
        end = await stepper.run_to_end(wait_for_approvals=True)
        assert end.end_reason == "completed"
        await model.aclose()
    timeline = build_timeline(stepper.recording)
    [approval] = timeline.approval_spans()
    assert approval.status == "allow" and approval.duration >= 0.15
    tool = timeline.tool(write["id"])
    assert tool.start >= approval.end - 0.01  # the write ran only after the approval


def test_pauses_between_steps_are_left_out():
    import time

    recording = Recording()
    recording.now()
    recording.pause()
    time.sleep(0.2)
    recording.resume()
    assert recording.now() < 0.1
