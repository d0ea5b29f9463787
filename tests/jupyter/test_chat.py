"""The chat panel in a real kernel: type, Send, approve, Stop, switch mode; it shares the
conversation (and the notebook it lives in) with the `%%agent` cells; each ended turn
moves from the widget into the cell's static Markdown transcript (also when nbclient
executes the notebook headless)."""

from __future__ import annotations

import nbformat
import pytest
import pytest_asyncio
from nbclient import NotebookClient

from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use

from .frontend import Frontend, isolated_env
from .test_kernel_magic import VIEW, display_id_of, transcript

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def kernel(api, module_tmp):
    """A kernel started the way jupyter_server starts one for a notebook."""
    notebook = module_tmp / "analysis.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), notebook)
    env = isolated_env(module_tmp, JPY_SESSION_NAME=str(notebook), **api.env())
    profile = module_tmp / "ipython" / "profile_default"
    profile.mkdir(parents=True, exist_ok=True)
    (profile / "ipython_config.py").write_text('c.AgentConfig.model = "claude-from-config"\n')
    frontend = await Frontend(module_tmp, env).start()
    await frontend.execute("%load_ext jupyter_agent\nimport jupyter_agent")
    yield frontend
    await frontend.stop()


def ended(kernel, n: int) -> bool:
    return kernel.widget_text().count('class="ja-end"') >= n


def chat_outputs(result) -> tuple[str, str]:
    """The (display id of the fallback, model id of the widget) a chat() cell showed: the
    widget, then its fallback (the chat as Markdown, seen only without the kernel)."""
    shown = [o for o in result["outputs"] if o["msg_type"] == "display_data"]
    assert [VIEW in o["data"] for o in shown] == [True, False], shown
    assert "**jupyter-agent chat**" in shown[1]["data"]["text/markdown"]
    assert "<style>" in shown[1]["data"]["text/markdown"]  # hides itself while the panel lives
    return shown[1]["transient"]["display_id"], shown[0]["data"][VIEW]["model_id"]


async def record(kernel, display_id: str, n: int = 1, timeout: float = 10) -> str:
    """The chat's Markdown once its fallback's ``n``-th update has come."""
    updates = await kernel.until(lambda: len(kernel.display_updates(display_id)) >= n and
                                 kernel.display_updates(display_id), timeout, f"update {n}")
    return updates[-1]["data"]["text/markdown"]


def shown_in(kernel, model_id: str) -> str:
    """The text of the widgets the panel ``model_id`` shows now (its children, recursively)."""
    state = kernel.widgets.get(model_id, {})
    parts = [state["value"]] if isinstance(state.get("value"), str) else []
    parts += [str(out.get("data", {}).get("text/markdown", "")) for out in state.get("outputs") or []]
    for child in state.get("children") or []:
        parts.append(shown_in(kernel, child.removeprefix("IPY_MODEL_")))
    return "\n".join(parts)


def inside(kernel, model_id: str, model_name: str) -> list[str]:
    """The widgets of type ``model_name`` that the panel ``model_id`` holds (recursively)."""
    state = kernel.widgets.get(model_id, {})
    found = [model_id] if state.get("_model_name") == model_name else []
    for child in state.get("children") or []:
        found += inside(kernel, child.removeprefix("IPY_MODEL_"), model_name)
    return found


def send_button(kernel, panel: str) -> str | None:
    """This panel's Send button when it is enabled (other tests' chats have their own)."""
    enabled = [b for b in inside(kernel, panel, "ButtonModel")
               if kernel.widgets[b].get("description") == "Send" and not kernel.widgets[b].get("disabled")]
    return enabled[0] if enabled else None


async def send(kernel, message: str, panel: str | None = None) -> None:
    """Type ``message`` into a chat and press Send: ``panel``'s, or the newest chat's."""
    if panel is None:
        textarea = (await kernel.until(lambda: kernel.of_model("TextareaModel"), 5, "the input box"))[-1]
        kernel.set_value(textarea, message)
        kernel.click(kernel.buttons("Send")[-1])  # the newest panel's
        return
    [textarea] = inside(kernel, panel, "TextareaModel")
    kernel.set_value(textarea, message)
    kernel.click(await kernel.until(lambda: send_button(kernel, panel), 5, "this chat's Send enabled"))


