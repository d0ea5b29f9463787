"""``%%agent`` in a real kernel, the test playing JupyterLab: it streams into widgets,
asks before writing, obeys Allow / Always allow / Deny / Stop clicks, continues the
conversation, and leaves a transcript in the cell when it ends."""

from __future__ import annotations

import pytest
import pytest_asyncio

from jupyter_agent.testing import response, text, tool_use

pytestmark = pytest.mark.asyncio(loop_scope="module")

VIEW = "application/vnd.jupyter.widget-view+json"


def display_id_of(result) -> str:
    shown = [o for o in result["outputs"] if o["msg_type"] == "display_data" and VIEW in o["data"]]
    assert len(shown) == 1, result["outputs"]
    return shown[0]["transient"]["display_id"]


@pytest_asyncio.fixture(loop_scope="module")
async def kernel(kernel):
    """The module's kernel as a new user finds it, whatever the tests before did: the
    extension loaded, no run going, a new conversation, the default settings. Each test
    makes the runs and settings it looks at itself (they pass alone and in any order)."""
    assert (await kernel.execute("%load_ext jupyter_agent"))["reply"]["status"] == "ok"  # no-op if loaded
    await kernel.execute("%agent stop")
    for _ in range(100):
        if "running:         no" in (await kernel.execute("%agent"))["outputs"][0]["text"]:
            break
    reset = await kernel.execute("%agent new --permission-mode default --model '' --max-turns 0")
    assert reset["reply"]["status"] == "ok", reset["outputs"]
    return kernel


async def transcript(kernel, display_id: str, timeout: float = 10) -> str:
    """Wait for the run's end: its widget is replaced by the Markdown transcript."""
    WIDGET = "application/vnd.jupyter.widget-view+json"  # mid-run refreshes still carry the widget
    updates = await kernel.until(lambda: [u for u in kernel.display_updates(display_id) if WIDGET not in u["data"]],
                                 timeout, "the transcript")
    return updates[-1]["data"]["text/markdown"]


async def test_allow_runs_the_write_and_the_cell_keeps_a_transcript(kernel, script, module_tmp, api):
    target = module_tmp / "allowed.txt"
    script(response(text("I'll **write** the file."),
                    tool_use("Write", {"file_path": str(target), "content": "hello"})),
           response(text("Done: allowed.txt says hello.")))
    result = await kernel.execute("%%agent\nWrite hello to allowed.txt")
    assert result["reply"]["status"] == "ok" and result["seconds"] < 10  # returned at once (the run waits for Allow)
    display_id = display_id_of(result)
    await kernel.execute("run1 = _")  # the handle the cell returned
    assert (await kernel.value("type(run1).__name__")) == "'AgentRun'"
    allow = await kernel.button("Allow")
    assert not target.exists()  # nothing written before the click
    assert "hello" in kernel.widget_text() and "Write" in kernel.widget_text()  # args shown
    kernel.click(allow)
    md = await transcript(kernel, display_id)
    assert target.read_text() == "hello"
    assert "I'll **write** the file." in md and "Done: allowed.txt says hello." in md
    assert "Allowed by you." in md and "✓ *Finished*" in md
    assert "not a promise" not in md and "Ended" not in md  # a normal end needs no lecture
    assert (await kernel.value("run1.terminal.reason.value")) == "'completed'"
    assert (await kernel.value("run1.state.turn_count")) == "2"
    assert (await kernel.value("(await run1.wait()).reason.value")) == "'completed'"
    names = await kernel.value("' '.join([type(e).__name__ async for e in run1])")  # replayable
    assert names.startswith("'RequestStart StreamEvent") and names.endswith("AssistantMessage Terminal'")
    assert "test-key" not in str(kernel.messages)  # the API key is nowhere in what was sent


