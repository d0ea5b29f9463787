"""Builders for what :class:`~jupyter_agent.testing.FakeMessagesAPI` answers, turn by turn.

A script is a list of responses; each request to the fake API consumes the next one::

    api = FakeMessagesAPI([
        response(thinking("Let me look."), tool_use("Read", {"file_path": "notes.txt"})),
        http_error(529),                       # the retry of turn 2 gets this first
        response(text("Done.")),
    ])

Content blocks are plain dicts, exactly as they appear in the finished assistant message
(``text()``, ``thinking()``, ``tool_use()``, ``raw_block()``); ``pause()`` is not a
block but a point where the stream sleeps (e.g. "the model keeps streaming 1 s after a
tool_use block stopped"). Faults (``stream_error``, ``cut_stream``, ``stall``) are
responses that go wrong part way through; ``http_error`` answers with an error status
before any event. A script item may also be a callable ``(request_body) -> item`` that
decides the answer when the request arrives.
"""

from __future__ import annotations

import hashlib
import secrets
import string
from dataclasses import dataclass, field, replace
from collections.abc import Callable
from typing import Any

__all__ = [
    "Pause", "ScriptedResponse", "HttpError", "ScriptItem",
    "text", "thinking", "tool_use", "raw_block", "pause", "response",
    "http_error", "overloaded", "rate_limited", "prompt_too_long",
    "stream_error", "cut_stream", "stall", "new_id", "to_response",
]

_B62 = string.ascii_letters + string.digits


def new_id(prefix: str = "toolu_01", length: int = 22) -> str:
    """A random id shaped like the API's (``toolu_01...``, ``msg_01...``); unique in practice."""
    return prefix + "".join(secrets.choice(_B62) for _ in range(length))


# -- content blocks -----------------------------------------------------------------------

def text(s: str) -> dict[str, Any]:
    """A ``text`` block; streamed as ``text_delta`` chunks."""
    return {"type": "text", "text": s}


def thinking(s: str, signature: str | None = None) -> dict[str, Any]:
    """A ``thinking`` block; streamed as ``thinking_delta`` chunks then one ``signature_delta``.

    Without ``signature`` a stable fake one is derived from the text (real ones are opaque
    base64 strings the API checks when the block is sent back).
    """
    if signature is None:
        signature = "sig_" + hashlib.sha256(s.encode()).hexdigest()[:48]
    return {"type": "thinking", "thinking": s, "signature": signature}


def tool_use(name: str, input: dict[str, Any] | None = None, id: str | None = None) -> dict[str, Any]:
    """A ``tool_use`` block; its input is streamed as ``input_json_delta`` fragments, first ``""``."""
    return {"type": "tool_use", "id": id or new_id(), "name": name, "input": dict(input or {})}


def raw_block(block: dict[str, Any]) -> dict[str, Any]:
    """Any other block (``server_tool_use``, ``redacted_thinking``, a type not invented yet).

    It is sent whole in ``content_block_start`` and closed at once, with no deltas: the
    client must keep it as it came and send it back unchanged.
    """
    if "type" not in block:
        raise ValueError("a content block needs a 'type'")
    return dict(block)


@dataclass(frozen=True)
class Pause:
    """Not a block: the stream sleeps ``seconds`` at this point of the response."""

    seconds: float


def pause(seconds: float) -> Pause:
    """Sleep ``seconds`` between two blocks (or before ``message_delta`` when last)."""
    return Pause(float(seconds))


# -- responses ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ScriptedResponse:
    """One streamed (or JSON) answer, possibly with a fault part way through.

    ``after`` counts SSE events already written (``message_start`` is event 0, ``ping``
    counts) when the fault strikes. Only one fault per response.
    """

    blocks: tuple[Any, ...] = ()
    stop_reason: str | None = None
    usage: dict[str, Any] | None = None
    delay_s: float = 0.0
    chunk_chars: int = 24
    extra_events: tuple[Any, ...] = ()
    model: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    # faults
    error_after: int | None = None
    error_type: str = "overloaded_error"
    error_message: str = "Overloaded"
    cut_after: int | None = None
    cut_abrupt: bool = False
    stall_after: int | None = None
    stall_s: float = 30.0

    @property
    def content(self) -> list[dict[str, Any]]:
        """The content blocks of the finished message (without pauses or markers)."""
        return [dict(b) for b in self.blocks if isinstance(b, dict)]

    @property
    def effective_stop_reason(self) -> str:
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if any(b.get("type") == "tool_use" for b in self.content) else "end_turn"

    @property
    def fault(self) -> str | None:
        if self.error_after is not None:
            return "error"
        if self.cut_after is not None:
            return "cut"
        if self.stall_after is not None:
            return "stall"
        return None


