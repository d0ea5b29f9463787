"""`%%agent` in JupyterLab with jupyter-collaboration installed (real-time collaboration:
the notebook is a shared document the server keeps, every tab a view of it), in real
Chromium: a second tab and a reloaded page both offer working buttons on an approval that
waits, an Allow in one tab runs the write, and every tab shows the run's end.

Its server runs in the overlay environment ``./dev test`` installs (``.venv/collab``:
jupyter-collaboration on top of ``.venv``), so the other browser tests keep plain
documents. Skipped without it, chromium or playwright, except in CI
(JUPYTER_AGENT_REQUIRE_BROWSER), where that is a failure. ~20 s.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.testing import response, text, tool_use

from .lab import (CELLS, HAVE_BROWSER, Lab, cell, run_and_wait, run_cell, save, screenshot, whole_notebook,
                  write_notebook)

#: The overlay's interpreter (see ./dev, install_collab_overlay).
COLLAB_PYTHON = Path(os.environ.get("JUPYTER_AGENT_COLLAB_PYTHON") or Path(sys.prefix) / "collab" / "bin" / "python")
HAVE_COLLAB = COLLAB_PYTHON.exists()

if not (HAVE_BROWSER and HAVE_COLLAB) and os.environ.get("JUPYTER_AGENT_REQUIRE_BROWSER"):
    raise RuntimeError(f"JUPYTER_AGENT_REQUIRE_BROWSER is set but jupyterlab, playwright, /usr/bin/chromium or "
                       f"jupyter-collaboration ({COLLAB_PYTHON}) is missing: `./dev test` installs them")
pytestmark = pytest.mark.skipif(not (HAVE_BROWSER and HAVE_COLLAB),
                                reason="needs jupyterlab, playwright, the Debian chromium package and "
                                       "jupyter-collaboration (./dev test installs it into .venv/collab)")


@pytest.fixture(scope="module")
def lab(api, tmp_path_factory):
    """A JupyterLab with collaboration on: the overlay's interpreter, which finds .venv's
    labextensions (ours, the widgets') and server configuration through JUPYTER_PATH and
    JUPYTER_CONFIG_PATH, the overlay's own (collaboration's) under its prefix."""
    env = dict(api.env(), JUPYTER_PATH=str(Path(sys.prefix) / "share" / "jupyter"),
               JUPYTER_CONFIG_PATH=str(Path(sys.prefix) / "etc" / "jupyter"))
    tmp = tmp_path_factory.mktemp("collab")
    # (its store of document updates goes in the test's folder, not the working directory)
    server = Lab(tmp, env, python=str(COLLAB_PYTHON), server_args=[f"--SQLiteYStore.db_path={tmp / 'ystore.db'}"])
    yield server
    server.close()


def continue_slow_loads(page: Any) -> None:
    """Answer collaboration's "The document is taking some time to load" dialog with
    "Continue waiting", as a person would, whenever it blocks an action: it shows once a
    shared document has not synced within 5 s (a fixed delay), as on 2 busy cores, and
    stays until answered."""
    slow = page.locator(".jp-Dialog", has_text="The document is taking some time to load")
    page.add_locator_handler(slow, lambda dialog: dialog.get_by_role("button", name="Continue waiting").click())


def open_tab(lab: Lab, context: Any, name: str, workspace: str) -> Any:
    """Another page on notebook ``name`` in ``context`` (the same browser, as a second tab),
    once its cells show. Not Lab.open's wait for an idle kernel: a page that joins a kernel
    already idle may show "idle" at once, with no other status before it."""
    page = context.new_page()
    continue_slow_loads(page)
    page.goto(f"{lab.url}/lab/workspaces/{workspace}/tree/{name}?reset")
    page.wait_for_selector(CELLS)
    return page


def allow_of(page: Any) -> Any:
    """The waiting card's Allow button in the page's ``%%agent`` cell."""
    return cell(page, 1).locator("button.jupyter-button:not([disabled])", has_text="Allow").first


def shows_the_end(page: Any, words: str) -> None:
    """Wait until the page's ``%%agent`` cell shows the run's transcript with its end, once,
    and no longer the run's live widget (two tabs that apply one update to the shared
    document at once each write it: it showed twice, with two Undo buttons). The Undo
    button itself may not be drawn in a tab that got its output before its widget model
    (it hides then, as where its kernel is gone): at most one."""
    end = cell(page, 1).locator(".jp-OutputArea-output", has_text=words)
    end.locator("code", has_text="completed").first.wait_for(timeout=60000)
    # what a person sees: outputs and widgets that are drawn (a hidden fallback is not)
    seen = """([el, words]) => {
        const shown = e => e.getClientRects().length > 0;
        const outputs = [...el.querySelectorAll('.jp-OutputArea-output')].filter(shown);
        return {ends: outputs.filter(o => o.textContent.includes(words)).length,
                undos: outputs.filter(o => o.textContent.includes('Undo this run')).length,
                live: [...el.querySelectorAll('.jupyter-widgets')].filter(shown)
                      .filter(w => w.textContent.includes('Writing it.')).length};
    }"""
    arg = [cell(page, 1).element_handle(), words]
    try:
        page.wait_for_function(f"a => {{ const s = ({seen})(a); return s.ends === 1 && s.undos <= 1 && !s.live; }}",
                               arg=arg, timeout=60000)
    except Exception as e:
        raise AssertionError(f"the cell does not show the end once: {page.evaluate(seen, arg)}") from e


def test_a_second_tab_and_a_reload_answer_a_waiting_approval_and_every_tab_shows_the_end(lab, page_of, script):
    # names of this attempt's own: a re-run meets neither the file written nor the server's
    # shared copy of the notebook from the attempt before
    stem = f"collab-{uuid.uuid4().hex[:6]}"
    target = lab.root / f"{stem}.txt"
    nb_path = write_notebook(lab.root / f"{stem}.ipynb", ["%load_ext jupyter_agent", f"%%agent\nWrite {stem}.txt"])
    script(response(text("Writing it."), tool_use("Write", {"file_path": str(target), "content": "hello"})),
           response(text("Written with two tabs open.")))
    first = page_of(nb_path.name)
    continue_slow_loads(first)
    config = json.loads(first.locator("#jupyter-config-data").text_content())
    extensions = {e["name"] for e in config["federated_extensions"]}
    assert {"@jupyter/docprovider-extension", "jupyter-agent"} <= extensions, extensions  # collaboration is on
    run_and_wait(first, 0)
    run_cell(first, 1)
    allow_of(first).wait_for(timeout=60000)
    second = open_tab(lab, first.context, nb_path.name, "collab-second")
    allow_of(second).wait_for(timeout=60000)  # the widget, from the live kernel
    for page in (first, second):
        shown = cell(page, 1).inner_text()
        assert "kernel lost" not in shown and "Interrupted" not in shown, shown
    screenshot(second, "collab-second-waiting-light", cell(second, 1))
    # the reloaded tab reads the theme setting again: dark there (no menu clicks: cheaper)
    themes = lab.settings / "@jupyterlab" / "apputils-extension" / "themes.jupyterlab-settings"
    themes.parent.mkdir(parents=True, exist_ok=True)
    themes.write_text(json.dumps({"theme": "JupyterLab Dark"}))
    first.reload()  # the shared notebook again, from the server's copy, while the run waits
    first.wait_for_selector(CELLS)
    allow_of(first).wait_for(timeout=60000)
    assert "kernel lost" not in cell(first, 1).inner_text()
    screenshot(first, "collab-reloaded-waiting-dark", cell(first, 1))
    allow_of(second).click()
    for page in (second, first):
        shows_the_end(page, "Written with two tabs open.")
    assert target.read_text() == "hello"
    screenshot(first, "collab-reloaded-ended-dark", cell(first, 1))
    screenshot(second, "collab-second-ended-light", cell(second, 1))
    # saving in one tab and then the other asks nothing, and the file keeps the end (one
    # after the other, as a person does: two saves in the same instant race in JupyterLab)
    for page in (first, second):
        cell(page, 1).locator(".jp-InputPrompt").click()  # the notebook has the focus
        save(page, nb_path)
    deadline = time.monotonic() + 60
    saved_nb = None
    while time.monotonic() < deadline:  # two saves: the file may be mid-write when read
        saved_nb = whole_notebook(nb_path)
        if saved_nb is not None and "completed" in json.dumps(saved_nb.cells[1].outputs):
            break
        first.wait_for_timeout(200)
    for page in (first, second):
        assert page.locator(".jp-Dialog").count() == 0
    assert saved_nb is not None, nb_path.read_text(encoding="utf-8")[:500]
    saved = saved_nb.cells[1].outputs
    assert "completed" in json.dumps(saved) and "Still running" not in json.dumps(saved)
    assert len(saved) == 2, saved  # the transcript and its Undo button, once each
