"""A real Jupyter server (jupyter_server, no browser) with jupyter-agent's server extension and a
token, for the MCP endpoint's tests; and a way to run code in one of its kernels."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.jupyter.lab import free_port, write_notebook
from tests.programs import stop_process

TOKEN = "mcp-test-token-5f2a"


class Server:
    """``python -m jupyter_server`` in ``tmp``: root ``tmp/root``, token :data:`TOKEN`."""

    def __init__(self, tmp: Path, env_extra: dict[str, str] | None = None) -> None:
        self.root = tmp / "root"
        self.root.mkdir(parents=True, exist_ok=True)
        (tmp / "cfg").mkdir(exist_ok=True)
        (tmp / "cfg/jupyter_server_config.json").write_text(json.dumps(
            {"ServerApp": {"jpserver_extensions": {"jupyter_agent.server_extension": True}}}))
        self.runtime = Path(tempfile.mkdtemp(prefix="ja-mcp-"))  # short: ipc sockets live here
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "JUPYTER_AGENT_", "JPY_"))}
        env.update(env_extra or {})
        env.update(JUPYTER_CONFIG_DIR=str(tmp / "cfg"), JUPYTER_RUNTIME_DIR=str(self.runtime),
                   IPYTHONDIR=str(tmp / "ipython"), JUPYTER_DATA_DIR=str(tmp / "data"),
                   PYDEVD_DISABLE_FILE_VALIDATION="1")
        self.env = env
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.mcp_url = f"{self.url}/jupyter-agent/mcp"
        self.log_path = tmp / "server.log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter_server", "--allow-root", "--no-browser", f"--port={self.port}",
             f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={self.root}",
             "--KernelManager.transport=ipc"], env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self._wait_listening()

    def _wait_listening(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                self.api("/api/status")
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"jupyter_server did not answer: {self.log_tail()}")

    def log_tail(self, chars: int = 4000) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-chars:]

    def api(self, path: str, method: str = "GET", body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"{self.url}{path}", data=data, method=method,
                                     headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            text = r.read()
        return json.loads(text) if text else None

    def open_session(self, name: str, sources: list[str], ids: list[str] | None = None) -> str:
        """Write notebook ``name`` and start a kernel session on it (as JupyterLab does); its kernel id."""
        write_notebook(self.root / name, sources, ids)
        session = self.api("/api/sessions", "POST", {"path": name, "type": "notebook", "name": name,
                                                     "kernel": {"name": "python3"}})
        return session["kernel"]["id"]

    def execute(self, kernel_id: str, code: str, timeout: float = 120) -> dict[str, Any]:
        """Run ``code`` in the kernel (a client of its own, on its connection file); the reply."""
        from jupyter_client import BlockingKernelClient

        client = BlockingKernelClient(connection_file=str(self.runtime / f"kernel-{kernel_id}.json"))
        client.load_connection_file()
        # no heartbeat: on a loaded machine a missed beat reads as "the kernel died" while
        # it answers; wait_for_ready's kernel_info reply says it is there
        client.start_channels(hb=False)
        try:
            client.wait_for_ready(timeout=timeout)
            return client.execute_interactive(code, timeout=timeout, output_hook=lambda msg: None)
        finally:
            client.stop_channels()

    def run_until(self, kernel_id: str, code: str, stop: Any) -> None:
        """Run ``code`` in the kernel until its reply comes or ``stop`` (a threading.Event) is
        set: a cell the kernel's restart cuts off never replies, and its client must not wait
        for it (a thread of the test's; a client of its own, as :meth:`execute`)."""
        import queue

        from jupyter_client import BlockingKernelClient

        client = BlockingKernelClient(connection_file=str(self.runtime / f"kernel-{kernel_id}.json"))
        client.load_connection_file()
        client.start_channels(hb=False)
        try:
            client.wait_for_ready(timeout=120)
            msg_id = client.execute(code)
            while not stop.is_set():
                try:
                    reply = client.get_shell_msg(timeout=0.2)
                except queue.Empty:
                    continue
                if (reply.get("parent_header") or {}).get("msg_id") == msg_id:
                    return
        finally:
            client.stop_channels()

    def close(self) -> None:
        try:
            for k in self.api("/api/kernels"):
                self.api(f"/api/kernels/{k['id']}", method="DELETE")
        except (OSError, urllib.error.URLError) as e:
            print(f"kernels not stopped: {e}")
        stop_process(self.proc)
        self.log.close()
        shutil.rmtree(self.runtime, ignore_errors=True)
