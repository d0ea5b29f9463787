"""An outside agent's ask about a notebook open in a background tab, against real JupyterLab in
real Chromium, the ``mcp`` SDK's client over streamable HTTP: the side panel follows the other
notebook, so the card would wait unseen; the page shows a JupyterLab notification naming the
client (its markup as text), what it asks and in which notebook; its button brings the notebook
to the front, where the card shows under it; Allow carries the call out and the notification is
gone. An ask answered after the user switched by the notebook's tab (not the button) takes its
notification away too, and so does a restart of the kernel (from the page) under a waiting ask.
Screenshots in light and dark.
"""

from __future__ import annotations

from typing import Any

import pytest

from .lab import HAVE_BROWSER, menu, require_browser, restart_from_page, run_and_wait, screenshot, wait_idle, \
    wait_theme, write_notebook
from .test_mcp_server_browser import CLIENT, OutsideClient, text_of

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason="needs jupyterlab, playwright and Debian's chromium")

#: JupyterLab's toasts (react-toastify), ours by their text.
TOAST = ".Toastify__toast"
#: The notebook shown now (JupyterLab hides the others).
SHOWN = ".jp-NotebookPanel:not(.lm-mod-hidden)"


@pytest.fixture
def outside(lab):
    client = OutsideClient(f"{lab.url}/jupyter-agent/mcp")
    yield client
    client.close()


def shown_sources(page: Any) -> list[str]:
    """The cells of the notebook shown now (lab.py's cell helpers see every open notebook's)."""
    return page.eval_on_selector_all(
        f"{SHOWN} .jp-Cell", "els => els.map(e => Array.from(e.querySelectorAll('.cm-line'))"
        ".map(x => x.textContent).join('\\n'))")


def settled(page: Any) -> None:
    """Wait until our toast has slid in (its animation ends inside the window)."""
    page.wait_for_function(
        """() => { const t = Array.from(document.querySelectorAll('.Toastify__toast'))
                     .find(e => e.textContent.includes('an outside agent (MCP)'));
                   if (!t) return false;
                   return t.getAnimations().length === 0 && t.getBoundingClientRect().right <= window.innerWidth; }""",
        timeout=30000)


def current_tab(page: Any) -> str:
    return page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.jp-mod-current .lm-TabBar-tabLabel").inner_text()


