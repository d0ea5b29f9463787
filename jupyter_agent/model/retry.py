"""What went wrong with a request, whether to try again, and how long to wait.

The SDK's own retries are off (``max_retries=0``): ours yield a ``ModelRetry`` the UI can
show, and they also cover what the SDK never retries (a mid-stream ``error`` event, a
stream cut before ``message_stop``, a stall). The ``anthropic``/``httpx2`` modules are
passed in rather than imported here, so importing this module stays cheap.
"""

from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any

from ..loop.model_protocol import ModelError, PromptTooLongError

__all__ = ["Failure", "classify_exception", "from_error_event", "from_status", "backoff_delay",
           "parse_retry_after", "to_model_error", "RETRY_AFTER_CAP_S"]

RETRY_AFTER_CAP_S = 60.0
_RETRY_STATUSES = {408, 409, 429, 500, 502, 503, 504, 529}
_EVENT_KINDS = {"overloaded_error": "overloaded", "rate_limit_error": "rate_limit", "api_error": "api_error",
                "invalid_request_error": "invalid_request", "authentication_error": "authentication",
                "permission_error": "permission", "not_found_error": "not_found",
                "request_too_large": "request_too_large"}
_RETRY_KINDS = {"overloaded", "rate_limit", "api_error", "stream_cut", "stream_stalled", "connection"}


