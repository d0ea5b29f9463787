"""The live notebook in real JupyterLab in real Chromium: the agent reads, edits and runs
the notebook the user has open, in the user's kernel, through the labextension's bridge.

One JupyterLab server and browser for the module; each test opens its own notebook.
Screenshots of each test's end state go to tests/output/screenshots/ (see ``lab.py``).
"""

from __future__ import annotations

import json
import time

import nbformat
import pytest

from jupyter_agent.testing import pause, response, text, tool_use

from .lab import (HAVE_BROWSER, allow_the_insert_then_the_run, button, cell, cell_sources, click_button,
                  require_browser, restart_from_page, run_and_wait, run_cell, save, screenshot, wait_cell_count,
                  wait_for_end, wait_prompt, write_notebook)

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason="needs jupyterlab, playwright and Debian's chromium")


#: The largest message the module's server takes on a websocket, lowered from Tornado's
#: 10 MiB: a reply over it closes the page's kernel connection, as an 11 MB one did at the
#: default. Below BRIDGE_MAX_MESSAGE_BYTES (4 MiB), so the page's own refusal of larger
#: replies does not hide a reply that would close it; the big-output test needs only a
#: 2.5 MB output to cross it (the page opens and reads a 11 MB notebook slowly).
WEBSOCKET_MAX_BYTES = 2 * 1024 * 1024
BIG_OUTPUT_CHARS = 2_500_000


@pytest.fixture(scope="module")
def lab(api, tmp_path_factory):
    """The module's server (see conftest.py), taking websocket messages up to WEBSOCKET_MAX_BYTES."""
    from .lab import Lab

    server = Lab(tmp_path_factory.mktemp("lab"), api.env(), server_args=[
        f"--ServerApp.tornado_settings={json.dumps({'websocket_max_message_size': WEBSOCKET_MAX_BYTES})}"])
    yield server
    server.close()


def saved(lab, name):
    return nbformat.read(lab.root / name, as_version=4)


def test_agent_adds_a_cell_below_and_runs_it_in_the_users_kernel(lab, page_of, script, api):
    """The issue's scenario: the new cell appears under the %%agent cell without a reload,
    waits for Allow, runs in the user's kernel (x is 41 there) and shows 42; Ctrl+S brings
    no dialog and the saved file has the cell and its output."""
    nb = lab.root / "scenario.ipynb"
    write_notebook(nb, ["x = 41", "%load_ext jupyter_agent",
                        "%%agent\nadd a cell that prints x+1 and run it", "# The end"],
                   ids=["setx", "load", "agentcell", "theend"])
    script(
        response(tool_use("Read", {"file_path": str(nb)})),
        response(tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "agentcell",
                                           "new_source": "print(x + 1)", "cell_type": "code",
                                           "edit_mode": "insert"})),
        response(tool_use("NotebookRun", {"notebook_path": str(nb), "cell_id": "cell-3"})),
        response(text("Done: the new cell printed 42.")),
    )
    page = page_of("scenario.ipynb")
    allow_the_insert_then_the_run(page)
    try:
        wait_for_end(page, timeout=60000)
    finally:
        screenshot(page, "live_scenario")
    assert "42" in cell(page, 3).locator(".jp-OutputArea").inner_text()
    assert "[4]" in cell(page, 3).locator(".jp-InputPrompt").inner_text()  # ran in the user's kernel
    # The tool result the model got carries the page's output.
    results = json.dumps(api.requests[-1].body["messages"][-1])
    assert "42" in results and "NameError" not in results
    # the model was told which cell is the %%agent cell, so "below" is right under it
    assert 'cell, id \\"agentcell\\"' in json.dumps(api.requests[-4].body["messages"])
    page.locator(".jp-Notebook").click(position={"x": 5, "y": 5})
    save(page, nb)
    assert page.locator(".jp-Dialog").count() == 0  # no "File Changed" Overwrite/Revert
    screenshot(page, "live_scenario")
    on_disk = saved(lab, "scenario.ipynb")
    assert [c.source for c in on_disk.cells][3] == "print(x + 1)"
    assert any("42" in "".join(o.get("text", "")) for o in on_disk.cells[3].outputs)


