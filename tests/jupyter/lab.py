"""A real JupyterLab (or Notebook 7) in real Chromium for the browser tests (docs/design.md, "Browser tests").

:class:`Lab` starts one server (temp config/settings/workspace/runtime/data dirs, the
announcements plugin off, the package's server extension on, the fake Messages API in its
kernels' environment) and one headless Debian chromium; a test module shares them (a
server is ~5 s). The page helpers below open a notebook, run a cell as a person would,
click widget buttons, wait for a kernel restart or a run's end, save, and take screenshots.

CI runs the whole suite on 2 cores in random order, so every wait here waits for
something the page shows, with a timeout, and never for a state that was already there
before the action it waits for: :func:`run_and_wait` waits for the cell to go ``[*]`` and
then get a number, :func:`restarted` waits for the kernel to leave idle and come back,
:func:`save` waits for the file to change on disk (or a dialog to show).

Screenshots go to ``tests/output/screenshots/`` (gitignored; ``JUPYTER_AGENT_SCREENSHOTS``
overrides it); the path of each is printed in the test log.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import socket
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from collections.abc import Iterator, Sequence
from typing import Any

import nbformat

from tests.programs import stop_process

CHROMIUM = "/usr/bin/chromium"
HAVE_BROWSER = bool(Path(CHROMIUM).exists() and importlib.util.find_spec("jupyterlab")
                    and importlib.util.find_spec("playwright"))
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SHOTS = Path(os.environ.get("JUPYTER_AGENT_SCREENSHOTS")
             or Path(__file__).resolve().parents[1] / "output" / "screenshots")
#: Playwright's default for every action and wait without its own timeout (its own is 30 s,
#: too tight for a page on 2 loaded cores).
DEFAULT_TIMEOUT_MS = 60000
CELLS = ".jp-Notebook .jp-Cell"


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
    """One server (``app``: "jupyterlab", or "notebook" for Notebook 7; ``server_args``: more
    command-line options for it; ``python``: the environment it runs in, this one unless a
    benchmark compares another) and one browser (``browser``: another Lab's, shared)."""

    def __init__(self, tmp: Path, env_extra: dict[str, str] | None = None, app: str = "jupyterlab",
                 server_args: Sequence[str] = (), python: str = sys.executable, browser: Any = None) -> None:
        self.app = app
        self.tmp = tmp
        self.root = tmp / "root"
        self.root.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "JUPYTER_AGENT_", "JPY_"))}
        env.update(env_extra or {})
        for name in ("cfg/labconfig", "settings", "workspaces", "runtime", "ipython", "data"):
            (tmp / name).mkdir(parents=True, exist_ok=True)
        (tmp / "cfg/labconfig/page_config.json").write_text(json.dumps(
            {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
        # The package's server extension (TCP_NODELAY) is enabled by its installed config,
        # which a temp JUPYTER_CONFIG_DIR hides: enable it here the same way.
        (tmp / "cfg/jupyter_server_config.json").write_text(json.dumps(
            {"ServerApp": {"jpserver_extensions": {"jupyter_agent.server_extension": True}}}))
        self.settings = tmp / "settings"
        # The server's kernels talk over Unix sockets (ipc), as the kernel tests' do (frontend.py):
        # a TCP kernel's ports are picked free, then bound by the kernel a moment later, and on
        # 2 busy cores another process's connection once took its shell port in between; the
        # kernel died at start, and its restarts kept the same (cached) ports. The sockets live
        # in a short folder: a Unix socket's path has at most 107 bytes. (Not for a gateway's
        # kernels, which are not the server's to start.)
        local_kernels = not any(a.startswith("--GatewayClient.url") for a in server_args)
        self.runtime = Path(tempfile.mkdtemp(prefix="ja-lab-")) if local_kernels else tmp / "runtime"
        server_args = (*server_args, "--KernelManager.transport=ipc") if local_kernels else tuple(server_args)
        env.update(JUPYTER_CONFIG_DIR=str(tmp / "cfg"), JUPYTERLAB_SETTINGS_DIR=str(self.settings),
                   JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"), JUPYTER_RUNTIME_DIR=str(self.runtime),
                   IPYTHONDIR=str(tmp / "ipython"), JUPYTER_DATA_DIR=str(tmp / "data"),
                   PYDEVD_DISABLE_FILE_VALIDATION="1")
        self.env = env
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp / "server.log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [python, "-m", app, "--allow-root", "--no-browser", f"--port={self.port}",
             "--IdentityProvider.token=", "--ServerApp.password=", f"--ServerApp.root_dir={self.root}",
             "--ServerApp.disable_check_xsrf=True", *server_args],
            env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self._contexts: list[Any] = []
        self._pages = 0
        # notebook path -> the thread stopping the kernel a finished test left on it
        self._stopping: dict[str, threading.Thread] = {}
        self._owns_browser = browser is None
        try:
            if browser is None:
                from playwright.sync_api import sync_playwright

                self._pw = sync_playwright().start()
                browser = self._pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            self.browser = browser
            self._wait_listening()
        except BaseException:
            self.close()
            raise

    def _wait_listening(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"{self.url}/api/status", timeout=5):
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"{self.app} did not answer on {self.url}: {self.log_tail()}")

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the server's log (for failure messages)."""
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-chars:]

    def close(self) -> None:
        try:
            self._wait_stopped()
            if getattr(self, "browser", None) is not None and self._owns_browser:
                self.browser.close()
            if getattr(self, "_pw", None) is not None:
                self._pw.stop()
        finally:
            stop_process(self.proc)
            self.log.close()
            if self.runtime.name.startswith("ja-lab-"):
                shutil.rmtree(self.runtime, ignore_errors=True)

    # -- kernels (REST) --------------------------------------------------------------------
    def _api(self, path: str, method: str = "GET") -> Any:
        req = urllib.request.Request(f"{self.url}{path}", method=method)
        with urllib.request.urlopen(req, timeout=30) as r:
            body = r.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        """Stop every kernel (each test starts from fresh kernels); returns once they stopped."""
        self._wait_stopped()
        for k in self._api("/api/kernels"):
            self._api(f"/api/kernels/{k['id']}", method="DELETE")

    def _stop_kernels_in_background(self) -> None:
        """Stop every kernel without waiting: a kernel's clean exit takes its server 1-3 s,
        which the next test need not wait for. :meth:`open` waits for the kernel of the
        notebook it opens (JupyterLab would join that notebook's old session), and
        :meth:`shutdown_kernels` and :meth:`close` for all of them."""
        sessions = {s["kernel"]["id"]: s["path"] for s in self._api("/api/sessions") if s.get("kernel")}
        for k in self._api("/api/kernels"):
            thread = threading.Thread(target=self._delete_kernel, args=(k["id"],), daemon=True)
            thread.start()
            self._stopping[sessions.get(k["id"], f"(no session) {k['id']}")] = thread

    def _delete_kernel(self, kernel_id: str) -> None:
        try:
            self._api(f"/api/kernels/{kernel_id}", method="DELETE")
        except OSError as e:  # already gone (404), or the server stopped: nothing left to stop
            print(f"kernel {kernel_id} was not stopped: {e}")

    def _wait_stopped(self, path: str | None = None, timeout: float = 60) -> None:
        """Wait until the kernel left on notebook ``path`` (every kernel, if None) stopped."""
        paths = list(self._stopping) if path is None else [path]
        for name in paths:
            thread = self._stopping.pop(name, None)
            if thread is not None:
                thread.join(timeout)

    # -- pages ----------------------------------------------------------------------------
    def open(self, name: str, context: Any = None, *, width: int = 1200, height: int = 1000,
             timeout: float = 120, reload_after: float | None = None) -> Any:
        """A new page (in a new browser context unless ``context``) on notebook ``name``,
        its kernel connected and idle. JupyterLab gets a workspace of its own, reset: only
        this notebook open, whatever ran before. ``reload_after``: a page whose kernel is not
        idle after that many seconds is reloaded once, as a person would (then ``timeout``)."""
        if context is None:
            context = self.browser.new_context(viewport={"width": width, "height": height})
            self._contexts.append(context)
        context.set_default_timeout(DEFAULT_TIMEOUT_MS)
        context.add_init_script(_RECORD_STATUSES)
        page = context.new_page()
        self._pages += 1
        self._wait_stopped(name)
        if self.app == "notebook":  # Notebook 7: one notebook per page, no workspaces
            page.goto(f"{self.url}/notebooks/{name}", timeout=timeout * 1000)
        else:
            page.goto(f"{self.url}/lab/workspaces/t{self._pages}/tree/{name}?reset", timeout=timeout * 1000)
        page.wait_for_selector(CELLS, timeout=timeout * 1000)
        if reload_after is not None:
            try:
                wait_idle(page, reload_after)
                return page
            except AssertionError as e:
                print(f"{e}: reloading the page")
                page.reload()
                page.wait_for_selector(CELLS, timeout=timeout * 1000)
        wait_idle(page, timeout)
        return page

    def finish(self, name: str) -> None:
        """End of a test: screenshot every page still open (``name``-i.png), close the
        pages this server opened, stop the kernels (in the background: see
        :meth:`_stop_kernels_in_background`)."""
        contexts, self._contexts = self._contexts, []
        pages = [p for ctx in contexts for p in ctx.pages]
        for i, page in enumerate(pages):
            with contextlib.suppress(Exception):
                screenshot(page, f"{name}-{i}")
        for ctx in contexts:
            with contextlib.suppress(Exception):
                ctx.close()
        self._stop_kernels_in_background()


