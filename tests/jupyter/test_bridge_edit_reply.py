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
import time

import pytest

from .lab import HAVE_BROWSER, Lab, cell, cell_sources, require_browser, run_and_wait, run_cell, wait_idle, \
    wait_prompt, write_notebook

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason="needs jupyterlab, playwright and Debian's chromium")

#: One agent insert below cell 2 through the live backend; prints how it ended.
AGENT_INSERT = """\
from pathlib import Path
from jupyter_agent.jupyter.kernel.agent_session import get_bridge
from jupyter_agent.notebook.live_backend import LiveNotebook
doc = LiveNotebook(Path("NAME").resolve(), get_bridge(), get_ipython().kernel.get_parent()["header"]["session"])
try:
    result = await doc.insert_cell(3, "code", "agent_cell = 1", expected_version=(await doc.snapshot()).version)
    print("DONE", result.cell.id, result.version == (await doc.snapshot()).version)
except Exception as exc:
    print("REFUSED", exc)
"""

#: Two agent inserts naming the new cell's id (NotebookEdit's new_cell_id): the second, the same id.
AGENT_INSERT_CHOSEN = """\
from pathlib import Path
from jupyter_agent.jupyter.kernel.agent_session import get_bridge
from jupyter_agent.notebook.live_backend import LiveNotebook
doc = LiveNotebook(Path("NAME").resolve(), get_bridge(), get_ipython().kernel.get_parent()["header"]["session"])
for at in (3, 4):
    try:
        result = await doc.insert_cell(at, "code", f"at_{at} = 1", expected_version=(await doc.snapshot()).version,
                                       cell_id="agent-pick")
        print("DONE", result.cell.id)
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
from jupyter_agent.jupyter.kernel.agent_session import get_bridge
from jupyter_agent.notebook.live_backend import LiveNotebook
doc = LiveNotebook(Path("NAME").resolve(), get_bridge(), get_ipython().kernel.get_parent()["header"]["session"])
first = await doc.snapshot()
again = await doc.snapshot()
page = get_bridge().pages[doc.client_id]
told = page.changes
print("READ TWICE", flush=True)
while not Path("changed.flag").exists():
    await asyncio.sleep(0.05)
# the page's notice travels through the server: it may come a moment after the flag file
for _ in range(400):
    if page.changes != told:
        break
    await asyncio.sleep(0.05)
after = await doc.snapshot()
print("REUSED" if again is first else "REREAD", after.cells[2].outputs)
"""


#: The agent's own changes followed without a whole read, in a task (a run through the page
#: cannot wait behind the cell that started it): each step is written to steps.log, and
#: the test changes the page where a step waits for its flag file.
AGENT_FOLLOWS = """\
import asyncio
from pathlib import Path
from jupyter_agent.jupyter.kernel.agent_session import get_bridge
from jupyter_agent.notebook.document import StaleNotebookError
from jupyter_agent.notebook.live_backend import LiveNotebook

class Recording:
    \"\"\"The kernel's bridge, keeping the page's replies.\"\"\"
    def __init__(self, bridge):
        self.bridge, self.replies = bridge, []
    def __getattr__(self, name):
        return getattr(self.bridge, name)
    async def request(self, client_id, op, **arguments):
        reply = await self.bridge.request(client_id, op, **arguments)
        self.replies.append((op, reply))
        return reply
    def whole_reads(self):
        \"\"\"How many reads brought the whole notebook.\"\"\"
        return sum(1 for op, reply in self.replies if op == "read" and "cells" in reply)

def say(*words):
    with open("steps.log", "a") as log:
        print(*words, file=log)

async def step(name):
    say(name)
    while not Path(name + ".flag").exists():
        await asyncio.sleep(0.05)
    # What the page sent before its answer to this is in (one comm, in order): the page's
    # notice of the test's change, which is on its way, as it would long be for an agent
    # whose next step comes a model turn after the user's change.
    await get_bridge().request(client, "version")

client = get_ipython().kernel.get_parent()["header"]["session"]  # the page that ran this cell

async def agent():
    bridge = Recording(get_bridge())
    doc = LiveNotebook(Path("NAME").resolve(), bridge, client)
    read = await doc.snapshot()
    await step("READ")
    mine = await doc.insert_cell(3, "code", "import time; time.sleep(SLEEP); 1 + 1", expected_version=read.version)
    seen = await doc.snapshot()
    say("A", "changed before" in str(seen.cells[2].outputs), seen.version == mine.version)
    reads = bridge.whole_reads()
    mine = await doc.insert_cell(4, "markdown", "agent note", expected_version=seen.version)
    seen = await doc.snapshot()
    say("FAST", bridge.whole_reads() == reads, seen.version == mine.version,
        [c.source for c in seen.cells[3:5]] == ["import time; time.sleep(SLEEP); 1 + 1", "agent note"])
    await step("INSERTED")
    seen = await doc.snapshot()
    say("B", "changed after" in str(seen.cells[2].outputs))
    globals()["SLEEP"] = 3
    await doc.run_cell(seen.cells[3].id, timeout=60, expected_version=seen.version)
    seen = await doc.snapshot()
    say("D", "during the run" in str(seen.cells[2].outputs), "2" in str(seen.cells[3].outputs))
    globals()["SLEEP"] = 0
    reads = bridge.whole_reads()
    await doc.run_cell(seen.cells[3].id, timeout=60, expected_version=seen.version)
    seen = await doc.snapshot()
    say("E", bridge.whole_reads() == reads, seen.cells[3].execution_count is not None)
    await step("TYPED")
    try:
        await doc.replace_cell(seen.cells[3].id, "x = 1", expected_version=seen.version)
        say("C", "replaced")
    except StaleNotebookError:
        say("C", "stale")

async def guarded():
    try:
        await agent()
    except BaseException as exc:
        say("FAILED", repr(exc))
        raise

task = asyncio.get_running_loop().create_task(guarded())
"""