def _agent_notebook(lab, name, prompt, *, mode="bypassPermissions", extra=(), allow_runs=False, page_runs=False):
    """A notebook: load the extension, an %%agent cell (id "agent"), then ``extra`` cells.
    ``allow_runs``: an allow rule for NotebookRun (running cells asks in every mode otherwise).
    ``page_runs``: the page runs the agent's cells (as for a kernel that cannot reach its own
    shell socket), not the kernel itself."""
    path = lab.root / name
    flag = f" --permission-mode {mode}" if mode else ""
    load = "%load_ext jupyter_agent" + ('\n%config AgentConfig.allow = ["NotebookRun"]' if allow_runs else "")
    if page_runs:
        load += ("\nfrom jupyter_agent.jupyter.kernel.agent_session import get_session as _gs"
                 "\n_gs().services.links.self_client.runner = lambda: None")
    write_notebook(path, [load, f"%%agent{flag}\n{prompt}", *extra],
                   ids=["load", "agent", *[f"u{i}" for i in range(len(extra))]])
    return path


def _tool_results(api):
    """Every tool_result block the model was sent, as text."""
    blocks = []
    for message in api.requests[-1].body["messages"]:
        for block in message.get("content") if isinstance(message.get("content"), list) else []:
            if block.get("type") == "tool_result":
                blocks.append(json.dumps(block.get("content")))
    return blocks


def test_an_agent_insert_is_one_undo_step(lab, page_of, script):
    nb = _agent_notebook(lab, "undo.ipynb", "add a cell", extra=["y = 1"])
    script(
        response(tool_use("Read", {"file_path": str(nb)})),
        response(tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "agent", "new_source": "z = 2",
                                           "cell_type": "code", "edit_mode": "insert"})),
        response(text("Added.")),
    )
    page = page_of("undo.ipynb")
    run_and_wait(page, 0)
    run_cell(page, 1)
    wait_for_end(page, timeout=60000)
    assert cell_sources(page) == ["%load_ext jupyter_agent", "%%agent --permission-mode bypassPermissions\nadd a cell",
                                  "z = 2", "y = 1"]
    page.keyboard.press("Escape")
    page.keyboard.press("z")  # command mode: undo the last cell operation
    wait_cell_count(page, 3)
    assert cell_sources(page)[2] == "y = 1"  # the agent's cell is gone, the user's cells stay
    page.keyboard.press("Shift+z")  # and redo brings it back
    wait_cell_count(page, 4)
    screenshot(page, "live_undo")


def test_an_edit_is_refused_when_the_user_typed_in_the_cell_since_the_read(lab, page_of, script, api):
    nb = _agent_notebook(lab, "stale.ipynb", "change the cell", mode="default", extra=["a = 1"])
    script(
        response(tool_use("Read", {"file_path": str(nb)})),
        response(tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "u0", "new_source": "a = 100"})),
        response(text("The notebook changed; I will read it again.")),
    )
    page = page_of("stale.ipynb")
    run_and_wait(page, 0)
    run_cell(page, 1)
    button(page, "Allow").wait_for(timeout=60000)
    editor = cell(page, 2).locator(".cm-content")
    editor.click()
    page.keyboard.press("End")
    page.keyboard.type("  # mine")
    click_button(page, "Allow")
    wait_for_end(page, timeout=60000)
    screenshot(page, "live_stale")
    assert cell_sources(page)[2] == "a = 1  # mine"  # the user's typing stays
    assert any("modified since read" in r or "changed" in r for r in _tool_results(api)), _tool_results(api)


def test_deny_with_feedback_changes_nothing_and_tells_the_model(lab, page_of, script, api):
    nb = _agent_notebook(lab, "deny.ipynb", "add a cell", mode="default")
    script(
        response(tool_use("Read", {"file_path": str(nb)})),
        response(tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "agent", "new_source": "import os",
                                           "cell_type": "code", "edit_mode": "insert"})),
        response(text("Understood, no imports.")),
    )
    page = page_of("deny.ipynb")
    run_and_wait(page, 0)
    run_cell(page, 1)
    button(page, "Deny").wait_for(timeout=60000)
    page.get_by_placeholder("Feedback for the model (sent with Deny)").fill("no imports please")
    page.keyboard.press("Tab")
    click_button(page, "Deny")
    wait_for_end(page, timeout=60000)
    screenshot(page, "live_deny")
    assert not any("import os" in source for source in cell_sources(page))
    assert any("no imports please" in r for r in _tool_results(api)), _tool_results(api)


