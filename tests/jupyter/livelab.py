"""Real JupyterLab in real Chromium, for the live-notebook tests (DESIGN §5).

:class:`Lab` starts one JupyterLab server (temp config/settings/workspace/runtime dirs,
the announcements plugin off, the fake Messages API in its kernels' environment) and
one headless Debian chromium; a test module shares them (one server is ~5 s).
Helpers open a notebook in a page, run a cell as a person would, and wait for text.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
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
SHOTS = Path(os.environ.get("JUPYTER_AGENT_SCREENSHOTS", "/tmp/jupyter-agent-screenshots"))


def require_browser() -> None:
    """In CI (JUPYTER_AGENT_REQUIRE_BROWSER) a missing browser is a failure, not a skip."""
    if not HAVE_BROWSER and os.environ.get("JUPYTER_AGENT_REQUIRE_BROWSER"):
        raise RuntimeError("JUPYTER_AGENT_REQUIRE_BROWSER is set but jupyterlab, playwright or "
                           "/usr/bin/chromium is missing: `./dev test` installs them")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_notebook(path: Path, sources: list[str], ids: list[str] | None = None) -> Path:
    """A v4.5 notebook with these code cells (markdown when a source starts with '# ')."""
    cells = []
    for i, source in enumerate(sources):
        cell = (nbformat.v4.new_markdown_cell(source[2:]) if source.startswith("# ")
                else nbformat.v4.new_code_cell(source))
        cell.id = ids[i] if ids else f"c{i}"
        cells.append(cell)
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


class Lab:
    """One JupyterLab server and one browser."""

    def __init__(self, tmp: Path, env_extra: dict[str, str]) -> None:
        self.tmp = tmp
        self.root = tmp / "root"
        self.root.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "JUPYTER_AGENT_", "JPY_"))}
        env.update(env_extra)
        for name in ("cfg/labconfig", "settings", "workspaces", "runtime", "ipython", "data"):
            (tmp / name).mkdir(parents=True, exist_ok=True)
        (tmp / "cfg/labconfig/page_config.json").write_text(json.dumps(
            {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
        # The package's server extension (TCP_NODELAY) is enabled by its installed config,
        # which a temp JUPYTER_CONFIG_DIR hides: enable it here the same way.
        (tmp / "cfg/jupyter_server_config.json").write_text(json.dumps(
            {"ServerApp": {"jpserver_extensions": {"jupyter_agent.server_extension": True}}}))
        env.update(JUPYTER_CONFIG_DIR=str(tmp / "cfg"), JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"),
                   JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
                   IPYTHONDIR=str(tmp / "ipython"), PYDEVD_DISABLE_FILE_VALIDATION="1")
        self.env = env
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(tmp / "lab.log", "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--allow-root", "--no-browser", f"--port={self.port}",
             "--IdentityProvider.token=", "--ServerApp.password=", f"--ServerApp.root_dir={self.root}",
             "--ServerApp.disable_check_xsrf=True"],
            env=env, stdout=self.log, stderr=subprocess.STDOUT)
        from playwright.sync_api import sync_playwright

        self._pw = sync_playwright().start()
        self.browser = self._pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        self._wait_listening()

    def _wait_listening(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"JupyterLab did not listen: {(self.tmp / 'lab.log').read_text()[-2000:]}")

    def close(self) -> None:
        try:
            self.browser.close()
            self._pw.stop()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.log.close()

    def shutdown_kernels(self) -> None:
        """Stop every kernel (each test starts from fresh kernels)."""
        import urllib.request

        with urllib.request.urlopen(f"{self.url}/api/kernels") as r:
            kernels = json.loads(r.read())
        for k in kernels:
            req = urllib.request.Request(f"{self.url}/api/kernels/{k['id']}", method="DELETE")
            urllib.request.urlopen(req).close()

    # -- pages ----------------------------------------------------------------------------
    def open(self, name: str, context: Any = None) -> Any:
        """A new page showing notebook ``name``, its kernel idle."""
        context = context or self.browser.new_context(viewport={"width": 1200, "height": 1000})
        page = context.new_page()
        # A workspace of its own, reset: only this notebook open, whatever ran before.
        self._pages = getattr(self, "_pages", 0) + 1
        page.goto(f"{self.url}/lab/workspaces/t{self._pages}/tree/{name}?reset")
        wait_idle(page)
        return page


def wait_idle(page: Any, timeout: float = 60) -> None:
    page.wait_for_selector("text=| Idle", timeout=timeout * 1000)


def cell(page: Any, index: int) -> Any:
    return page.locator(".jp-Notebook .jp-Cell").nth(index)


def run_cell(page: Any, index: int) -> None:
    """Select cell ``index`` and press Shift+Enter, as a person would."""
    cell(page, index).locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")


def run_and_wait(page: Any, index: int, timeout: float = 30) -> None:
    """Run a cell and wait for its execution count."""
    run_cell(page, index)
    page.wait_for_function(
        """(i) => { const c = document.querySelectorAll('.jp-Notebook .jp-Cell')[i];
                    const p = c && c.querySelector('.jp-InputPrompt');
                    return p && /\\[\\d+\\]/.test(p.textContent); }""", arg=index, timeout=timeout * 1000)


def cell_sources(page: Any) -> list[str]:
    """What the page shows in each cell's editor."""
    return page.eval_on_selector_all(
        ".jp-Notebook .jp-Cell", "els => els.map(e => { const l = e.querySelectorAll('.cm-line');"
        " return Array.from(l).map(x => x.textContent).join('\\n'); })")


def screenshot(page: Any, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def button(page: Any, label: str) -> Any:
    """The newest enabled button whose text is exactly ``label``."""
    # ipywidgets buttons carry an icon element, so match the visible text exactly.
    return page.locator("button.jupyter-button:not([disabled])").filter(
        has_text=re.compile(rf"^\s*{re.escape(label)}\s*$")).last


def click_button(page: Any, label: str, timeout: float = 30) -> None:
    button(page, label).click(timeout=timeout * 1000)


#: How a run's end reads in the page (the widget's footer, then the static transcript):
#: its end reason in a code span, e.g. "✓ Finished `completed`" or "Stopped `aborted_tools` — ...".
END_REASON = re.compile(r"^(completed|max_turns|aborted_streaming|aborted_tools|model_error|prompt_too_long|"
                        r"stop_hook_prevented|hook_stopped|kernel lost)$")


def wait_for_end(page, timeout: float = 60000) -> None:
    """Wait until a run's end is shown in the page."""
    page.locator("code", has_text=END_REASON).first.wait_for(timeout=timeout)
