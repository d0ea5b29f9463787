"""What a run tells its user is true: spend on Stop and on a model error, denied and
stopped calls, the wait for a click apart, advice after a model error, reachable
approvals, the session's rules, one rule for `--max-turns 0`, and a kernel that goes
away mid-run. A real kernel, the real SDK against the fake Messages API."""

from __future__ import annotations

import re

import pytest

from jupyter_agent.testing import http_error, response, text, tool_use

from .frontend import Frontend, isolated_env
from .test_kernel_magic import VIEW, display_id_of, transcript

pytestmark = pytest.mark.asyncio(loop_scope="module")


def kernel_widget(kernel, model_id: str) -> dict:
    """A widget's state as the frontend saw it: opened, then updated (kept after a close)."""
    state: dict = {}
    for msg in kernel.messages:
        content = msg["content"]
        if content.get("comm_id") != model_id:
            continue
        if msg["msg_type"] == "comm_open":
            state.update(content["data"]["state"])
        elif msg["msg_type"] == "comm_msg" and content["data"].get("method") == "update":
            state.update(content["data"]["state"])
    return state


async def runs_line(kernel) -> str:
    return (await kernel.execute("%agent runs"))["outputs"][0]["text"].strip().splitlines()[-1]


async def test_stop_mid_answer_still_counts_the_tokens(kernel, script):
    script(response(text("Thinking out loud. " * 300), delay_s=0.01,
                    usage={"input_tokens": 2500, "output_tokens": 900}))
    await kernel.execute("%agent new")
    result = await kernel.execute("%%agent\nTalk for a while")
    await kernel.until(lambda: "Thinking out loud." in kernel.widget_text(), 10, "streaming")
    kernel.click(kernel.buttons("Stop")[-1])
    md = await transcript(kernel, display_id_of(result))
    assert "tokens in 2,500" in md and "$0.0000" not in md  # not dropped to 0 on Stop
    # Stop during streaming with no tool calls: no claim about tool calls, said once
    assert "**Stopped** (`aborted_streaming`) — Stopped while the model was answering." in md
    assert "tool call" not in md.split("(`aborted_streaming`)")[1]
    assert md.count("Stopped while the model") == 1
    status = (await kernel.execute("%agent"))["outputs"][0]["text"]
    assert "2,500 in" in status, status  # the conversation's spend too
    line = await runs_line(kernel)
    assert "aborted_streaming" in line and re.search(r"\s[1-9][\d,]*\s+\$0\.0[0-9]*[1-9]", line), line


async def test_a_model_error_shows_the_advice(kernel, script):
    script(http_error(401, "authentication_error", "invalid x-api-key"))
    await kernel.execute("%agent new")
    result = await kernel.execute("%%agent\nHello")
    md = await transcript(kernel, display_id_of(result))
    assert "**Model error** (`model_error`)" in md
    assert "Check ANTHROPIC_API_KEY" in md and "invalid x-api-key" in md


async def test_denied_is_denied_and_the_wait_is_apart(kernel, script, module_tmp):
    target = module_tmp / "denied.txt"
    script(response(tool_use("Write", {"file_path": str(target), "content": "x"})))
    await kernel.execute("%agent new")
    result = await kernel.execute("%%agent\nWrite denied.txt")
    deny = await kernel.button("Deny")
    import asyncio

    await asyncio.sleep(0.6)  # scenario: a person reading the card (the wait is shown apart)
    kernel.click(deny)
    md = await transcript(kernel, display_id_of(result))
    # live, the widget was followed by its fallback, which hides itself while the widget
    # (its view carries the matching class) lives, and is emptied once the transcript is in
    widget, fallback = [o for o in result["outputs"] if o["msg_type"] == "display_data"]
    key = re.search(r'class="ja-fallback-(\w+)"', fallback["data"]["text/markdown"]).group(1)
    assert f".ja-live-{key}" in fallback["data"]["text/markdown"]
    view = kernel_widget(kernel, widget["data"][VIEW]["model_id"])
    assert f"ja-live-{key}" in view.get("_dom_classes", ())
    await kernel.until(lambda: kernel.display_updates(fallback["transient"]["display_id"])[-1:] and
                       kernel.display_updates(fallback["transient"]["display_id"])[-1]["data"] == {"text/plain": ""},
                       5, "the fallback emptied")
    assert "⊘ <b>Write</b> <code>denied.txt</code> — denied by you" in md  # relative, not "error"
    assert "— error" not in md
    assert re.search(r"\(([0-9.]+) s waiting for you\)", md) and float(
        re.search(r"\(([0-9.]+) s waiting for you\)", md).group(1)) >= 0.5
    assert not target.exists()