async def test_deny_with_feedback_reaches_the_model_and_the_next_cell_continues(kernel, script, api, module_tmp):
    target = module_tmp / "denied.txt"
    script(response(tool_use("Write", {"file_path": str(target), "content": "x"})),
           response(text("OK, I will not write it.")),
           response(text("You asked me to write denied.txt and I did not.")))
    await kernel.execute("%agent new")
    result = await kernel.execute("%%agent\nWrite x to denied.txt")
    display_id = display_id_of(result)
    await kernel.button("Deny")
    feedback = kernel.of_model("TextModel")[-1]
    kernel.set_value(feedback, "Do not touch that file.")
    kernel.click(kernel.buttons("Deny")[-1])
    md = await transcript(kernel, display_id)
    assert not target.exists()
    assert "Denied by you: Do not touch that file." in md and "`completed`" in md
    tool_result = api.requests[-1]["messages"][-1]["content"][0]
    assert tool_result["is_error"] and "Do not touch that file." in str(tool_result["content"])
    # the next %%agent cell continues the same conversation: the model sees the turns before
    result = await kernel.execute("%%agent\nWhat did I ask you before?")
    await transcript(kernel, display_id_of(result))
    sent = api.requests[-1]["messages"]
    assert "Write x to denied.txt" in str(sent[0]) and "What did I ask you before?" in str(sent[-1])


async def test_deny_without_feedback_ends_the_run(kernel, script, module_tmp):
    script(response(tool_use("Write", {"file_path": str(module_tmp / "no.txt"), "content": "x"})))
    await kernel.execute("%agent new")
    result = await kernel.execute("%%agent\nWrite x to no.txt")
    kernel.click(await kernel.button("Deny"))
    md = await transcript(kernel, display_id_of(result))
    assert "(`aborted_tools`)" in md and not (module_tmp / "no.txt").exists()


async def test_always_allow_is_remembered_for_the_session(kernel, script, module_tmp):
    a, b = module_tmp / "always_a.txt", module_tmp / "always_b.txt"
    script(response(tool_use("Write", {"file_path": str(a), "content": "1"})),
           response(tool_use("Write", {"file_path": str(b), "content": "2"})),
           response(text("Both written.")))
    await kernel.execute("%agent new")
    result = await kernel.execute("%%agent\nWrite both files")
    kernel.click(await kernel.button("Always allow"))
    md = await transcript(kernel, display_id_of(result))
    assert a.read_text() == "1" and b.read_text() == "2"  # the second write asked nobody
    assert md.count("Always allowed by you") == 1 and "`completed`" in md


async def test_stop_while_streaming_ends_cleanly_and_the_history_stays_valid(kernel, script):
    script(response(text("A long answer. " * 120), tool_use("Write", {"file_path": "/tmp/never", "content": ""}),
                    delay_s=0.02),
           response(text("Still here.")))
    await kernel.execute("%agent new")
    result = await kernel.execute("%%agent\nTalk for a while")
    display_id = display_id_of(result)
    stop = await kernel.button("Stop")
    await kernel.until(lambda: "A long answer." in kernel.widget_text(), 10, "streamed text in the widget")
    kernel.click(stop)
    md = await transcript(kernel, display_id)
    assert "(`aborted_streaming`)" in md
    # a second %%agent while one runs is refused; after the stop, the conversation goes on
    result = await kernel.execute("%%agent\nAre you still there?")
    md = await transcript(kernel, display_id_of(result))
    assert "Still here." in md  # the strict fake API accepted the history (no orphan tool_use)


async def test_a_second_run_while_one_runs_is_refused(kernel, script):
    script(response(tool_use("Write", {"file_path": "/tmp/jupyter_agent_busy", "content": ""})))
    await kernel.execute("%agent new")
    first = await kernel.execute("%%agent\nWrite something")
    stop = await kernel.button("Stop")
    await kernel.button("Allow")
    second = await kernel.execute("%%agent\nAnd something else")
    text_out = "".join(o.get("text", "") for o in second["outputs"])
    assert second["reply"]["status"] == "error" and "still going" in text_out
    assert not [o for o in second["outputs"] if o["msg_type"] == "display_data"]  # nothing started
    kernel.click(stop)
    md = await transcript(kernel, display_id_of(first))
    assert "aborted" in md


