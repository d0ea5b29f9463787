"""A remote kernel: JupyterLab pointed at a real Jupyter Kernel Gateway (``--GatewayClient.url``)
started in its own folder, the kernel host, which shares no file with the notebook server.

The gateway's kernels inherit only the variables it is told to pass (``docs/deploy.md``):
the notebook server sends the key and the fake API's address (``GatewayClient.allowed_envs``)
and the gateway lets them through (``JupyterWebsocketPersonality.env_whitelist``). The agent
reaches the open notebook through the page; nothing of it is written on the kernel host.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from jupyter_agent.testing import response, text, tool_use

from .gateway import gateway_fixture, gateway_lab_fixture  # noqa: F401 (the module's gateway and lab)
from .lab import HAVE_BROWSER, allow_the_insert_then_the_run, require_browser, save, screenshot, wait_for_end, \
    write_notebook

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason="needs jupyterlab, playwright and Debian's chromium")


def _notebooks_on(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.suffix == ".ipynb" or p.name.startswith(".~"))


@pytest.mark.timeout(240)
def test_the_agent_reads_edits_and_runs_the_open_notebook_through_the_page(lab, gateway, page_of, script, api):
    """The issue's scenario with the kernel on the gateway: the model is told the server's
    path of the notebook, reads it, inserts under the %%agent cell and runs the cell in the
    user's kernel (x is 41 there); LIVE 42 shows, Ctrl+S brings no dialog and saves the cell
    and its output; the kernel host holds no notebook."""
    nb = lab.root / "live.ipynb"
    write_notebook(nb, ["x = 41", "%load_ext jupyter_agent",
                        "%%agent\nadd a cell that prints LIVE and x+1, and run it", "# The end"],
                   ids=["setx", "load", "agentcell", "theend"])
    told = str(nb)  # the notebook server's path of it: the kernel host has no such file of its own
    script(
        response(tool_use("Read", {"file_path": told})),
        response(tool_use("NotebookEdit", {"notebook_path": told, "cell_id": "agentcell",
                                           "new_source": "print('LIVE', x + 1)", "cell_type": "code",
                                           "edit_mode": "insert"})),
        response(tool_use("NotebookRun", {"notebook_path": told, "cell_id": "cell-3"})),
        response(text("Done: LIVE 42.")),
    )
    # (Its kernel connection comes up without a reload: the server's connection to the gateway for
    # the page's first websocket, which the browser closes at once, no longer stays open with the
    # page's session id as its ZMQ identity, taking the page's place: server_extension.py.)
    page = page_of("live.ipynb")
    assert gateway.kernels(), "the page's kernel is not the gateway's"
    allow_the_insert_then_the_run(page, source="print('LIVE', x + 1)", shows="LIVE 42")
    try:
        wait_for_end(page, timeout=60000)
    finally:
        screenshot(page, "gateway_scenario")
    first = json.dumps(api.requests[0].body)
    assert f"The user is working in the notebook {told}." in first
    assert "stored by the notebook server, not on the machine the kernel runs on" in first
    assert str(gateway.folder) in first  # the kernel's working directory: the gateway's folder
    results = json.dumps(api.requests[-1].body["messages"])
    assert "LIVE 42" in results and "does not exist" not in results and "neither" not in results
    page.locator(".jp-Notebook").click(position={"x": 5, "y": 5})
    save(page, nb)
    assert page.locator(".jp-Dialog").count() == 0  # no "File Changed" Overwrite/Revert
    on_disk = nbformat.read(nb, as_version=4)
    assert on_disk.cells[3].source == "print('LIVE', x + 1)"
    assert any("LIVE 42" in "".join(o.get("text", "")) for o in on_disk.cells[3].outputs)
    assert _notebooks_on(gateway.folder) == []