def test_a_deny_note_typed_while_the_kernel_is_busy_reaches_the_model_whole(lab, page_of, script, api):
    """The note goes when its box loses focus, before Deny's click: typed while a cell of the
    user's runs (the kernel takes no widget message then), it used to be cut to what the
    kernel had been sent before the click overtook the rest."""
    nb = _agent_notebook(lab, "busy-deny.ipynb", "add a cell", mode="default", extra=["import time; time.sleep(4)"])
    script(response(tool_use("Read", {"file_path": str(nb)})),
           response(tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "agent", "new_source": "import os",
                                              "cell_type": "code", "edit_mode": "insert"})),
           response(text("Understood.")))
    page = page_of("busy-deny.ipynb")
    run_and_wait(page, 0)
    run_cell(page, 1)
    button(page, "Deny").wait_for(timeout=60000)
    run_cell(page, 2)  # the user's cell: the kernel is busy for 4 s
    page.get_by_placeholder("Feedback for the model (sent with Deny)").press_sequentially("no imports please")
    click_button(page, "Deny")
    wait_for_end(page, timeout=60000)
    assert any("no imports please" in r for r in _tool_results(api)), _tool_results(api)


def test_stop_interrupts_a_long_cell_the_agent_runs(lab, page_of, script, api):
    nb = _agent_notebook(lab, "stop.ipynb", "run a long cell", allow_runs=True,
                         extra=["import time; time.sleep(60); print('done ' + 'sleeping')"])
    script(
        response(tool_use("Read", {"file_path": str(nb)})),
        response(tool_use("NotebookRun", {"notebook_path": str(nb), "cell_id": "u0"})),
    )
    page = page_of("stop.ipynb")
    run_and_wait(page, 0)
    run_cell(page, 1)
    cell(page, 2).locator(".jp-InputPrompt", has_text="[*]").wait_for(timeout=60000)
    started = time.monotonic()
    click_button(page, "Stop")
    wait_for_end(page, timeout=20000)
    assert time.monotonic() - started < 10
    screenshot(page, "live_stop")
    output = cell(page, 2).locator(".jp-OutputArea").inner_text()
    assert "KeyboardInterrupt" in output and "done sleeping" not in output
    assert "aborted" in cell(page, 1).inner_text()


def test_two_tabs_only_the_page_that_started_the_run_answers(lab, page_of, script):
    nb = _agent_notebook(lab, "tabs.ipynb", "add a cell")
    script(
        response(tool_use("Read", {"file_path": str(nb)})),
        response(tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "agent", "new_source": "from_a = 1",
                                           "cell_type": "code", "edit_mode": "insert"})),
        response(text("Added.")),
    )
    first = page_of("tabs.ipynb")
    run_and_wait(first, 0)  # the kernel greets this page
    second = page_of("tabs.ipynb")  # another tab on the same kernel, opened later
    run_cell(second, 1)  # the run starts from the second tab
    wait_for_end(second, timeout=60000)
    screenshot(second, "live_two_tabs_b")
    screenshot(first, "live_two_tabs_a")
    assert "from_a = 1" in cell_sources(second)
    assert len(cell_sources(first)) == 2  # the other tab was not touched


def _reload_mid_run(lab, page_of, script, api, name, cell_source, *, page_runs):
    """An %%agent run that runs cell u0 (``cell_source``, a few seconds long); the page is
    reloaded while it runs. Returns the page, and how long the run took to go on after it."""
    nb = _agent_notebook(lab, name, "run a cell", extra=[cell_source], allow_runs=True, page_runs=page_runs)
    script(
        response(tool_use("Read", {"file_path": str(nb)})),
        response(tool_use("NotebookRun", {"notebook_path": str(nb), "cell_id": "u0"})),
        response(text("Done.")),
    )
    page = page_of(name)
    run_and_wait(page, 0)
    run_cell(page, 1)
    cell(page, 2).locator(".jp-InputPrompt", has_text="[*]").wait_for(timeout=60000)
    page.reload()
    started = time.monotonic()
    deadline = started + 30
    while api.pending and time.monotonic() < deadline:
        time.sleep(0.2)
    assert api.pending == 0, "the run did not go on after the page reload"
    return page, time.monotonic() - started