async def test_bad_options_start_nothing(kernel):
    for line, message in (("--bogus", "unrecognized arguments: --bogus"),
                          ("--max-turns zero", "must be a whole number"),
                          ("--permission-mode yolo", "invalid choice: 'yolo'"),
                          ("--cwd /no/such/dir", "no such directory")):
        result = await kernel.execute(f"%%agent {line}\nhello")
        out = "".join(o.get("text", "") for o in result["outputs"])
        assert result["reply"]["status"] == "error" and message in out and "usage: %%agent" in out
        assert not [o for o in result["outputs"] if o["msg_type"] == "display_data"]


async def test_line_magic_shows_and_sets_settings(kernel, script):
    out = (await kernel.execute("%agent --permission-mode acceptEdits --model claude-test-1"))["outputs"]
    text_out = out[0]["text"]
    assert "permission mode: acceptEdits" in text_out and "claude-test-1" in text_out
    script(response(text("Hello from the settings test.")))
    await transcript(kernel, display_id_of(await kernel.execute("%%agent\nSay hello for the runs table")))
    runs = (await kernel.execute("%agent runs"))["outputs"][0]["text"]
    assert "completed" in runs and "Say hello for the runs table" in runs
    help_text = (await kernel.execute("%agent --help"))["outputs"][0]["text"]
    assert "usage: %agent" in help_text and "--permission-mode" in help_text


async def test_agent_compact_summarises_the_conversation_now(kernel, script, api):
    import json

    script(response(text("First answer.")), response(text("Summary of the first answer.")))
    await kernel.execute("%agent new")
    await kernel.execute("%config AgentConfig.context_window = 50000")
    try:
        await transcript(kernel, display_id_of(await kernel.execute("%%agent\nSay something, my-words-7")))
        result = await kernel.execute("%agent compact keep the plots")
        md = await transcript(kernel, display_id_of(result))
        asked = json.dumps(api.messages_requests[-1].body["messages"][-1])
        history = await kernel.value("__import__('jupyter_agent.jupyter.kernel.agent_session', fromlist=['_'])"
                                     ".get_session().conversation.messages")
    finally:
        await kernel.execute("%config AgentConfig.context_window = 0")
    assert "Compacted: " in md and "kept your 1 message" in md and "/ 50k" in md  # the meter: the set window
    assert "keep the plots" in asked
    assert "Summary of the first answer." in history and "my-words-7" in history


async def test_agent_mcp_lists_the_mcp_servers_of_the_config(kernel):
    await kernel.execute("%config AgentConfig.mcp_servers = {'calc': {'command': 'calc-server', 'args': ['--x']}}")
    try:
        listed = (await kernel.execute("%agent mcp"))["outputs"][0]["text"]
    finally:
        await kernel.execute("%config AgentConfig.mcp_servers = {}")
    assert "calc  [not started]  stdio: calc-server --x" in listed  # started by the next run, not before
    assert "No MCP servers" in (await kernel.execute("%agent mcp"))["outputs"][0]["text"]


async def test_config_is_the_jupyter_way(kernel):
    await kernel.execute("%config AgentConfig.max_turns = 7")
    out = (await kernel.execute("%agent"))["outputs"][0]["text"]
    assert "max turns:       7" in out
    assert await kernel.value("__import__('jupyter_agent.jupyter.kernel.agent_session', fromlist=['_'])"
                              ".get_session().conversation.max_turns") == "7"


