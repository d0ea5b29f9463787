"""The model layer: the only package that imports ``anthropic`` (lazily, on first request).

:class:`AnthropicModel` streams the Messages API with retries, fallback, usage and cost;
:func:`model_from_env` picks the replay model when ``JUPYTER_AGENT_REPLAY`` is set.
"""

from __future__ import annotations

import os
from typing import Any

from ..loop.model_protocol import Model, ModelError, ModelRequest, PromptTooLongError
from .accumulate import MessageAccumulator
from .anthropic_model import DEFAULT_MODEL, NO_API_KEY_MESSAGE, AnthropicModel
from .pricing import cost_usd, price_for

__all__ = ["AnthropicModel", "DEFAULT_MODEL", "NO_API_KEY_MESSAGE", "MessageAccumulator", "Model",
           "ModelError", "ModelRequest", "PromptTooLongError", "cost_usd", "price_for", "model_from_env"]


def model_from_env(model: str | None = None, **kwargs: Any) -> Model:
    """The default model: a :class:`~jupyter_agent.testing.ReplayModel` of the transcript
    named by ``JUPYTER_AGENT_REPLAY`` if set, else an :class:`AnthropicModel` (``model``
    or ``JUPYTER_AGENT_MODEL`` or :data:`DEFAULT_MODEL`; ``kwargs`` go to it)."""
    replay = os.environ.get("JUPYTER_AGENT_REPLAY")
    if replay:
        from ..testing.replay import ReplayModel

        return ReplayModel(replay)
    return AnthropicModel(model, **kwargs)