# -- page helpers -------------------------------------------------------------------------
# The shown notebook's kernel status, as the page shows it: JupyterLab's status bar
# ("Python 3 (ipykernel) | Idle"; the notebook toolbar's indicator can overflow into its
# "..." menu when a side panel is open), or Notebook 7's toolbar indicator (it has no
# status bar). Lower case: "idle", "busy", "restarting", "initializing", ...
_STATUS = """(() => {
    const bar = Array.from(document.querySelectorAll('.jp-StatusBar-TextItem'))
                     .map(e => e.textContent).find(t => t.includes(' | '));
    if (bar !== undefined) return bar.startsWith('No Kernel') ? 'no kernel' : bar.split(' | ').pop().toLowerCase();
    const indicator = document.querySelector('.jp-Notebook-ExecutionIndicator');
    return indicator ? indicator.getAttribute('data-status') : null;
})()"""
# Every page records the statuses it showed, from its start on: Notebook 7's indicator
# says "idle" before the notebook has a kernel, so "idle" counts only once the page showed
# another status (initializing, connecting, restarting...) since it began (or a restart did).
_RECORD_STATUSES = f"""(() => {{
    if (window.__jaStatuses) return;
    window.__jaStatuses = [];
    const note = () => {{
        const s = {_STATUS}, seen = window.__jaStatuses;
        if (seen[seen.length - 1] !== s) seen.push(s);
    }};
    new MutationObserver(note).observe(document, {{subtree: true, childList: true, characterData: true,
                                                  attributes: true, attributeFilter: ['data-status']}});
}})();"""
_IDLE = f"""() => {_STATUS} === 'idle' && window.__jaStatuses.some(s => s && s !== 'idle')"""


