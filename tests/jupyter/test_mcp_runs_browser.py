"""An outside agent's long runs through jupyter-agent's MCP server, with the ``mcp`` SDK's own
client against real JupyterLab in real Chromium and the notebook's real kernel: a cell still
running after ``wait_seconds`` answers "still running" with a run id, ``run_status`` shows its
outputs so far and then its result; ``interrupt`` ends a ``while True`` loop with
KeyboardInterrupt and the kernel goes on, variables kept; another client may not
interrupt it, and nothing to interrupt is said so; a cell whose client went away runs to its
end in the page. ``restart_kernel``: denied with a note, then allowed.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from .lab import HAVE_BROWSER, cell, require_browser, run_and_wait, write_notebook
from .test_mcp_server_browser import PANEL, OutsideClient, open_with_panel, text_of

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason="needs jupyterlab, playwright and Debian's chromium")

#: A cell that prints, then runs until the test lets it end (a file appears): no timing guess.
SLOW = ("import pathlib, time\nprint('tick', flush=True)\n"
        "while not pathlib.Path('go').exists():\n    time.sleep(0.05)\nprint('finished')")
LOOP = "n = 0\nwhile True:\n    n += 1"
AFTER = "print('after', n > 0)"
#: A cell whose client goes away while it runs.
OUTLIVES = ("import pathlib, time\nwhile not pathlib.Path('go2').exists():\n    time.sleep(0.05)\n"
            "print('outlived its client')")


def poll(client: OutsideClient, run_id: str, until: Any, timeout: float = 90) -> str:
    """run_status until ``until(text)``; the last answer's text."""
    deadline = time.monotonic() + timeout
    while True:
        status = client.now("run_status", {"run_id": run_id})
        said = text_of(status)
        if until(said):
            return said
        assert time.monotonic() < deadline, said
        time.sleep(0.1)


def run_allowed(client: OutsideClient, panel: Any, args: dict[str, Any], button: str = "Allow") -> Any:
    """``run_cell`` with ``args``, allowed on its card in the side panel (``button``); its answer."""
    pending = client.call("run_cell", args)
    card = panel.locator(".jp-AgentPanel-approval", has_text="NotebookRun")
    card.wait_for(timeout=60000)
    card.get_by_role("button", name=button, exact=True).click()
    return pending.result(60)


def run_id_of(text: str) -> str:
    found = re.search(r"run_id=(run-[0-9a-f]+)", text)
    assert found, text
    return found.group(1)


def test_a_long_run_is_polled_and_interrupted(lab, page_of):
    nb = lab.root / "long.ipynb"
    (lab.root / "go").unlink(missing_ok=True)
    (lab.root / "go2").unlink(missing_ok=True)
    write_notebook(nb, ["%load_ext jupyter_agent", SLOW, LOOP, AFTER, OUTLIVES],
                   ids=["load", "slow", "loop", "after", "outlives"])
    page = page_of("long.ipynb")
    page.click(f"li[data-id='{PANEL[1:]}']")
    panel = page.locator(PANEL)
    run_and_wait(page, 0)
    panel.locator(".jp-AgentPanel-empty").wait_for(timeout=30000)
    outside = OutsideClient(f"{lab.url}/jupyter-agent/mcp", name="poller")
    other = OutsideClient(f"{lab.url}/jupyter-agent/mcp", name="someone-else")
    try:
        path = {"notebook_path": "long.ipynb"}
        assert not outside.now("read_cells", path).is_error

        # The slow cell: the answer comes back before it ends; polls show it run, then its end.
        # (Always allow: the next runs ask no more)
        first = run_allowed(outside, panel, {**path, "cell_id": "slow", "wait_seconds": 1}, "Always allow")
        assert not first.is_error and "Still running after 1 s" in text_of(first), text_of(first)
        slow_id = run_id_of(text_of(first))
        running = poll(outside, slow_id, lambda t: "tick" in t)
        assert "running for" in running and "Outputs so far:\ntick" in running, running
        (lab.root / "go").write_text("")
        ended = poll(outside, slow_id, lambda t: "ended after" in t)
        assert "finished" in ended and "tick" in ended, ended

        # The endless loop: still running, then interrupted; KeyboardInterrupt reported.
        nothing = outside.now("interrupt", path)
        assert nothing.is_error and "No cell this client ran is executing" in text_of(nothing), text_of(nothing)
        looping = outside.now("run_cell", {**path, "cell_id": "loop", "wait_seconds": 0})
        assert not looping.is_error and "Still running" in text_of(looping), text_of(looping)
        loop_id = run_id_of(text_of(looping))
        poll(outside, loop_id, lambda t: re.search(r"running for [2-9] s", t) is not None)  # well into it
        refused = other.now("interrupt", {**path, "run_id": loop_id})
        assert refused.is_error and "another client" in text_of(refused), text_of(refused)
        stopped = outside.now("interrupt", {**path, "run_id": loop_id}, timeout=90)
        said = text_of(stopped)
        if "ended after" not in said:  # (a loaded machine: the interrupted cell's answer came later)
            said = poll(outside, loop_id, lambda t: "ended after" in t)
        assert "KeyboardInterrupt" in said, said

        # The kernel goes on, with its variables.
        assert not outside.now("read_cells", path).is_error
        after = outside.now("run_cell", {**path, "cell_id": "after"})
        assert not after.is_error and "after True" in text_of(after), text_of(after)

        # A client that goes away mid-run: its cell goes on to its end, in the page and the panel.
        leaver = OutsideClient(f"{lab.url}/jupyter-agent/mcp", name="leaver")
        assert not leaver.now("read_cells", path).is_error
        gone = leaver.call("run_cell", {**path, "cell_id": "outlives", "wait_seconds": 600})
        cell(page, 4).locator(".jp-InputPrompt", has_text="*").wait_for(timeout=60000)  # it runs
        leaver.close()
        assert gone.done()
        (lab.root / "go2").write_text("")
        cell(page, 4).locator(".jp-OutputArea-output", has_text="outlived its client").wait_for(timeout=60000)
        # (the panel hears of the call once the kernel's loop is free again: after the cell)
        panel.locator(".jp-AgentPanel-tool", has_text="cell_id=outlives").filter(has_text="done").wait_for(
            timeout=60000)
    finally:
        other.close()
        outside.close()


