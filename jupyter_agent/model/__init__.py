"""The model layer: the only package that imports ``anthropic`` (lazily, on first request).

:class:`AnthropicModel` streams the Messages API with retries, fallback, usage and cost;
:func:`jupyter_agent.agent.resolve_model` picks between it and the replay model.
"""

from __future__ import annotations

from ..loop.model_protocol import Model, ModelError, ModelRequest, PromptTooLongError
from .accumulate import MessageAccumulator
from .anthropic_model import DEFAULT_MODEL, NO_API_KEY_MESSAGE, AnthropicModel
from .pricing import cost_usd, price_for

__all__ = ["AnthropicModel", "DEFAULT_MODEL", "NO_API_KEY_MESSAGE", "MessageAccumulator", "Model",
           "ModelError", "ModelRequest", "PromptTooLongError", "cost_usd", "price_for"]