#: Bridge requests from a task (the kernel idle, as during an agent run), once go.flag exists.
AGENT_REQUESTS = """\
import asyncio
from pathlib import Path
from jupyter_agent.jupyter.kernel.agent_session import get_bridge
client = get_ipython().kernel.get_parent()["header"]["session"]
async def many():
    while not Path("go.flag").exists():
        await asyncio.sleep(0.05)
    for _ in range(REQUESTS):
        await get_bridge().request(client, "version")
    Path("requests.done").write_text("")
_task = asyncio.get_running_loop().create_task(many())
"""
REQUESTS = 30


@pytest.fixture
def notebook(lab, request):
    """A page showing a fresh notebook: %load_ext, the agent's code, one user cell."""
    name = f"{request.node.name[:40]}.ipynb"
    code = (AGENT_FOLLOWS if "follow" in request.node.name else AGENT_READS if "read" in request.node.name
            else AGENT_REQUESTS.replace("REQUESTS", str(REQUESTS)) if "futures" in request.node.name
            else AGENT_INSERT_CHOSEN if "chosen" in request.node.name else AGENT_INSERT)
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


def test_an_insert_takes_the_chosen_id_and_a_taken_id_is_refused_in_the_page(notebook):
    page = notebook
    outcome = insert_and_read_outcome(page).splitlines()
    assert outcome[0] == "DONE agent-pick", outcome
    assert outcome[1].startswith("REFUSED") and 'A cell with id "agent-pick" is already in the notebook' in outcome[1]
    assert page.evaluate(f"() => {SHARED}.cells.map(c => c.id)")[3] == "agent-pick"
    assert cell_sources(page)[2:] == ["user = 1", "at_3 = 1"]


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


def _wait_step(lab, step: str, timeout: float = 60) -> list[str]:
    """The lines of steps.log once the agent's task wrote ``step`` (or failed)."""
    log = lab.root / "steps.log"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = log.read_text().splitlines() if log.exists() else []
        if any(line.startswith((step, "FAILED")) for line in lines):
            assert not any(line.startswith("FAILED") for line in lines), lines
            return lines
        time.sleep(0.05)
    raise AssertionError(f"the agent's task did not reach {step}: {log.read_text() if log.exists() else ''}")


def _page_output(page, index: int, text: str) -> None:
    """The page (the user) gives cell ``index`` a stream output: a change the version leaves out."""
    page.evaluate(f"""() => {SHARED}.cells[{index}].setOutputs([{{output_type: 'stream', name: 'stdout',
                                                               text: {json.dumps(text)}}}])""")


def test_the_agents_own_edits_and_runs_are_followed_without_a_whole_read_and_any_other_change_is_read(lab, notebook):
    page = notebook
    for name in ("steps.log", "READ.flag", "INSERTED.flag", "TYPED.flag"):
        (lab.root / name).unlink(missing_ok=True)
    run_and_wait(page, 0)
    run_and_wait(page, 1)
    _wait_step(lab, "READ")
    _page_output(page, 2, "changed before")  # between the agent's read and its insert
    (lab.root / "READ.flag").write_text("")
    _wait_step(lab, "INSERTED")
    _page_output(page, 2, "changed after")  # after the agent's own insert
    (lab.root / "INSERTED.flag").write_text("")
    wait_prompt(page, 3, "[*]")  # the agent's run of its cell: the user changes another cell meanwhile
    _page_output(page, 2, "during the run")
    _wait_step(lab, "E")
    page.evaluate(f"() => {SHARED}.cells[3].setSource('typed by the user')")
    (lab.root / "TYPED.flag").write_text("")
    lines = _wait_step(lab, "C")
    assert "A True True" in lines, lines  # a change before the agent's edit is read, not skipped
    assert "FAST True True True" in lines, lines  # no whole read after its own insert
    assert "B True" in lines, lines  # a change after its own edit is read
    assert "D True True" in lines, lines  # a change during its run is read
    assert "E True True" in lines, lines  # no whole read after its own run
    assert "C stale" in lines, lines  # an edit after the user typed is refused


def test_the_pages_bridge_messages_change_no_kernel_status_and_leave_no_futures(lab, notebook):
    """No busy/idle for the page's replies (JupyterLab re-renders its kernel indicators on
    each), and no future the page's kernel connection keeps for them (docs/bridge.md)."""
    page = notebook
    for name in ("go.flag", "requests.done"):
        (lab.root / name).unlink(missing_ok=True)
    run_and_wait(page, 0)
    run_and_wait(page, 1)  # starts the task: it waits for go.flag
    wait_idle(page)
    kernel = "window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
    page.evaluate(f"""() => {{
        const kernel = {kernel};
        window.jaStatus = {{ comm: 0, futures: kernel._futures.size }};
        kernel.iopubMessage.connect((_, msg) => {{
            if (msg.header.msg_type === 'status' && msg.parent_header.msg_type === 'comm_msg') {{
                window.jaStatus.comm++;
            }}
        }});
    }}""")
    (lab.root / "go.flag").write_text("")
    try:
        deadline = time.monotonic() + 60
        while not (lab.root / "requests.done").exists():
            assert time.monotonic() < deadline, "the kernel's requests were not all answered"
            time.sleep(0.05)
        seen = page.evaluate(f"() => ({{ ...window.jaStatus, after: {kernel}._futures.size }})")
    finally:
        (lab.root / "go.flag").unlink(missing_ok=True)
    assert seen["comm"] == 0, seen  # REQUESTS replies, no status for any of them
    assert seen["after"] <= seen["futures"], seen  # none of their futures kept