def test_restart_kernel_asks_and_the_next_call_works(lab, page_of):
    """Denied: an MCP error with the user's note, the kernel untouched. Allowed: the kernel
    restarts (its variables gone), the page follows, and the client's next calls work."""
    nb = lab.root / "restart.ipynb"
    write_notebook(nb, ["%load_ext jupyter_agent", "kept = 7", "print('fresh', 'kept' in dir())"],
                   ids=["load", "keep", "check"])
    page = page_of("restart.ipynb")
    page.click(f"li[data-id='{PANEL[1:]}']")
    panel = page.locator(PANEL)
    run_and_wait(page, 0)
    run_and_wait(page, 1)
    panel.locator(".jp-AgentPanel-empty").wait_for(timeout=30000)
    outside = OutsideClient(f"{lab.url}/jupyter-agent/mcp", name="restarter")
    try:
        path = {"notebook_path": "restart.ipynb"}
        pending = outside.call("restart_kernel", path)
        card = panel.locator(".jp-AgentPanel-approval", has_text="NotebookRestart")
        card.wait_for(timeout=60000)
        shown = card.inner_text()
        assert "kept" in shown and "Asked by restarter 9, an outside agent (MCP)" in shown, shown
        card.locator(".jp-AgentPanel-feedback").fill("Not now, I am training.")
        card.get_by_role("button", name="Deny", exact=True).click()
        denied = pending.result(60)
        assert denied.is_error and "Not now, I am training." in text_of(denied), text_of(denied)
        variables = text_of(outside.now("list_variables", path))
        assert "kept: int" in variables, variables  # untouched

        pending = outside.call("restart_kernel", path)
        card = panel.locator(".jp-AgentPanel-approval", has_text="NotebookRestart")
        card.wait_for(timeout=60000)
        card.get_by_role("button", name="Allow", exact=True).click()
        restarted = pending.result(120)
        said = text_of(restarted)
        assert not restarted.is_error and "Restarted the kernel of restart.ipynb" in said, said
        assert "your next call works" in said, said
        variables = outside.now("list_variables", path)
        assert not variables.is_error and "kept" not in text_of(variables), text_of(variables)
        read = outside.now("read_cells", path)  # the page answers the fresh kernel: no "restarted" error
        assert not read.is_error and 'id="check"' in text_of(read), text_of(read)
        ran = outside.call("run_cell", {**path, "cell_id": "check"})
        card = panel.locator(".jp-AgentPanel-approval", has_text="NotebookRun")
        card.wait_for(timeout=60000)
        card.get_by_role("button", name="Allow", exact=True).click()
        result = ran.result(120)
        assert not result.is_error and "fresh False" in text_of(result), text_of(result)
    finally:
        outside.close()


#: fake, 33 characters; only the kernel has it (a cell of the user's sets it: the Jupyter
#: server's environment never does), as a key a gateway host gives its kernels
KERNEL_SECRET = "FAKE-kernelonly-s3cret-0123456789"
SETS = f'import os; os.environ["KERNEL_ONLY_API_KEY"] = "{KERNEL_SECRET[:10]}" + "{KERNEL_SECRET[10:]}"'
LEAKS = ("import os, pathlib, time\nprint('connecting with', os.environ['KERNEL_ONLY_API_KEY'], flush=True)\n"
         "while not pathlib.Path('go3').exists():\n    time.sleep(0.05)\nprint('done')")


def test_a_kernel_only_secret_stays_out_of_a_running_cells_answers(lab, page_of):
    """Issue 42, finding 1: ``run_cell``'s "still running" answer and ``run_status`` showed the
    outputs so far as the server saw them, redacted only of the server's secrets. The kernel
    redacts its outside runs' outputs before they leave it: neither answer, nor the cell's
    output in the page, holds the key."""
    (lab.root / "go3").unlink(missing_ok=True)
    write_notebook(lab.root / "secret.ipynb", ["%load_ext jupyter_agent", SETS, LEAKS], ids=["load", "sets", "leaks"])
    page, panel = open_with_panel(page_of, "secret.ipynb")  # (cell 1 puts the key in the kernel's environment)
    outside = OutsideClient(f"{lab.url}/jupyter-agent/mcp", name="leak-check")
    try:
        path = {"notebook_path": "secret.ipynb"}
        assert not outside.now("read_cells", path).is_error
        first = text_of(run_allowed(outside, panel, {**path, "cell_id": "leaks", "wait_seconds": 1}))
        assert "Still running" in first and KERNEL_SECRET not in first, first
        run_id = run_id_of(first)
        running = poll(outside, run_id, lambda t: "connecting with" in t)
        assert KERNEL_SECRET not in running, running
        assert "Outputs so far:\nconnecting with [redacted KERNEL_ONLY_API_KEY]" in running, running
        shown = cell(page, 2).locator(".jp-OutputArea-output", has_text="connecting with")
        shown.wait_for(timeout=60000)
        assert KERNEL_SECRET not in shown.inner_text() and "[redacted" in shown.inner_text(), shown.inner_text()
        (lab.root / "go3").write_text("")
        ended = poll(outside, run_id, lambda t: "ended after" in t)
        assert "done" in ended and KERNEL_SECRET not in ended, ended
    finally:
        outside.close()
