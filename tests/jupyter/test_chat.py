"""The chat panel in a real kernel: type, Send, approve, Stop, switch mode; it shares the
conversation (and the notebook it lives in) with the `%%agent` cells."""

from __future__ import annotations

import nbformat
import pytest
import pytest_asyncio

from jupyter_agent.testing import response, text, tool_use

from .frontend import Frontend, isolated_env
from .test_kernel_magic import display_id_of, transcript

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
    return kernel.widget_text().count("Ended: <code>") >= n


async def send(kernel, message: str) -> None:
    textarea = (await kernel.until(lambda: kernel.of_model("TextareaModel"), 5, "the input box"))[-1]
    kernel.set_value(textarea, message)
    kernel.click(kernel.buttons("Send")[-1])  # the newest panel's


async def test_chat_turns_approvals_and_the_shared_conversation(kernel, script, api, module_tmp):
    target = module_tmp / "chat.txt"
    script(response(text("Writing chat.txt."), tool_use("Write", {"file_path": str(target), "content": "hi"})),
           response(text("Done.")),
           response(text("Your first message asked me to write chat.txt.")),
           response(text("Yes, this is the chat again.")))
    result = await kernel.execute("jupyter_agent.chat()")
    assert result["reply"]["status"] == "ok"
    await send(kernel, "Write hi to chat.txt")
    kernel.click(await kernel.button("Allow"))
    await kernel.until(lambda: ended(kernel, 1), 10, "the first turn to end")
    assert target.read_text() == "hi" and "Done." in kernel.widget_text()
    # the model was told which notebook it lives in; ipython_config.py chose the model
    assert "analysis.ipynb" in str(api.requests[-2].body)
    assert api.requests[-2]["model"] == "claude-from-config"
    # a %%agent cell continues the chat's conversation
    cell = await kernel.execute("%%agent\nWhat was my first message?")
    await transcript(kernel, display_id_of(cell))
    assert "Write hi to chat.txt" in str(api.requests[-1]["messages"])
    # ...and the chat continues after the cell, seeing both
    await kernel.until(lambda: kernel.buttons("Send"), 5, "Send enabled again")
    await send(kernel, "Is this the chat?")
    await kernel.until(lambda: ended(kernel, 3), 10, "the third turn")
    sent = str(api.requests[-1]["messages"])
    assert "Write hi to chat.txt" in sent and "What was my first message?" in sent


async def test_chat_stop_and_mode_switch(kernel, script):
    script(response(text("Going on and on. " * 150), delay_s=0.02))
    await kernel.execute("%agent new")
    await kernel.execute("jupyter_agent.chat()")
    mode = kernel.of_model("DropdownModel")[-1]
    kernel.comm_msg(mode, {"method": "update", "state": {"index": 1}, "buffer_paths": []})
    out = (await kernel.execute("%agent"))["outputs"][0]["text"]
    assert "permission mode: acceptEdits" in out
    before = kernel.widget_text().count("Ended: <code>")
    await send(kernel, "Talk for a while")
    await kernel.until(lambda: "Going on and on." in kernel.widget_text(), 10, "streaming in the chat")
    kernel.click(kernel.buttons("Stop")[0])
    await kernel.until(lambda: ended(kernel, before + 1), 10, "the stop")
    assert "aborted_streaming" in kernel.widget_text()
    await kernel.execute("%agent --permission-mode default")
