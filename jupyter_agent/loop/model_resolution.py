"""Turn ``model=`` (an id, a Model, or None) into a Model, importing ``anthropic`` only here
and only when a real model is needed."""

from __future__ import annotations

import os
from typing import Any

from .model_protocol import Model

REPLAY_ENV = "JUPYTER_AGENT_REPLAY"


def resolve_model(model: Any = None, *, replay: str | None = None) -> Model:
    """A Model object as is; ``replay`` or ``$JUPYTER_AGENT_REPLAY`` for the offline replay
    of a recorded transcript; otherwise the Anthropic model named (or the default)."""
    if model is not None and not isinstance(model, str):
        if not isinstance(model, Model):
            raise TypeError(f"model must be a model id string or a Model, not {type(model).__name__}.")
        return model
    replay = replay or (os.environ.get(REPLAY_ENV) if model is None else None)
    if replay:
        from ..testing.replay import ReplayModel

        return ReplayModel(replay)
    from ..model import AnthropicModel

    return AnthropicModel(model)
