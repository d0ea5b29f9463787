"""A fake Anthropic Messages API: a real HTTP server on 127.0.0.1 that answers from a script.

Tests drive the real ``anthropic`` SDK (or anything else: a kernel in another process,
the Claude Code CLI) against it over real HTTP, so what they exercise is what users run.

    with FakeMessagesAPI([response(tool_use("Read", {"file_path": "a.txt"})),
                          response(text("done"))]) as api:
        model = api.model()                   # an AnthropicModel pointed here
        ...
        assert api.requests[1]["messages"][-1]["content"][0]["type"] == "tool_result"

It fails loudly: with ``strict=True`` (the default) leaving the ``with`` block raises
``AssertionError`` if a scripted response went unused, a request came after the script
ran out (it got HTTP 500 ``FakeMessagesAPI: script exhausted at request #N``), or a
request was rejected by validation (unless ``expect_rejections=True``).

It also serves the Messages API the way Amazon Bedrock, Google Vertex AI and Microsoft
Foundry do (their paths, authentication and, for Bedrock, the AWS event-stream encoding:
``replay/cloud.py``), so each provider's SDK client runs against it: ``api.env("bedrock")``
is the environment that points one here, ``api.model(provider="vertex")`` a model.

This module keeps the server, its script and the decision of what each request gets;
``replay/respond.py`` writes that answer (JSON, a stream, a scripted fault).
"""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
import threading
import time
from collections import deque
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from .cloud import FAKE_AWS_ACCESS_KEY_ID, FAKE_FOUNDRY_KEY, FAKE_GOOGLE_TOKEN, client_env, route
from .records import RecordedRequest
from .respond import ServerClosing, error_body, send_json, send_message, send_stream
from .script import HttpError, new_id, to_response
from .validation import CacheEmulator, estimate_tokens, prompt_tokens, unsupported_feature, validate_request

__all__ = ["FakeMessagesAPI", "RecordedRequest", "FAKE_API_KEY"]

FAKE_API_KEY = "sk-ant-fake-test-key"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 64
    api: FakeMessagesAPI

    def process_request(self, request: Any, client_address: Any) -> None:
        self.api._track(request, True)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        self.api._track(request, False)
        super().shutdown_request(request)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # keep test output clean

    def do_POST(self) -> None:
        self.server.api._handle(self)

    def do_GET(self) -> None:
        self.server.api._handle(self)