def test_a_page_reload_mid_run_ends_in_a_clear_tool_error(lab, page_of, script, api):
    """A run the page makes: the page that made it is gone after a reload."""
    page, waited = _reload_mid_run(lab, page_of, script, api, "reload.ipynb", "import time; time.sleep(3)",
                                   page_runs=True)
    assert waited < 20
    errors = [r for r in _tool_results(api) if "stopped answering" in r]
    assert errors, _tool_results(api)
    screenshot(page, "live_reload")


def test_a_page_reload_mid_run_leaves_a_run_the_kernel_makes_going(lab, page_of, script, api):
    """A run the kernel makes itself does not depend on the page: a reload mid-run changes
    nothing for the agent, which gets the cell's own result."""
    _reload_mid_run(lab, page_of, script, api, "reload-here.ipynb", "import time; time.sleep(3); print('slept')",
                    page_runs=False)
    results = _tool_results(api)
    assert any("Ran cell u0" in r and "slept" in r for r in results), results
    assert not any("stopped answering" in r for r in results), results


def test_after_a_kernel_restart_the_agent_reaches_the_page_again(lab, page_of, script):
    """A restart ends the run with the kernel; after `%load_ext` in the new kernel the page
    (whose comm target survives the restart) answers again."""
    nb = _agent_notebook(lab, "restart.ipynb", "add a cell")
    script(
        response(tool_use("Read", {"file_path": str(nb)})),
        response(tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "agent",
                                           "new_source": "after_restart = 1", "cell_type": "code",
                                           "edit_mode": "insert"})),
        response(text("Added.")),
    )
    page = page_of("restart.ipynb")
    run_and_wait(page, 0)
    run_cell(page, 0)
    wait_prompt(page, 0, "[2]")
    restart_from_page(page)
    run_cell(page, 0)
    wait_prompt(page, 0, "[1]")  # the new kernel's first execution
    run_cell(page, 1)
    wait_for_end(page, timeout=60000)
    assert "after_restart = 1" in cell_sources(page)


@pytest.mark.timeout(300)  # the page opens a 2.5 MB notebook
def test_a_read_of_a_notebook_holding_an_output_over_the_websocket_limit_is_cut_with_a_note(lab, page_of, script,
                                                                                            api):
    """A live Read once sent an 11 MB output whole: over the 10 MiB a websocket message may
    have, the page's kernel connection dropped and every later request failed. The page
    cuts the output with a note; the connection stays, and the next requests work. (This
    module's server takes at most WEBSOCKET_MAX_BYTES: a smaller output crosses it.)"""
    assert BIG_OUTPUT_CHARS > WEBSOCKET_MAX_BYTES
    nb = _agent_notebook(lab, "big_output.ipynb", "read it, add a cell, read it again",
                         extra=[f"print('x' * {BIG_OUTPUT_CHARS})"])
    stored = nbformat.read(nb, as_version=4)  # the output as saved (the server would rate-limit it live)
    stored.cells[2].outputs = [nbformat.v4.new_output("stream", name="stdout", text="x" * BIG_OUTPUT_CHARS + "\n")]
    nbformat.write(stored, nb)
    script(
        response(tool_use("Read", {"file_path": str(nb)})),
        response(tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "agent", "new_source": "y = 2",
                                           "cell_type": "code", "edit_mode": "insert"})),
        response(tool_use("Read", {"file_path": str(nb)})),
        response(text("Read it twice.")),
    )
    page = page_of("big_output.ipynb")
    run_and_wait(page, 0)
    run_cell(page, 1)
    wait_for_end(page, timeout=90000)
    screenshot(page, "live_big_output")
    results = _tool_results(api)
    assert len(results) == 3, results
    assert not any("stopped answering" in r for r in results), results
    first_read, edit, second_read = results
    for read in (first_read, second_read):
        assert f"this stream output has {BIG_OUTPUT_CHARS // 1000:,}," in read, read[:3000]
        assert "only its first 2,000 characters" in read, read[:3000]
    assert "y = 2" in cell_sources(page)  # the page still answers: the edit reached it
    assert "y = 2" in second_read


