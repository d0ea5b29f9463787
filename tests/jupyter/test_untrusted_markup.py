"""Untrusted text never becomes live markup, in real JupyterLab in real Chromium.

An attacker's text reaches the page through the model (a prompt injection in a file or
notebook the agent read, or a hostile endpoint behind ``ANTHROPIC_BASE_URL``): the
answer, its thinking, tool inputs and results, file names, API errors and retry
notices, in a ``%%agent`` cell, the side panel, ``chat()`` and the lessons' stepper; or
through a notebook someone sent (a chat cell's saved output). The payloads
(``payloads.py``) set ``window.__pwned`` if they run, one of them presses every "Allow",
and a ``<style>`` hides the notebook and the buttons. Each test asserts, where the text
shows and again after a save and a reopen in a fresh browser context: no payload is live
markup, none ran, the approval still waits for the user (who Denies: nothing is
written), and the notebook and the buttons are visible.

Screenshots (a payload answer shown as text, light and dark theme) go to
tests/output/screenshots/ (see ``lab.py``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_agent.jupyter.magic.chat import CHAT_TITLE
from jupyter_agent.testing import http_error, response, text, thinking, tool_use

from . import payloads
from .lab import HAVE_BROWSER, button, cell, command, require_browser, run_and_wait, save, screenshot, \
    wait_for_end, wait_theme, write_notebook

require_browser()
pytestmark = [pytest.mark.skipif(not HAVE_BROWSER, reason="needs jupyterlab, playwright and Debian's chromium"),
              pytest.mark.timeout(420)]

PANEL = "#jupyter-agent-panel"
# Every <img> has loaded or failed (an onerror payload fires with the failure).
_IMAGES_SETTLED = "() => Array.from(document.images).every(i => i.complete)"


def settle(page: Any, ready_js: str, timeout: float = 60) -> None:
    """Wait until the page shows what the step waits for (``ready_js``), or a payload went
    live or ran (so an attack fails the test at once, with what went live)."""
    page.wait_for_function(f"() => ({ready_js})() || ({payloads.LIVE_MARKUP})().length > 0"
                           f" || ({payloads.RAN})().length > 0", timeout=timeout * 1000)
    page.wait_for_function(_IMAGES_SETTLED, timeout=timeout * 1000)


def shown(marker: str) -> str:
    """JavaScript: the page holds the text ``marker`` (shown, or in a hidden fallback)."""
    return f"() => document.body.textContent.includes({marker!r})"


def assert_inert(page: Any, *buttons: str) -> None:
    """No payload is live markup or ran; the notebook (and each of ``buttons``) is visible."""
    live, ran = page.evaluate(payloads.LIVE_MARKUP), page.evaluate(payloads.RAN)
    assert not live and not ran, f"live markup: {sorted(set(live))}; payloads that ran: {sorted(set(ran))}"
    assert page.locator(".jp-Notebook").first.is_visible()
    for label in buttons:
        assert button(page, label).is_visible(), f"the {label} button is hidden"


def deny(scope: Any) -> None:
    """The user's answer, the only one: Deny with a note (without one, Deny also stops the
    run; with one, the model reads it and the run goes on)."""
    scope.locator("input[placeholder^='Feedback']").last.fill("Not this, thanks.")
    scope.locator("button.jupyter-button:not([disabled])", has_text=re.compile(r"^\s*Deny\s*$")).last.click()


def written(root: Path) -> list[str]:
    """Files the payloads' Writes would have created (the user never allowed one)."""
    return [p.name for p in root.iterdir() if p.name.startswith("notes<") or p.name == "target.txt"]


def reopened(lab: Any, page: Any, name: str, marker: str) -> Any:
    """Save ``name``, close its page, open it in a fresh browser context; wait for ``marker``."""
    page.locator(".jp-Notebook").first.click(position={"x": 5, "y": 5})
    save(page, lab.root / name)
    page.context.close()
    fresh = lab.open(name)
    settle(fresh, shown(marker))
    return fresh


