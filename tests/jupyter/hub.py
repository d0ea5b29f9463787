"""A real JupyterHub for tests: its own proxy (configurable-http-proxy from npm), the dummy
authenticator with a password, one local process per user's server, and a small kernel
client that talks to a user's kernel through the hub's proxy (REST + websocket) with that
user's token, as a remote frontend would.

Everything lives under one temporary folder; every process the hub starts carries a marker
in its environment, so :func:`survivors` can tell (from /proc, as ps does) whether any
outlived the hub. Ports are free ones picked at start.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

REPO = Path(__file__).resolve().parents[2]
#: Where ./dev installs the hub's proxy (npm); $JUPYTER_AGENT_CHP names another.
CHP = Path(os.environ.get("JUPYTER_AGENT_CHP") or REPO / ".venv/chp/node_modules/.bin/configurable-http-proxy")
BIN = Path(sys.executable).parent
MARKER = "JUPYTER_AGENT_HUB_TEST"
PASSWORD = "a-test-password"

CONFIG = """\
c = get_config()  # noqa
c.JupyterHub.bind_url = {bind_url!r}
c.JupyterHub.hub_bind_url = {hub_url!r}
c.JupyterHub.db_url = {db_url!r}
c.JupyterHub.cookie_secret_file = {cookie!r}
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = {password!r}
c.Authenticator.allowed_users = set({users!r})
c.ConfigurableHTTPProxy.command = [{chp!r}]
c.ConfigurableHTTPProxy.api_url = {proxy_api!r}
c.ConfigurableHTTPProxy.pid_file = {proxy_pid!r}
c.JupyterHub.spawner_class = "jupyterhub.spawner.SimpleLocalProcessSpawner"
c.SimpleLocalProcessSpawner.home_dir_template = {homes!r} + "/{{username}}"
c.Spawner.cmd = [{singleuser!r}]
c.Spawner.environment = {environment!r}
c.Spawner.start_timeout = 90
c.Spawner.http_timeout = 90
"""


#: Each user's own server config (in their home's ~/.jupyter): what the test does not use is
#: left out, as the servers start on a loaded machine (JupyterLab's front, Notebook 7, the
#: language servers, terminals); the agent's server extension stays. Tests run as root.
SERVER_CONFIG = {"ServerApp": {"allow_root": True, "jpserver_extensions": {
    "jupyterlab": False, "notebook": False, "notebook_shim": False, "jupyter_lsp": False,
    "jupyter_server_terminals": False}}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def survivors(marker: str) -> list[str]:
    """Processes whose environment carries ``MARKER=marker`` (what ps would list), as text."""
    found = []
    needle = f"{MARKER}={marker}".encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # gone, or not ours to read
        if needle in environ.split(b"\0"):
            found.append(f"{pid} {cmdline.strip()}")
    return found


@dataclass
class Hub:
    """A running hub: its public URL (the proxy) and where things are."""

    url: str
    root: Path
    homes: Path
    marker: str
    process: subprocess.Popen[bytes]
    log: Path
    tokens: dict[str, str] = field(default_factory=dict)

    async def request(self, method: str, path: str, *, token: str | None = None, body: Any = None,
                      expect: int | None = None) -> Any:
        """A JSON request to the hub's public URL (``/hub/api/...`` or ``/user/NAME/api/...``)."""
        headers = {"Authorization": f"token {token}"} if token else {}
        request = HTTPRequest(self.url + path, method=method, headers=headers, follow_redirects=False,
                              body=None if body is None else json.dumps(body),
                              allow_nonstandard_methods=True, request_timeout=60)
        try:
            response = await AsyncHTTPClient().fetch(request)
            code, text = response.code, response.body
        except HTTPClientError as exc:
            code, text = exc.code, exc.response.body if exc.response is not None else b""
        if expect is not None and code != expect:
            raise AssertionError(f"{method} {path}: {code} (expected {expect}): {text[:500]!r}\n{self.tail()}")
        return (code, json.loads(text) if text and text.strip()[:1] in (b"{", b"[") else text)

    async def login_token(self, user: str) -> str:
        """The user's API token, asked for with the user's name and password."""
        _, reply = await self.request("POST", f"/hub/api/users/{user}/tokens", expect=201,
                                      body={"auth": {"username": user, "password": PASSWORD}, "note": "test"})
        self.tokens[user] = reply["token"]
        return str(reply["token"])

    async def start_server(self, user: str) -> None:
        """Start the user's server through the REST API with their token, and wait for it."""
        token = self.tokens[user]
        code, _ = await self.request("POST", f"/hub/api/users/{user}/server", token=token)
        assert code in (201, 202), (code, self.tail())
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            _, model = await self.request("GET", f"/hub/api/users/{user}", token=token, expect=200)
            server = (model.get("servers") or {}).get("", {})
            if server.get("ready"):
                return
            assert model.get("pending") or server.get("pending"), (model, self.tail())
            await _sleep(0.3)
        raise AssertionError(f"{user}'s server did not start\n{self.tail()}")

    def tail(self, lines: int = 40) -> str:
        try:
            return "hub log:\n" + "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


async def _sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)


