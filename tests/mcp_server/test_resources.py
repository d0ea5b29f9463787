"""Resources (``notebook://PATH``, ``notebook://PATH#cell=ID``) on a real Jupyter server with no
page: the SDK's client over streamable HTTP, on either protocol, and through ``jupyter agent
mcp`` over stdio: the open notebooks listed, the templates, the capability each protocol gets
(a session's ``resources/subscribe``; the sessionless protocol's ``subscriptions/listen``),
and every read or subscription that cannot be made refused saying why. A page's notebook read,
subscribed to and edited is ``tests/jupyter/test_mcp_resources_browser.py``."""

from __future__ import annotations

import contextlib
import sys
import warnings

import pytest

from jupyter_agent.mcp_server.resources import cell_uri, notebook_uri, parse_uri
from jupyter_agent.mcp_server.tools import OutsideError

from .server import TOKEN


@contextlib.asynccontextmanager
async def client_of(server, mode: str = "legacy", stdio: bool = False, message_handler=None):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    if stdio:
        transport = stdio_client(StdioServerParameters(command=sys.executable, args=[
            "-m", "jupyter_agent.cli", "mcp", "--url", server.url, "--token", TOKEN], env=server.env))
    else:
        http = create_mcp_http_client(headers={"Authorization": f"token {TOKEN}"})
        transport = streamable_http_client(server.mcp_url, http_client=http)
    async with Client(transport, mode=mode, message_handler=message_handler) as client:
        yield client


def test_uris_name_a_notebook_and_its_cells():
    assert notebook_uri("dir/my nb.ipynb") == "notebook://dir/my%20nb.ipynb"
    assert cell_uri("dir/my nb.ipynb", "c#1") == "notebook://dir/my%20nb.ipynb#cell=c%231"
    assert parse_uri(cell_uri("dir/my nb.ipynb", "c#1")) == ("dir/my nb.ipynb", "c#1")
    assert parse_uri(notebook_uri("/a.ipynb")) == ("a.ipynb", None)
    for bad in ("file:///etc/passwd", "notebook://", "notebook://a.ipynb#line=3", "notebook://a%0a.ipynb",
                "test://static-text"):
        with pytest.raises(OutsideError):
            parse_uri(bad)


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_open_notebooks_are_listed_and_unreadable_ones_refused(server, transport):
    name = f"res-{transport}.ipynb"  # (the module's server keeps the other test's kernel)
    kernel = server.open_session(name, ["a = 1"], ["a1"])
    async with client_of(server, stdio=transport == "stdio") as client:
        caps = client.server_capabilities.resources
        assert caps is not None and caps.subscribe is True and caps.list_changed is True  # (a session's)
        listed = {r.uri: r for r in (await client.list_resources()).resources}
        assert notebook_uri(name) in listed and listed[notebook_uri(name)].mime_type == "text/plain"
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        assert templates == {"notebook://{+path}", "notebook://{+path}#cell={cell_id}"}

        from mcp.shared.exceptions import MCPError

        with pytest.raises(MCPError) as refused:  # no %load_ext in its kernel
            await client.read_resource(notebook_uri(name))
        assert "%load_ext jupyter_agent" in str(refused.value)
        with pytest.raises(MCPError) as refused:
            await client.read_resource("notebook://closed.ipynb")
        assert "list_notebooks shows the open notebooks" in str(refused.value)
        with pytest.raises(MCPError) as refused:
            await client.read_resource("test://static-text")
        assert "is not a resource of this server" in str(refused.value)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (the SDK marks resources/subscribe removed in 2026-07-28)
            with pytest.raises(MCPError) as refused:
                await client.subscribe_resource(notebook_uri(name))
            assert "%load_ext jupyter_agent" in str(refused.value)
            assert server.execute(kernel, "%load_ext jupyter_agent")["content"]["status"] == "ok"
            with pytest.raises(MCPError) as refused:  # loaded, but no page shows it
                await client.subscribe_resource(cell_uri(name, "a1"))
            assert f"No JupyterLab page with jupyter-agent shows {name}" in str(refused.value)
            await client.unsubscribe_resource(cell_uri(name, "a1"))  # (nothing held: nothing to do)


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_the_sessionless_protocol_subscribes_by_listening(server, transport):
    """A 2026-07-28 client has no session to subscribe on: the capability says subscriptions come
    on ``subscriptions/listen``, whose stream opens (and is acknowledged) for our URIs; it
    cannot ``resources/subscribe``."""
    server.open_session("heard.ipynb", ["b = 2"], ["b1"])
    async with client_of(server, mode="auto", stdio=transport == "stdio") as client:
        assert client.session.protocol_version == "2026-07-28"
        caps = client.server_capabilities.resources
        assert caps is not None and caps.subscribe is True
        uri = notebook_uri("heard.ipynb")
        async with client.listen(resource_subscriptions=[uri]) as subscription:
            assert list(subscription.honored.resource_subscriptions or []) == [uri]
        from mcp.shared.exceptions import MCPError

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(MCPError):  # (removed in that protocol: no session to hold it)
                await client.subscribe_resource(uri)


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_a_notebook_opened_or_closed_changes_the_list(server, transport):
    """``notifications/resources/list_changed``: to a session that listed the resources, and on a
    sessionless client's listen stream that asked for it, when a notebook's session is made or
    deleted (as JupyterLab opens a notebook, and shuts its kernel down)."""
    import asyncio

    from jupyter_agent.mcp_server.resources import list_changed_note

    told: asyncio.Queue[str] = asyncio.Queue()

    async def heard(message) -> None:
        if list_changed_note(message):
            told.put_nowait("list_changed")

    stdio = transport == "stdio"
    async with client_of(server, stdio=stdio, message_handler=heard) as client, \
            client_of(server, mode="auto", stdio=stdio) as modern:
        await client.list_resources()
        async with modern.listen(resources_list_changed=True) as subscription:
            name = f"opened-{transport}.ipynb"
            await asyncio.to_thread(server.open_session, name, ["c = 3"])
            assert await asyncio.wait_for(told.get(), 60) == "list_changed"
            event = await asyncio.wait_for(subscription.__aiter__().__anext__(), 60)
            assert type(event).__name__ == "ResourcesListChanged"
            assert notebook_uri(name) in [r.uri for r in (await client.list_resources()).resources]
            session = next(s for s in await asyncio.to_thread(server.api, "/api/sessions") if s["path"] == name)
            await asyncio.to_thread(server.api, f"/api/sessions/{session['id']}", "DELETE")
            assert await asyncio.wait_for(told.get(), 60) == "list_changed"
            assert notebook_uri(name) not in [r.uri for r in (await client.list_resources()).resources]