async def test_chat_turns_approvals_and_the_shared_conversation(kernel, script, api, module_tmp):
    target = module_tmp / "chat.txt"
    script(response(text("Writing chat.txt."), tool_use("Write", {"file_path": str(target), "content": "hi"})),
           response(text(f"Done. (The key was {api.api_key}.)")),
           response(text("Your first message asked me to write chat.txt.")),
           response(text("Yes, this is the chat again.")))
    await kernel.execute("%agent new")  # (a panel shows the conversation's earlier turns)
    result = await kernel.execute("jupyter_agent.chat()")
    assert result["reply"]["status"] == "ok", result["outputs"]
    transcript_id, panel = chat_outputs(result)
    await send(kernel, "Write hi to chat.txt")
    allow = await kernel.button("Allow")
    await kernel.until(lambda: "Writing chat.txt." in shown_in(kernel, panel), 5, "the turn live in the widget")
    assert not kernel.display_updates(transcript_id)  # the record changes when a turn ends
    # one Stop while the turn runs: the panel's, beside Send (the run's own is hidden)
    stops = [c for c in kernel.of_model("ButtonModel") if kernel.widgets[c]["description"] == "Stop"
             and (kernel.widgets[kernel.widgets[c]["layout"].removeprefix("IPY_MODEL_")].get("display") != "none")]
    assert len(stops) == 1, stops
    kernel.click(allow)
    md = await record(kernel, transcript_id)
    # the ended turn is in the saved record (secrets redacted) and stays in the panel
    assert "**you:** Write hi to chat.txt" in md and "Done." in md and "✓ *Finished*" in md
    assert api.api_key not in md and "[redacted ANTHROPIC_API_KEY]" in md
    await kernel.until(lambda: 'class="ja-end"' in shown_in(kernel, panel), 5, "the end in the panel")
    assert "Writing chat.txt." in shown_in(kernel, panel) and 'class="ja-user"' in shown_in(kernel, panel)
    assert "Ended" not in shown_in(kernel, panel)  # a normal end: no lecture, no status line
    assert target.read_text() == "hi"
    # the model was told which notebook it lives in; ipython_config.py chose the model
    assert "analysis.ipynb" in str(api.requests[-2].body)
    assert api.requests[-2]["model"] == "claude-from-config"
    # a %%agent cell continues the chat's conversation
    cell = await kernel.execute("%%agent\nWhat was my first message?")
    await transcript(kernel, display_id_of(cell))
    assert "Write hi to chat.txt" in str(api.requests[-1]["messages"])
    # ...and the chat continues after the cell, seeing both
    await send(kernel, "Is this the chat?", panel)  # once this chat's Send is enabled again
    await kernel.until(lambda: ended(kernel, 3) and "Yes, this is the chat again." in shown_in(kernel, panel), 10,
                       "the third turn")
    sent = str(api.requests[-1]["messages"])
    assert "Write hi to chat.txt" in sent and "What was my first message?" in sent
    # all three turns are in the transcript, the cell's one marked as such
    md = await record(kernel, transcript_id, 3)
    assert md.index("Write hi to chat.txt") < md.index("What was my first message?") < md.index("Is this the chat?")
    assert "turn 2 (from a %%agent cell)" in md and "Yes, this is the chat again." in md
    # chat() again keeps the conversation's turns (nothing erased)
    again = await kernel.execute("jupyter_agent.chat()")
    _, second = chat_outputs(again)
    await kernel.until(lambda: "Yes, this is the chat again." in shown_in(kernel, second), 5, "the history")
    assert "Write hi to chat.txt" in shown_in(kernel, second)


async def test_chat_stop_and_mode_switch(kernel, script):
    script(response(text("Going on and on. " * 150), delay_s=0.02))
    await kernel.execute("%agent new")
    _, panel = chat_outputs(await kernel.execute("jupyter_agent.chat()"))
    mode = kernel.of_model("DropdownModel")[-1]
    kernel.comm_msg(mode, {"method": "update", "state": {"index": 1}, "buffer_paths": []})
    out = (await kernel.execute("%agent"))["outputs"][0]["text"]
    assert "permission mode: acceptEdits" in out
    before = kernel.widget_text().count('class="ja-end"')
    await send(kernel, "Talk for a while", panel)
    # (this chat's own text: other tests' chats in this kernel may show the same words)
    await kernel.until(lambda: "Going on and on." in shown_in(kernel, panel), 10, "streaming in the chat")
    kernel.click(kernel.buttons("Stop")[0])
    await kernel.until(lambda: ended(kernel, before + 1), 10, "the stop")
    await kernel.until(lambda: "aborted_streaming" in shown_in(kernel, panel), 10, "the stop in this chat")
    await kernel.execute("%agent --permission-mode default")