@dataclass(frozen=True)
class HttpError:
    """An HTTP error answer, sent before any stream event (``retry_after`` in seconds)."""

    status: int
    error_type: str
    message: str
    retry_after: float | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def body(self, request_id: str) -> dict[str, Any]:
        return {"type": "error", "error": {"type": self.error_type, "message": self.message},
                "request_id": request_id}


ScriptItem = ScriptedResponse | HttpError | Callable[[dict], Any] | str | dict | list


def response(*blocks: Any, stop_reason: str | None = None, usage: dict[str, Any] | None = None,
             delay_s: float = 0.0, chunk_chars: int = 24, extra_events: list[Any] | None = None,
             model: str | None = None, headers: dict[str, str] | None = None) -> ScriptedResponse:
    """A normal response made of ``blocks`` (dicts from the builders, strings = text, pauses).

    ``stop_reason`` defaults to ``"tool_use"`` if a tool_use block is present, else
    ``"end_turn"``. ``usage`` overrides the computed token counts (keys you give win).
    ``delay_s`` sleeps between every two events (a slow stream). ``chunk_chars`` is the
    size of text/thinking/JSON deltas. ``extra_events`` are events of any (unknown) type:
    a dict is sent right after ``message_start``; ``(n, dict)`` is sent before event
    number ``n`` of the normal sequence.
    """
    norm = tuple(text(b) if isinstance(b, str) else b for b in blocks)
    for b in norm:
        if not isinstance(b, (dict, Pause)):
            raise TypeError(f"not a content block or pause: {b!r}")
    return ScriptedResponse(blocks=norm, stop_reason=stop_reason, usage=usage, delay_s=delay_s,
                            chunk_chars=max(1, chunk_chars), extra_events=tuple(extra_events or ()),
                            model=model, headers=dict(headers or {}))


_DEFAULT_ERRORS = {
    400: ("invalid_request_error", "Invalid request"),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "Not found"),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
    500: ("api_error", "Internal server error"),
    529: ("overloaded_error", "Overloaded"),
}


def http_error(status: int, error_type: str | None = None, message: str | None = None,
               retry_after: float | None = None, headers: dict[str, str] | None = None) -> HttpError:
    """An error answer with HTTP ``status`` and the API's JSON error body.

    ``error_type``/``message`` default to what the real API says for that status
    (429 ``rate_limit_error``, 529 ``overloaded_error``, 500 ``api_error``, ...).
    """
    dtype, dmsg = _DEFAULT_ERRORS.get(status, ("api_error", f"HTTP {status}"))
    return HttpError(status=status, error_type=error_type or dtype, message=message or dmsg,
                     retry_after=retry_after, headers=dict(headers or {}))


def overloaded() -> HttpError:
    """HTTP 529 ``overloaded_error``."""
    return http_error(529)


def rate_limited(retry_after: float | None = None) -> HttpError:
    """HTTP 429 ``rate_limit_error``, optionally with a ``retry-after`` header."""
    return http_error(429, retry_after=retry_after)


def prompt_too_long(tokens: int = 210_000, limit: int = 200_000) -> HttpError:
    """HTTP 400 with the API's context-window message."""
    return http_error(400, message=f"prompt is too long: {tokens} tokens > {limit} maximum")


_PARTIAL = (text("This answer will be interrupted part way through its streaming."),)


def _base(base: ScriptedResponse | None) -> ScriptedResponse:
    return base if base is not None else response(*_PARTIAL, chunk_chars=8)


def stream_error(after: int = 3, error_type: str = "overloaded_error", message: str = "Overloaded",
                 base: ScriptedResponse | None = None) -> ScriptedResponse:
    """Stream ``after`` events of ``base``, then an ``event: error`` (HTTP status stays 200)."""
    return replace(_base(base), error_after=after, error_type=error_type, error_message=message)


def cut_stream(after: int = 3, base: ScriptedResponse | None = None, abrupt: bool = False) -> ScriptedResponse:
    """Stream ``after`` events, then end the connection without ``message_stop``.

    By default the HTTP body ends cleanly (the SDK raises nothing and reports
    ``stop_reason=None``, as measured against the real API). ``abrupt=True`` drops the
    socket mid-body instead, which the client sees as a transport error.
    """
    return replace(_base(base), cut_after=after, cut_abrupt=abrupt)


def stall(after: int = 3, seconds: float = 30.0, base: ScriptedResponse | None = None) -> ScriptedResponse:
    """Stream ``after`` events, then send nothing for ``seconds`` (no pings), then close."""
    return replace(_base(base), stall_after=after, stall_s=float(seconds))


def to_response(item: Any) -> ScriptedResponse | HttpError:
    """Normalize a script item: a string is a text response, a dict a one-block response,
    a list a response of those blocks."""
    if isinstance(item, (ScriptedResponse, HttpError)):
        return item
    if isinstance(item, str):
        return response(text(item))
    if isinstance(item, dict):
        return response(item)
    if isinstance(item, (list, tuple)):
        return response(*item)
    raise TypeError(f"not a scripted response: {item!r}")