def test_agent_cell_answer_thinking_tools_file_names_errors_and_notices(lab, page_of, script):
    root = lab.root
    (root / "injected.txt").write_text(payloads.plain("RESULT"))
    write_notebook(root / "attack.ipynb", ["%load_ext jupyter_agent", "%%agent\nSummarize injected.txt",
                                           "%%agent\nTry again"])
    script(response(thinking(payloads.plain("THINKING")), text(payloads.markdown("ANSWER")),
                    tool_use("Read", {"file_path": str(root / "injected.txt")}),
                    tool_use("Write", {"file_path": str(root / payloads.FILE_NAME),
                                       "content": payloads.plain("CONTENT")})),
           response(text(payloads.markdown("FINAL"))),
           http_error(529, "overloaded_error", payloads.plain("NOTICE"), retry_after=0),
           http_error(400, "invalid_request_error", payloads.plain("APIERROR")))
    page = page_of("attack.ipynb")
    page.click(f"li[data-id='{PANEL[1:]}']")  # the side panel shows the cell's run too
    panel = page.locator(PANEL)
    panel.locator(".jp-AgentPanel-hintBox").wait_for(timeout=30000)
    run_and_wait(page, 0)
    panel.locator(".jp-AgentPanel-empty").wait_for(timeout=30000)
    run_and_wait(page, 1)
    card = cell(page, 1)
    settle(page, "() => Array.from(document.querySelectorAll('button')).some(b => b.textContent.trim() === 'Deny')"
                 f" && ({shown('RESULT')})() && ({shown('CONTENT')})() && !!document.querySelector("
                 f"'{PANEL} .jp-AgentPanel-text')")
    assert_inert(page, "Allow", "Deny")
    assert "ANSWER: here is what I found." in panel.locator(".jp-AgentPanel-text").first.inner_text()
    assert "ANSWER: here is what I found." in card.inner_text() and "<img src=x" in card.inner_text()
    screenshot(page, "untrusted_markup_card_light", card)
    command(page, "Use Theme: JupyterLab Dark")
    wait_theme(page, light=False)
    screenshot(page, "untrusted_markup_card_dark", card)
    command(page, "Use Theme: JupyterLab Light")
    wait_theme(page, light=True)
    assert_inert(page, "Allow", "Deny")

    deny(card)
    settle(page, shown("All done (FINAL)"))
    wait_for_end(page)
    assert_inert(page)
    assert written(root) == []
    run_and_wait(page, 2)  # an overloaded answer (a retry notice), then an API error
    settle(page, shown("APIERROR"))
    wait_for_end(page)
    assert_inert(page)
    assert "NOTICE" in cell(page, 2).inner_text() and "APIERROR" in cell(page, 2).inner_text()
    screenshot(page, "untrusted_markup_transcript", cell(page, 1))

    page = reopened(lab, page, "attack.ipynb", "All done (FINAL)")
    settle(page, shown("APIERROR"))
    assert_inert(page)
    assert written(root) == []


def test_a_compaction_and_the_context_meter_in_the_card(lab, page_of, script):
    """The API says the prompt is too long: the card shows the compaction as its own line
    (the summary, model text, in a <details>) and the context meter in its header."""
    root = lab.root
    (root / "long.txt").write_text("a long file\n")
    write_notebook(root / "compact.ipynb", ["%load_ext jupyter_agent", "%%agent\nRead long.txt, then answer."])
    script(response(tool_use("Read", {"file_path": str(root / "long.txt")})),
           http_error(400, "invalid_request_error", "prompt is too long: 31000 tokens > 30000 maximum"),
           response(text(payloads.markdown("SUMMARY"))),
           response(text("Answered after the compaction.")))
    page = page_of("compact.ipynb")
    run_and_wait(page, 0)
    run_and_wait(page, 1)
    card = cell(page, 1)
    settle(page, shown("Answered after the compaction."))
    wait_for_end(page)
    assert_inert(page)
    assert "Compacted: " in card.inner_text() and "1 file re-read" in card.inner_text()
    assert "context " in card.inner_text()  # the meter (the header, or the transcript's)
    card.locator("summary", has_text="The summary that replaced the history").click()  # shown as text
    settle(page, shown("SUMMARY"))
    assert_inert(page)
    screenshot(page, "compaction_card_light", card)
    command(page, "Use Theme: JupyterLab Dark")
    wait_theme(page, light=False)
    screenshot(page, "compaction_card_dark", card)
    command(page, "Use Theme: JupyterLab Light")
    wait_theme(page, light=True)