def kernel_status(page: Any) -> str | None:
    """The shown notebook's kernel status ("idle", "busy", "restarting", ...)."""
    return page.evaluate(f"() => {_STATUS}")


def wait_idle(page: Any, timeout: float = 90) -> None:
    """Wait until the shown notebook's kernel is connected and idle."""
    try:
        page.wait_for_function(_IDLE, timeout=timeout * 1000)
    except Exception as e:
        seen = page.evaluate("() => window.__jaStatuses")
        raise AssertionError(f"the page's kernel was not idle within {timeout} s; it shows "
                             f"{kernel_status(page)!r} (statuses seen: {seen})") from e


@contextlib.contextmanager
def restarted(page: Any, timeout: float = 120) -> Iterator[None]:
    """``with restarted(page): <restart through the UI>`` waits, after the block, until the
    page showed the kernel restarting (or starting, connecting...) and then idle again: a
    wait that cannot pass on the "idle" shown before the restart."""
    page.evaluate("() => { window.__jaStatuses.length = 0; }")
    yield
    try:
        # "busy" does not count: the end of a cell that ran before the restart shows it too
        page.wait_for_function(f"""() => window.__jaStatuses.some(s => s && s !== 'idle' && s !== 'busy')
                                         && ({_IDLE})()""", timeout=timeout * 1000)
    except Exception as e:
        seen = page.evaluate("() => window.__jaStatuses")
        raise AssertionError(f"the kernel did not restart and come back idle within {timeout} s; "
                             f"statuses seen: {seen}") from e


def restart_from_page(page: Any) -> None:
    """Restart the shown notebook's kernel as a user does: command mode, ``0 0``, then
    Restart in JupyterLab's dialog; returns once the page showed it restart and come back
    idle (:func:`restarted`)."""
    with restarted(page):
        page.keyboard.press("Escape")
        page.keyboard.press("0")
        page.keyboard.press("0")
        page.locator(".jp-Dialog .jp-mod-accept").click(timeout=30000)
        page.locator(".jp-Dialog").wait_for(state="detached", timeout=30000)


def cell(page: Any, index: int) -> Any:
    return page.locator(CELLS).nth(index)


def run_cell(page: Any, index: int) -> None:
    """Select cell ``index`` and press Shift+Enter, as a person would."""
    cell(page, index).locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")