@dataclass
class Failure:
    """One failed attempt, classified."""

    kind: str
    message: str
    status: int | None = None
    retry_after: float | None = None

    @property
    def retryable(self) -> bool:
        return self.kind in _RETRY_KINDS

    @property
    def overloaded(self) -> bool:
        return self.kind == "overloaded"


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from ``retry-after-ms`` / ``retry-after`` (number or HTTP date), or None."""
    if not headers:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000)
        ra = headers.get("retry-after")
        if ra is None:
            return None
        try:
            return max(0.0, float(ra))
        except ValueError:
            when = email.utils.parsedate_to_datetime(ra)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _kind_for(status: int, error_type: str | None, message: str) -> str:
    if status == 400 or error_type == "invalid_request_error":
        return "prompt_too_long" if "prompt is too long" in message.lower() else "invalid_request"
    if error_type in _EVENT_KINDS and status in (0, 200):
        return _EVENT_KINDS[error_type]
    return {401: "authentication", 403: "permission", 404: "not_found", 413: "request_too_large",
            429: "rate_limit", 529: "overloaded"}.get(status) or (
        "overloaded" if error_type == "overloaded_error" else "api_error")


def _error_fields(body: Any) -> tuple[str | None, str | None]:
    if isinstance(body, dict):
        inner = body.get("error")
        err = inner if isinstance(inner, dict) else body
        return err.get("type"), err.get("message")
    return None, None


def from_status(status: int, body: Any, headers: Mapping[str, str] | None = None,
                fallback_message: str = "") -> Failure:
    """Classify an HTTP error answer (status + JSON body)."""
    error_type, message = _error_fields(body)
    message = message or fallback_message or f"HTTP {status}"
    kind = _kind_for(status, error_type, message)
    if kind == "api_error" and status not in _RETRY_STATUSES and status < 500:
        kind = "client_error"  # an unexpected 4xx: trying again would get the same answer
    return Failure(kind, message, status, parse_retry_after(headers))


def from_error_event(data: Any) -> Failure:
    """Classify a mid-stream ``event: error`` (the HTTP status was 200)."""
    error_type, message = _error_fields(data)
    message = message or "error event in the stream"
    kind = _kind_for(0, error_type, message)
    if error_type not in _EVENT_KINDS:
        kind = "api_error"  # an unknown error type mid-stream: treat as transient
    return Failure(kind, f"{message} (error event mid-stream)", None)


def classify_exception(exc: BaseException, *, anthropic: Any, httpx: Any, stall_timeout_s: float) -> Failure | None:
    """Classify an exception from the SDK or the transport; None if it is not an API problem."""
    if isinstance(exc, anthropic.APIStatusError):
        return from_status(exc.status_code, exc.body, exc.response.headers, str(exc))
    if isinstance(exc, (anthropic.APITimeoutError, httpx.TimeoutException, TimeoutError)):
        return Failure("stream_stalled", f"no response event for {stall_timeout_s:g} s")
    if isinstance(exc, anthropic.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        return Failure("connection", f"{exc}" + (f" ({type(cause).__name__}: {cause})" if cause else ""))
    if isinstance(exc, httpx.TransportError):
        return Failure("stream_cut", f"connection lost mid-stream ({type(exc).__name__}: {exc})")
    return None


def backoff_delay(attempt: int, *, base_s: float, max_s: float, retry_after: float | None = None,
                  rng: random.Random | None = None) -> float:
    """Seconds to wait before retry number ``attempt`` (1-based).

    The server's ``retry-after`` wins when given (capped at a minute, so a bad header
    cannot hang a session); otherwise ``base * 2**(attempt-1)`` capped at ``max_s``, minus
    up to 25% jitter so many clients do not retry in lockstep.
    """
    if retry_after is not None:
        return min(retry_after, RETRY_AFTER_CAP_S)
    delay: float = min(max_s, base_s * (2.0 ** (attempt - 1)))
    jitter = rng.random() if rng is not None else random.random()
    return delay * (1 - 0.25 * jitter)


_ADVICE = {
    "authentication": "Authentication failed{status}: {msg}. Check ANTHROPIC_API_KEY (or the api_key you passed).",
    "permission": "Permission denied{status}: {msg}. Check that your API key may use this model.",
    "not_found": "Not found{status}: {msg}. Check the model id ({model}) and ANTHROPIC_BASE_URL.",
    "invalid_request": "The API rejected the request{status}: {msg}",
    "request_too_large": "The request is too large{status}: {msg}",
    "client_error": "The API refused the request{status}: {msg}",
    "rate_limit": "Rate limited{status}: {msg}.",
    "overloaded": "The API is overloaded{status}: {msg}.",
    "api_error": "The API returned an error{status}: {msg}.",
    "stream_cut": "The response stream was cut: {msg}.",
    "stream_stalled": "The response stream stalled: {msg}.",
    "connection": "Could not reach the API: {msg}.",
}


#: The kinds whose advice depends on where the request went (the provider's ``check``).
_CREDENTIAL_KINDS = {"authentication": "Authentication failed", "permission": "Permission denied",
                     "not_found": "Not found"}


#: The kinds whose advice names where the requests go (the provider's ``reach``).
_REACH_KINDS = frozenset({"connection", "stream_cut", "stream_stalled"})


def to_model_error(f: Failure, *, model: str, attempts: int, check: str | None = None,
                   reach: str | None = None) -> ModelError:
    """The ``ModelError`` to raise when ``f`` is final (not retryable, or retries spent).
    ``check``: what to check after an authentication, permission or not-found error when
    the request went to another provider than the Anthropic API (providers.py); ``reach``:
    what to check there when its endpoint could not be reached or broke off."""
    if f.kind == "prompt_too_long":
        return PromptTooLongError(f"The conversation is too long for {model}'s context window: {f.message}",
                                  status=f.status)
    status = f" (HTTP {f.status})" if f.status else ""
    text = _ADVICE.get(f.kind, _ADVICE["api_error"]).format(status=status, msg=f.message.rstrip("."), model=model)
    if check is not None and f.kind in _CREDENTIAL_KINDS:
        text = f"{_CREDENTIAL_KINDS[f.kind]}{status}: {f.message.rstrip('.')}. {check}"
    if reach is not None and f.kind in _REACH_KINDS:
        text = f"{text} {reach}"
    if f.retryable and attempts > 1:
        text += f" Gave up after {attempts} attempts."
    return ModelError(text, kind=f.kind, status=f.status, retryable=f.retryable)