@contextmanager
def running_hub(root: Path, users: tuple[str, ...], environment: dict[str, str]) -> Iterator[Hub]:
    """Start a hub under ``root`` (its database, the users' homes, its log); stop it (and
    with it the proxy and the users' servers) on leaving. ``environment``: what every user's
    server (and its kernels) gets."""
    marker = uuid.uuid4().hex
    homes = root / "home"
    homes.mkdir(parents=True)
    for user in users:
        (homes / user / ".jupyter").mkdir(parents=True)
        (homes / user / ".jupyter" / "jupyter_server_config.json").write_text(json.dumps(SERVER_CONFIG))
    port = free_port()
    config = root / "jupyterhub_config.py"
    config.write_text(CONFIG.format(
        bind_url=f"http://127.0.0.1:{port}", hub_url=f"http://127.0.0.1:{free_port()}",
        db_url=f"sqlite:///{root / 'hub.sqlite'}", cookie=str(root / "cookie_secret"), password=PASSWORD,
        users=sorted(users), chp=str(CHP), proxy_api=f"http://127.0.0.1:{free_port()}",
        proxy_pid=str(root / "proxy.pid"), homes=str(homes), singleuser=str(BIN / "jupyterhub-singleuser"),
        environment={**environment, MARKER: marker}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "JUPYTER", "JPY_"))}
    env.update({MARKER: marker, "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
                "CONFIGPROXY_AUTH_TOKEN": secrets.token_hex(16)})
    log = root / "hub.log"
    with log.open("wb") as out:
        process = subprocess.Popen([str(BIN / "jupyterhub"), "-f", str(config)], cwd=root, env=env,
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    hub = Hub(f"http://127.0.0.1:{port}", root, homes, marker, process, log)
    try:
        _wait_for_hub(hub)
        yield hub
    finally:
        _stop(hub)


def _wait_for_hub(hub: Hub) -> None:
    import urllib.request

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if hub.process.poll() is not None:
            raise AssertionError(f"the hub exited ({hub.process.returncode})\n{hub.tail()}")
        try:
            with urllib.request.urlopen(hub.url + "/hub/api", timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"the hub did not answer\n{hub.tail()}")


def _stop(hub: Hub) -> None:
    """SIGTERM to the hub: it stops the users' servers (they stop their kernels) and the
    proxy. Whatever still carries the marker after that is killed (they are ours), and
    left for :func:`survivors` to report."""
    if hub.process.poll() is None:
        hub.process.send_signal(signal.SIGTERM)
        try:
            hub.process.wait(60)
        except subprocess.TimeoutExpired:
            hub.process.kill()
            hub.process.wait(10)


def kill_survivors(marker: str) -> None:
    """Kill what :func:`survivors` found (processes this test started), by pid."""
    for line in survivors(marker):
        try:
            os.kill(int(line.split()[0]), signal.SIGKILL)
        except OSError:
            pass  # already gone


class KernelClient:
    """One user's kernel, reached through the hub's proxy with the user's token: sessions
    over REST, execution over the kernel websocket (Jupyter's JSON message format)."""

    def __init__(self, hub: Hub, user: str) -> None:
        self.hub, self.user, self.token = hub, user, hub.tokens[user]
        self.base = f"/user/{user}/api"
        self.session = uuid.uuid4().hex
        self.ws: Any = None

    async def open(self, notebook: str) -> KernelClient:
        """A session (and its kernel) for ``notebook``, as JupyterLab opens one."""
        _, model = await self.hub.request("POST", f"{self.base}/sessions", token=self.token, expect=201,
                                          body={"path": notebook, "name": notebook, "type": "notebook",
                                                "kernel": {"name": "python3"}})
        kernel_id = model["kernel"]["id"]
        url = self.hub.url.replace("http", "ws", 1) + f"{self.base}/kernels/{kernel_id}/channels"
        self.ws = await websocket_connect(HTTPRequest(url, headers={"Authorization": f"token {self.token}"}),
                                          max_message_size=64 * 1024 * 1024)
        return self

    async def execute(self, code: str, timeout: float = 120) -> tuple[str, str]:
        """Run ``code`` as a batch runner does (no stdin, no cell id: an ``%%agent`` cell
        waits for its run); returns (status, all text it output)."""
        import asyncio

        msg_id = uuid.uuid4().hex
        self.ws.write_message(json.dumps({
            "header": {"msg_id": msg_id, "username": self.user, "session": self.session,
                       "msg_type": "execute_request", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}}))
        texts: list[str] = []
        displays: dict[str, int] = {}  # display_id -> its place in texts (an update replaces it)
        status, idle = "", False
        async with asyncio.timeout(timeout):
            while not (status and idle):
                raw = await self.ws.read_message()
                assert raw is not None, "the kernel websocket closed"
                message = json.loads(raw)
                if message.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind, content = message["header"]["msg_type"], message["content"]
                if kind == "execute_reply":
                    status = content["status"]
                elif kind == "status" and content.get("execution_state") == "idle":
                    idle = True
                elif kind == "stream":
                    texts.append(content["text"])
                elif kind == "error":
                    texts.append(f"{content['ename']}: {content['evalue']}")
                elif kind in ("execute_result", "display_data", "update_display_data"):
                    data = content.get("data", {})
                    shown = data.get("text/markdown") or data.get("text/plain") or ""
                    display_id = (content.get("transient") or {}).get("display_id")
                    if display_id in displays:
                        texts[displays[display_id]] = shown
                    else:
                        if display_id:
                            displays[display_id] = len(texts)
                        texts.append(shown)
        return status, "".join(texts)

    def close(self) -> None:
        if self.ws is not None:
            self.ws.close()