class Told:
    """A subscribed connection as ``Subscriptions`` sees one: what it was told."""

    def __init__(self) -> None:
        self.updated: list[str] = []

    async def send_resource_updated(self, uri: str) -> None:
        self.updated.append(uri)


async def test_a_session_without_its_stream_holds_nothing_until_it_comes_back():
    """The accounting behind a killed client's and a reconnecting client's subscriptions: a
    session whose stream went holds no URI (the last holder's release closes the watch), one
    subscribed meanwhile is held once the stream is back, an unsubscribe while asleep releases
    nothing twice, and a session that ended goes with its records."""
    from jupyter_agent.mcp_server.resources import Subscriptions

    held: list[str] = []
    subscriptions = Subscriptions(lambda uri: _hold(held, uri), held.remove)
    open_sessions = {"s1", "s2"}
    subscriptions.alive = open_sessions.__contains__
    one, two = Told(), Told()
    a, b = notebook_uri("a.ipynb"), notebook_uri("b.ipynb")
    await subscriptions.subscribe(one, a, "s1")
    await subscriptions.subscribe(two, a, "s2")
    assert held == [a]
    subscriptions.stream_gone("s1")
    assert held == [a]  # (s2 still holds it)
    subscriptions.stream_gone("s2")
    assert held == []  # no stream can carry a notification: nothing is watched
    await subscriptions.subscribe(one, b, "s1")  # (a request on the session while its stream is gone)
    assert held == []
    subscriptions.unsubscribe(two, a)  # released nothing: it held nothing
    await subscriptions.stream_back("s1")
    assert sorted(held) == sorted([a, b]) and sorted(one.updated) == sorted([a, b])  # told: may have changed
    assert two.updated == []
    await subscriptions.stream_back("s1")  # (a second stream of the same session: nothing more)
    assert sorted(held) == sorted([a, b])
    open_sessions.discard("s1")  # the session ended (a DELETE, a timeout)
    subscriptions.forget_ended()
    assert held == [] and subscriptions.sessions == {} and subscriptions.asleep == {"s2"}  # (s2 goes on)


async def _hold(held: list[str], uri: str) -> None:
    held.append(uri)