def test_a_cell_printing_forever_is_interrupted_at_the_time_limit(lab, page_of, script, api):
    """The cell time limit holds in live mode: the kernel's loop is busy with the cell, so
    the page interrupts the kernel at the limit; the kernel is usable afterwards."""
    nb = lab.root / "forever.ipynb"
    write_notebook(nb, [
        '%load_ext jupyter_agent\n%config AgentConfig.allow = ["NotebookRun"]\n'
        "from jupyter_agent.jupyter.kernel.agent_session import get_session\n"
        "from jupyter_agent.notebook import tool_session\n"
        "tool_session(get_session().conversation.context).cell_timeout_s = 3",
        "%%agent --permission-mode bypassPermissions\nrun the cell",
        "import time\nwhile True:\n    print('tick', flush=True)\n    time.sleep(0.01)",
        "print('after', 6 * 7)",
    ], ids=["load", "agent", "forever", "after"])
    script(
        response(tool_use("Read", {"file_path": str(nb)})),
        response(tool_use("NotebookRun", {"notebook_path": str(nb), "cell_id": "forever"})),
        response(text("It ran too long.")),
    )
    page = page_of("forever.ipynb")
    run_and_wait(page, 0)
    run_cell(page, 1)
    wait_for_end(page, timeout=60000)
    screenshot(page, "live_time_limit")
    result = _tool_results(api)[-1]
    assert "timed out" in result and "interrupted after 3 s" in result, result[:2000]
    assert "KeyboardInterrupt" in cell(page, 2).locator(".jp-OutputArea").inner_text()
    run_and_wait(page, 3)  # the kernel takes the next cell
    assert "after 42" in cell(page, 3).locator(".jp-OutputArea").inner_text()


def test_undo_this_run_puts_the_cells_back_in_the_page_as_one_undo_step(lab, page_of, script):
    """A live run inserts a cell and replaces one; its card's Undo this run puts both back
    in the page at once, as one step of the notebook's own undo (Z brings the run's cells
    back, all at once), and saving raises no "File Changed" dialog."""
    nb = _agent_notebook(lab, "undo_run.ipynb", "change the cells", extra=["y = 1", "w = 5"])
    script(
        response(tool_use("Read", {"file_path": str(nb)})),
        response(tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "agent", "new_source": "z = 2",
                                           "cell_type": "code", "edit_mode": "insert"})),
        response(tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "u0", "new_source": "y = 100"})),
        response(text("Inserted z and changed y.")),
    )
    page = page_of("undo_run.ipynb")
    run_and_wait(page, 0)
    run_cell(page, 1)
    wait_for_end(page, timeout=60000)
    head = ["%load_ext jupyter_agent", "%%agent --permission-mode bypassPermissions\nchange the cells"]
    assert cell_sources(page) == [*head, "z = 2", "y = 100", "w = 5"]
    click_button(page, "Undo this run")
    wait_cell_count(page, 4)
    assert cell_sources(page) == [*head, "y = 1", "w = 5"]
    cell(page, 1).get_by_text("put back as it was").first.wait_for(timeout=30000)
    screenshot(page, "live_undo_run", cell(page, 1))
    page.locator(".jp-Notebook").click(position={"x": 5, "y": 5})
    page.keyboard.press("Escape")
    page.keyboard.press("z")  # the notebook's undo: the whole undo of the run is one step
    wait_cell_count(page, 5)
    assert cell_sources(page) == [*head, "z = 2", "y = 100", "w = 5"]
    page.keyboard.press("Shift+z")
    wait_cell_count(page, 4)
    assert cell_sources(page) == [*head, "y = 1", "w = 5"]
    save(page, nb)
    assert page.locator(".jp-Dialog").count() == 0  # no "File Changed" Overwrite/Revert
    assert [c.source for c in saved(lab, "undo_run.ipynb").cells][2:] == ["y = 1", "w = 5"]


#: A cell whose outputs exercise what a run shows: streams merged, a cleared output (with
#: wait), a display with an id updated in place, stderr, a result.
SHOWN_CELL = ("import sys\nfrom IPython.display import display, clear_output\nprint('gone')\n"
              "clear_output(wait=True)\nprint('one')\nprint('two')\n"
              "h = display({'text/plain': 'first'}, raw=True, display_id=True)\n"
              "h.update({'text/plain': 'second'}, raw=True)\nprint('err', file=sys.stderr)\n6 * 7")


