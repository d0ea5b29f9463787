"""The streamable-HTTP MCP endpoint, ``/jupyter-agent/mcp``, served by the Jupyter server.

The SDK's ``StreamableHTTPSessionManager`` is an ASGI application; jupyter_server is
Tornado. :class:`McpHandler` is a jupyter_server ``APIHandler`` (so the server's own
authentication applies: its token, as ``Authorization: token ...`` or ``Bearer ...``, or
whatever identity provider it uses) that hands each request to that ASGI application and
streams its answer back (JSON, or server-sent events). The session manager runs in a task
of the server's event loop for the server's life. A token of the endpoint's own
(``auth.py``) opens it too, and nothing else of the server.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from jupyter_server.auth import User
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from tornado import web

from .auth import CHALLENGE, Refusal, matches, refusal_message, token_given
from .protocol import PATH

log = logging.getLogger(__name__)

__all__ = ["PATH", "McpApp", "McpHandler", "setup"]


class McpApp:
    """The MCP server and its session manager, running in a task of the server's loop."""

    def __init__(self, backend: Any, token: str = "") -> None:
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        from .resources import NotebookWatches, resource_handlers, with_list_changed
        from .tools import build_server

        self.backend = backend
        #: the endpoint's own token ('' : only the server's authentication)
        self.token = token
        #: the notebooks watched for resource subscriptions (``resources.py``)
        self.watches = NotebookWatches(backend)
        server = build_server(backend, resources=resource_handlers(backend, self.watches))
        self.manager = StreamableHTTPSessionManager(with_list_changed(server))
        self.watches.subscriptions.alive = self.session_open
        self._started = asyncio.Event()
        self._stop = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        #: session id -> its GET streams open now (the SDK lets one be open; a client may re-open it)
        self.streams: dict[str, int] = {}

    def session_open(self, session_id: str) -> bool:
        """Whether MCP session ``session_id`` is still open ('' : a request without one, which
        subscribes nothing). The SDK's manager keeps the open ones (no public name for them)."""
        transports = getattr(self.manager, "_server_instances", None)
        if not session_id or not isinstance(transports, dict):
            return True
        transport = transports.get(session_id)
        return transport is not None and not getattr(transport, "is_terminated", False)

    def stream_opened(self, session_id: str) -> None:
        """Session ``session_id``'s GET stream (where its notifications go) is open: its
        subscriptions hold their notebooks again if its stream had gone."""
        self.streams[session_id] = self.streams.get(session_id, 0) + 1
        subscriptions = self.watches.subscriptions
        if session_id in subscriptions.asleep:
            subscriptions.publish_later(subscriptions.stream_back(session_id))

    def stream_closed(self, session_id: str) -> None:
        """Session ``session_id``'s GET stream ended. The session ended with it (a DELETE, its
        timeout): its subscriptions go now. Its client's connection closed while the session
        goes on (the client was killed, or it reconnects): nothing can reach it, so its
        subscriptions hold nothing until it opens the stream again."""
        left = self.streams.get(session_id, 0) - 1
        if left > 0:
            self.streams[session_id] = left
            return
        self.streams.pop(session_id, None)
        subscriptions = self.watches.subscriptions
        if self.session_open(session_id):
            subscriptions.stream_gone(session_id)
        else:
            subscriptions.forget_ended()

    def start(self) -> None:
        self.task = asyncio.get_event_loop().create_task(self._run())

    async def _run(self) -> None:
        try:
            async with self.manager.run():
                self._started.set()
                await self._stop.wait()
        except Exception:  # the endpoint answers 503 from now on; the server goes on
            log.exception("jupyter-agent's MCP endpoint stopped")

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self.task is None:
            self.start()
        await asyncio.wait_for(self._started.wait(), 30)
        await self.manager.handle_request(scope, receive, send)

    async def stop(self) -> None:
        self._stop.set()
        self.watches.close()
        if self.task is not None:
            await asyncio.wait({self.task}, timeout=10)
        close = getattr(self.backend, "close", None)
        if close is not None:
            close()


