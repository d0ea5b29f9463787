"""Resources and their subscriptions against real JupyterLab in real Chromium: a client reads
the notebook's resource (a secret in an output redacted, a cell's markup returned as its text),
subscribes to a cell; a person types in that cell in the page and the client is told once
(after the pause, not per key), reads the cell and its edit then lands; another client's edit
reaches a client subscribed over stdio (``jupyter agent mcp``); a sessionless 2026-07-28 client
hears through ``subscriptions/listen``; after an unsubscribe the cell's URI is not told again.
"""

from __future__ import annotations

import asyncio
import queue
import sys
import time
from typing import Any

import pytest

from jupyter_agent.mcp_server.resources import cell_uri, notebook_uri

from .lab import HAVE_BROWSER, cell, cell_sources, require_browser, run_and_wait, screenshot, write_notebook
from .test_mcp_server_browser import OutsideClient, open_with_panel, text_of

require_browser()
pytestmark = [pytest.mark.skipif(not HAVE_BROWSER, reason="needs jupyterlab, playwright and Debian's chromium"),
              # (the SDK marks resources/subscribe removed in 2026-07-28: a session's clients still use it)
              pytest.mark.filterwarnings("ignore:resources/.*is removed as of 2026-07-28")]

SECRET = "res0urce-s3cret-" + "value-9191"
FIRST = (f'import os; os.environ["RESOURCE_API_KEY"] = "{SECRET[:8]}" + "{SECRET[8:]}"; '
         'print(os.environ["RESOURCE_API_KEY"])')
MARKUP = '# Notes <img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script>'


class Subscriber(OutsideClient):
    """The SDK's client (``OutsideClient``) that keeps each ``notifications/resources/updated``
    it gets, in order, in :attr:`updates`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.updates: queue.Queue[str] = queue.Queue()
        super().__init__(*args, **kwargs)

    async def _own(self, opened: Any) -> None:
        from mcp import Client
        from mcp.client.stdio import stdio_client
        from mcp.client.streamable_http import streamable_http_client
        from mcp_types import Implementation

        from jupyter_agent.mcp_server.resources import updated_uri

        async def heard(message: Any) -> None:
            uri = updated_uri(message)
            if uri is not None:
                self.updates.put(uri)

        self._stop = asyncio.Event()
        transport = stdio_client(self.stdio) if self.stdio is not None else streamable_http_client(self.url)
        try:
            async with Client(transport, client_info=Implementation(name=self.name, version="9"), mode=self.mode,
                              message_handler=heard) as client:
                opened.set_result(client)
                await self._stop.wait()
        except BaseException as exc:
            if not opened.done():
                opened.set_exception(exc)
            raise

    def do(self, work: Any, timeout: float = 120) -> Any:
        """Run ``work`` (a coroutine on the client) on the client's loop; its result."""

        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout)

    def read(self, uri: str) -> str:
        result = self.do(self.client.read_resource(uri, cache_mode="bypass"))
        return "\n".join(c.text for c in result.contents)

    def next_update(self, wanted: str, timeout: float = 60) -> list[str]:
        """Every update up to and including the first of ``wanted`` (waits for it)."""
        seen: list[str] = []
        while wanted not in seen:
            seen.append(self.updates.get(timeout=timeout))
        return seen


def listen_in(client: OutsideClient, uri: str, heard: queue.Queue[str]) -> Any:
    """A ``subscriptions/listen`` stream for ``uri`` on ``client``'s loop (2026-07-28), each
    event's URI put in ``heard``; once acknowledged, the future of the task that holds it."""

    async def hold() -> None:
        async with client.client.listen(resource_subscriptions=[uri]) as subscription:
            heard.put("acknowledged")
            async for event in subscription:
                heard.put(event.uri)

    return asyncio.run_coroutine_threadsafe(hold(), client.loop)


