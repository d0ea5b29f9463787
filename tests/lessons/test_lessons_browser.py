"""The stepper widget and the timeline in real JupyterLab in real Chromium, then the
saved notebook reopened without the kernel that drew them: the static copy is readable.

Skipped unless JupyterLab, Python playwright and /usr/bin/chromium are installed (DESIGN §5:
never download a browser). Screenshots go to the test's temp folder (``SHOTS`` env var to
keep them elsewhere).
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

CHROMIUM = "/usr/bin/chromium"
HAVE_BROWSER = bool(Path(CHROMIUM).exists() and importlib.util.find_spec("jupyterlab")
                    and importlib.util.find_spec("playwright"))
pytestmark = pytest.mark.skipif(not HAVE_BROWSER,
                                reason="needs jupyterlab, playwright and the Debian chromium package")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

SETUP = '''\
from jupyter_agent.lessons import Lesson, Stepper
from jupyter_agent.lessons.widget import StepperView
from jupyter_agent.testing import response, text, tool_use
lesson = Lesson("browser")
notes = lesson.write("notes.txt", "value = 1\\n")
script = [response(text("Reading."), tool_use("Read", {"file_path": str(notes)}, id="toolu_browser_1")),
          response(text("It says value = 1."))]
view = StepperView(Stepper.start("Read notes.txt", model=lesson.model(script), cwd=lesson.dir))
view'''


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "JUPYTER_AGENT_"))}
    for name in ("cfg/labconfig", "settings", "workspaces", "runtime", "ipython", "data"):
        (tmp / name).mkdir(parents=True, exist_ok=True)
    (tmp / "cfg/labconfig/page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    env.update(JUPYTER_CONFIG_DIR=str(tmp / "cfg"), JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
               IPYTHONDIR=str(tmp / "ipython"), JUPYTER_DATA_DIR=str(tmp / "data"), TMPDIR=str(tmp))
    env["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(Path(sys.prefix) / "share/jupyter"),
                                                        env.get("JUPYTER_PATH", "")]))
    return env


class Lab:
    """A JupyterLab (or Notebook 7: ``app="notebook"``) server on a free port, serving ``root``."""

    def __init__(self, root: Path, env: dict[str, str], app: str = "jupyterlab") -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.app = app
        self.proc = subprocess.Popen(
            [sys.executable, "-m", app, "--allow-root", "--no-browser", f"--port={self.port}",
             "--IdentityProvider.token=", f"--ServerApp.root_dir={root}"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def open(self, page, name: str) -> None:
        where = "lab/tree" if self.app == "jupyterlab" else "notebooks"
        for _ in range(300):  # the server takes a few seconds to listen
            try:
                page.goto(f"http://127.0.0.1:{self.port}/{where}/{name}")
                break
            except Exception:
                time.sleep(0.2)
        if self.app == "jupyterlab":
            page.wait_for_selector("text=| Idle", timeout=90000)
        else:  # Notebook 7 has no status bar: its toolbar's kernel indicator says idle
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90000)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(15)


def _lit(page) -> str:
    """The step lit in the live widget's diagram."""
    return page.locator(".jupyter-widgets td[data-lit='true']").first.get_attribute("data-step")


def _click(page, label: str, lit: str) -> None:
    page.locator(".jupyter-widgets button", has_text=label).first.click()
    page.wait_for_selector(f".jupyter-widgets td[data-step='{lit}'][data-lit='true']", timeout=60000)


