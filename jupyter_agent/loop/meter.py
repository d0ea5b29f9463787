"""The run's spend as the stream reports it (:class:`StreamUsage`), beside :class:`~.usage.Usage`.

Apart from :mod:`.usage` because it reads the loop's events, and the events carry a ``Usage``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields

from .events import AssistantMessage, ModelFallback, ModelRetry, RequestStart, StreamEvent
from .state import Terminal
from .usage import Usage

__all__ = ["StreamUsage"]


class StreamUsage:
    """Usage counted from the stream itself, so a response that never finished still counts.

    The API reports usage in ``message_start`` (input and cache tokens) and updates it in
    ``message_delta`` (output tokens). A run stopped mid-stream, a model error or a retried
    request never yields an :class:`AssistantMessage`, yet those tokens were spent:
    :meth:`observe` every event of a run and :attr:`total` is the spend so far. A complete
    response's own usage (with its cost) replaces what the stream said about it.
    ``price(model, usage) -> USD`` estimates the cost of unfinished responses.
    """

    def __init__(self, price: Callable[[str, Usage], float] | None = None) -> None:
        self.done = Usage()  # responses whose end we saw (complete or cut short)
        self.current = Usage()  # the response now streaming
        self._model = ""
        self._price = price

    def observe(self, event: object) -> None:
        """Fold one run event in (other event types are ignored)."""
        if isinstance(event, StreamEvent):
            usage = event.snapshot.get("usage") if isinstance(event.snapshot, dict) else None
            if event.type == "message_start":
                self._settle()
                self._model = str(event.snapshot.get("model") or "")
            if event.type in ("message_start", "message_delta") and isinstance(usage, dict):
                self.current = Usage.from_api(usage)
                self.current.requests = 1
                if self._price is not None:
                    self.current.cost_usd = self._price(self._model, self.current)
        elif isinstance(event, AssistantMessage):
            done = Usage(**{f.name: getattr(event.usage, f.name) for f in fields(Usage)})
            done.requests = done.requests or 1
            self.current = Usage()
            self.done.add(done)
        elif isinstance(event, (RequestStart, ModelRetry, ModelFallback, Terminal)):
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
