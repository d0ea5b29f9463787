"""The page answers an agent edit as soon as the notebook's document holds it, before
JupyterLab has built its view of the change (bridge speed, issue 10), and never answers
as done an edit that did not happen. A re-read of a notebook that has not changed at all
is answered without the notebook; any change (an output too) is read in full.

Real JupyterLab in real Chromium; the page's JupyterLab is exposed to the test
(``exposeAppInBrowser``) so a test can make the page's own code fail at a chosen point.
The edit goes through the live backend, as the agent's NotebookEdit does.
"""

from __future__ import annotations

import json

import pytest

from .lab import HAVE_BROWSER, Lab, cell, cell_sources, require_browser, run_and_wait, run_cell, wait_idle, \
    write_notebook

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason="needs jupyterlab, playwright and Debian's chromium")

#: One agent insert below cell 2 through the live backend; prints how it ended.
AGENT_INSERT = """\
from pathlib import Path
from jupyter_agent.jupyter.bridge import get_bridge
from jupyter_agent.notebook.live_backend import LiveNotebook
doc = LiveNotebook(Path("NAME").resolve(), get_bridge(), get_ipython().kernel.get_parent()["header"]["session"])
try:
    result = await doc.insert_cell(3, "code", "agent_cell = 1", expected_version=(await doc.snapshot()).version)
    print("DONE", result.cell.id, result.version == (await doc.snapshot()).version)
except Exception as exc:
    print("REFUSED", exc)
"""

#: The notebook panel's shared model in the page.
SHARED = "window.jupyterapp.shell.currentWidget.content.model.sharedModel"


@pytest.fixture(scope="module")
def lab(api, tmp_path_factory):
    server = Lab(tmp_path_factory.mktemp("lab"), api.env())
    config = server.tmp / "cfg/labconfig/page_config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "exposeAppInBrowser": True}))
    yield server
    server.close()


#: Three reads through the live backend, the page's document changed between the 2nd and 3rd.
AGENT_READS = """\
import asyncio
from pathlib import Path
from jupyter_agent.jupyter.bridge import get_bridge
from jupyter_agent.notebook.live_backend import LiveNotebook
doc = LiveNotebook(Path("NAME").resolve(), get_bridge(), get_ipython().kernel.get_parent()["header"]["session"])
first = await doc.snapshot()
again = await doc.snapshot()
print("READ TWICE", flush=True)
while not Path("changed.flag").exists():
    await asyncio.sleep(0.05)
after = await doc.snapshot()
print("REUSED" if again is first else "REREAD", after.cells[2].outputs)
"""


@pytest.fixture
def notebook(lab, request):
    """A page showing a fresh notebook: %load_ext, the agent's code, one user cell."""
    name = f"{request.node.name[:40]}.ipynb"
    code = AGENT_READS if "read" in request.node.name else AGENT_INSERT
    write_notebook(lab.root / name, ["%load_ext jupyter_agent", code.replace("NAME", name), "user = 1"])
    page = lab.open(name)
    yield page
    page.context.close()
    lab.shutdown_kernels()


def insert_and_read_outcome(page) -> str:
    run_and_wait(page, 0)
    run_and_wait(page, 1, timeout=60)
    wait_idle(page)
    return cell(page, 1).locator(".jp-OutputArea-output").inner_text().strip()


def test_an_insert_whose_view_fails_after_the_document_took_it_is_done_and_one_undo_step(notebook):
    page = notebook
    # JupyterLab's view of the change fails after the document holds the new cell (a
    # throwing observer of the cells list, as a broken extension would be).
    page.evaluate(f"""() => {{ window.brokenView = () => {{ throw new Error('view broke'); }};
        {SHARED}.ydoc.getArray('cells').observe(window.brokenView); }}""")
    outcome = insert_and_read_outcome(page)
    assert outcome.startswith("DONE") and outcome.endswith("True"), outcome  # answered, with the real version
    in_document = page.evaluate(f"() => {SHARED}.cells.map(c => c.getSource())")
    assert in_document[3] == "agent_cell = 1", in_document  # the edit is in the document
    page.evaluate(f"() => {SHARED}.ydoc.getArray('cells').unobserve(window.brokenView)")
    page.evaluate(f"() => {SHARED}.undo()")  # one undo step takes exactly that edit back
    assert page.evaluate(f"() => {SHARED}.cells.map(c => c.getSource())")[2:] == ["user = 1"]


def test_an_insert_that_never_reaches_the_document_is_refused_not_answered_as_done(notebook):
    page = notebook
    # The page's insert "succeeds" without the document taking the cell (a cell built
    # but never put into the notebook): the reply must not say it was done.
    page.evaluate(f"""() => {{ const shared = {SHARED};
        shared.insertCell = (index, cell) => ({{ ymodel: null, toJSON: () => ({{ id: 'ghost', ...cell }}) }}); }}""")
    outcome = insert_and_read_outcome(page)
    assert outcome.startswith("REFUSED") and "did not reach the notebook" in outcome, outcome
    assert cell_sources(page)[2:] == ["user = 1"]


def test_an_insert_that_throws_in_the_page_is_refused_with_its_error(notebook):
    page = notebook
    page.evaluate(f"() => {{ {SHARED}.insertCell = () => {{ throw new Error('the page could not insert'); }}; }}")
    outcome = insert_and_read_outcome(page)
    assert outcome.startswith("REFUSED") and "the page could not insert" in outcome, outcome
    assert cell_sources(page)[2:] == ["user = 1"]


def test_a_reread_of_an_unchanged_notebook_reuses_the_read_and_any_change_is_read(lab, notebook):
    page = notebook
    run_and_wait(page, 0)
    run_cell(page, 1)  # reads twice, then waits for the flag
    output = cell(page, 1).locator(".jp-OutputArea")
    page.wait_for_function("el => el.textContent.includes('READ TWICE')", arg=output.element_handle(timeout=30000),
                           timeout=30000)
    # A change the version leaves out (outputs): the next read must still see it.
    page.evaluate(f"""() => {SHARED}.cells[2].setOutputs([{{output_type: 'stream', name: 'stdout',
                                                           text: 'from the page'}}])""")
    (lab.root / "changed.flag").write_text("")
    try:
        page.wait_for_function("el => /REUSED|REREAD/.test(el.textContent)", arg=output.element_handle(),
                               timeout=30000)
        text = output.inner_text().split("READ TWICE", 1)[1].strip()
    finally:
        (lab.root / "changed.flag").unlink(missing_ok=True)
    assert text.startswith("REUSED"), text  # the second read did not carry the notebook again
    assert "from the page" in text, text  # the third did, with the output the page added
