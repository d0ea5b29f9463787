"""A Messages API answered by whoever reads its requests: a person, a lesson's student, a script.

:class:`RelayAPI` is a real HTTP server on 127.0.0.1 that speaks the Messages API as the fake API
does (the same validation, the same SSE events: ``sse.py``), but each answer comes from a
:class:`~.relay_folder.RelayFolder`: the request is written out as the model would read it, the
response starts at once (``message_start``, then a ``ping`` every few seconds, so no stall timer
fires however long the answer takes) and the answer streams back when its file appears.

From a shell (``python -m jupyter_agent.replay.relay``)::

    serve --dir D [--port P]   serve; prints the base URL (give it as ANTHROPIC_BASE_URL)
    next --dir D [--timeout S] print the next unanswered request (exit 3 when the run ended)
    answer --dir D N FILE      answer request N with FILE ('-': stdin), JSON: {"content": [...]}
    done --dir D [NOTE]        mark the run as ended

What ``next`` prints went through :func:`jupyter_agent.render.terminal_text` (control characters
inert, secrets redacted); the folder's files keep the request as it was sent.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .relay_folder import POLL_S, AnswerError, PendingRequest, RelayFolder
from .respond import error_body, send_json
from .records import RecordedRequest
from .script import ScriptedResponse, new_id
from .sse import build_events, encode_event, final_message
from .validation import validate_request

__all__ = ["RelayAPI", "main"]

log = logging.getLogger(__name__)

#: The key a client of the relay sends (any non-empty key is accepted).
RELAY_API_KEY = "sk-relay-no-real-key"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    relay: RelayAPI


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # a relay's terminal shows requests, not access logs

    def do_POST(self) -> None:
        try:
            self.server.relay._handle(self)
        except (BrokenPipeError, ConnectionResetError):
            log.info("the client went away before its answer was sent")
            self.close_connection = True


class RelayAPI:
    """The relay server (see the module docstring), answering from ``folder``.

    ``ping_s``: seconds between pings while an answer is awaited. ``timeout_s``: how long a
    request waits for its answer before it gets an ``overloaded_error`` (the client retries).
    Use it as a context manager, or :meth:`start` / :meth:`close`.
    """

    def __init__(self, folder: str | Path | RelayFolder, *, ping_s: float = 5.0, timeout_s: float = 3600.0) -> None:
        self.folder = folder if isinstance(folder, RelayFolder) else RelayFolder(folder)
        self.ping_s = ping_s
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._closing = threading.Event()
        self._previous: dict[str, Any] | None = None
        self._count = len(self.folder.numbers())
        self._server: _Server | None = None
        #: pings sent while answers were awaited (a test waits on them to outlast a stall timer)
        self.pings = 0

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, port: int = 0) -> RelayAPI:
        """Start serving on 127.0.0.1 (``port`` 0: any free one); returns self."""
        if self._server is None:
            self._server = _Server(("127.0.0.1", port), _Handler)
            self._server.relay = self
            threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                             name="RelayAPI", daemon=True).start()
        return self

    def close(self) -> None:
        """Stop serving; requests still waiting end at once. Idempotent."""
        self._closing.set()
        with self._arrived:
            self._arrived.notify_all()
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def __enter__(self) -> RelayAPI:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "the relay is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def env(self) -> dict[str, str]:
        """The environment that points a client in another process (``jupyter agent run``) here."""
        return {"ANTHROPIC_BASE_URL": self.base_url, "ANTHROPIC_API_KEY": RELAY_API_KEY}

    # -- the answering side, in this process ------------------------------------------------
    @property
    def count(self) -> int:
        """How many requests have arrived."""
        return self._count

    def wait_pings(self, count: int, timeout_s: float) -> bool:
        """Wait until ``count`` pings have been sent in all; False if not within ``timeout_s``."""
        with self._arrived:
            return self._arrived.wait_for(lambda: self.pings >= count, timeout=timeout_s)

    def wait_request(self, timeout_s: float) -> PendingRequest | None:
        """The oldest unanswered request, waiting up to ``timeout_s`` for one to arrive
        (None if none did, or the folder says the run has ended)."""
        with self._arrived:
            self._arrived.wait_for(lambda: bool(self.folder.pending()) or self.folder.done is not None
                                   or self._closing.is_set(), timeout=timeout_s)
        pending = self.folder.pending()
        if not pending:
            return None
        n = pending[0]
        return PendingRequest(n, self.folder.request_text(n).read_text(encoding="utf-8"))

    def answer(self, n: int, data: Any) -> dict[str, Any]:
        """Answer request ``n`` (see :func:`~.relay_folder.parse_answer`)."""
        answer = self.folder.answer(n, data)
        with self._arrived:
            self._arrived.notify_all()
        return answer

    def finish(self, note: str = "") -> None:
        """Mark the run as ended (a waiting :meth:`wait_request` returns None)."""
        self.folder.finish(note)
        with self._arrived:
            self._arrived.notify_all()

    # -- requests ---------------------------------------------------------------------------
    def _handle(self, h: _Handler) -> None:
        raw = h.rfile.read(int(h.headers.get("content-length") or 0))
        path = urlsplit(h.path).path.rstrip("/")
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        rec = RecordedRequest(number=0, method="POST", path=h.path, headers={}, body=body, received_at=0.0)
        request_id = "req_relay_" + new_id("", 12)
        if path not in ("/v1/messages", "/v1/messages/count_tokens"):
            return send_json(h, rec, 404, error_body("not_found_error", f"Not found: POST {h.path}"), request_id)
        if not (h.headers.get("x-api-key") or h.headers.get("authorization")):
            return send_json(h, rec, 401, error_body("authentication_error", "x-api-key header is required"),
                             request_id)
        if path.endswith("count_tokens"):
            return send_json(h, rec, 200, {"input_tokens": max(1, len(raw) // 4)}, request_id)
        problem = validate_request(body)
        if problem or not isinstance(body, dict):
            return send_json(h, rec, 400, error_body("invalid_request_error", problem or "body is not JSON"),
                             request_id)
        with self._arrived:
            self._count += 1
            n = self._count
            self.folder.write_request(n, raw, body, self._previous)
            self._previous = body
            self._arrived.notify_all()
        usage = {"input_tokens": max(1, len(raw) // 4), "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}
        model, msg_id = str(body.get("model")), new_id("msg_01", 24)
        if body.get("stream"):
            return self._stream(h, rec, n, model, msg_id, usage, request_id)
        answer = self._await_answer(n, None)
        if answer is None:
            return send_json(h, rec, 529, error_body("overloaded_error", "the relay got no answer in time"),
                             request_id)
        resp = ScriptedResponse(blocks=tuple(answer["content"]), stop_reason=answer["stop_reason"])
        return send_json(h, rec, 200, final_message(resp, model=model, message_id=msg_id, usage=usage), request_id)

    def _await_answer(self, n: int, ping: Any) -> dict[str, Any] | None:
        """Request ``n``'s answer once it is there (calling ``ping`` every ``ping_s`` meanwhile);
        None if the relay closes or ``timeout_s`` passes. Answers from another process are
        files, so the folder is looked at every ``POLL_S`` as well as when woken."""
        waited = since_ping = 0.0
        while waited < self.timeout_s:
            answer = self.folder.read_answer(n)
            if answer is not None:
                return answer
            with self._arrived:
                if self._closing.is_set():
                    return None
                self._arrived.wait(POLL_S)
            waited += POLL_S
            since_ping += POLL_S
            if ping is not None and since_ping >= self.ping_s:
                ping()
                since_ping = 0.0
        return None

    def _stream(self, h: _Handler, rec: RecordedRequest, n: int, model: str, msg_id: str,
                usage: dict[str, int], request_id: str) -> None:
        h.send_response(200)
        for k, v in {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache",
                     "transfer-encoding": "chunked", "request-id": request_id}.items():
            h.send_header(k, v)
        h.end_headers()
        h.close_connection = True

        def send(name: str, data: dict[str, Any]) -> None:
            chunk = encode_event(name, data)
            h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            h.wfile.flush()

        pending = ScriptedResponse()
        events = build_events(pending, model=model, message_id=msg_id, usage=usage)
        first = events[0]
        assert isinstance(first, tuple)
        send(*first)  # message_start: the client's stall timer now runs on pings
        def ping() -> None:
            send("ping", {"type": "ping"})
            with self._arrived:
                self.pings += 1
                self._arrived.notify_all()

        answer = self._await_answer(n, ping)
        if answer is None:
            send("error", error_body("overloaded_error", "the relay got no answer in time"))
        else:
            resp = ScriptedResponse(blocks=tuple(answer["content"]), stop_reason=answer["stop_reason"])
            for event in build_events(resp, model=model, message_id=msg_id, usage=usage)[1:]:
                if isinstance(event, tuple):
                    send(*event)
        h.wfile.write(b"0\r\n\r\n")


# -- the command line ------------------------------------------------------------------------

def _print(text: str) -> None:
    from ..render import terminal_text

    print(terminal_text(text), flush=True)


def main(argv: list[str] | None = None) -> int:
    """``python -m jupyter_agent.replay.relay serve|next|answer|done``; see the module docstring."""
    parser = argparse.ArgumentParser(prog="python -m jupyter_agent.replay.relay",
                                     description="A Messages API answered by hand, through a folder.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the relay; prints its base URL")
    nxt = commands.add_parser("next", help="print the next unanswered request")
    answer = commands.add_parser("answer", help="answer request N with a JSON file ('-': stdin)")
    done = commands.add_parser("done", help="mark the run as ended")
    for p in (serve, nxt, answer, done):
        p.add_argument("--dir", required=True, help="the relay folder")
    serve.add_argument("--port", type=int, default=0)
    nxt.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for a request")
    answer.add_argument("n", type=int)
    answer.add_argument("file")
    done.add_argument("note", nargs="?", default="")
    args = parser.parse_args(argv)
    folder = RelayFolder(args.dir)
    if args.command == "serve":
        relay = RelayAPI(folder).start(args.port)
        print(relay.base_url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            relay.close()
        return 0
    if args.command == "next":
        request = folder.next_request(args.timeout)
        if request is None:
            if folder.done is not None:
                _print("THE RUN HAS ENDED: " + folder.done)
                return 3
            _print("no request within the timeout")
            return 2
        _print(request.text)
        print(f">>> answer with: python -m jupyter_agent.replay.relay answer --dir {args.dir} {request.number} FILE")
        return 0
    if args.command == "done":
        folder.finish(args.note)
        return 0
    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
        folder.answer(args.n, json.loads(text))
    except (AnswerError, ValueError, OSError) as e:
        print(f"not answered: {e}", file=sys.stderr)
        return 1
    print(f"answered request {args.n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