class McpHandler(APIHandler):
    """One HTTP request of the MCP endpoint, given to the SDK's ASGI application."""

    def initialize(self, mcp_app: McpApp) -> None:
        self.mcp_app = mcp_app
        self._gone = asyncio.Event()
        #: the Content-Type of the answer the SDK started (None: none started; '': no body)
        self._content_type: str | None = None

    def check_xsrf_cookie(self) -> None:
        """An MCP client is no browser: a token-authenticated call needs no XSRF cookie (the
        base class's rule), and one without a token is refused by :meth:`prepare` anyway."""
        return super().check_xsrf_cookie()

    async def prepare(self) -> None:  # type: ignore[override]
        """The endpoint's own token, else the server's authentication (never a redirect to the
        login page: an MCP client is no browser; a refusal says what to send). The Host is
        checked first, so a refused Host is said as such whatever the token."""
        #: why the request is refused (None: it is not)
        self._refusal: Refusal | None = None
        if not self.check_host():
            self._refuse(Refusal.HOST, 403)
        given = token_given(self.request.headers, self.get_query_argument("token", None))
        if matches(given, self.mcp_app.token):
            self.current_user = self._jupyter_current_user = User(username="jupyter-agent-mcp")
            return
        try:
            await JupyterHandler.prepare(self, _redirect_to_login=False)
        except web.HTTPError:
            if self.current_user is not None:  # (a browser's cookie without its XSRF token)
                raise
        if self.current_user is None:
            self._refuse(Refusal.NO_TOKEN if given is None else Refusal.WRONG_TOKEN, 401)
        if not self.check_origin():
            raise web.HTTPError(404)

    def _refuse(self, why: Refusal, status: int) -> None:
        self._refusal = why
        self.current_user = self._jupyter_current_user = None
        raise web.HTTPError(status)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        why = getattr(self, "_refusal", None)
        if why is not None:
            self.clear_header("Content-Type")
            if status_code == 401:  # (RFC 6750: what to send, for a client that reads the challenge)
                self.set_header("WWW-Authenticate", CHALLENGE[why])
            self._content_type = "application/json"
            self.finish({"message": refusal_message(why)})
            return
        super().write_error(status_code, **kwargs)

    def finish(self, *args: Any, **kwargs: Any) -> Any:
        """The response's end, its Content-Type the one the SDK gave (``APIHandler.finish``
        would set ``application/json`` over a stream of server-sent events); none for an
        answer without a body (a notification's 202)."""
        content_type = getattr(self, "_content_type", None)
        if content_type is None:
            return super().finish(*args, **kwargs)
        if content_type:
            return super().finish(*args, set_content_type=content_type, **kwargs)
        self.update_api_activity()
        return web.RequestHandler.finish(self, *args, **kwargs)

    def on_connection_close(self) -> None:
        self._gone.set()

    @web.authenticated
    async def post(self) -> None:
        await self._asgi()

    @web.authenticated
    async def get(self) -> None:
        #: the session whose stream this is, once the SDK opened it (``send`` below)
        self._stream_of: str | None = None
        try:
            await self._asgi()
        finally:
            if self._stream_of is not None:
                self.mcp_app.stream_closed(self._stream_of)

    @web.authenticated
    async def delete(self) -> None:
        """The client ends its session (the streamable-HTTP transport's DELETE): its
        subscriptions go at once, and the watches that only it held."""
        await self._asgi()
        self.mcp_app.watches.subscriptions.forget_ended()

    async def _asgi(self) -> None:
        # An answer streamed as server-sent events is written in pieces: without TCP_NODELAY
        # each piece after the first can wait for the client's delayed ACK (docs/design.md,
        # "The live-notebook bridge": the same 40-50 ms the kernel websockets lost).
        stream = getattr(self.request.connection, "stream", None)  # (HTTP/1.1: tornado's IOStream)
        if stream is not None and not stream.closed():
            stream.set_nodelay(True)
        request = self.request
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": request.method,
            "scheme": request.protocol, "path": "/mcp", "raw_path": b"/mcp",
            "query_string": (request.query or "").encode("latin-1"), "root_path": "",
            "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in request.headers.get_all()],
            "client": (request.remote_ip or "", 0), "server": (request.host_name, 0),
        }
        body_sent = False
        # The POST's own request: once the event that answers it is written, the answer is
        # complete (a POST's stream carries that request's notifications, then its answer).
        answer_id = _request_id(request.body) if request.method == "POST" else None

        async def receive() -> dict[str, Any]:
            nonlocal body_sent
            if not body_sent:
                body_sent = True
                return {"type": "http.request", "body": request.body or b"", "more_body": False}
            await self._gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                self.set_status(message["status"])
                self.clear_header("Content-Type")
                self._content_type = ""
                for key, value in message.get("headers") or []:
                    name, text = key.decode("latin-1"), value.decode("latin-1")
                    if name.lower() == "content-type":
                        self._content_type = text
                    self.add_header(name, text)
                if self._content_type.startswith("text/event-stream") and request.method == "GET":
                    # The session's own stream (GET): its headers now, not with its first event,
                    # which may come much later (or never).
                    self.set_header("Content-Type", self._content_type)
                    if message["status"] == 200 and request.headers.get("mcp-session-id"):
                        self._stream_of = request.headers["mcp-session-id"]
                        self.mcp_app.stream_opened(self._stream_of)
                    try:
                        await self.flush()
                    except Exception:  # the client went away
                        self._gone.set()
            elif message["type"] == "http.response.body":
                if self._finished:  # the stream's end, after the answer ended the response
                    return
                body = message.get("body") or b""
                if body:
                    self.write(body)
                if message.get("more_body") and answer_id is not None and _answers(body, answer_id):
                    # The client has its answer: end the response now rather than when the
                    # SDK has wound the stream down (its tasks' cancellation, a few loop
                    # turns: 2-9 ms measured), so the kept-alive connection is free at once.
                    self.finish()
                elif message.get("more_body") and not self._gone.is_set():
                    try:
                        await self.flush()
                    except Exception:  # the client went away mid-stream
                        self._gone.set()

        await self.mcp_app.handle(scope, receive, send)
        if not self._finished:
            self.finish()


