"""A client's resource subscriptions end when the client does, not 30 minutes later, against
real JupyterLab in real Chromium (a page must show a notebook for it to be watched): the
notebook's kernel keeps a watch while a subscription holds it, and lets it go

- when ``jupyter agent mcp`` (a real process, its client played over its stdin and stdout)
  gets SIGTERM, SIGINT or SIGHUP, or its stdin ends: it ends its MCP session on the endpoint
  (the transport's DELETE) before it exits, and the endpoint drops that session's
  subscriptions at once;
- when it is killed with SIGKILL: the endpoint sees its session's GET stream close with its
  connection, and the subscriptions hold nothing while no stream can carry a notification.

A client whose GET stream drops and that opens it again (as the MCP transport allows) keeps
its subscriptions: the watch comes back, and it is told the notebook may have changed.
Every wait is on the kernel's count of watches (asked again until it is the one expected).
"""

from __future__ import annotations

import http.client
import json
import queue
import signal
import subprocess
import sys
import threading
import time
from typing import Any
from urllib.parse import urlparse

import pytest

from jupyter_agent.mcp_server.resources import notebook_uri

from .lab import HAVE_BROWSER, require_browser, write_notebook
from .test_mcp_resources_browser import watches
from .test_mcp_server_browser import open_with_panel

require_browser()
pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason="needs jupyterlab, playwright and Debian's chromium")

NOTEBOOK = "watched-end.ipynb"
HELLO = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "ended-client", "version": "1"}}


def until_watches(lab: Any, count: int, timeout: float = 60) -> None:
    """Wait until the notebook's kernel keeps ``count`` watches (each look asks the kernel)."""
    deadline = time.monotonic() + timeout
    while watches(lab, NOTEBOOK) != str(count) and time.monotonic() < deadline:
        continue
    assert watches(lab, NOTEBOOK) == str(count)


class Proxy:
    """``jupyter agent mcp`` as its client starts it, the test speaking MCP on its pipes."""

    def __init__(self, lab: Any) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter_agent.cli", "mcp", "--url", lab.url, "--token", ""], env=lab.env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.proc.stdin.flush()

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        while True:
            answer = self.lines.get(timeout=120)
            if answer.get("id") == self.next_id:
                assert "result" in answer, answer
                return answer["result"]

    def subscribed(self) -> Proxy:
        self.ask("initialize", HELLO)
        self.send({"method": "notifications/initialized"})
        self.ask("resources/subscribe", {"uri": notebook_uri(NOTEBOOK)})
        return self


@pytest.mark.parametrize("end", ["SIGTERM", "SIGINT", "SIGHUP", "stdin closed", "SIGKILL"])
def test_a_stopped_jupyter_agent_mcp_leaves_no_watch(lab, page_of, end):
    write_notebook(lab.root / NOTEBOOK, ["%load_ext jupyter_agent", "z = 1"], ids=["load", "z"])
    open_with_panel(page_of, NOTEBOOK)
    until_watches(lab, 0)
    proxy = Proxy(lab).subscribed()
    until_watches(lab, 1)  # the subscription holds the notebook: its kernel watches it
    if end == "stdin closed":
        assert proxy.proc.stdin is not None
        proxy.proc.stdin.close()
    else:
        proxy.proc.send_signal(getattr(signal, end))
    proxy.proc.wait(60)
    until_watches(lab, 0)
    if end.startswith("SIG"):  # it dies of the signal, as its client expects (after ending its session)
        assert proxy.proc.returncode == -getattr(signal, end)


class HttpClient:
    """A streamable-HTTP client on one MCP session, by hand: its POSTs and its GET stream."""

    def __init__(self, url: str) -> None:
        parsed = urlparse(url)
        self.host, self.port, self.path = parsed.hostname or "", parsed.port or 80, parsed.path
        self.session = ""
        self.next_id = 0

    def _headers(self, accept: str) -> dict[str, str]:
        headers = {"Accept": accept, "Content-Type": "application/json", "MCP-Protocol-Version": "2025-11-25"}
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        return headers

    def post(self, message: dict[str, Any]) -> None:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
        try:
            conn.request("POST", self.path, json.dumps({"jsonrpc": "2.0", **message}),
                         self._headers("application/json, text/event-stream"))
            response = conn.getresponse()
            body = response.read().decode()
            assert response.status in (200, 202), (response.status, body)
            self.session = self.session or response.getheader("mcp-session-id") or ""
            assert '"error"' not in body, body
        finally:
            conn.close()

    def ask(self, method: str, params: dict[str, Any]) -> None:
        self.next_id += 1
        self.post({"id": self.next_id, "method": method, "params": params})

    def open_stream(self) -> Any:
        """The session's GET stream (its response, to read events from and to close)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
        conn.request("GET", self.path, headers=self._headers("text/event-stream"))
        response = conn.getresponse()
        assert response.status == 200, response.status
        return conn, response

    def delete(self) -> None:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
        try:
            conn.request("DELETE", self.path, headers=self._headers("application/json"))
            assert conn.getresponse().status in (200, 204)
        finally:
            conn.close()


def next_event(response: Any) -> dict[str, Any]:
    """The next message on a server-sent event stream."""
    while True:
        line = response.fp.readline().decode()
        assert line, "the stream ended"
        if line.startswith("data:") and line[5:].strip():
            return json.loads(line[5:])


def test_a_client_that_reopens_its_stream_keeps_its_subscriptions(lab, page_of):
    write_notebook(lab.root / NOTEBOOK, ["%load_ext jupyter_agent", "z = 1"], ids=["load", "z"])
    open_with_panel(page_of, NOTEBOOK)
    until_watches(lab, 0)
    client = HttpClient(f"{lab.url}/jupyter-agent/mcp")
    client.ask("initialize", HELLO)
    client.post({"method": "notifications/initialized"})
    conn, _stream = client.open_stream()
    client.ask("resources/subscribe", {"uri": notebook_uri(NOTEBOOK)})
    until_watches(lab, 1)
    conn.close()  # its connection drops: nothing can reach it, so nothing is watched for it
    until_watches(lab, 0)
    conn, stream = client.open_stream()  # it comes back on the same session
    until_watches(lab, 1)
    told = next_event(stream)  # (what changed while it was away was told to no one: it is told now)
    assert told["method"] == "notifications/resources/updated" and told["params"]["uri"] == notebook_uri(NOTEBOOK)
    client.delete()  # it ends its session: its subscription goes at once
    until_watches(lab, 0)
    conn.close()