# Before the run: watch the cell's prompt and remember whether it showed "[*]" (busy). The
# prompt's node is kept (window.__jaArmed[i]) and watched from then on, not the i-th cell: a
# cell that runs `%agent undo` removes a cell above it while it runs, and the i-th cell is
# then the one below it (two CI failures: a `[ ]` prompt that was never the run cell's).
_ARM = """i => { const p = document.querySelectorAll('.jp-Notebook .jp-Cell')[i].querySelector('.jp-InputPrompt');
                 if (p.__jaObserver) p.__jaObserver.disconnect();
                 p.__jaBusy = false;
                 p.__jaObserver = new MutationObserver(() => { if (p.textContent.includes('[*]')) p.__jaBusy = true; });
                 p.__jaObserver.observe(p, {childList: true, subtree: true, characterData: true});
                 (window.__jaArmed = window.__jaArmed || {})[i] = p; }"""
_RAN = """i => { const p = window.__jaArmed[i];
                 return p.__jaBusy === true && /\\[\\d+\\]/.test(p.textContent); }"""
_ARMED_PROMPT = "i => window.__jaArmed[i].textContent"


def run_and_wait(page: Any, index: int, timeout: float = 90) -> None:
    """Run a cell and wait until it went busy ("[*]") and then got its execution count: a
    count that was there before this run (or the same number from a restarted kernel)
    does not count. The cell is followed by its node, wherever cells above it go."""
    page.evaluate(_ARM, index)
    run_cell(page, index)
    try:
        page.wait_for_function(_RAN, arg=index, timeout=timeout * 1000)
    except Exception as e:
        prompt = page.evaluate(_ARMED_PROMPT, index)
        raise AssertionError(f"cell {index} did not run within {timeout} s; its prompt shows {prompt!r}, "
                             f"the kernel {kernel_status(page)!r}") from e


def wait_prompt(page: Any, index: int, prompt: str, timeout: float = 60) -> None:
    """Wait until cell ``index``'s prompt shows ``prompt`` (e.g. "[*]" or "[2]")."""
    page.wait_for_function(
        """([i, p]) => { const c = document.querySelectorAll('.jp-Notebook .jp-Cell')[i];
                        const e = c && c.querySelector('.jp-InputPrompt');
                        return !!e && e.textContent.includes(p); }""", arg=[index, prompt], timeout=timeout * 1000)


def wait_cell_count(page: Any, count: int, timeout: float = 60) -> None:
    """Wait until the notebook shows ``count`` cells."""
    page.wait_for_function("n => document.querySelectorAll('.jp-Notebook .jp-Cell').length === n",
                           arg=count, timeout=timeout * 1000)


def cell_sources(page: Any) -> list[str]:
    """What the page shows in each cell's editor."""
    return page.eval_on_selector_all(
        CELLS, "els => els.map(e => { const l = e.querySelectorAll('.cm-line');"
        " return Array.from(l).map(x => x.textContent).join('\\n'); })")


def button(page: Any, label: str) -> Any:
    """The newest enabled widget button whose text is exactly ``label``."""
    # ipywidgets buttons carry an icon element, so match the visible text exactly.
    return page.locator("button.jupyter-button:not([disabled])").filter(
        has_text=re.compile(rf"^\s*{re.escape(label)}\s*$")).last


def click_button(page: Any, label: str, timeout: float = 60) -> None:
    button(page, label).click(timeout=timeout * 1000)


#: How a run's end reads in the page (the widget's footer, then the static transcript):
#: its end reason in a code span, e.g. "✓ Finished `completed`" or "Stopped `aborted_tools` — ...".
END_REASON = re.compile(r"^(completed|max_turns|aborted_streaming|aborted_tools|model_error|prompt_too_long|max_budget|"
                        r"stop_hook_prevented|hook_stopped|kernel lost)$")


def wait_for_end(page: Any, timeout: float = 60000) -> None:
    """Wait until a run's end is shown in the page (``timeout`` in ms)."""
    page.locator("code", has_text=END_REASON).first.wait_for(timeout=timeout)