class FakeMessagesAPI:
    """A scripted Messages API server; see the module docstring.

    ``script``: responses, consumed one per ``POST /v1/messages`` (builders from
    :mod:`jupyter_agent.replay.script`, strings, block dicts, or callables
    ``(request_body) -> response``). ``api_key``: if given, only this key is accepted
    (else any non-empty ``x-api-key``/``authorization``). ``cache_min_tokens``: shortest
    cacheable prefix. A request rejected by validation does not consume the script.
    ``context_window``: a window in tokens the server enforces as the real API does (HTTP
    400 ``prompt is too long: N tokens > M maximum``, counted like ``usage``); such a
    request does not consume the script either (its ``outcome`` is ``prompt_too_long``).
    ``token_density``: the API's tokens per four characters (1: the agent's own estimate;
    1.4: a tokenizer that counts code or another language denser); the window, ``usage``
    and ``count_tokens`` all count with it.
    ``ollama_like``: answer as local servers that speak the Messages API do (Ollama,
    llama.cpp): no prompt-caching fields in ``usage``, no ``count_tokens`` endpoint (404).
    ``unsupported``: features the server refuses with HTTP 400 naming them, of ``thinking``,
    ``tool_choice``, ``image``, ``cache_control``.
    """

    def __init__(self, script: list[Any] | None = None, *, strict: bool = True,
                 expect_rejections: bool = False, api_key: str | None = None,
                 cache_min_tokens: int = 0, default_model: str = "claude-sonnet-5-5",
                 context_window: int | None = None, token_density: float = 1.0, ollama_like: bool = False,
                 unsupported: tuple[str, ...] = ()) -> None:
        self.ollama_like = ollama_like
        self.unsupported = tuple(unsupported)
        self.strict = strict
        self.expect_rejections = expect_rejections
        self.api_key = api_key or FAKE_API_KEY
        self._required_key = api_key
        self.default_model = default_model
        self.context_window = context_window
        self.token_density = token_density
        self.cache = CacheEmulator(min_tokens=cache_min_tokens)
        self.requests: list[RecordedRequest] = []
        self.problems: list[str] = []
        self._script: deque[Any] = deque()
        self._consumed = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._sockets: set[socket.socket] = set()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        if script:
            self.add(*script)

    def __repr__(self) -> str:
        where = f"http://127.0.0.1:{self._server.server_address[1]}" if self._server else "stopped"
        return (f"<FakeMessagesAPI {where} requests={len(self.requests)} used={self._consumed} "
                f"pending={len(self._script)}>")

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> FakeMessagesAPI:
        """Start serving (done by ``with``/``async with``); returns self."""
        if self._server is None:
            self._server = _Server(("127.0.0.1", 0), _Handler)
            self._server.api = self
            self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.5},
                                            name=f"FakeMessagesAPI:{self.port}", daemon=True)
            self._thread.start()
        return self

    def close(self) -> None:
        """Stop the server, wake stalled responses, drop open connections. Idempotent."""
        self._closing.set()
        server, self._server = self._server, None
        if server is not None:
            # shutdown() waits for the accept loop to look at its flag, which it does after
            # each select() (every poll interval). Poke it with connections so closing takes
            # milliseconds, not the poll interval, and polling can stay slow when idle.
            stopper = threading.Thread(target=server.shutdown, daemon=True)
            stopper.start()
            while stopper.is_alive():
                try:
                    socket.create_connection(("127.0.0.1", server.server_port), timeout=0.2).close()
                except OSError:  # (it stopped listening: the loop ends as the stopper does)
                    pass
                stopper.join(0.005)
            server.server_close()
        with self._lock:
            socks = list(self._sockets)
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:  # (the client closed it already)
                pass

    def __enter__(self) -> FakeMessagesAPI:
        return self.start()

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        self.close()
        self._finish(exc)

    async def __aenter__(self) -> FakeMessagesAPI:
        return self.start()

    async def __aexit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        await asyncio.to_thread(self.close)
        self._finish(exc)

    def _finish(self, exc: BaseException | None) -> None:
        if not self.strict:
            return
        problems = self.unmet()
        if not problems:
            return
        if exc is not None:
            # Don't hide the test's own failure; attach ours to it.
            exc.add_note("FakeMessagesAPI also found:\n  " + "\n  ".join(problems))
            return
        raise AssertionError("FakeMessagesAPI:\n  " + "\n  ".join(problems))

    # -- script ---------------------------------------------------------------------------
    def add(self, *responses: Any) -> FakeMessagesAPI:
        """Append responses to the script."""
        for r in responses:
            self._script.append(r if callable(r) else to_response(r))
        return self

    def clear_script(self) -> int:
        """Drop the responses not used yet; returns how many there were. A test on a shared
        server calls it at its end, so that a test that failed half way does not answer the
        next one's requests (or its own re-run's)."""
        with self._lock:
            left = len(self._script)
            self._script.clear()
        return left

    @property
    def pending(self) -> int:
        """How many scripted responses have not been used yet."""
        return len(self._script)

    @property
    def rejections(self) -> list[RecordedRequest]:
        """Requests answered 400 by validation (the real API would have rejected them)."""
        return [r for r in self.requests if r.outcome == "rejected"]

    @property
    def messages_requests(self) -> list[RecordedRequest]:
        """Requests to ``/v1/messages`` that reached the script (not rejected, not 401)."""
        return [r for r in self.requests if r.script_index is not None or r.outcome == "exhausted"]

    def unmet(self) -> list[str]:
        """What strict mode would complain about now (empty if all is well)."""
        out = list(self.problems)
        if self._script:
            out.append(f"{len(self._script)} scripted response(s) were never requested "
                       f"(used {self._consumed})")
        if not self.expect_rejections:
            out += [f"request #{r.number} rejected with 400: {r.error}" for r in self.rejections]
        return out

    # -- addresses --------------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._server is not None, "FakeMessagesAPI is not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``: give it to the SDK as ``base_url``."""
        return f"http://127.0.0.1:{self.port}"

    def env(self, provider: str = "anthropic") -> dict[str, str]:
        """Environment for a client in another process (a kernel, a CLI); with ``provider``,
        the variables that point that provider's SDK client here, with fake credentials."""
        cloud = client_env(provider, self.base_url)
        if cloud is not None:
            return cloud
        return {"ANTHROPIC_BASE_URL": self.base_url, "ANTHROPIC_API_KEY": self.api_key}

    def model(self, model: str | None = None, *, provider: str = "anthropic", **kwargs: Any) -> Any:
        """An :class:`~jupyter_agent.model.AnthropicModel` pointed at this server, with tiny
        retry delays (tests stay fast) unless overridden. ``provider``: through that
        provider's SDK client (Bedrock signs with the AWS credentials of the environment:
        set ``env("bedrock")`` first)."""
        from ..model import AnthropicModel

        kwargs.setdefault("retry_base_delay_s", 0.001)
        kwargs.setdefault("retry_max_delay_s", 0.005)
        key = {"anthropic": self.api_key, "vertex": FAKE_GOOGLE_TOKEN, "foundry": FAKE_FOUNDRY_KEY}.get(provider)
        base = f"{self.base_url}/anthropic" if provider == "foundry" else self.base_url
        return AnthropicModel(model or self.default_model, api_key=kwargs.pop("api_key", key),
                              base_url=base, provider=provider, **kwargs)

    # -- request handling ---------------------------------------------------------------------
    def _track(self, sock: socket.socket, add: bool) -> None:
        with self._lock:
            (self._sockets.add if add else self._sockets.discard)(sock)

    def _redact(self, name: str, value: str) -> str:
        # A developer's real key may reach the fake (an env var left set): never keep it
        # where an assertion message or a log could print it. The fake's own key is kept.
        fakes = (self.api_key, FAKE_GOOGLE_TOKEN, FAKE_FOUNDRY_KEY, f"Credential={FAKE_AWS_ACCESS_KEY_ID}/")
        if name in ("x-api-key", "authorization", "api-key", "x-amz-security-token") and not any(
                f in value for f in fakes):
            return "<redacted>"
        return value

    def _handle(self, h: _Handler) -> None:
        length = int(h.headers.get("content-length") or 0)
        raw = h.rfile.read(length) if length else b""
        headers = {k.lower(): self._redact(k.lower(), v) for k, v in h.headers.items()}
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = urlsplit(h.path).path.rstrip("/")
        with self._lock:
            where = route(h.command, path, {k.lower(): v for k, v in h.headers.items()})
            rec = RecordedRequest(number=len(self.requests) + 1, method=h.command, path=h.path,
                                  headers=headers, body=body, received_at=time.monotonic(), route=where)
            self.requests.append(rec)
        request_id = f"req_fake_{rec.number:04d}{secrets.token_hex(6)}"
        try:
            self._answer(h, rec, path, request_id)
        except ServerClosing:
            rec.outcome = "server_closed"
            h.close_connection = True
        except (BrokenPipeError, ConnectionResetError):
            rec.outcome = "client_disconnected"
            h.close_connection = True
        finally:
            rec.finished_at = time.monotonic()

    def _answer(self, h: _Handler, rec: RecordedRequest, path: str, request_id: str) -> None:
        where = rec.route
        if where is None or where.operation is None or (where.operation == "count_tokens" and self.ollama_like):
            rec.outcome = "not_found"
            return send_json(h, rec, 404, error_body("not_found_error", f"Not found: {h.command} {h.path}"),
                             request_id)
        key = h.headers.get("x-api-key") or (h.headers.get("authorization") or "").removeprefix("Bearer ").strip()
        if where.provider == "anthropic" and key and self._required_key is not None and key != self._required_key:
            where = replace(where, auth_problem="invalid x-api-key")
        if where.auth_problem is not None:
            rec.outcome, rec.error = "unauthorized", where.auth_problem
            return send_json(h, rec, 401, error_body("authentication_error", where.auth_problem), request_id)
        if where.operation == "count_tokens":
            rec.outcome = "ok"
            return send_json(h, rec, 200, {"input_tokens": self._dense(estimate_tokens(rec.body))}, request_id)
        problem = validate_request({**rec.body, "model": where.model} if where.model and isinstance(rec.body, dict)
                                   else rec.body) or unsupported_feature(rec.body, self.unsupported)
        if problem:
            rec.outcome, rec.error = "rejected", problem
            return send_json(h, rec, 400, error_body("invalid_request_error", problem), request_id)
        tokens = self._dense(prompt_tokens(rec.body))
        if self.context_window is not None and tokens > self.context_window:
            rec.outcome = "prompt_too_long"
            rec.error = f"prompt is too long: {tokens} tokens > {self.context_window} maximum"
            return send_json(h, rec, 400, error_body("invalid_request_error", rec.error), request_id)

        with self._lock:
            item = self._script.popleft() if self._script else None
            if item is not None:
                self._consumed += 1
                rec.script_index = self._consumed - 1
            else:
                rec.outcome = "exhausted"  # counted by messages_requests from here on
            number = len(self.messages_requests)
        if item is None:
            msg = (f"FakeMessagesAPI: script exhausted at request #{number} "
                   f"(the script had {self._consumed} response(s))")
            rec.error = msg
            self.problems.append(msg)
            return send_json(h, rec, 500, error_body("api_error", msg), request_id)
        if callable(item):
            try:
                item = to_response(item(rec.body))
            except Exception as e:  # the test's own callable failed: say so loudly
                msg = f"FakeMessagesAPI: scripted callable for request #{rec.number} raised {e!r}"
                rec.outcome, rec.error = "http_error", msg
                self.problems.append(msg)
                return send_json(h, rec, 500, error_body("api_error", msg), request_id)
        rec.response = item
        if isinstance(item, HttpError):
            rec.outcome, rec.error = "http_error", item.message
            extra = dict(item.headers)
            if item.retry_after is not None:
                ra = item.retry_after
                extra["retry-after"] = str(int(ra)) if float(ra).is_integer() else str(ra)
            return send_json(h, rec, item.status, item.body(request_id), request_id, extra)

        model = str(where.model or rec.body.get("model"))
        usage = {k: self._dense(v) for k, v in self.cache.usage_for(rec.body).items()}
        if self.ollama_like:  # no prompt caching: the fields are absent, not zero
            usage = {"input_tokens": sum(usage.values())}
        msg_id = new_id("msg_01", 24)
        send = send_stream if rec.stream else send_message
        return send(h, rec, item, model, msg_id, usage, request_id, self._closing)

    def _dense(self, tokens: int) -> int:
        return tokens if self.token_density == 1.0 else round(tokens * self.token_density)
