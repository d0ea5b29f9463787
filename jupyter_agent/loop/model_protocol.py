"""The contract between the loop and a model: what the loop sends, what it gets back.

The loop never imports ``anthropic``; it talks to anything with this shape. The real
implementation is :class:`jupyter_agent.model.AnthropicModel`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable
from collections.abc import AsyncIterator

from ..errors import JupyterAgentError
from .events import AssistantMessage, ModelFallback, ModelRetry, Notice, StreamEvent
from .wire import JSONObject, Message, SystemBlock, ThinkingConfig, ToolDefinition

#: ``Notice``: a line for the user from the model layer (the offline replay says what it plays)
ModelEvent = StreamEvent | ModelRetry | ModelFallback | AssistantMessage | Notice


@dataclass(frozen=True)
class ModelRequest:
    """One request as the loop builds it (seed step 1).

    ``messages`` are Messages-API messages without ``cache_control``: the model adds
    the cache markers on its own copy so the history stays byte-stable.
    """

    messages: list[Message]
    system: list[SystemBlock]
    tools: list[ToolDefinition]
    max_tokens: int = 8192
    thinking: ThinkingConfig | None = None
    #: More request fields, sent as they are (``temperature``, ``metadata``...).
    extra: JSONObject = field(default_factory=dict)


@runtime_checkable
class Model(Protocol):
    """Streams one response for a request.

    ``stream()`` yields ``StreamEvent``s as the response arrives, ``ModelRetry`` /
    ``ModelFallback`` when it starts over (the consumer drops the partial response, or
    closes the stream to keep it when tools that changed something already ran: so do
    not start the retry before the consumer asks for the next event), and exactly one
    ``AssistantMessage`` last, on success. When it gives up it raises
    :class:`ModelError`; it never ends quietly without an ``AssistantMessage``.

    Optional: ``price(model_id, usage) -> float`` (USD), which the run's usage meter uses
    for a response cut short (a complete one carries its own cost).
    """

    name: str

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]: ...


class ModelError(JupyterAgentError):
    """A model request failed for good (after the model layer's retries and fallback).

    ``kind`` is a short machine-readable name (``overloaded``, ``rate_limit``,
    ``authentication``, ``invalid_request``, ``stream_cut``, ``stream_stalled``,
    ``api_error``, ``connection``, ``no_api_key``...); ``status`` the HTTP status if any.
    """

    def __init__(self, message: str, *, kind: str = "api_error", status: int | None = None,
                 retryable: bool = False) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.retryable = retryable


class PromptTooLongError(ModelError):
    """The request is over the model's context window (HTTP 400 ``prompt is too long``)."""

    def __init__(self, message: str, *, status: int | None = 400) -> None:
        super().__init__(message, kind="prompt_too_long", status=status)
