"""The front as a user sees it, in real JupyterLab in real Chromium (one server for the
module): the approval cards, how runs end, the chat in light and dark themes, and a
notebook reopened after a kernel restart. Each step saves a screenshot (see
``lab.py``) that was looked at when this was written.

Skipped unless JupyterLab, Python playwright and /usr/bin/chromium are installed.
"""

from __future__ import annotations

import json

import nbformat
import pytest

from jupyter_agent.testing import FakeMessagesAPI, http_error, response, text, tool_use

from .lab import HAVE_BROWSER, cell, command, require_browser, restarted, run_and_wait, run_cell, save, \
    screenshot, wait_theme, write_notebook

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER,
                                reason="needs jupyterlab, playwright and the Debian chromium package")

VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def api():
    server = FakeMessagesAPI([]).start()
    yield server
    server.close()


def luminance(rgb: str) -> float:
    values = [int(float(v)) for v in rgb[rgb.index("(") + 1:rgb.index(")")].split(",")[:3]]
    lin = [(c / 255) / 12.92 if c / 255 <= 0.03928 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in values]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(page, selector: str) -> float:
    """WCAG contrast of an element's text against its (first opaque ancestor's) background."""
    fg, bg = page.evaluate("""sel => {
        const el = document.querySelector(sel);
        let node = el, bg = 'rgba(0, 0, 0, 0)';
        while (node && (bg === 'rgba(0, 0, 0, 0)' || bg === 'transparent')) {
            bg = getComputedStyle(node).backgroundColor; node = node.parentElement; }
        return [getComputedStyle(el).color, bg];
    }""", selector)
    a, b = sorted((luminance(fg), luminance(bg)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def test_cards_and_how_runs_end(lab, page_of, api):
    root = lab.root
    (root / "notes.txt").write_text("# settings\nvalue = 1\n")
    nb = write_notebook(root / "cards.ipynb", ["%load_ext jupyter_agent", "%%agent\nRun the third cell",
                        "total = 1\nprint(undefined_name + total)", "%%agent\nChange value in notes.txt",
                        "%%agent\nSay hello"], ids=["c0", "c1", "c-boom", "c3", "c4"])
    api.add(response(text("I'll read the notebook and run the cell."), tool_use("Read", {"file_path": str(nb)}),
                     tool_use("NotebookRun", {"notebook_path": str(nb), "cell_id": "c-boom"})),
            response(text("The cell raised a `NameError`: `undefined_name` is not defined.")),
            response(text("Reading notes.txt first."), tool_use("Read", {"file_path": str(root / "notes.txt")}),
                     tool_use("Edit", {"file_path": str(root / "notes.txt"), "old_string": "value = 1",
                                       "new_string": "value = 2"})),
            http_error(401, "authentication_error", "invalid x-api-key"))
    page = page_of("cards.ipynb")
    run_and_wait(page, 0)
    run_and_wait(page, 1)
    card = cell(page, 1)
    card.locator("button:has-text('Allow')").first.wait_for(timeout=30000)
    screenshot(page, "approval_notebookrun", card)
    # the code as code (highlighted, lines kept), and where the cell is
    code = card.locator("pre.ja-code")
    assert code.count() == 1 and "print(undefined_name + total)" in code.inner_text()
    assert code.inner_text().count("\n") >= 1 and code.locator("span").count() >= 3  # highlighted
    assert "cell 3 of 5" in card.inner_text()
    assert card.locator("details:has-text('raw input')").get_attribute("open") is None  # folded
    card.locator("button:has-text('Allow')").first.click()
    card.locator("text=Finished").first.wait_for(timeout=60000)
    out = card.inner_text()
    screenshot(page, "finished_run", card)
    assert "ran, raised NameError" in out and "✓ NotebookRun" not in out  # not a green tick
    assert "not a promise" not in out and "Ended" not in out  # a normal end: no lecture
    assert "cards.ipynb cell_id=c-boom" in out and str(root) not in out.split("Prompt")[0]  # relative

    run_and_wait(page, 3)
    card = cell(page, 3)
    card.locator("button:has-text('Always allow')").wait_for(timeout=30000)
    screenshot(page, "approval_edit", card)
    text_shown = card.inner_text()
    assert "-value = 1" in text_shown and "+value = 2" in text_shown  # the diff
    assert card.locator("details:has-text('raw input')").get_attribute("open") is None
    assert "adds Edit(" in text_shown and "Edit, Write and NotebookEdit" in text_shown
    card.locator("button:has-text('Stop')").click()
    card.locator("text=Stopped").first.wait_for(timeout=30000)
    screenshot(page, "stopped_run", card)
    out = card.inner_text()
    assert "⏹" not in out and "stopped" in out and "— error" not in out  # (its icon is SVG, not an emoji)
    assert (root / "notes.txt").read_text() == "# settings\nvalue = 1\n"

    run_and_wait(page, 4)
    card = cell(page, 4)
    card.locator("text=Model error").first.wait_for(timeout=30000)
    screenshot(page, "model_error", card)
    out = card.inner_text()
    assert "Check ANTHROPIC_API_KEY" in out and "invalid x-api-key" in out
    assert "Error: authentication" not in out


def test_the_chat_reads_like_a_chat_in_light_and_dark_themes(lab, page_of, api):
    write_notebook(lab.root / "chat.ipynb", ["%load_ext jupyter_agent\nimport jupyter_agent", "jupyter_agent.chat()"])
    api.add(response(text("I'll **write** `hello.txt`."),
                     tool_use("Write", {"file_path": str(lab.root / "hello.txt"), "content": "hi"})),
            response(text("Done: `hello.txt` says *hi*.")))
    page = page_of("chat.ipynb", height=1100)
    run_and_wait(page, 0)
    run_and_wait(page, 1)
    chat = page.locator(".ja-chat")
    box = chat.locator("textarea")
    box.fill("Write hi")
    box.press("Shift+Enter")  # a new line...
    box.press_sequentially("to hello.txt")
    assert box.input_value() == "Write hi\nto hello.txt"
    box.press("Enter")  # ...and Enter sends, as in the side panel (labextension/src/chatKeys.ts)
    chat.locator("button.mod-success:has-text('Allow')").wait_for(timeout=30000)
    stops = [b for b in page.locator("button:has-text('Stop')").all() if b.is_visible()]
    assert len(stops) == 1  # one Stop
    headers = page.locator(".jp-OutputArea-output:has-text('jupyter-agent chat')").all()
    assert sum(1 for h in headers if h.is_visible()) == 1  # one header (the fallback is hidden)
    chat.locator("button.mod-success:has-text('Allow')").click()
    chat.locator("text=Done: hello.txt says").wait_for(timeout=30000)
    chat.locator("button:has-text('Send'):not([disabled])").wait_for()  # the turn is over
    # the turn stays inside the panel, the input below it
    assert chat.locator(".ja-user").count() == 1
    assert "Write hi\nto hello.txt" in chat.locator(".ja-user").inner_text()  # one message, two lines
    assert box.input_value() == ""  # sent once, then cleared
    turn_y = chat.locator("text=Done: hello.txt says").bounding_box()["y"]
    assert chat.locator("textarea").bounding_box()["y"] > turn_y
    assert "model not found" not in page.inner_text("body")
    screenshot(page, "chat_light", cell(page, 1))
    assert contrast(page, ".ja-chat .ja-user") >= 4.5
    command(page, "Use Theme: JupyterLab Dark")
    wait_theme(page, light=False)
    screenshot(page, "chat_dark", cell(page, 1))
    assert contrast(page, ".ja-chat .ja-user") >= 4.5
    assert contrast(page, ".ja-chat .jp-RenderedMarkdown p") >= 4.5  # the agent's answer
    command(page, "Use Theme: JupyterLab Light")
    wait_theme(page, light=True)


def test_a_chat_message_typed_while_the_kernel_is_busy_is_sent_whole(lab, page_of, api):
    """While a cell runs, the kernel takes no widget message; the input's typed values queue up
    (ipywidgets sends one and holds the rest back), and a click on Send used to overtake them:
    the message sent was its first letter. Enter ends the input's own value with a mark; a
    pasted mark does not send."""
    write_notebook(lab.root / "busy.ipynb", ["%load_ext jupyter_agent\nimport jupyter_agent", "jupyter_agent.chat()",
                                             "import time; time.sleep(4)"])
    api.add(response(text("Sent whole.")))
    page = page_of("busy.ipynb")
    run_and_wait(page, 0)
    run_and_wait(page, 1)
    run_cell(page, 2)  # the kernel is busy for 4 s
    box = page.locator(".ja-chat textarea")
    box.fill("")
    box.press_sequentially("Write hi")
    box.press("Shift+Enter")
    # a pasted text that ends with the send mark (U+2063) is not a send (the page drops that mark)
    page.keyboard.insert_text("to\u2063")
    box.press_sequentially(" hello.txt")
    box.press("Enter")
    page.locator(".ja-chat").locator("text=Sent whole.").wait_for(timeout=30000)
    assert page.locator(".ja-chat .ja-user").inner_text().strip().endswith("Write hi\nto hello.txt")
    assert box.input_value() == ""


def test_a_notebook_reopened_after_a_kernel_restart_shows_transcripts_not_errors(lab, page_of, api):
    nb_path = write_notebook(lab.root / "restart.ipynb", ["%load_ext jupyter_agent\nimport jupyter_agent",
                             "%%agent\nWrite x.txt", "jupyter_agent.chat()"])
    api.add(response(text("Hello from the chat, before the restart.")),
            response(text("I'll write x.txt."),
                     tool_use("Write", {"file_path": str(lab.root / "x.txt"), "content": ""})))
    page = page_of("restart.ipynb")
    run_and_wait(page, 0)
    run_and_wait(page, 2)
    chat = page.locator(".ja-chat")
    chat.locator("textarea").fill("Hi chat")
    chat.locator("button:has-text('Send')").click()
    chat.locator("text=Hello from the chat, before the restart.").wait_for(timeout=30000)
    run_and_wait(page, 1)
    cell(page, 1).locator("button:has-text('Allow')").first.wait_for(timeout=30000)
    # the hidden fallback (see jupyter/widgets/fallback.py) has the transcript so far
    cell(page, 1).locator(".jp-OutputArea-child", has=page.locator("[class*='ja-fallback-']"),
                          has_text="I'll write x.txt.").wait_for(state="attached")
    # saving mid-run keeps the transcript so far, not a placeholder
    save(page, nb_path)
    saved = nbformat.read(nb_path, as_version=4)
    widget, fallback = (o["data"] for o in saved.cells[1].outputs)
    assert VIEW in widget and "I'll write x.txt." in fallback["text/markdown"]
    assert "in progress" not in json.dumps(saved.cells[1].outputs)

    with restarted(page):
        command(page, "Restart Kernel…")
        page.locator(".jp-Dialog button.jp-mod-accept").click()
    # the run's end as the kernel left it, or (when the restart dropped its last message)
    # as the page swapped it in on seeing the restart (labextension/src/displays.ts);
    # "visible": the hidden fallback says "Interrupted by user" in a tool's result
    cell(page, 1).locator("text=Interrupted >> visible=true").first.wait_for(timeout=30000)
    save(page, nb_path)
    page.context.close()

    page = page_of("restart.ipynb")  # reopened: the old kernel's widgets are gone
    cell(page, 2).locator("text=Hello from the chat, before the restart.").first.wait_for(timeout=30000)
    # scenario: a negative check: the time a broken widget view would take to show its error
    page.wait_for_timeout(1500)
    body = page.inner_text("body")
    screenshot(page, "reopened_after_restart")
    assert "model not found" not in body and "Error displaying widget" not in body
    assert "I'll write x.txt." in cell(page, 1).inner_text() and "Interrupted" in cell(page, 1).inner_text()
    assert "Hello from the chat, before the restart." in cell(page, 2).inner_text()
    assert not (lab.root / "x.txt").exists()

    # chat() again keeps the history it had saved
    run_and_wait(page, 0)
    run_and_wait(page, 2)
    page.locator(".ja-chat").locator("text=Earlier in this chat").wait_for(timeout=30000)
    assert "Hello from the chat, before the restart." in cell(page, 2).inner_text()
    screenshot(page, "chat_after_restart", cell(page, 2))
