"""A real Jupyter Kernel Gateway for the browser tests of remote kernels (``test_gateway.py``,
``test_mcp_gateway_browser.py``): :class:`KernelGateway` runs ``jupyter kernelgateway`` in a
folder of its own (the kernel host, which shares no file with the notebook server); the modules' ``gateway`` and
``lab`` fixtures (JupyterLab pointed at it with ``--GatewayClient.url``) are
:func:`kernel_gateway` and :func:`gateway_lab`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.programs import stop_process

from .lab import free_port

#: What the notebook server sends to the gateway with each kernel start, and the gateway passes on
#: (a list option takes one name per flag on the command line).
PASSED = "ANTHROPIC_API_KEY,ANTHROPIC_BASE_URL"
#: What the gateway's kernels inherit from the gateway's own environment: the test's
#: private Jupyter and IPython folders (nothing else of the gateway's environment).
INHERITED = "IPYTHONDIR,JUPYTER_CONFIG_DIR,JUPYTER_DATA_DIR,JUPYTER_RUNTIME_DIR,PYDEVD_DISABLE_FILE_VALIDATION"


class KernelGateway:
    """``jupyter kernelgateway`` in its own folder, on a free port, with no Anthropic variable
    of its own."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder / "kernel-host"
        self.folder.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "JUPYTER_AGENT_", "JPY_"))}
        for name in ("ipython", "config", "data", "runtime"):
            (folder / name).mkdir()
        env.update(IPYTHONDIR=str(folder / "ipython"), JUPYTER_CONFIG_DIR=str(folder / "config"),
                   JUPYTER_DATA_DIR=str(folder / "data"), JUPYTER_RUNTIME_DIR=str(folder / "runtime"),
                   PYDEVD_DISABLE_FILE_VALIDATION="1")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = folder / "gateway.log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kernel_gateway", "--KernelGatewayApp.ip=127.0.0.1",
             f"--KernelGatewayApp.port={self.port}", "--JupyterWebsocketPersonality.list_kernels=True",
             *(f"--JupyterWebsocketPersonality.env_whitelist={name}" for name in PASSED.split(",")),
             *(f"--KernelGatewayApp.env_process_whitelist={name}" for name in INHERITED.split(","))],
            cwd=self.folder, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with urllib.request.urlopen(f"{self.url}/api", timeout=5):
                    return
            except OSError:
                time.sleep(0.2)
        self.close()
        raise RuntimeError(f"the kernel gateway did not answer: {self.log_path.read_text(errors='replace')[-3000:]}")

    def kernels(self) -> list[dict]:
        with urllib.request.urlopen(f"{self.url}/api/kernels", timeout=30) as r:
            return json.loads(r.read())

    def connections(self, kernel_id: str) -> int:
        """How many websockets the gateway holds open to the kernel (its model's count)."""
        return int(next(k for k in self.kernels() if k["id"] == kernel_id).get("connections", 0))

    def restart(self, kernel_id: str) -> None:
        """Restart a kernel through the gateway's own REST API (as its auto-restart, or another
        client of the gateway, would: the notebook server is not the one asking)."""
        request = urllib.request.Request(f"{self.url}/api/kernels/{kernel_id}/restart", data=b"{}", method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60):
            pass

    def delete(self, kernel_id: str) -> None:
        """Shut a kernel down on the gateway itself, as its culler does with an idle one."""
        with urllib.request.urlopen(urllib.request.Request(f"{self.url}/api/kernels/{kernel_id}", method="DELETE"),
                                    timeout=60):
            pass

    def close(self) -> None:
        stop_process(self.proc)
        self.log.close()


@pytest.fixture(scope="module", name="gateway")
def gateway_fixture(tmp_path_factory: Any) -> Iterator[KernelGateway]:
    """``gateway``: a real Kernel Gateway for the module (import this fixture into a test module)."""
    server = KernelGateway(tmp_path_factory.mktemp("gateway"))
    yield server
    server.close()


@pytest.fixture(scope="module", name="lab")
def gateway_lab_fixture(api: Any, gateway: KernelGateway, tmp_path_factory: Any) -> Iterator[Any]:
    """``lab``: JupyterLab whose kernels are the gateway's; its own environment has the key
    (import this fixture, with ``gateway_fixture``, into a test module: it stands for
    the ``lab`` of tests/jupyter/conftest.py there)."""
    from .lab import Lab

    server = Lab(tmp_path_factory.mktemp("lab"), api.env(), server_args=[
        f"--GatewayClient.url={gateway.url}", f"--GatewayClient.allowed_envs={PASSED}"])
    yield server
    server.close()
