"""What the fake Messages API remembers about each request it received."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .cloud import Route
from .script import HttpError, ScriptedResponse

__all__ = ["RecordedRequest"]


@dataclass
class RecordedRequest:
    """One HTTP request the fake received, and what it answered.

    ``body`` is the parsed JSON (``rec["messages"]`` reads it too). ``outcome`` is one of
    ``ok``, ``http_error``, ``stream_error``, ``cut``, ``stall``, ``rejected``,
    ``unauthorized``, ``exhausted``, ``client_disconnected``, ``server_closed``,
    ``not_found``. Times are ``time.monotonic()`` on the server's side (for benchmarks):
    ``received_at``, ``message_stop_at`` (when ``message_stop`` was written), ``finished_at``.
    """

    number: int
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    received_at: float
    status: int | None = None
    outcome: str = "pending"
    error: str | None = None
    script_index: int | None = None
    response: ScriptedResponse | HttpError | None = None
    message_stop_at: float | None = None
    finished_at: float | None = None
    #: which provider's endpoint it reached, and what its path said (replay/cloud.py)
    route: Route | None = None

    def __getitem__(self, key: str) -> Any:
        return self.body[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.body.get(key, default) if isinstance(self.body, dict) else default

    @property
    def stream(self) -> bool:
        if self.route is not None and self.route.stream is not None:
            return self.route.stream  # Bedrock says it in the path, not the body
        return bool(self.get("stream"))

    @property
    def provider(self) -> str:
        """``anthropic``, ``bedrock``, ``vertex`` or ``foundry``: whose endpoint it reached."""
        return self.route.provider if self.route is not None else "anthropic"