def test_a_person_typing_notifies_the_subscribed_client_which_can_then_edit(lab, page_of):
    write_notebook(lab.root / "watched.ipynb", [FIRST, "%load_ext jupyter_agent", "y = 1", MARKUP],
                   ids=["secret", "load", "typed", "notes"])
    page, panel = open_with_panel(page_of, "watched.ipynb")
    url = f"{lab.url}/jupyter-agent/mcp"
    nb, typed = notebook_uri("watched.ipynb"), cell_uri("watched.ipynb", "typed")
    client = Subscriber(url, "watcher", mode="legacy")
    from mcp.client.stdio import StdioServerParameters

    forwarder = StdioServerParameters(command=sys.executable, args=[
        "-m", "jupyter_agent.cli", "mcp", "--url", lab.url, "--token", ""], env=lab.env)
    stdio = Subscriber("", name="stdio-watcher", mode="legacy", stdio=forwarder)
    modern = OutsideClient(url, "listener")  # the 2026-07-28 protocol: no session
    modern_stdio = OutsideClient("", name="stdio-listener", stdio=forwarder)  # ... through jupyter agent mcp
    listened: queue.Queue[str] = queue.Queue()
    listened_stdio: queue.Queue[str] = queue.Queue()
    listening: list[Any] = []
    try:
        listed = [r.uri for r in client.do(client.client.list_resources(cache_mode="bypass")).resources]
        assert nb in listed
        whole = client.read(nb)
        assert 'id="typed"' in whole and "y = 1" in whole
        assert SECRET not in whole and "[redacted RESOURCE_API_KEY]" in whole  # the first cell's output
        notes = client.read(cell_uri("watched.ipynb", "notes"))
        assert '<img src=x onerror="window.__pwned=1">' in notes and "<script>" in notes  # the markup, as data
        assert page.evaluate("window.__pwned") is None

        client.do(client.client.subscribe_resource(typed))
        client.do(client.client.subscribe_resource(nb))
        stdio.do(stdio.client.subscribe_resource(nb))
        for listener, heard in ((modern, listened), (modern_stdio, listened_stdio)):
            assert listener.client.session.protocol_version == "2026-07-28"
            listening.append(listen_in(listener, typed, heard))
            assert heard.get(timeout=60) == "acknowledged"

        # A person types in the cell: one notification for it once the typing pauses, not one per key.
        cell(page, 2).locator(".jp-InputArea-editor").click()
        page.keyboard.press("End")
        page.keyboard.type(" + 41", delay=40)
        assert typed in client.next_update(typed)
        assert listened.get(timeout=60) == typed  # the sessionless client, on its listen stream
        assert listened_stdio.get(timeout=60) == typed  # (over stdio: jupyter agent mcp subscribed for it)
        assert stdio.next_update(nb) == [nb]  # and the one over stdio, subscribed to the notebook
        text = client.read(typed)
        assert "y = 1 + 41" in text, text

        # Its read counts: the client's edit of that cell lands (after the user's Allow).
        pending = client.call("replace_cell", {"notebook_path": "watched.ipynb", "cell_id": "typed",
                                               "source": "y = 42"})
        card = panel.locator(".jp-AgentPanel-approval")
        card.wait_for(timeout=60000)
        card.get_by_role("button", name="Allow", exact=True).click()
        replaced = pending.result(60)
        assert not replaced.is_error, text_of(replaced)
        assert cell_sources(page)[2] == "y = 42"
        # That edit is another client's for the stdio one, subscribed to the notebook.
        assert stdio.next_update(nb) == [nb]
        assert client.next_update(typed) == [nb, typed]  # (its own edit: told too, as the cell changed)

        # Unsubscribed from the cell: the person's run of it tells the notebook, not the cell; and
        # nothing was left before it (the typing made one notification, the replace one).
        client.do(client.client.unsubscribe_resource(typed))
        run_and_wait(page, 2)
        assert client.next_update(nb) == [nb]
        left = []
        while not client.updates.empty():
            left.append(client.updates.get_nowait())
        assert typed not in left, left  # (a second typing notification would have left the replace's here)
        screenshot(page, "resources-watched")
        # (an unsubscribe over stdio, before it closes; its end is test_mcp_session_end_browser.py's)
        stdio.do(stdio.client.unsubscribe_resource(nb))
        for held in listening:
            held.cancel()
        modern_stdio.now("list_notebooks", {})  # (after its listen's end, on the same pipe)
    finally:
        for held in listening:
            held.cancel()
        for c in (client, stdio, modern, modern_stdio):
            c.close()
    # The clients went (their sessions ended): the next change finds no one to tell, and the
    # kernel's watch is closed.
    run_and_wait(page, 2)
    deadline = time.monotonic() + 60
    while watches(lab, "watched.ipynb") != "0" and time.monotonic() < deadline:
        continue  # (each look is a request to the kernel)
    assert watches(lab, "watched.ipynb") == "0"


def watches(lab: Any, path: str) -> str:
    """How many watches the notebook's kernel keeps (``outside_watch.py``), asked on a kernel
    client of the test's own, silently: the page shows nothing of it, and the notebook is unchanged."""
    from jupyter_client import BlockingKernelClient

    session = next(s for s in lab._api("/api/sessions") if s["path"] == path)
    client = BlockingKernelClient(connection_file=str(lab.runtime / f"kernel-{session['kernel']['id']}.json"))
    client.load_connection_file()
    client.start_channels(hb=False)
    try:
        client.wait_for_ready(timeout=60)
        expr = ("len(__import__('jupyter_agent.jupyter.kernel.agent_session', fromlist=['x'])"
                ".get_bridge().change_listeners)")
        reply = client.execute_interactive("", silent=True, user_expressions={"n": expr}, timeout=60)
        return str(reply["content"]["user_expressions"]["n"]["data"]["text/plain"])
    finally:
        client.stop_channels()