def _request_id(body: bytes | None) -> Any:
    """The id of the JSON-RPC request a POST carries (None: a notification, a response,
    a batch or not JSON: its answer, if any, ends with the stream)."""
    try:
        message = json.loads(body or b"")
    except ValueError:
        return None
    if not isinstance(message, dict) or "method" not in message or isinstance(message.get("id"), (bool, type(None))):
        return None
    return message["id"]


def _answers(chunk: bytes, request_id: Any) -> bool:
    """Whether ``chunk`` is a server-sent event whose data is the answer (a result or an
    error) to request ``request_id``. The SDK writes each event as one chunk."""
    for line in chunk.decode("utf-8", "replace").splitlines():
        if not line.startswith("data:"):
            continue
        try:
            message = json.loads(line[5:])
        except ValueError:
            return False
        return (isinstance(message, dict) and message.get("id") == request_id
                and ("result" in message or "error" in message))
    return False


def setup(serverapp: Any) -> McpApp:
    """Add the endpoint to ``serverapp``; the app to stop at the server's end."""
    from jupyter_server.utils import url_path_join

    from .auth import mcp_token
    from .kernel_link import ServerBackend

    from .resources import follow_sessions

    app = McpApp(ServerBackend(serverapp), mcp_token(serverapp))
    if not follow_sessions(serverapp, app.watches.subscriptions.list_changed):
        log.info("the server's session manager is not jupyter_server's: no resources list_changed")
    base = serverapp.web_app.settings.get("base_url", "/")
    serverapp.web_app.add_handlers(".*$", [(url_path_join(base, PATH), McpHandler, {"mcp_app": app})])
    return app
