"""The fake Messages API as the cloud providers serve it: Bedrock, Vertex AI and Foundry.

Each provider's SDK client (``AsyncAnthropicBedrock``...) rewrites a ``/v1/messages``
request into its own path and authentication; :func:`route` reads them back, checking
what the real service would refuse (a malformed SigV4 header, a missing bearer token),
and :func:`eventstream_frame` writes Bedrock's response encoding (AWS event-stream
binary frames, each carrying one Messages API event); :func:`client_env` is the environment
that points a provider's client at the fake. Pure functions; no HTTP here.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

__all__ = ["Route", "route", "client_env", "eventstream_frame", "bedrock_event", "bedrock_error",
           "FAKE_AWS_ACCESS_KEY_ID", "FAKE_AWS_SECRET_ACCESS_KEY", "FAKE_GOOGLE_TOKEN", "FAKE_FOUNDRY_KEY",
           "BEDROCK_CONTENT_TYPE"]

#: Credentials the fake accepts; fake values, safe to print.
FAKE_AWS_ACCESS_KEY_ID = "AKIAFAKEFAKEFAKE0000"
FAKE_AWS_SECRET_ACCESS_KEY = "fake/secret/access/key/0000000000000000"
FAKE_GOOGLE_TOKEN = "ya29.fake-google-access-token"
FAKE_FOUNDRY_KEY = "fake-foundry-resource-key"
BEDROCK_CONTENT_TYPE = "application/vnd.amazon.eventstream"

_BEDROCK_PATH = re.compile(r"^/model/(?P<model>[^/]+)/(?P<op>invoke|invoke-with-response-stream)$")
_VERTEX_PATH = re.compile(r"^/projects/(?P<project>[^/]+)/locations/(?P<region>[^/]+)/publishers/anthropic/"
                          r"models/(?P<model>[^/:]+):(?P<op>streamRawPredict|rawPredict)$")
_SIGV4 = re.compile(r"^AWS4-HMAC-SHA256 Credential=(?P<key>[A-Z0-9]{16,128})/(?P<date>\d{8})/(?P<region>[a-z0-9-]+)/"
                    r"bedrock/aws4_request, SignedHeaders=(?P<signed>[a-z0-9;-]+), Signature=[0-9a-f]{64}$")
_AMZ_DATE = re.compile(r"^\d{8}T\d{6}Z$")
#: The Messages API's error types as Bedrock's exceptions (the reverse of the client's table).
_EXCEPTIONS = {"overloaded_error": "serviceUnavailableException", "rate_limit_error": "throttlingException",
               "invalid_request_error": "validationException", "permission_error": "accessDeniedException",
               "authentication_error": "unrecognizedClientException", "not_found_error": "resourceNotFoundException"}


@dataclass(frozen=True)
class Route:
    """What a request is, as the fake reads it.

    ``provider``: ``anthropic``, ``bedrock``, ``vertex`` or ``foundry``; ``operation``:
    ``messages`` or ``count_tokens`` (None: no such endpoint); ``model``: from the path
    (Bedrock, Vertex), else None (it is in the body); ``stream``: from the path (Bedrock),
    else None (the body's ``stream``); ``auth_problem``: why the service would answer
    401/403 (None: the credentials have the right shape); ``region``/``project``: from the
    SigV4 credential scope or the Vertex path.
    """

    provider: str
    operation: str | None
    model: str | None = None
    stream: bool | None = None
    auth_problem: str | None = None
    region: str | None = None
    project: str | None = None


def _bearer(headers: Mapping[str, str]) -> str:
    value = headers.get("authorization") or ""
    return value[7:].strip() if value.lower().startswith("bearer ") else ""


def _sigv4_problem(headers: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(why the SigV4 signature is malformed or None, the region it was signed for)."""
    auth = headers.get("authorization") or ""
    if not auth:
        return "Missing Authentication Token (no Authorization header)", None
    if _bearer(headers):
        return None, None  # a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK)
    m = _SIGV4.match(auth)
    if m is None:
        return f"The Authorization header is not an AWS SigV4 signature for bedrock: {auth[:60]!r}", None
    signed = m.group("signed").split(";")
    date = headers.get("x-amz-date") or ""
    if not _AMZ_DATE.match(date) or not date.startswith(m.group("date")):
        return f"x-amz-date {date!r} is missing or does not match the credential scope's date", None
    for needed in ("host", "x-amz-date"):
        if needed not in signed:
            return f"SignedHeaders does not include {needed}", None
    if "x-amz-security-token" in headers and "x-amz-security-token" not in signed:
        return "x-amz-security-token is sent but not signed", None
    return None, m.group("region")


def route(method: str, path: str, headers: Mapping[str, str]) -> Route:
    """Which provider's endpoint ``path`` is, and whether its credentials have the right shape."""
    if method != "POST":
        return Route("anthropic", None)
    if path in ("/v1/messages", "/v1/messages/count_tokens"):
        has_key = bool(headers.get("x-api-key") or _bearer(headers))
        return Route("anthropic", "count_tokens" if path.endswith("count_tokens") else "messages",
                     auth_problem=None if has_key else "x-api-key header is required")
    if path in ("/anthropic/v1/messages", "/anthropic/v1/messages/count_tokens"):
        key = headers.get("api-key") or _bearer(headers)
        return Route("foundry", "count_tokens" if path.endswith("count_tokens") else "messages",
                     auth_problem=None if key else "api-key header is required (the Foundry resource's key)")
    m = _BEDROCK_PATH.match(path)
    if m is not None:
        problem, region = _sigv4_problem(headers)
        return Route("bedrock", "messages", model=unquote(m.group("model")),
                     stream=m.group("op") == "invoke-with-response-stream", auth_problem=problem, region=region)
    m = _VERTEX_PATH.match(path)
    if m is not None or path.endswith("/publishers/anthropic/models/count-tokens:rawPredict"):
        problem = None if _bearer(headers) else "Request is missing required authentication credential (bearer token)"
        if m is None:
            return Route("vertex", "count_tokens", auth_problem=problem)
        return Route("vertex", "messages", model=unquote(m.group("model")), auth_problem=problem,
                     region=m.group("region"), project=m.group("project"))
    return Route("anthropic", None)


def client_env(provider: str, base_url: str) -> dict[str, str] | None:
    """The environment that points ``provider``'s SDK client at the fake served at
    ``base_url``, with the fake credentials; None for a provider not of the cloud."""
    if provider == "bedrock":
        return {"JUPYTER_AGENT_PROVIDER": provider, "ANTHROPIC_BEDROCK_BASE_URL": base_url,
                "AWS_ACCESS_KEY_ID": FAKE_AWS_ACCESS_KEY_ID, "AWS_SECRET_ACCESS_KEY": FAKE_AWS_SECRET_ACCESS_KEY,
                "AWS_REGION": "us-east-1"}
    if provider == "vertex":
        return {"JUPYTER_AGENT_PROVIDER": provider, "ANTHROPIC_VERTEX_BASE_URL": base_url,
                "GOOGLE_OAUTH_ACCESS_TOKEN": FAKE_GOOGLE_TOKEN, "CLOUD_ML_REGION": "us-east5",
                "ANTHROPIC_VERTEX_PROJECT_ID": "fake-project"}
    if provider == "foundry":
        return {"JUPYTER_AGENT_PROVIDER": provider, "ANTHROPIC_FOUNDRY_BASE_URL": f"{base_url}/anthropic",
                "ANTHROPIC_FOUNDRY_API_KEY": FAKE_FOUNDRY_KEY}
    return None


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return struct.pack("!B", len(raw_name)) + raw_name + struct.pack("!BH", 7, len(raw_value)) + raw_value


def eventstream_frame(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One AWS event-stream message: prelude (total length, headers length, prelude CRC32),
    string headers, the payload, and the message's CRC32."""
    raw_headers = b"".join(_header(k, v) for k, v in headers.items())
    total = 4 + 4 + 4 + len(raw_headers) + len(payload) + 4
    prelude = struct.pack("!II", total, len(raw_headers))
    prelude += struct.pack("!I", binascii.crc32(prelude) & 0xFFFFFFFF)
    body = prelude + raw_headers + payload
    return body + struct.pack("!I", binascii.crc32(body) & 0xFFFFFFFF)


def bedrock_error(body: Any, headers: Mapping[str, str] | None) -> tuple[Any, dict[str, str]]:
    """An error answer as Bedrock writes it: ``{"message": ...}`` with the exception's name in
    ``x-amzn-errortype`` (the Messages API's own error body, for another provider)."""
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict):
        return body, dict(headers or {})
    exception = _EXCEPTIONS.get(str(err.get("type")), "InternalServerException")
    exception = exception[:1].upper() + exception[1:]
    kind = f"{exception}:http://internal.amazon.com/coral/com.amazon.bedrock/"
    return {"message": err.get("message")}, {**(headers or {}), "x-amzn-errortype": kind}


def bedrock_event(name: str, data: dict[str, Any]) -> bytes:
    """A Messages API event as Bedrock streams it: a ``chunk`` event whose payload is
    ``{"bytes": base64(event JSON)}``; an ``error`` as an exception frame."""
    if name == "error":
        err = data.get("error") or {}
        exception = _EXCEPTIONS.get(str(err.get("type")), "internalServerException")
        return eventstream_frame({":message-type": "exception", ":exception-type": exception,
                                  ":content-type": "application/json"},
                                 json.dumps({"message": str(err.get("message"))}).encode())
    encoded = base64.b64encode(json.dumps(data, separators=(",", ":")).encode()).decode()
    return eventstream_frame({":event-type": "chunk", ":content-type": "application/json",
                              ":message-type": "event"}, json.dumps({"bytes": encoded}).encode())
