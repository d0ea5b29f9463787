"""An outside agent's ``move_cell`` against real JupyterLab in real Chromium, through the ``mcp``
SDK's client: the card says which cell moves from where to where (readable in light and dark);
Deny leaves the notebook as it was; Allow moves the cell in the page with its id and outputs, as
one step of the notebook's own undo (z, then Shift+Z); the panel's Undo this run and ``%agent
undo`` put it back in one step; a cell the user edited since the client's
read is refused unasked; "Always allow" lets the next move through; bad calls are clear errors.
"""

from __future__ import annotations

import re

import pytest

from .lab import HAVE_BROWSER, cell, menu, require_browser, run_and_wait, screenshot, wait_theme, write_notebook
from .test_contrast_browser import MEASURE
from .test_contrast_browser import _report as contrast_report
from .test_mcp_server_browser import OutsideClient, open_with_panel, text_of

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason="needs jupyterlab, playwright and Debian's chromium")

SOURCES = ["%load_ext jupyter_agent", "one = 1\nprint('output of one')", "# Notes", "three = 3", "four = 4",
           "%agent undo"]
IDS = ["load", "one", "md", "three", "four", "undo"]


def ids_in_order(client: OutsideClient, path: dict[str, str]) -> list[str]:
    """The cells' ids in order, as read_cells shows them (also the client's fresh read)."""
    read = text_of(client.now("read_cells", path))
    return re.findall(r'<cell id="([^"]+)"', read)


def test_move_cell_asks_moves_in_the_page_and_undoes_in_one_step(lab, page_of):
    write_notebook(lab.root / "order.ipynb", SOURCES, ids=IDS)
    write_notebook(lab.root / "elsewhere.ipynb", ["e = 1"], ids=["elsewhere"])
    page, panel = open_with_panel(page_of, "order.ipynb")  # (runs cells 0 and 1: cell one has an output)
    cell(page, 1).locator(".jp-OutputArea-output", has_text="output of one").wait_for(timeout=30000)
    client = OutsideClient(f"{lab.url}/jupyter-agent/mcp", "<b>mover</b>")
    path = {"notebook_path": "order.ipynb"}
    try:
        assert ids_in_order(client, path) == IDS
        pending = client.call("move_cell", {**path, "cell_id": "one", "after_cell_id": "three"})
        card = panel.locator(".jp-AgentPanel-approval")
        card.wait_for(timeout=60000)
        shown = card.inner_text()
        assert ("move cell one in order.ipynb from position 2 of 6 to just after cell three (position 4 of 6). "
                "Its source and outputs stay as they are.") in shown, shown
        assert "-[one] code: one = 1  (+1 lines)" in shown and "+[one] code: one = 1  (+1 lines)" in shown, shown
        assert "Asked by <b>mover</b> 9" in shown and card.locator("b", has_text="mover").count() == 0  # markup as text
        assert card.get_by_role("button", name="Always allow").count() == 1
        problems = []  # the card readable (WCAG AA) in light and dark; looked at in the screenshots
        for theme, light in (("light", True), ("dark", False)):
            if not light:
                menu(page, "Settings", "Theme", "JupyterLab Dark")
                wait_theme(page, light=False)
            screenshot(page, f"mcp_move_card_{theme}", card)
            screenshot(page, f"mcp_move_card_docked_{theme}", page.locator(".jp-AgentNotebookApprovals"))
            problems += contrast_report(theme, page.evaluate(MEASURE, [".jp-AgentPanel-approval"]))
        menu(page, "Settings", "Theme", "JupyterLab Light")
        wait_theme(page, light=True)
        assert not problems, "text below WCAG AA:\n" + "\n".join(problems)
        card.locator(".jp-AgentPanel-feedback").fill("Keep the order.")
        card.get_by_role("button", name="Deny", exact=True).click()
        denied = pending.result(60)
        assert denied.is_error and "Keep the order." in text_of(denied)
        assert ids_in_order(client, path) == IDS

        pending = client.call("move_cell", {**path, "cell_id": "one", "after_cell_id": "three"})
        card.wait_for(timeout=60000)
        card.get_by_role("button", name="Allow", exact=True).click()
        moved = pending.result(60)
        assert not moved.is_error and "Moved cell one after cell three" in text_of(moved), text_of(moved)
        # the page shows it at once, with its output; the same id
        cell(page, 3).locator(".jp-OutputArea-output", has_text="output of one").wait_for(timeout=30000)
        assert ids_in_order(client, path) == ["load", "md", "three", "one", "four", "undo"]
        cell(page, 0).locator(".jp-InputPrompt").click()  # the notebook's own undo: one step, and redo
        page.keyboard.press("Escape")
        page.keyboard.press("z")
        cell(page, 1).locator(".jp-OutputArea-output", has_text="output of one").wait_for(timeout=30000)
        assert ids_in_order(client, path) == IDS
        page.keyboard.press("Shift+z")
        cell(page, 3).locator(".jp-OutputArea-output", has_text="output of one").wait_for(timeout=30000)
        assert ids_in_order(client, path) == ["load", "md", "three", "one", "four", "undo"]

        panel.locator(".jp-AgentPanel-undo").click()  # one undo step: back where it was
        cell(page, 1).locator(".jp-OutputArea-output", has_text="output of one").wait_for(timeout=30000)
        panel.locator(".jp-AgentPanel-status", has_text="put back as it was").wait_for(timeout=30000)
        assert ids_in_order(client, path) == IDS

        # The user edits the cell after the client's read: its move is refused, nobody asked.
        editor = cell(page, 3).locator(".cm-content")
        editor.click()
        page.keyboard.press("End")
        page.keyboard.type("  # mine")
        page.wait_for_function("() => document.querySelectorAll('.jp-Cell .cm-content')[3]"
                               ".textContent.includes('# mine')")
        stale = client.now("move_cell", {**path, "cell_id": "three", "before_cell_id": "one"})
        assert stale.is_error and "changed since your last read_cells" in text_of(stale), text_of(stale)
        assert panel.locator(".jp-AgentPanel-approval").count() == 0

        # Bad calls: clear errors, nothing asked, nothing moved.
        assert ids_in_order(client, path) == IDS
        for args, says in [
            ({**path, "cell_id": "<img src=x onerror=alert(1)>", "after_cell_id": "md"}, "not a valid cell id"),
            ({**path, "cell_id": "one", "after_cell_id": "elsewhere"}, 'Cell with ID "elsewhere" not found'),
            ({**path, "cell_id": "one", "to_index": 99}, "names the place by a cell, never an index"),
            ({**path, "cell_id": "one"}, "exactly one of after_cell_id"),
            ({**path, "cell_id": "one", "after_cell_id": "load"}, "already there"),
            ({**path, "cell_id": "cell-1", "after_cell_id": "md"}, "is a position, not a cell id"),
            ({"notebook_path": "<b>x</b>.ipynb", "cell_id": "one", "after_cell_id": "md"}, "No notebook '<b>x</b>"),
            ({"notebook_path": "elsewhere.ipynb", "cell_id": "elsewhere", "before_cell_id": "one"}, "is not open"),
        ]:
            refused = client.now("move_cell", args)
            assert refused.is_error and says in text_of(refused), (args, text_of(refused))
        assert panel.locator(".jp-AgentPanel-approval").count() == 0
        assert ids_in_order(client, path) == IDS

        # "Always allow": this move and the next go through; the next one unasked.
        pending = client.call("move_cell", {**path, "cell_id": "four", "before_cell_id": "load"})
        card.wait_for(timeout=60000)
        card.get_by_role("button", name="Always allow").click()
        assert not pending.result(60).is_error
        again = client.now("move_cell", {**path, "cell_id": "four", "after_cell_id": "three"})
        assert not again.is_error, text_of(again)
        assert ids_in_order(client, path) == IDS

        # %agent undo (the outside run is the kernel's last): its moves put back in one step.
        assert not client.now("move_cell", {**path, "cell_id": "md", "before_cell_id": "load"}).is_error
        assert ids_in_order(client, path) == ["md", "load", "one", "three", "four", "undo"]
        run_and_wait(page, 5)
        cell(page, 5).locator(".jp-OutputArea-output", has_text="put back as it was").wait_for(timeout=60000)
        now = ids_in_order(client, path)
        assert now[:6] == IDS, (now, cell(page, 5).inner_text())  # (Shift+Enter on the last cell added one below it)
    finally:
        client.close()