def _outputs_without_counts(nb_cell):
    return [{k: v for k, v in o.items() if k != "execution_count"} for o in nb_cell.outputs]


def test_a_cell_the_agent_runs_shows_and_saves_what_shift_enter_shows(lab, page_of, script, api):
    """The kernel runs the agent's cell itself; the page shows it in the cell as a
    Shift+Enter run of the same source shows it (merged streams, the cleared output gone,
    the display updated in place, the result), with its count, and saves it."""
    nb = _agent_notebook(lab, "shown.ipynb", "run the cell", allow_runs=True, extra=[SHOWN_CELL, SHOWN_CELL])
    script(
        response(tool_use("Read", {"file_path": str(nb)})),
        response(tool_use("NotebookRun", {"notebook_path": str(nb), "cell_id": "u0"})),
        response(text("It ran.")),
    )
    page = page_of("shown.ipynb")
    run_and_wait(page, 0)
    run_and_wait(page, 3)  # the user's own Shift+Enter of the same source
    run_cell(page, 1)
    wait_for_end(page, timeout=60000)
    wait_prompt(page, 2, "[4]")  # after the load (1), the user's run (2) and the %%agent cell (3)
    shown, by_hand = (cell(page, i).locator(".jp-OutputArea-output").all_inner_texts() for i in (2, 3))
    screenshot(page, "live_kernel_run", cell(page, 2))
    assert shown == by_hand and "second" in shown and "first" not in str(shown) and "gone" not in str(shown), shown
    result = _tool_results(api)[-1]
    assert "one\\ntwo" in result and "second" in result and "42" in result, result
    page.locator(".jp-Notebook").click(position={"x": 5, "y": 5})
    save(page, nb)
    on_disk = saved(lab, "shown.ipynb").cells
    assert on_disk[2].execution_count == 4
    assert _outputs_without_counts(on_disk[2]) == _outputs_without_counts(on_disk[3])
    assert [o["output_type"] for o in on_disk[2].outputs] == ["stream", "display_data", "stream", "execute_result"]


def test_the_result_of_a_run_reaches_the_agent_while_the_page_is_paused(lab, page_of, script, api):
    """The page's JavaScript stopped (a debugger pause: a page busy for seconds building a
    large notebook) does not hold the run's result back; the page shows the run once it
    goes on."""
    nb = _agent_notebook(lab, "paused.ipynb", "run the cell", allow_runs=True, extra=["print('ran', 6 * 7)"])
    script(
        response(tool_use("Read", {"file_path": str(nb)})),
        # the stream waits before the run: the page pauses meanwhile (it runs some script
        # every second), at the latest when the run's first message reaches it
        response(pause(3), tool_use("NotebookRun", {"notebook_path": str(nb), "cell_id": "u0"})),
        response(text("It ran.")),
    )
    page = page_of("paused.ipynb")
    run_and_wait(page, 0)
    before = len(api.requests)
    run_cell(page, 1)
    deadline = time.monotonic() + 60
    while len(api.requests) < before + 2:  # the Read's result is on its way to the model
        assert time.monotonic() < deadline, "the run did not get to the NotebookRun"
        time.sleep(0.02)
    debugger = page.context.new_cdp_session(page)
    paused = []
    debugger.on("Debugger.paused", lambda event: paused.append(event))
    debugger.send("Debugger.enable")
    debugger.send("Debugger.pause")  # at the page's next statement (it runs some every second)
    try:
        deadline = time.monotonic() + 30
        while not paused:  # (Playwright hands on CDP events only while it is called)
            assert time.monotonic() < deadline, "the page did not pause"
            page.wait_for_timeout(20)
        while len(api.requests) < before + 3:  # the NotebookRun's result, sent to the model
            assert time.monotonic() < deadline, "the run's result waited for the paused page"
            page.wait_for_timeout(50)
        assert "ran 42" in _tool_results(api)[-1]
    finally:
        debugger.send("Debugger.resume")
        debugger.send("Debugger.disable")
        debugger.detach()
    cell(page, 2).locator(".jp-OutputArea-output", has_text="ran 42").wait_for(timeout=30000)
    wait_prompt(page, 2, "[3]")  # after the load (1) and the %%agent cell (2)
    wait_for_end(page, timeout=60000)
