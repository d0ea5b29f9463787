"""Token usage, summed over a run's requests."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


@dataclass
class Usage:
    """Token counts as the Messages API reports them, plus the estimated cost in USD."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cost_usd: float = 0.0
    requests: int = 0

    def add(self, other: Usage) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    @classmethod
    def from_api(cls, usage: dict[str, Any] | None) -> Usage:
        usage = usage or {}
        return cls(
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
            cache_creation_input_tokens=int(usage.get("cache_creation_input_tokens") or 0),
            cache_read_input_tokens=int(usage.get("cache_read_input_tokens") or 0),
        )

    @property
    def total_tokens(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_creation_input_tokens
            + self.cache_read_input_tokens
        )


class StreamUsage:
    """Usage counted from the stream itself, so a response that never finished still counts.

    The API reports usage in ``message_start`` (input and cache tokens) and updates it in
    ``message_delta`` (output tokens). A run stopped mid-stream, a model error or a retried
    request never yields an :class:`AssistantMessage`, yet those tokens were spent:
    :meth:`observe` every event of a run and :attr:`total` is the spend so far. A complete
    response's own usage (with its cost) replaces what the stream said about it.
    ``price(model, usage) -> USD`` estimates the cost of unfinished responses.
    """

    def __init__(self, price: Any = None) -> None:
        self.done = Usage()  # responses whose end we saw (complete or cut short)
        self.current = Usage()  # the response now streaming
        self._model = ""
        self._price = price

    def observe(self, event: Any) -> None:
        """Fold one run event in (other event types are ignored)."""
        kind = type(event).__name__
        if kind == "StreamEvent":
            usage = (event.snapshot or {}).get("usage") if isinstance(event.snapshot, dict) else None
            if event.type == "message_start":
                self._settle()
                self._model = str((event.snapshot or {}).get("model") or "")
            if event.type in ("message_start", "message_delta") and isinstance(usage, dict):
                self.current = Usage.from_api(usage)
                self.current.requests = 1
                if self._price is not None:
                    self.current.cost_usd = self._price(self._model, self.current)
        elif kind == "AssistantMessage":
            usage = Usage(**{f.name: getattr(event.usage, f.name) for f in fields(Usage)})
            usage.requests = usage.requests or 1
            self.current = Usage()
            self.done.add(usage)
        elif kind in ("RequestStart", "ModelRetry", "ModelFallback", "Terminal"):
            self._settle()

    def _settle(self) -> None:
        if self.current.total_tokens:
            self.done.add(self.current)
        self.current = Usage()

    @property
    def total(self) -> Usage:
        """Everything spent so far, the streaming response included."""
        total = Usage()
        total.add(self.done)
        total.add(self.current)
        return total
