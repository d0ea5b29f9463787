"""The side panel in real JupyterLab in real Chromium, with the fake Messages API as the
model: type a prompt, watch the answer stream, approve the tool, see the result; switch
notebooks and the panel follows the kernel; a kernel without the extension gets a hint.

Screenshots (light and dark theme) go to $JUPYTER_AGENT_SCREENSHOTS
(default /tmp/jupyter-agent-screenshots). Skipped unless JupyterLab, Python playwright
and /usr/bin/chromium are installed (DESIGN §5: never download a browser).
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
SHOTS = Path(os.environ.get("JUPYTER_AGENT_SCREENSHOTS", "/tmp/jupyter-agent-screenshots"))
PANEL = "#jupyter-agent-panel"
HINT = "Run %load_ext jupyter_agent in this notebook"


def notebook(path: Path, sources: list[str]) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


def start_lab(tmp: Path, root: Path, env_extra: dict[str, str]) -> tuple[subprocess.Popen, int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "JUPYTER_AGENT_", "JPY_"))}
    env.update(env_extra)
    for name in ("cfg/labconfig", "settings", "workspaces", "runtime", "ipython"):
        (tmp / name).mkdir(parents=True, exist_ok=True)
    (tmp / "cfg/labconfig/page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    env.update(JUPYTER_CONFIG_DIR=str(tmp / "cfg"), JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
               IPYTHONDIR=str(tmp / "ipython"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(tmp / "lab.log", "wb")
    lab = subprocess.Popen([sys.executable, "-m", "jupyterlab", "--allow-root", "--no-browser", f"--port={port}",
                            "--IdentityProvider.token=", f"--ServerApp.root_dir={root}",
                            "--LabApp.expose_app_in_browser=True"],
                           env=env, stdout=log, stderr=subprocess.STDOUT)
    return lab, port


def run_cell(page, index: int) -> None:
    page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    page.wait_for_selector(f".jp-Notebook .jp-Cell >> nth={index} >> .jp-InputPrompt >> text=/\\[\\d+\\]/",
                           timeout=30000)


def shot(page, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


def open_notebook(page, name: str) -> None:
    page.evaluate("name => window.jupyterapp.commands.execute('docmanager:open', {path: name})", name)
    page.wait_for_selector(f".jp-mod-current .jp-Notebook, .lm-DockPanel-tabBar .lm-mod-current >> text={name}",
                           timeout=30000)


def test_side_panel_round_trip(tmp_path):
    from playwright.sync_api import sync_playwright

    root = tmp_path / "root"
    root.mkdir()
    target = root / "panel.txt"
    notebook(root / "agent.ipynb", ["%load_ext jupyter_agent", "x = 41"])
    notebook(root / "plain.ipynb", ["1 + 1"])
    with FakeMessagesAPI([
        response(thinking("The user wants a file."), text("I'll **write** `panel.txt` for you."),
                 tool_use("Write", {"file_path": str(target), "content": "from the panel"}), delay_s=0.01),
        response(text("Done: `panel.txt` says *from the panel*."), delay_s=0.01),
    ]) as api:
        lab, port = start_lab(tmp_path, root, api.env())
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                for _ in range(150):  # the server takes a few seconds to listen
                    try:
                        page.goto(f"http://127.0.0.1:{port}/lab/tree/agent.ipynb")
                        break
                    except Exception:
                        time.sleep(0.2)
                page.wait_for_selector("text=| Idle", timeout=60000)
                page.click(f"li[data-id='{PANEL[1:]}']")  # the sidebar tab opens the panel
                panel = page.locator(PANEL)
                panel.locator(".jp-AgentPanel-hintBox", has_text=HINT).wait_for(timeout=30000)  # not loaded yet
                run_cell(page, 0)
                run_cell(page, 1)
                # after the cell ran, the panel connects by itself
                panel.locator(".jp-AgentPanel-empty").wait_for(timeout=30000)
                assert panel.locator(".jp-AgentPanel-mode").input_value() == "default"
                panel.locator(".jp-AgentPanel-input").fill("Write 'from the panel' to panel.txt")
                panel.locator(".jp-AgentPanel-input").press("Enter")
                approval = panel.locator(".jp-AgentPanel-approval")
                approval.wait_for(timeout=30000)
                assert "panel.txt" in approval.inner_text() and not target.exists()
                assert panel.locator(".jp-AgentPanel-text strong", has_text="write").count() == 1  # Markdown
                assert panel.locator(".jp-AgentPanel-thinking details, .jp-AgentPanel-thinking i").count() == 1
                assert panel.locator(".jp-AgentPanel-state-approval").count() == 1
                assert "Write 'from the panel' to panel.txt" in panel.locator(".jp-AgentPanel-prompt").inner_text()
                shot(page, "panel-approval-light")
                approval.get_by_role("button", name="Allow", exact=True).click()
                panel.locator(".jp-AgentPanel-runFooter", has_text="Ended:").wait_for(timeout=30000)
                assert target.read_text() == "from the panel"
                footer = panel.locator(".jp-AgentPanel-runFooter").inner_text()
                assert "completed" in footer and "out" in footer  # tokens and cost
                assert panel.locator(".jp-AgentPanel-state-done").count() == 1
                assert "Allowed by you." in panel.locator(".jp-AgentPanel-tool").inner_text()
                assert panel.locator(".jp-AgentPanel-text em", has_text="from the panel").count() == 1
                assert "$" in panel.locator(".jp-AgentPanel-usage").inner_text()
                assert panel.locator(".jp-AgentPanel-approval").count() == 0
                shot(page, "panel-done-light")
                page.evaluate("window.jupyterapp.commands.execute('apputils:change-theme', "
                              "{theme: 'JupyterLab Dark'})")
                page.wait_for_selector("body[data-jp-theme-light='false']", state="attached", timeout=30000)
                time.sleep(0.5)
                shot(page, "panel-done-dark")
                # another notebook, whose kernel has not loaded the extension: a one-line hint
                open_notebook(page, "plain.ipynb")
                panel.locator(".jp-AgentPanel-hintBox", has_text=HINT).wait_for(timeout=30000)
                assert "plain.ipynb" in panel.locator(".jp-AgentPanel-title").inner_text()
                assert panel.locator(".jp-AgentPanel-run").count() == 0
                shot(page, "panel-hint-dark")
                # back to the first notebook: its kernel's conversation is there again
                open_notebook(page, "agent.ipynb")
                panel.locator(".jp-AgentPanel-run").first.wait_for(timeout=30000)
                assert "Done: panel.txt says" in panel.inner_text()
                panel.get_by_role("button", name="New conversation").click()
                panel.locator(".jp-AgentPanel-empty").wait_for(timeout=30000)
                assert panel.locator(".jp-AgentPanel-run").count() == 0
                browser.close()
        finally:
            lab.terminate()
            lab.wait(10)