@pytest.mark.timeout(400)
def test_stepper_widget_and_timeline_live_then_saved_and_reopened(tmp_path):
    from playwright.sync_api import sync_playwright

    shots = Path(os.environ.get("SHOTS") or tmp_path)
    root = tmp_path / "root"
    root.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(SETUP), nbformat.v4.new_code_cell("view.timeline()")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "lesson.ipynb")
    env = _env(tmp_path)

    lab = Lab(root, env)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 1400})
            lab.open(page, "lesson.ipynb")
            page.click(".jp-Cell >> nth=0")
            page.keyboard.press("Shift+Enter")
            page.wait_for_selector(".jupyter-widgets button:has-text('Next step')", timeout=90000)
            for lit in ("1", "2", "3", "4"):
                _click(page, "Next step", lit)
                if lit == "2":
                    page.wait_for_selector(".jupyter-widgets :text('toolu_browser_1') >> visible=true", timeout=30000)
            _click(page, "Back", "3")
            page.wait_for_selector(".jupyter-widgets :text('looking back') >> visible=true", timeout=30000)
            _click(page, "Run to end", "end")
            page.wait_for_selector(".jupyter-widgets :text('Ended:') >> visible=true", timeout=30000)
            widget_text = page.locator(".jp-Cell >> nth=0").inner_text()
            # the static copy is in the page but hidden while the widget is live
            static = page.locator("[class*='ja-lesson-static']")
            assert static.count() == 1 and not static.first.is_visible()
            page.keyboard.press("Escape")
            page.click(".jp-Cell >> nth=1")
            page.keyboard.press("Shift+Enter")
            page.wait_for_selector(".jp-Cell >> nth=1 >> .jp-OutputArea-output img", timeout=30000)
            page.screenshot(path=str(shots / "lessons-live.png"), full_page=True)
            page.keyboard.press("Control+s")
            for _ in range(100):
                saved = nbformat.read(root / "lesson.ipynb", as_version=4)
                if saved.cells[1].get("outputs"):
                    break
                time.sleep(0.2)
            browser.close()
    finally:
        lab.close()

    assert "Ended: completed" in widget_text and "not that the task is done" in widget_text
    assert "turn_count" in widget_text and "toolu_browser_1" in widget_text
    outputs = saved.cells[0].outputs
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert len(html) == 1 and "Ended: <code>completed</code>" in html[0]  # the last state, saved
    assert {"image/svg+xml", "text/html"} <= set(saved.cells[1].outputs[0]["data"])

    # Reopen in a new server, as someone else's copy: changed content is not trusted, so
    # JupyterLab sanitizes its HTML; the widget's model is gone with the old kernel.
    saved.metadata["reopened"] = True
    nbformat.write(saved, root / "lesson.ipynb")
    lab = Lab(root, env)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 1400})
            lab.open(page, "lesson.ipynb")
            static = page.locator(".jp-Cell >> nth=0 >> .jp-RenderedHTMLCommon", has_text="Ended:")
            static.first.wait_for(timeout=30000)
            assert static.first.is_visible()
            reopened_text = static.first.inner_text()
            assert page.locator(".jp-Cell >> nth=1 >> .jp-OutputArea-output img").first.is_visible()
            page.screenshot(path=str(shots / "lessons-reopened.png"), full_page=True)
            browser.close()
    finally:
        lab.close()
    assert "Ended: completed" in reopened_text and "toolu_browser_1" in reopened_text
    assert "turn_count" in reopened_text


@pytest.mark.timeout(300)
@pytest.mark.skipif(not importlib.util.find_spec("notebook"), reason="needs the notebook (7) package")
def test_stepper_widget_in_notebook_7(tmp_path):
    from playwright.sync_api import sync_playwright

    shots = Path(os.environ.get("SHOTS") or tmp_path)
    root = tmp_path / "root"
    root.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(SETUP)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "lesson.ipynb")
    server = Lab(root, _env(tmp_path), app="notebook")
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 1200})
            server.open(page, "lesson.ipynb")
            for _ in range(6):  # Notebook 7 may drop a run sent before its kernel connected
                page.click(".jp-Cell >> nth=0 >> .jp-InputArea-editor")
                page.keyboard.press("Shift+Enter")
                try:
                    page.wait_for_function(
                        "() => /\\[(\\*|\\d+)\\]/.test(document.querySelector('.jp-Cell .jp-InputPrompt').textContent)",
                        timeout=15000)
                    break
                except Exception:
                    continue
            try:
                page.wait_for_selector(".jupyter-widgets button:has-text('Next step')", timeout=90000)
            except Exception:
                page.screenshot(path=str(shots / "lessons-notebook7-failed.png"), full_page=True)
                raise
            _click(page, "Next step", "1")
            _click(page, "Next turn", "1")  # step 1 of turn 2
            page.wait_for_selector(".jupyter-widgets :text('toolu_browser_1') >> visible=true", timeout=30000)
            _click(page, "Run to end", "end")
            page.wait_for_selector(".jupyter-widgets :text('Ended:') >> visible=true", timeout=30000)
            text = page.locator(".jp-Cell >> nth=0").inner_text()
            assert not page.locator("[class*='ja-lesson-static']").first.is_visible()
            page.screenshot(path=str(shots / "lessons-notebook7.png"), full_page=True)
            browser.close()
    finally:
        server.close()
    assert "Ended: completed" in text and "turn_count" in text
