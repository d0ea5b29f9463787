"""Keep secrets out of everything the UI shows or saves.

Widget state, the static transcript and the terminal output all pass through
:func:`redact`. It replaces the *values* of secret-looking environment variables
(``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``: ``AWS_SECRET_ACCESS_KEY``,
``GOOGLE_OAUTH_ACCESS_TOKEN``, ``ANTHROPIC_FOUNDRY_API_KEY`` among them) and strings shaped
like Anthropic keys, AWS access key ids, Google OAuth access tokens (docs/providers.md) and
PEM private keys.
A tool result that echoes ``os.environ`` therefore shows
``[redacted ANTHROPIC_API_KEY]`` rather than the key, in the live widget and in the
saved notebook alike.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.I)
# Anthropic-style keys, and bearer tokens in headers, even when not in the environment.
_SECRET_SHAPES = (
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"(?i)(x-api-key|authorization)(\s*[:=]\s*)(bearer\s+)?[^\s'\",}]{8,}"),
    # AWS access key ids (long-term AKIA, temporary ASIA) and Google OAuth access tokens
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b|\bya29\.[A-Za-z0-9_\-.]{8,}"),
    # a PEM private key (ssh, TLS, PGP armour), from its BEGIN line to its END line, or to
    # the end of the text when it was cut off
    re.compile(r"-----BEGIN ([A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----.*?(?:-----END \1-----|\Z)", re.S),
)
#: Values shorter than this are not treated as secrets (``test-key`` style values in
#: tests, or flags like ``1``, would otherwise blank out ordinary words).
MIN_SECRET_LEN = 12

_cache: tuple[dict[Any, Any], list[tuple[str, str]]] | None = None


def _environ_now() -> Mapping[Any, Any]:
    # os.environ's own dict (CPython keeps it as ``_data``, bytes to bytes on POSIX): comparing
    # it with the copy taken last time is one C-level dict comparison, where rebuilding and
    # sorting every (name, value) pair cost that work twice per frame while a run streams.
    environ: Mapping[Any, Any] = getattr(os.environ, "_data", os.environ)
    return environ


def _secret_values() -> list[tuple[str, str]]:
    """(value, name) pairs of secret-looking environment variables, longest first; worked
    out again only when the environment changed since the last call."""
    global _cache
    environ = _environ_now()
    if _cache is not None and _cache[0] == environ:
        return _cache[1]
    found = [
        (value, name)
        for name, value in os.environ.items()
        if _SECRET_NAME.search(name) and len(value) >= MIN_SECRET_LEN
    ]
    found.sort(key=lambda p: -len(p[0]))
    _cache = (dict(environ), found)
    return found


def redact(text: str) -> str:
    """``text`` with every known secret replaced by ``[redacted NAME]``."""
    if not text:
        return text
    for value, name in _secret_values():
        if value in text:
            text = text.replace(value, f"[redacted {name}]")
    # the patterns run only where their fixed words occur: a case-insensitive search over a
    # long text (a command's megabytes of output) costs about a microsecond per character
    if "sk-ant-" in text:
        text = _SECRET_SHAPES[0].sub("[redacted key]", text)
    folded = text.lower()
    if "x-api-key" in folded or "authorization" in folded:
        text = _SECRET_SHAPES[1].sub(lambda m: f"{m.group(1)}{m.group(2)}[redacted]", text)
    if "AKIA" in text or "ASIA" in text or "ya29." in text:
        text = _SECRET_SHAPES[2].sub("[redacted credential]", text)
    if "-----BEGIN " in text and "PRIVATE KEY" in text:
        text = _SECRET_SHAPES[3].sub(lambda m: f"[redacted {m.group(1).lower()}]", text)
    return text


def safe_prefix_length(text: str) -> int:
    """How much of ``text``, a text still growing (a streamed answer), can be judged now:
    everything before a tail that could be the start of a secret. The tail is held back
    from its last whitespace (a key, a token and the value of a header are one word), and
    further back if it ends with the beginning of a known secret's value."""
    cut = max(text.rfind(" "), text.rfind("\n"), text.rfind("\t"), text.rfind("\r")) + 1
    for value, _name in _secret_values():
        for size in range(min(len(value) - 1, len(text)), 0, -1):
            if text.endswith(value[:size]):
                cut = min(cut, len(text) - size)
                break
    # "Authorization: Bearer" and "x-api-key:" are followed by their value after a space
    header = re.search(r"(?i)(x-api-key|authorization)\s*[:=]?\s*(bearer\s*)?$", text)
    if header:
        cut = min(cut, header.start())
    return cut


def redact_partial(text: str, done: bool = False) -> str:
    """``text`` redacted; while it is still streaming (``done`` false), only the part
    :func:`safe_prefix_length` says can be judged. Stop while the model quotes a token
    leaves no prefix of it anywhere."""
    return redact(text if done else text[: safe_prefix_length(text)])


def is_secret_name(name: str) -> bool:
    """An environment variable the agent must not hand on: the agent's own (``ANTHROPIC_*``)
    and anything named like a key, token, secret or password."""
    return name.upper().startswith("ANTHROPIC_") or bool(_SECRET_NAME.search(name))


def without_secrets(environ: dict[str, str]) -> dict[str, str]:
    """``environ`` without the variables :func:`is_secret_name` picks (for processes the
    agent starts, such as its kernels)."""
    return {name: value for name, value in environ.items() if not is_secret_name(name)}


#: Header names whose values are credentials whatever they look like.
_SECRET_HEADERS = ("authorization", "proxy-authorization", "cookie")


def redact_values(values: Mapping[str, str]) -> dict[str, str]:
    """Settings shown to a person (an MCP server's headers or environment): the value of a
    secret-looking name (``*TOKEN*``, ``Authorization``...) becomes ``[redacted]``, the others
    go through :func:`redact`."""
    return {name: "[redacted]" if is_secret_name(name) or name.lower() in _SECRET_HEADERS else redact(value)
            for name, value in values.items()}
