"""`%%agent` in real JupyterLab in real Chromium: Markdown streams into the widget, a
click on Allow runs the write, and the static transcript replaces the widget.

Skipped unless JupyterLab, Python playwright and /usr/bin/chromium are installed
(DESIGN §5: never download a browser). ~10 s.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from jupyter_agent.testing import FakeMessagesAPI, response, text, thinking, tool_use

CHROMIUM = "/usr/bin/chromium"
HAVE_BROWSER = bool(Path(CHROMIUM).exists() and importlib.util.find_spec("jupyterlab")
                    and importlib.util.find_spec("playwright"))
if not HAVE_BROWSER and os.environ.get("JUPYTER_AGENT_REQUIRE_BROWSER"):
    raise RuntimeError("JUPYTER_AGENT_REQUIRE_BROWSER is set but jupyterlab, playwright or "
                       "/usr/bin/chromium is missing: `./dev test` installs them")
pytestmark = pytest.mark.skipif(not HAVE_BROWSER,
                                reason="needs jupyterlab, playwright and the Debian chromium package")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def test_agent_cell_in_jupyterlab(tmp_path):
    from playwright.sync_api import sync_playwright

    root = tmp_path / "root"
    root.mkdir()
    target = root / "out.txt"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("%load_ext jupyter_agent"),
                                         nbformat.v4.new_code_cell("%%agent\nWrite hello to out.txt")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "agent.ipynb")
    with FakeMessagesAPI([
        response(thinking("Consider the file."), text("I'll **write** `out.txt`:\n\n- one\n- two"),
                 tool_use("Write", {"file_path": str(target), "content": "hello"}), delay_s=0.01),
        response(text("Done: `out.txt` says *hello*."), delay_s=0.01),
    ]) as api:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "JUPYTER_AGENT_"))}
        env.update(api.env())
        for name in ("cfg/labconfig", "settings", "workspaces", "runtime", "ipython"):
            (tmp_path / name).mkdir(parents=True)
        (tmp_path / "cfg/labconfig/page_config.json").write_text(json.dumps(
            {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
        env.update(JUPYTER_CONFIG_DIR=str(tmp_path / "cfg"), JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"),
                   JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"),
                   JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), IPYTHONDIR=str(tmp_path / "ipython"))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        lab = subprocess.Popen([sys.executable, "-m", "jupyterlab", "--allow-root", "--no-browser",
                                f"--port={port}", "--IdentityProvider.token=", f"--ServerApp.root_dir={root}"],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                page = browser.new_page(viewport={"width": 1200, "height": 1000})
                for _ in range(100):  # the server takes a few seconds to listen
                    try:
                        page.goto(f"http://127.0.0.1:{port}/lab/tree/agent.ipynb")
                        break
                    except Exception:
                        time.sleep(0.2)
                page.wait_for_selector("text=| Idle", timeout=60000)
                page.click(".jp-Cell >> nth=0")
                page.keyboard.press("Shift+Enter")
                page.wait_for_selector(".jp-Cell >> nth=0 >> text=[1]", timeout=30000)
                page.keyboard.press("Shift+Enter")
                page.wait_for_selector("button:has-text('Allow')", timeout=30000)
                strong = page.locator(".jp-OutputArea strong", has_text="write").all()
                assert sum(1 for s in strong if s.is_visible()) == 1  # Markdown (the fallback is hidden)
                assert not target.exists()
                page.click("button:has-text('Allow')")
                page.wait_for_selector(".jp-Cell >> nth=1 >> text=Finished", timeout=30000)
                output = page.locator(".jp-Cell >> nth=1").inner_text()
                browser.close()
        finally:
            lab.terminate()
            lab.wait(10)
    assert target.read_text() == "hello"
    assert "Done: out.txt says hello." in output and "completed" in output
    assert "Stop" not in output  # the live widget is gone: the transcript replaced it
