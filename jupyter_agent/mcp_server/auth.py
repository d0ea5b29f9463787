"""The MCP endpoint's own token: one a user can give an outside client without giving it the
whole Jupyter server.

The endpoint takes the Jupyter server's own authentication (its token, or whatever identity
provider it uses) and, when one is set, a token of its own: ``c.JupyterAgentMcp.token`` in
``jupyter_server_config.py`` (or ``--JupyterAgentMcp.token=...``), else the environment
variable ``JUPYTER_AGENT_MCP_TOKEN`` of the server. That token opens only this endpoint: every
other handler of the server asks the server's identity provider, which does not know it.
"""

from __future__ import annotations

import enum
import hmac
import logging
import os
from typing import Any

from traitlets import Unicode, default
from traitlets.config import Configurable

from .protocol import TOKEN_ENV

log = logging.getLogger(__name__)

ENV = TOKEN_ENV


class Refusal(enum.Enum):
    """Why the endpoint refused a request."""

    NO_TOKEN = "no-token"  # 401
    WRONG_TOKEN = "wrong-token"  # 401
    HOST = "host"  # 403: a Host header the server does not serve (DNS rebinding), whatever the token


_WHAT_TO_SEND = ("Send the header 'Authorization: token TOKEN' (or 'Bearer TOKEN'), or ?token=TOKEN in the URL, "
                 f"with the Jupyter server's token, or with the endpoint's own token ({ENV} or "
                 "c.JupyterAgentMcp.token in the server's config). docs/mcp-server.md says how.")
_MESSAGES = {
    Refusal.NO_TOKEN: "jupyter-agent's MCP endpoint: no token was sent. " + _WHAT_TO_SEND,
    Refusal.WRONG_TOKEN: "jupyter-agent's MCP endpoint: the token is wrong. " + _WHAT_TO_SEND,
    Refusal.HOST: ("jupyter-agent's MCP endpoint: the request's Host header names a host this Jupyter server does "
                   "not serve, so it is refused whatever the token (a guard against DNS rebinding). Connect to the "
                   "server by the address it listens on (127.0.0.1 or localhost), or start it with "
                   "--ServerApp.allow_remote_access=True (or add the name to ServerApp.local_hostnames)."),
}
#: The ``WWW-Authenticate`` challenge of a 401 (RFC 6750).
CHALLENGE = {
    Refusal.NO_TOKEN: 'Bearer realm="jupyter-agent-mcp"',
    Refusal.WRONG_TOKEN: 'Bearer realm="jupyter-agent-mcp", error="invalid_token"',
    Refusal.HOST: 'Bearer realm="jupyter-agent-mcp"',
}


def refusal_message(why: Refusal) -> str:
    """What a refused request is told (its JSON ``message``): why, and what to send."""
    return _MESSAGES[why]


class JupyterAgentMcp(Configurable):
    """Settings of jupyter-agent's MCP endpoint (``c.JupyterAgentMcp.*`` in the server's config)."""

    token = Unicode(help=(
        "A token that opens jupyter-agent's MCP endpoint (/jupyter-agent/mcp) and nothing else of the "
        f"Jupyter server, for outside agents. Empty: only the server's own authentication. Default: ${ENV}."),
    ).tag(config=True)

    @default("token")
    def _token_default(self) -> str:
        return os.environ.get(ENV, "").strip()


def mcp_token(serverapp: Any) -> str:
    """The endpoint's own token for ``serverapp`` ('' when none is set)."""
    token = str(JupyterAgentMcp(parent=serverapp).token or "").strip()
    if token and len(token) < 16:
        log.warning("jupyter-agent's MCP token is short (%d characters): use a long random one "
                    "(python -c 'import secrets; print(secrets.token_hex(24))')", len(token))
    return token


def token_given(headers: Any, query_token: str | None = None) -> str | None:
    """The token a request sends: ``Authorization: token X`` or ``Bearer X``, else ``?token=X``."""
    value = str(headers.get("Authorization") or "").strip()
    scheme, _, given = value.partition(" ")
    if scheme.lower() in ("token", "bearer") and given.strip():
        return given.strip()
    return query_token or None


def matches(given: str | None, token: str) -> bool:
    """Whether ``given`` is the endpoint's token (in constant time); never with no token set."""
    return bool(token) and given is not None and hmac.compare_digest(given.encode(), token.encode())