async def test_nbclient_keeps_the_chat_transcript_in_the_saved_notebook(tmp_path, monkeypatch):
    """Headless: a cell shows the chat, the next sends a message from code and waits; the
    update reaches the first cell's saved outputs."""
    with FakeMessagesAPI([response(text(f"Hello from the chat. {FAKE_SECRET}"))]) as api:
        for key, value in isolated_env(tmp_path, **api.env(), MY_SERVICE_TOKEN=FAKE_SECRET).items():
            monkeypatch.setenv(key, value)
        nb = nbformat.v4.new_notebook(cells=[
            nbformat.v4.new_code_cell("import jupyter_agent\npanel = jupyter_agent.chat(show=False)\npanel"),
            nbformat.v4.new_code_cell("run = await panel.send('Say hello').wait()\nprint(run.reason.value)"),
        ])
        await NotebookClient(nb, timeout=30, kernel_name="python3",
                             resources={"metadata": {"path": str(tmp_path)}}).async_execute()
        path = tmp_path / "chat.ipynb"
        nbformat.write(nb, path)
    saved = nbformat.read(path, as_version=4)
    assert saved.cells[1].outputs[0]["text"] == "completed\n"
    widget, fallback = saved.cells[0].outputs
    md = fallback["data"]["text/markdown"]  # (nbclient applied the update at the turn's end)
    assert "Say hello" in md and "Hello from the chat." in md and "✓ *Finished*" in md
    assert VIEW in widget["data"] and "Hello from the chat." in fallback["data"]["text/plain"]
    assert FAKE_SECRET not in path.read_text() and api.api_key not in path.read_text()


FAKE_SECRET = "s3cr3t-value-for-the-test"


async def test_the_pages_send_mark_sends_the_inputs_own_text_and_a_busy_chat_keeps_it(kernel, script, api):
    """The page's Enter and Send end the input's value with the send mark instead of clicking
    (a click could reach the kernel before the last keystrokes): the text before the mark is
    sent, the page's mark never; the input is emptied; refused (a turn still going), the text stays."""
    from jupyter_agent.jupyter.bridge.comm_protocol import CHAT_SEND_MARK

    script(response(text("Marked and sent. " * 150), delay_s=0.02))
    await kernel.execute("%agent new")
    _, panel = chat_outputs(await kernel.execute("jupyter_agent.chat()"))
    [textarea] = inside(kernel, panel, "TextareaModel")
    before = kernel.widget_text().count('class="ja-end"')
    typed = f"Write hi\nto{CHAT_SEND_MARK} hello.txt"  # a mark the user pasted is theirs: it stays
    kernel.set_value(textarea, typed + CHAT_SEND_MARK)
    await kernel.until(lambda: "Marked and sent." in shown_in(kernel, panel), 10, "the turn the mark sent")
    said = [b["text"] for b in api.requests[-1]["messages"][-1]["content"] if b.get("type") == "text"]
    assert said[-1] == typed  # (the trailing mark is gone, the pasted one kept)
    assert kernel.widgets[textarea]["value"] == ""
    kernel.set_value(textarea, "And then?" + CHAT_SEND_MARK)  # while the turn is still going
    await kernel.until(lambda: kernel.widgets[textarea]["value"] == "And then?", 10, "the text kept, unmarked")
    kernel.click(kernel.buttons("Stop")[0])
    await kernel.until(lambda: ended(kernel, before + 1), 10, "the stop")


async def test_an_outside_agents_calls_are_no_turn_of_the_chat(monkeypatch):
    """An outside agent's first call makes a run the session tells its listeners of (the side
    panel shows it); the chat panel, listening for its conversation's turns, leaves it out and
    opens no widget for it (it used to fail on the run's missing view, half-way through)."""
    from .helpers import record_widget_messages
    from jupyter_agent.jupyter.kernel.agent_session import AgentSession
    from jupyter_agent.jupyter.magic.chat import ChatPanel
    from jupyter_agent.jupyter.outside.outside_run import OutsideRun

    log = record_widget_messages(monkeypatch)
    session = AgentSession()
    panel = ChatPanel(session)
    opened = sum(m["type"] == "comm_open" for m in log)
    run = OutsideRun(session, "an outside agent", {}, None)
    for listener in list(session.listeners):
        listener(run)
    assert panel.turns.children == () and panel.entries == []
    assert sum(m["type"] == "comm_open" for m in log) == opened