async def test_pending_approvals_stay_reachable_and_rules_are_listed_and_removed(kernel, script, module_tmp):
    first, second = module_tmp / "reach_a.txt", module_tmp / "reach_b.txt"
    script(response(tool_use("Write", {"file_path": str(first), "content": "a"})),
           response(tool_use("Write", {"file_path": str(second), "content": "b"})),
           response(text("Both written.")))
    await kernel.execute("%agent new")
    result = await kernel.execute("%%agent\nWrite two files")
    await kernel.button("Always allow")
    # the cell that showed the card is deleted: its output is gone from the page
    shown = await kernel.execute("%agent approvals")
    assert "1 approval waiting" in shown["outputs"][0]["text"]
    assert any(VIEW in o.get("data", {}) for o in shown["outputs"])
    # the card, like every widget shown, is followed by its plain fallback
    assert ("An approval card for Write `reach_a.txt` was shown here: while its run waits for it, "
            "`%agent approvals` shows it again.") in str(shown["outputs"][-1]["data"])
    await kernel.execute("from jupyter_agent.jupyter.kernel.agent_session import get_session\n"
                         "_card = list(get_session().active.broker.cards.values())[0][1]")
    assert (await kernel.value("_card.model_id")).strip("'") == \
        [o["data"][VIEW]["model_id"] for o in shown["outputs"] if VIEW in o.get("data", {})][0]
    # the card says beside "Always allow" what it will allow, in words
    label = await kernel.value("_card.always_label.value")
    assert "adds <code>Edit(" in label and "Edit, Write and NotebookEdit" in label
    await kernel.execute("_card.always.click()")  # answered here, where it is still reachable
    await transcript(kernel, display_id_of(result))
    assert first.read_text() == "a" and second.read_text() == "b"  # the rule let the second through
    listed = (await kernel.execute("%agent rules"))["outputs"][0]["text"]
    assert "1. allow Edit(" in listed and "--remove N" in listed
    removed = (await kernel.execute("%agent rules --remove 1"))["outputs"][0]["text"]
    assert "Removed the rule Edit(" in removed and "1. allow" not in removed
    bad = await kernel.execute("%agent rules --remove 3")
    assert bad["reply"]["status"] == "error" and "There is no session rule 3" in str(bad["outputs"])


async def test_max_turns_zero_means_no_limit_in_cells_too(kernel, script):
    script(response(text("No limit here.")))
    await kernel.execute("%agent new")
    result = await kernel.execute("%%agent --max-turns 0\nHi")
    assert result["reply"]["status"] == "ok", result["outputs"]
    md = await transcript(kernel, display_id_of(result))
    assert "No limit here." in md and "(`completed`)" in md
    helped = (await kernel.execute("%%agent --help\nx"))["outputs"][0]["text"]
    assert "0: no limit" in helped


async def test_a_kernel_shutdown_leaves_the_transcript_and_reads_as_interrupted(api, script, tmp_path):
    """A run waiting for a click when the kernel is restarted or shut down: the cell's
    widget (dead without its kernel) is replaced by the transcript so far, interrupted."""
    script(response(text("I'll write it."), tool_use("Write", {"file_path": str(tmp_path / "x.txt"), "content": ""})))
    frontend = await Frontend(tmp_path, isolated_env(tmp_path, **api.env())).start()
    try:
        await frontend.execute("%load_ext jupyter_agent")
        result = await frontend.execute("%%agent\nWrite x.txt")
        await frontend.button("Allow")
        display_id = display_id_of(result)
        frontend.kc.shutdown()  # what JupyterLab sends for Restart and Shut Down
        updates = await frontend.until(
            lambda: [u for u in frontend.display_updates(display_id) if VIEW not in u["data"]], 10, "the transcript")
    finally:
        await frontend.stop()
    md = updates[-1]["data"]["text/markdown"]
    assert "I'll write it." in md and "**Interrupted** (`kernel lost`)" in md
    assert "■ <b>Write</b>" in md and "— stopped" in md
    assert not (tmp_path / "x.txt").exists()


