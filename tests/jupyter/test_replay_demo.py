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


def parent_of(kernel, comm_id: str) -> str | None:
    ref = f"IPY_MODEL_{comm_id}"
    return next((p for p, s in kernel.widgets.items() if ref in (s.get("children") or ())), None)


async def approval_card(kernel, button: str) -> dict[str, str]:
    """The widgets of the approval card that holds ``button``, by role (``Allow``, ``Deny``,
    ``note``...). Waits for the card's own comm: a container opens after its children, so
    once the card is known every button and the note box of it are known too."""
    card = await kernel.until(lambda: (row := parent_of(kernel, button)) and parent_of(kernel, row), 20, "the card")
    parts: dict[str, str] = {}
    for row_ref in kernel.widgets[card]["children"]:
        for ref in kernel.widgets[row_ref.removeprefix("IPY_MODEL_")].get("children") or ():
            cid = ref.removeprefix("IPY_MODEL_")
            state = kernel.widgets[cid]
            if state.get("_model_name") == "ButtonModel":
                parts[state["description"]] = cid
            elif state.get("_model_name") == "TextModel":
                parts["note"] = cid
    return parts


async def replay_once(kernel, clicks: list[str], note: str = "") -> tuple[str, str]:
    """Run the packaged demo, answer its approvals with ``clicks`` (``allow``/``deny``,
    a deny with ``note``); the run's transcript and its end reason."""
    seen = set(kernel.of_model("ButtonModel"))
    result = await kernel.execute("%%agent --replay demo\nplease translate my notebook into French")
    display_id = display_id_of(result)
    await kernel.execute("demo_run = _")
    for click in clicks:
        # A new card is one whose Allow was not seen before; its parts are looked up through
        # the card itself, so a late button of an answered card is never taken for it.
        found = await kernel.until(lambda: [b for b in kernel.buttons("Allow") if b not in seen], 20, "a new card")
        card = await approval_card(kernel, found[-1])
        seen.update(card.values())
        if click == "deny":
            kernel.set_value(card["note"], note)
        kernel.click(card["Allow" if click == "allow" else "Deny"])
        # the card took the click when all its buttons are disabled
        await kernel.until(lambda card=card: not any(
            card[name] in kernel.buttons(name) for name in ("Allow", "Always allow", "Deny")), 20,
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