async def test_fast_streaming_costs_about_one_widget_message_per_frame(kernel, script):
    body = "token " * 4000  # 1,000 deltas of 24 characters, one every 2 ms
    script(response(text(body), delay_s=0.002))
    await kernel.execute("%agent new")
    first = len(kernel.messages)
    result = await kernel.execute("%%agent\nStream")
    md = await transcript(kernel, display_id_of(result), timeout=30)
    assert body.strip() in md
    sent = [m for m in kernel.messages[first:] if m["msg_type"] in ("comm_msg", "comm_open")]
    text_view = next(m["content"]["comm_id"] for m in sent if m["msg_type"] == "comm_open"
                     and m["content"]["data"]["state"]["_model_name"] == "OutputModel")
    stamps = [m["header"]["date"].timestamp() for m in sent]
    text_stamps = [t for t, m in zip(stamps, sent) if m["content"]["comm_id"] == text_view]
    start, end = min(text_stamps), max(text_stamps)
    during = [t for t in stamps if start <= t <= end]  # every widget message while text streamed
    assert end - start > 1.0 and len(during) <= (end - start) / 0.05 + 1, (len(during), end - start)


_PARTS = ("from jupyter_agent.jupyter.kernel.agent_session import get_session as _gs\n"
          "from jupyter_agent.jupyter.kernel.agent_session import get_bridge as _gb\n"
          "_s = _gs()\n"
          "print(type(_s.services).__name__, id(_s.services), _gb() is not None, _s.services.panel_hub is not None,"
          " _s.services.outside_hub is not None)")


def printed(result: dict) -> str:
    """All a cell printed: a ``print`` of several values may reach us as several outputs."""
    return "".join(o["text"] for o in result["outputs"] if o["msg_type"] == "stream" and o["name"] == "stdout")


async def test_one_object_starts_and_closes_what_is_kernel_wide(kernel):
    """%load_ext makes the session's KernelServices, which starts the bridge and both comm
    hubs; %unload_ext closes them through it, and %load_ext starts the same object again."""
    async def parts() -> list[str]:
        return printed(await kernel.execute(_PARTS)).split()

    name, ident, *started = await parts()
    assert name == "KernelServices" and started == ["True", "True", "True"]
    await kernel.execute("%unload_ext jupyter_agent")
    assert await parts() == [name, ident, "False", "False", "False"]
    assert (await kernel.execute("%load_ext jupyter_agent"))["reply"]["status"] == "ok"
    assert await parts() == [name, ident, "True", "True", "True"]


_HOOKS = ("from jupyter_agent.jupyter.kernel.agent_session import get_session as _gs\n"
          "_links, _shell = _gs().services.links, get_ipython()\n"
          "print(sum(type(getattr(f, '__self__', None)).__name__ == 'ExecutionTracker'"
          " for f in _shell.events.callbacks['pre_run_cell']),"
          " '_publish_status' in vars(_shell.kernel), len(_links.quiet_opens))")


async def test_what_the_links_hook_into_the_kernel_is_taken_off_at_unload_and_put_back_once(kernel):
    """The services' links register one execution tracker on the shell's cell events and wrap
    the kernel's status publishing (quiet for the bridge's and outside calls' messages);
    %unload_ext takes both off, and %load_ext puts each back once, not twice."""
    async def hooks() -> list[str]:
        return printed(await kernel.execute(_HOOKS)).split()

    assert await hooks() == ["1", "True", "1"]
    await kernel.execute("%unload_ext jupyter_agent")
    assert await hooks() == ["0", "False", "0"]
    assert (await kernel.execute("%load_ext jupyter_agent"))["reply"]["status"] == "ok"
    assert await hooks() == ["1", "True", "1"]


async def test_unload_and_reload(kernel, script):
    script(response(text("Before the reload.")))
    await transcript(kernel, display_id_of(await kernel.execute("%%agent\nA run before the reload")))
    await kernel.execute("%unload_ext jupyter_agent")
    gone = await kernel.execute("%%agent\nhello")
    assert "Cell magic `%%agent` not found" in "".join(o.get("text", "") for o in gone["outputs"])
    assert (await kernel.execute("%load_ext jupyter_agent"))["reply"]["status"] == "ok"
    out = (await kernel.execute("%agent runs"))["outputs"][0]["text"]
    assert "completed" in out and "A run before the reload" in out  # the kernel's runs survive
    status = (await kernel.execute("%agent"))["outputs"][0]["text"]
    assert "conversation:    2 messages, 1 runs" in status  # and so does the conversation