async def test_a_run_still_going_is_never_said_lost_and_every_view_can_follow_it(kernel, script, module_tmp):
    """The fallback of a run still going is seen wherever the widget is not drawn: a
    reloaded page on a notebook that is not trusted, another tab, the moments before a
    page restores its widgets, not only a kernel that is gone. Its words are true in all of
    them (no "kernel lost" while the kernel runs), and each output names its display id in
    its metadata, so that a view that did not show it live applies its updates too."""
    target = module_tmp / "followed.txt"
    script(response(text("I'll write it."), tool_use("Write", {"file_path": str(target), "content": "x"})),
           response(text("Written.")))
    await kernel.execute("%agent new")
    result = await kernel.execute("%%agent\nWrite followed.txt")
    allow = await kernel.button("Allow")
    widget, fallback = [o for o in result["outputs"] if o["msg_type"] == "display_data"]
    for output in (widget, fallback):
        assert output["metadata"]["jupyter_agent"]["display_id"] == output["transient"]["display_id"]
    assert "a live widget" in widget["data"]["text/plain"]
    fallback_id = fallback["transient"]["display_id"]
    # the card showed: the fallback was brought up to date (a save now keeps it)
    waiting = await kernel.until(lambda: [u for u in kernel.display_updates(fallback_id)
                                          if "waiting for approval" in u["data"].get("text/markdown", "")],
                                 5, "the fallback with the waiting call")
    md = waiting[-1]["data"]["text/markdown"]
    assert "kernel lost" not in md and "Interrupted" not in md
    assert "Still running** when this was written" in md and "`%agent approvals`" in md
    # while it runs, it names the ending a page swaps in when it sees the kernel die or restart
    if_lost = waiting[-1]["metadata"]["jupyter_agent"].pop("if_lost")
    assert waiting[-1]["metadata"] == {"jupyter_agent": {"display_id": fallback_id}}
    assert md.endswith(if_lost["ending"]) and "**Interrupted** (`kernel lost`)" in if_lost["lost"]
    kernel.click(allow)
    end = await transcript(kernel, display_id_of(result))
    assert "(`completed`)" in end and "Still running" not in end
    update = [u for u in kernel.display_updates(display_id_of(result)) if VIEW not in u["data"]][-1]
    assert update["metadata"] == {"jupyter_agent": {"display_id": display_id_of(result)}}
    # the fallback's words go once the run ended: the run wrote a file, so its Undo button
    # takes the fallback's place (a run that changed nothing leaves it empty)
    await kernel.until(lambda: kernel.display_updates(fallback_id)[-1]["data"].get("text/plain", "").startswith(
        "Undo this run"), 5, "the fallback replaced by the Undo button")
    assert "text/markdown" not in kernel.display_updates(fallback_id)[-1]["data"]
    assert kernel.display_updates(fallback_id)[-1]["metadata"] == {"jupyter_agent": {"display_id": fallback_id}}


async def test_a_waiting_run_updates_its_fallback_only_when_the_run_changed(kernel, script, module_tmp):
    """While a run waits for a click only its header's clock moves: that is no update of
    its fallback. Each update rewrites the notebook in every view of it (with
    collaboration, the shared document, saved each time): every 2 s for as long as the
    approval waits, it was."""
    target = module_tmp / "quiet.txt"
    script(response(text("I'll write it."), tool_use("Write", {"file_path": str(target), "content": "x"})),
           response(text("Written.")))
    await kernel.execute("%agent new")
    result = await kernel.execute("%%agent\nWrite quiet.txt")
    allow = await kernel.button("Allow")
    await kernel.execute("_quiet_run = _")  # the cell's value: the run's handle
    fallback_id = [o for o in result["outputs"] if o["msg_type"] == "display_data"][1]["transient"]["display_id"]
    await kernel.until(lambda: any("waiting for approval" in u["data"].get("text/markdown", "")
                                   for u in kernel.display_updates(fallback_id)), 5, "the fallback with the card")
    before = len(kernel.display_updates(fallback_id))
    # the clock moves (0.3 s: another tenth shows), and the fallback is brought up to date
    await kernel.execute("import time\nfor _ in range(2):\n"
                         "    time.sleep(0.3)\n    _quiet_run.refresh_fallback(force=True)")
    assert len(kernel.display_updates(fallback_id)) == before
    kernel.click(allow)
    assert "(`completed`)" in await transcript(kernel, display_id_of(result))
