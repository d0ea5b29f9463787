"""How the fake Messages API writes one answer onto the wire.

A JSON body (an answer or an error), a streamed message (SSE, or AWS event-stream frames
for Bedrock), and the faults a script can ask for: an error status, an ``error`` event mid
stream, a connection cut, a stall. Which answer a request gets is decided in
``server.py``; these functions only write it, through the request's
:class:`~http.server.BaseHTTPRequestHandler`, and note on its :class:`RecordedRequest`
what was sent (``status``, ``outcome``, ``error``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from .cloud import BEDROCK_CONTENT_TYPE, bedrock_error, bedrock_event
from .records import RecordedRequest
from .script import Pause, ScriptedResponse
from .sse import build_events, encode_event, final_message

__all__ = ["ServerClosing", "error_body", "send_json", "send_message", "send_stream"]

_ERROR_STATUS = {"overloaded_error": 529, "rate_limit_error": 429, "invalid_request_error": 400,
                 "authentication_error": 401, "permission_error": 403, "not_found_error": 404}


class ServerClosing(Exception):
    """Raised inside a response that is sleeping when the server closes."""


def error_body(error_type: str, message: str) -> dict[str, Any]:
    """The Messages API's error body."""
    return {"type": "error", "error": {"type": error_type, "message": message}}


def send_json(h: BaseHTTPRequestHandler, rec: RecordedRequest, status: int, body: Any, request_id: str,
              headers: dict[str, str] | None = None) -> None:
    """Answer with a JSON body (an error in Bedrock's shape when the request came as Bedrock's)."""
    if rec.route is not None and rec.route.provider == "bedrock" and status >= 400:
        body, headers = bedrock_error(body, headers)  # AWS's shape: {"message"}, x-amzn-errortype
    data = json.dumps(body).encode()
    rec.status = status
    h.send_response(status)
    h.send_header("content-type", "application/json")
    h.send_header("content-length", str(len(data)))
    h.send_header("request-id", request_id)
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.end_headers()
    h.wfile.write(data)


def _sleep(closing: threading.Event, seconds: float) -> None:
    if seconds > 0 and closing.wait(seconds):
        raise ServerClosing  # drop the response


def send_message(h: BaseHTTPRequestHandler, rec: RecordedRequest, resp: ScriptedResponse, model: str,
                 msg_id: str, usage: dict[str, int], request_id: str, closing: threading.Event) -> None:
    """Answer a request without ``stream``: the whole message, or the scripted fault.
    ``closing``: set when the server closes (a delay or a stall then ends at once)."""
    fault = resp.fault
    if fault == "error":
        rec.outcome, rec.error = "http_error", resp.error_message
        status = _ERROR_STATUS.get(resp.error_type, 500)
        return send_json(h, rec, status, error_body(resp.error_type, resp.error_message), request_id)
    if fault in ("cut", "stall"):
        rec.outcome = fault
        if fault == "stall":
            closing.wait(resp.stall_s)
        h.close_connection = True
        return None
    _sleep(closing, resp.delay_s)
    rec.outcome = "ok"
    send_json(h, rec, 200, final_message(resp, model=model, message_id=msg_id, usage=usage), request_id,
              resp.headers)


def send_stream(h: BaseHTTPRequestHandler, rec: RecordedRequest, resp: ScriptedResponse, model: str,
                msg_id: str, usage: dict[str, int], request_id: str, closing: threading.Event) -> None:
    """Answer a streaming request: the message's events, chunked, with the script's pauses
    and delays, up to the scripted fault if there is one."""
    events = build_events(resp, model=model, message_id=msg_id, usage=usage)
    n_events = sum(1 for e in events if not isinstance(e, Pause))
    fault = resp.fault
    fault_at = None
    if fault is not None:
        after = {"error": resp.error_after, "cut": resp.cut_after, "stall": resp.stall_after}[fault]
        fault_at = min(int(after or 0), n_events - 1)  # always before message_stop
    rec.status = 200
    h.send_response(200)
    bedrock = rec.route is not None and rec.route.provider == "bedrock"
    encode = bedrock_event if bedrock else encode_event
    content_type = BEDROCK_CONTENT_TYPE if bedrock else "text/event-stream; charset=utf-8"
    for k, v in {"content-type": content_type, "cache-control": "no-cache",
                 "transfer-encoding": "chunked", "request-id": request_id, **resp.headers}.items():
        h.send_header(k, v)
    h.end_headers()

    def chunk(data: bytes) -> None:
        h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    sent = 0
    for item in events:
        if isinstance(item, Pause):
            _sleep(closing, item.seconds)
            continue
        if sent == fault_at:
            return _fault(h, rec, resp, lambda name, data: chunk(encode(name, data)), closing)
        if sent and resp.delay_s:
            _sleep(closing, resp.delay_s)
        name, data = item
        if name == "message_stop":
            # noted before the write: a client that reads message_stop may finish its
            # whole run before this thread runs again (a failed write still overrides it)
            rec.outcome = "ok"
        chunk(encode(name, data))
        sent += 1
        if name == "message_stop":
            rec.message_stop_at = time.monotonic()
    h.wfile.write(b"0\r\n\r\n")
    rec.outcome = "ok"


def _fault(h: BaseHTTPRequestHandler, rec: RecordedRequest, resp: ScriptedResponse,
           send: Callable[[str, dict[str, Any]], None], closing: threading.Event) -> None:
    h.close_connection = True
    if resp.fault == "error":
        rec.outcome, rec.error = "stream_error", resp.error_message
        send("error", error_body(resp.error_type, resp.error_message))
        h.wfile.write(b"0\r\n\r\n")
    elif resp.fault == "cut":
        rec.outcome = "cut"
        if not resp.cut_abrupt:
            h.wfile.write(b"0\r\n\r\n")  # the body ends cleanly, without message_stop
    else:
        rec.outcome = "stall"
        closing.wait(resp.stall_s)  # then drop the connection mid-body
