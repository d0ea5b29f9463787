"""The offline demo in a real kernel, tried as a newcomer tries it: ``%%agent --replay demo``
again and again, with a Deny and a note in between. Every run replays from its start in
its own scratch folder, ends as its clicks say, and nothing lands in the kernel's folder."""

from __future__ import annotations

import pytest
import pytest_asyncio

from .test_kernel_magic import display_id_of, transcript

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module")
async def kernel(kernel):
    assert (await kernel.execute("%load_ext jupyter_agent"))["reply"]["status"] == "ok"
    await kernel.execute("%agent stop")
    reset = await kernel.execute("%agent new --permission-mode default --model '' --max-turns 0")
    assert reset["reply"]["status"] == "ok", reset["outputs"]
    yield kernel
    await kernel.execute("%agent --replay ''")  # the next module's tests talk to the fake API


async def replay_once(kernel, clicks: list[str], note: str = "") -> tuple[str, str]:
    """Run the packaged demo, answer its approvals with ``clicks`` (``allow``/``deny``,
    a deny with ``note``); the run's transcript and its end reason."""
    seen = set(kernel.buttons("Allow")) | set(kernel.buttons("Deny"))
    result = await kernel.execute("%%agent --replay demo\nplease translate my notebook into French")
    display_id = display_id_of(result)
    await kernel.execute("demo_run = _")
    for click in clicks:
        label = "Allow" if click == "allow" else "Deny"
        found = await kernel.until(lambda label=label: [b for b in kernel.buttons(label) if b not in seen], 20, label)
        button = found[-1]
        seen.update(kernel.buttons("Allow"), kernel.buttons("Deny"))
        if click == "deny":
            # the note of the card still open (an answered card's note is disabled)
            note_box = [t for t in kernel.of_model("TextModel") if not kernel.widgets[t].get("disabled")][-1]
            kernel.set_value(note_box, note)
            # the card's own Deny (the one next to the note), newest first
            button = [b for b in kernel.buttons("Deny") if b in found][-1]
        kernel.click(button)
        # Wait until the card took the click (its buttons are disabled then): a button of this
        # card whose comm_open came late must not look like the next card's.
        await kernel.until(lambda button=button, label=label: button not in kernel.buttons(label), 20,
                           "the card to take the click")
    try:
        md = await transcript(kernel, display_id, timeout=60)
    except TimeoutError:
        # say where the run stood, so a failure here can be read from the CI log
        state = await kernel.value("repr(demo_run.terminal)")
        pytest.fail(f"the run did not end: clicks={clicks} terminal={state}\n"
                    f"widgets: {kernel.widget_text()[-20000:]}")
    reason = await kernel.value("demo_run.terminal.reason.value")
    return md, reason.strip("'")


async def test_the_packaged_demo_replays_again_after_a_run_and_after_a_deny_with_a_note(kernel, module_tmp):
    ends = []
    for clicks, note in ((["allow", "allow"], ""), (["allow", "allow"], ""),
                         (["allow", "deny"], "Use value = 3 instead."), (["allow", "allow"], "")):
        md, reason = await replay_once(kernel, clicks, note)
        ends.append(reason)
        assert "model_error" not in md and "Model error" not in md, md
        assert "Offline replay — your prompt is not used; this replays demo_read_edit.json" in md, md
        assert "scratch folder" in md
        if note:
            assert f"Denied by you: {note}" in md, md
            assert "You denied Edit, so this recorded run ends here" in md
        else:
            assert "Done: notes.txt now says `value = 2`." in md, md
    assert ends == ["completed"] * 4
    assert not (module_tmp / "notes.txt").exists()  # the kernel's folder is left alone
    # the note stays in the conversation the next runs continue
    history = await kernel.value("str(get_ipython().user_ns['demo_run'].conversation.messages)")
    assert "Use value = 3 instead." in history