def test_chat(lab, page_of, script):
    root = lab.root
    write_notebook(root / "chat.ipynb", ["%load_ext jupyter_agent\nimport jupyter_agent", "jupyter_agent.chat()"])
    script(response(thinking(payloads.plain("CHATTHINK")), text(payloads.markdown("CHAT")),
                    tool_use("Write", {"file_path": str(root / payloads.FILE_NAME),
                                       "content": payloads.plain("CHATWRITE")})),
           response(text(payloads.markdown("CHATDONE"))),
           http_error(400, "invalid_request_error", payloads.plain("CHATERROR")))
    page = page_of("chat.ipynb")
    run_and_wait(page, 0)
    run_and_wait(page, 1)
    chat = page.locator(".ja-chat")
    chat.locator("textarea").fill(payloads.plain("PROMPT"))  # the user pasted it
    chat.locator("button:has-text('Send')").click()
    settle(page, "() => Array.from(document.querySelectorAll('.ja-chat button')).some(b => b.textContent.trim()"
                 f" === 'Deny') && ({shown('All done (CHAT)')})() && ({shown('CHATWRITE')})()")
    assert_inert(page, "Allow", "Deny")
    deny(chat)
    settle(page, shown("All done (CHATDONE)"))
    chat.locator("button:has-text('Send'):not([disabled])").wait_for()  # the turn is over
    assert_inert(page)
    chat.locator("textarea").fill("Go on")
    chat.locator("button:has-text('Send')").click()
    settle(page, shown("CHATERROR"))
    chat.locator("button:has-text('Send'):not([disabled])").wait_for()
    assert_inert(page)
    assert written(root) == []

    page = reopened(lab, page, "chat.ipynb", "All done (CHATDONE)")
    settle(page, shown("CHATERROR"))
    assert_inert(page)
    assert written(root) == []


LESSON = '''\
from jupyter_agent.lessons import Lesson, Stepper
from jupyter_agent.lessons.widget import StepperView
from jupyter_agent.testing import http_error, response, text, thinking, tool_use
from pathlib import Path
lesson = Lesson("attack")
here = Path.cwd()  # the notebook's folder: the test sees what a Write would create there
notes = here / "lesson-injected.txt"
notes.write_text({result!r})
script = [response(thinking({thinking!r}), text({answer!r}), tool_use("Read", {{"file_path": str(notes)}}),
                   tool_use("Write", {{"file_path": str(here / {file_name!r}), "content": {content!r}}})),
          http_error(400, "invalid_request_error", {error!r})]
view = StepperView(Stepper.start({prompt!r}, model=lesson.model(script), cwd=here))
view'''


def test_an_untrusted_notebooks_saved_chat_and_the_lessons_stay_inert(lab, page_of):
    """A notebook someone sent: its chat cell's saved Markdown carries the payloads. Its
    outputs are not signed by this server, so JupyterLab sanitizes them; running the
    harmless-looking ``chat()`` must not show them again as trusted output. In the same
    notebook, the lessons' stepper widget (its views, pairing table, approval card and
    end) and timeline over a run whose every text is a payload."""
    lesson = LESSON.format(result=payloads.plain("LRESULT"), thinking=payloads.plain("LTHINK"),
                           answer=payloads.markdown("LANSWER"), file_name=payloads.FILE_NAME,
                           content=payloads.plain("LCONTENT"), error=payloads.plain("LERROR"),
                           prompt=payloads.plain("LPROMPT"))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in (
        "%load_ext jupyter_agent\nimport jupyter_agent", "jupyter_agent.chat()", lesson, "view.timeline()")])
    for i, c in enumerate(nb.cells):
        c.id = f"c{i}"
    nb.cells[1].outputs = [nbformat.v4.new_output(
        "display_data", data={"text/markdown": f"{CHAT_TITLE}\n\n{payloads.markdown('STORED')}",
                              "text/plain": f"jupyter-agent chat\n\n{payloads.markdown('STORED')}"})]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, lab.root / "sent.ipynb")  # written directly: not signed by this server
    page = page_of("sent.ipynb", height=1400)
    settle(page, shown("All done (STORED)"))
    assert_inert(page)
    run_and_wait(page, 0)
    run_and_wait(page, 1)
    settle(page, f"() => !!document.querySelector('.ja-chat textarea') && ({shown('Earlier in this chat')})()")
    assert_inert(page, "Send")

    run_and_wait(page, 2)
    page.locator(".jupyter-widgets button", has_text="Run to end").first.click(timeout=90000)
    # the loop waits in step 3 for the Write's approval (the views, folded or not, are drawn)
    settle(page, "() => Array.from(document.querySelectorAll('button')).some(b => b.textContent.trim() === 'Deny')"
                 f" && ({shown('LRESULT')})() && ({shown('LCONTENT')})()")
    assert_inert(page, "Allow", "Deny")
    deny(cell(page, 2))
    settle(page, f"() => ({shown('Ended:')})() && ({shown('LERROR')})()")
    run_and_wait(page, 3)
    cell(page, 3).locator(".jp-OutputArea-output img").first.wait_for(timeout=30000)
    assert_inert(page)
    assert written(lab.root) == []
    screenshot(page, "untrusted_markup_lesson", cell(page, 2))

    page = reopened(lab, page, "sent.ipynb", "STORED: here is what I found.")  # (restored as text)
    settle(page, shown("LERROR"))
    assert_inert(page)