def test_an_ask_about_a_background_notebook_is_a_notification(lab, page_of, outside):
    write_notebook(lab.root / "back.ipynb", ["%load_ext jupyter_agent", "b = 1"], ids=["load", "setb"])
    write_notebook(lab.root / "front.ipynb", ["f = 0"], ids=["setf"])
    page = page_of("back.ipynb")
    run_and_wait(page, 0)
    # its side panel (closed) connected to the kernel (a switch before that could cross its open)
    page.locator("#jupyter-agent-panel .jp-AgentPanel-empty").wait_for(state="attached", timeout=30000)
    # The user opens another notebook: it is the current one now, back.ipynb waits in its tab.
    page.locator(".jp-DirListing-itemText", has_text="front.ipynb").dblclick()
    page.wait_for_function("() => document.querySelector('.lm-TabBar-tab.jp-mod-current')"
                           "?.textContent.includes('front.ipynb')", timeout=60000)
    wait_idle(page)
    assert current_tab(page) == "front.ipynb"

    path = {"notebook_path": "back.ipynb"}
    assert not outside.now("read_cells", path).is_error
    pending = outside.call("insert_cell", {**path, "after_cell_id": "setb", "cell_type": "code",
                                           "source": "print(b + 1)"})
    toast = page.locator(TOAST, has_text="an outside agent (MCP)")
    toast.wait_for(timeout=60000)
    said = toast.inner_text()
    name = f"{CLIENT} 9"  # the client's name and version, as its initialize says them
    assert f"{name[:39]}…, an outside agent (MCP), asks to insert a cell in back.ipynb" in said, said
    assert toast.locator("img").count() == 0 and page.evaluate("() => window.__pwned") is None  # markup as text
    assert not pending.done()  # the call waits for the user
    for theme, light in (("light", True), ("dark", False)):
        if not light:
            menu(page, "Settings", "Theme", "JupyterLab Dark")
            wait_theme(page, light=False)
            toast.wait_for(timeout=30000)
        settled(page)
        screenshot(page, f"background_ask_{theme}")
    menu(page, "Settings", "Theme", "JupyterLab Light")  # (the module's other tests: light)
    wait_theme(page, light=True)

    toast.get_by_role("button", name="Show notebook").click()
    page.wait_for_function("() => document.querySelector('.lm-TabBar-tab.jp-mod-current')"
                           "?.textContent.includes('back.ipynb')", timeout=30000)
    card = page.locator(f"{SHOWN} .jp-AgentNotebookApprovals .jp-AgentPanel-approval")
    card.wait_for(timeout=60000)  # its side panel connected: the card, under the notebook
    assert "print(b + 1)" in card.inner_text() and f"Asked by {CLIENT} 9" in card.inner_text()
    screenshot(page, "background_ask_shown")
    card.get_by_role("button", name="Allow", exact=True).click()
    inserted = pending.result(60)
    assert not inserted.is_error, text_of(inserted)
    page.wait_for_function(f"() => document.querySelectorAll('{SHOWN} .jp-Cell').length === 3", timeout=60000)
    assert shown_sources(page) == ["%load_ext jupyter_agent", "b = 1", "print(b + 1)"]
    page.locator(TOAST, has_text="an outside agent (MCP)").wait_for(state="detached", timeout=30000)

    # Again from the background, but the user switches by the notebook's tab, not the button:
    # the answer takes the notification away.
    page.locator(".lm-DockPanel-tabBar .lm-TabBar-tabLabel", has_text="front.ipynb").click()
    page.locator(f"{SHOWN} .jp-AgentNotebookApprovals").wait_for(state="hidden", timeout=30000)
    assert not outside.now("read_cells", path).is_error
    pending = outside.call("delete_cell", {**path, "cell_id": "setb"})
    toast.wait_for(timeout=60000)
    assert "asks to delete a cell in back.ipynb" in toast.inner_text()
    page.locator(".lm-DockPanel-tabBar .lm-TabBar-tabLabel", has_text="back.ipynb").click()
    card.wait_for(timeout=60000)
    card.locator(".jp-AgentPanel-feedback").fill("Keep b.")
    card.get_by_role("button", name="Deny", exact=True).click()
    denied = pending.result(60)
    assert denied.is_error and "Keep b." in text_of(denied)
    page.locator(TOAST, has_text="an outside agent (MCP)").wait_for(state="detached", timeout=30000)
    assert shown_sources(page)[1] == "b = 1"

    # Once more from the background; the user switches by the tab and restarts the kernel under
    # the waiting ask: the kernel cannot end its ask, the page drops the notification itself.
    page.locator(".lm-DockPanel-tabBar .lm-TabBar-tabLabel", has_text="front.ipynb").click()
    page.locator(f"{SHOWN} .jp-AgentNotebookApprovals").wait_for(state="hidden", timeout=30000)
    assert not outside.now("read_cells", path).is_error
    pending = outside.call("replace_cell", {**path, "cell_id": "setb", "source": "b = 2"})
    toast.wait_for(timeout=60000)
    assert "asks to replace a cell in back.ipynb" in toast.inner_text()
    page.locator(".lm-DockPanel-tabBar .lm-TabBar-tabLabel", has_text="back.ipynb").click()
    card.wait_for(timeout=60000)
    page.locator(f"{SHOWN} .jp-InputPrompt").first.click()
    restart_from_page(page)
    page.locator(TOAST, has_text="an outside agent (MCP)").wait_for(state="detached", timeout=60000)
    assert pending.result(60).is_error  # the call learns of the restart
    assert shown_sources(page)[1] == "b = 1"
