"""A real JupyterLab in real Chromium for browser tests (DESIGN §5): one server per test
module, pages opened on notebooks in its root, screenshots saved for people to look at.

Screenshots go to ``tests/output/screenshots/`` (gitignored; ``JUPYTER_AGENT_SCREENSHOTS``
overrides it); the path of each is printed in the test log.
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
from typing import Any

import nbformat

CHROMIUM = "/usr/bin/chromium"
HAVE_BROWSER = bool(Path(CHROMIUM).exists() and importlib.util.find_spec("jupyterlab")
                    and importlib.util.find_spec("playwright"))
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCREENSHOTS = Path(os.environ.get("JUPYTER_AGENT_SCREENSHOTS")
                   or Path(__file__).resolve().parents[1] / "output" / "screenshots")


def write_notebook(path: Path, *sources: str, ids: tuple[str, ...] | None = None) -> Path:
    cells = [nbformat.v4.new_code_cell(s, id=ids[i]) if ids else nbformat.v4.new_code_cell(s)
             for i, s in enumerate(sources)]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


class Lab:
    """``python -m jupyterlab`` on a free port with temp config dirs, and one browser."""

    def __init__(self, tmp: Path, env: dict[str, str]) -> None:
        self.root = tmp / "root"
        self.root.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in env.items()}
        for name in ("cfg/labconfig", "settings", "workspaces", "runtime", "ipython", "data"):
            (tmp / name).mkdir(parents=True, exist_ok=True)
        (tmp / "cfg/labconfig/page_config.json").write_text(json.dumps(
            {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
        self.settings = tmp / "settings"
        env.update(JUPYTER_CONFIG_DIR=str(tmp / "cfg"), JUPYTERLAB_SETTINGS_DIR=str(self.settings),
                   JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
                   IPYTHONDIR=str(tmp / "ipython"), JUPYTER_DATA_DIR=str(tmp / "data"))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--allow-root", "--no-browser", f"--port={self.port}",
             "--IdentityProvider.token=", f"--ServerApp.root_dir={self.root}"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        from playwright.sync_api import sync_playwright

        self._pw = sync_playwright().start()
        self.browser = self._pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        self.page: Any = None

    def open(self, name: str, *, width: int = 1200, height: int = 1000) -> Any:
        """A fresh page (new workspace state) on notebook ``name``, its kernel idle."""
        if self.page is not None:
            self.page.close()
        self.page = page = self.browser.new_page(viewport={"width": width, "height": height})
        url = f"http://127.0.0.1:{self.port}/lab/tree/{name}?reset"
        for _ in range(150):  # the server takes a few seconds to listen
            try:
                page.goto(url)
                break
            except Exception:
                time.sleep(0.2)
        page.wait_for_selector("text=| Idle", timeout=60000)
        return page

    def run_cell(self, index: int, wait_count: bool = True) -> None:
        """Select cell ``index`` and Shift+Enter it (waiting for its execution count)."""
        page = self.page
        page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-InputPrompt").click()
        page.keyboard.press("Shift+Enter")
        if wait_count:
            page.wait_for_function(
                "i => { const c = document.querySelectorAll('.jp-Notebook .jp-Cell')[i];"
                " return c && /\\[\\d+\\]/.test(c.querySelector('.jp-InputPrompt').textContent); }",
                arg=index, timeout=30000)

    def cell(self, index: int) -> Any:
        return self.page.locator(".jp-Notebook .jp-Cell").nth(index)

    def shot(self, name: str, target: Any = None) -> Path:
        """Save a screenshot (of ``target``, or the page) and print where."""
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        (target or self.page).screenshot(path=str(path))
        print(f"screenshot: {path}")
        return path

    def command(self, label: str) -> None:
        """Run a command by its label through the command palette."""
        page = self.page
        page.keyboard.press("Control+Shift+C")
        page.wait_for_selector(".lm-CommandPalette-input", timeout=5000)
        page.fill(".lm-CommandPalette-input", label)
        page.locator(".lm-CommandPalette-item", has_text=label).first.click()

    def close(self) -> None:
        try:
            self.browser.close()
            self._pw.stop()
        finally:
            self.proc.terminate()
            self.proc.wait(10)