def allow_the_insert_then_the_run(page: Any, source: str = "print(x + 1)", shows: str = "42") -> None:
    """The live scenario in a page showing ``x = 41``, ``%load_ext``, the ``%%agent`` cell and
    one more: run the three, Allow the insert of ``source`` (it appears right under the
    ``%%agent`` cell, not before the click), Allow the run, and wait for ``shows`` in the page."""
    run_and_wait(page, 0)
    run_and_wait(page, 1)
    run_cell(page, 2)
    button(page, "Allow").wait_for(timeout=60000)
    assert len(cell_sources(page)) == 4  # nothing inserted before Allow
    click_button(page, "Allow")
    wait_cell_count(page, 5)
    assert cell_sources(page)[3] == source  # right under the %%agent cell
    button(page, "Allow").wait_for(timeout=60000)
    click_button(page, "Allow")
    cell(page, 3).locator(".jp-OutputArea-output", has_text=shows).wait_for(timeout=60000)


def save(page: Any, path: Path, timeout: float = 60) -> None:
    """Ctrl+S, then wait until the server has written ``path`` or a dialog (e.g. "File
    Changed") asks something instead. The notebook must have the focus.

    jupyter_server's "atomic" writing keeps a ``.~name`` backup and rewrites the file in
    place, so a new mtime can come with a file still empty or half written: done means the
    backup is gone and the file is whole JSON."""
    before = path.stat().st_mtime_ns if path.exists() else None
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if page.locator(".jp-Dialog").count():
            return
        if path.exists() and path.stat().st_mtime_ns != before and whole_notebook(path) is not None:
            return
        page.wait_for_timeout(100)
    raise AssertionError(f"Ctrl+S did not write {path.name} within {timeout} s")


def whole_notebook(path: Path) -> Any:
    """The notebook at ``path`` (nbformat v4) if no save is writing it now, else None: a
    save in progress (its ``.~name`` backup there) reads empty or half written."""
    if path.with_name(f".~{path.name}").exists():
        return None
    try:
        return nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)
    except ValueError:  # nbformat.reader.NotJSONError too
        return None  # still being written


def command(page: Any, label: str) -> None:
    """Run a command by its label through the command palette."""
    page.keyboard.press("Control+Shift+C")
    page.wait_for_selector(".lm-CommandPalette-input")
    page.fill(".lm-CommandPalette-input", label)
    page.locator(".lm-CommandPalette-item", has_text=label).first.click()


def menu(page: Any, *labels: str) -> None:
    """Click through the menu bar, as a person would (Settings > Theme > ...)."""
    page.locator(".lm-MenuBar-itemLabel").get_by_text(labels[0], exact=True).click()
    for label in labels[1:-1]:
        page.locator(".lm-Menu-itemLabel").get_by_text(label, exact=True).hover()
    page.locator(".lm-Menu-itemLabel").get_by_text(labels[-1], exact=True).click()


def wait_theme(page: Any, light: bool, timeout: float = 60) -> None:
    """Wait until a theme change is drawn: the body says light or dark (JupyterLab sets it
    once the theme's CSS loaded), and the shell, hidden for one frame to redraw, shows."""
    page.wait_for_function(
        """light => document.body.dataset.jpThemeLight === String(light)
                    && !document.querySelector('#jupyterlab-splash')
                    && !document.getElementById('main').classList.contains('lm-mod-hidden')""",
        arg=light, timeout=timeout * 1000)


@contextlib.contextmanager
def dark_theme(page: Any) -> Iterator[None]:
    """JupyterLab Dark for the ``with`` block, chosen from the menu; Light again after it,
    whatever happens (the module's later tests expect the light theme)."""
    try:
        menu(page, "Settings", "Theme", "JupyterLab Dark")
        wait_theme(page, light=False)
        yield
    finally:
        menu(page, "Settings", "Theme", "JupyterLab Light")
        wait_theme(page, light=True)


#: Where the documentation's screenshots live (README.md and docs/ show them).
DOCS_SHOTS = Path(__file__).resolve().parents[2] / "docs" / "_static"


def docs_screenshot(page: Any, name: str) -> Path:
    """The page as it is now, for the docs: always into tests/output/screenshots/, and into
    docs/_static/ when ``JUPYTER_AGENT_DOCS_SCREENSHOTS=1`` (the tracked copy changes only when
    someone refreshes it on purpose: a test run leaves the work tree clean)."""
    path = screenshot(page, name, page)
    if os.environ.get("JUPYTER_AGENT_DOCS_SCREENSHOTS") == "1":
        DOCS_SHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOCS_SHOTS / f"{name}.png")
        print(f"docs screenshot: {DOCS_SHOTS / f'{name}.png'}")
    return path


def screenshot(page: Any, name: str, target: Any = None) -> Path:
    """Save a screenshot (of ``target``, or the whole page) and print where."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    if target is None:
        page.screenshot(path=str(path), full_page=True)
    else:
        target.screenshot(path=str(path))
    print(f"screenshot: {path}")
    return path