#: The page's restore with several steps, through the live backend: a page whose hello lacks
#: ``moves`` refused a move; then two deletes and a move in one transaction.
STEPS = """\
from pathlib import Path
from jupyter_agent.jupyter.kernel.agent_session import get_bridge
from jupyter_agent.notebook.document import CellRestore
from jupyter_agent.notebook.live_backend import LiveNotebook
client = get_ipython().kernel.get_parent()["header"]["session"]
doc = LiveNotebook(Path("steps.ipynb").resolve(), get_bridge(), client)
page = get_bridge().pages[client]
page.moves = False  # as a page of an older jupyter-agent says hello
try:
    await doc.restore_cells([CellRestore("move", "z", after_id="x")], expected_version=(await doc.snapshot()).version)
except Exception as exc:
    print("OLD PAGE:", exc)
page.moves = True
steps = [CellRestore("delete", "a"), CellRestore("delete", "b"), CellRestore("move", "z", after_id="x")]
await doc.restore_cells(steps, expected_version=(await doc.snapshot()).version)
print("ORDER", " ".join(c.id for c in (await doc.snapshot()).cells))
"""


def test_the_pages_restore_finds_each_cell_where_the_steps_before_left_it(lab, page_of):
    """In the page, a step of a restore finds its cell where the steps before it left it (the
    shared model's list of cells is stale inside the transaction), a moved cell keeps its output,
    and a page that does not say ``moves`` is refused a move, nothing changed."""
    write_notebook(lab.root / "steps.ipynb", ["%load_ext jupyter_agent", "x = 1", "a = 1", "b = 1", "y = 1",
                                              "print('zed')", STEPS], ids=["load", "x", "a", "b", "y", "z", "drv"])
    page = page_of("steps.ipynb")
    for index in (0, 5):
        run_and_wait(page, index)
    run_and_wait(page, 6)
    said = page.locator(".jp-OutputArea-output", has_text="ORDER")
    said.wait_for(timeout=60000)
    assert "ORDER load x z y drv" in said.inner_text(), said.inner_text()
    old = page.locator(".jp-OutputArea-output", has_text="OLD PAGE").inner_text()
    assert "older jupyter-agent" in old and "reload the notebook's page" in old, old
    cell(page, 2).locator(".jp-OutputArea-output", has_text="zed").wait_for(timeout=30000)  # its output moved too
