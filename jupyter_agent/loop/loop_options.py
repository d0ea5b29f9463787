"""The options the loop itself reads: :class:`LoopOptions`, each declared once.

``jupyter_agent.options.AgentOptions`` extends it with what the wiring reads (the model, the
permission rules, the working folder...), so a run's options are one object: ``query()``
resolves what needs resolving (the window from the environment, the spend limit bounded by the
administrator's policy), and :class:`~.turn.QueryParams` holds that object as ``options``. The
loop cannot import ``options`` (the package graph's rule), and needs no more than this.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .permission_result import CanUseTool
    from .wire import ThinkingConfig


@dataclass(frozen=True)
class LoopOptions:
    """What the loop reads of a run's options (``AgentOptions`` adds the rest)."""

    #: End the run after this many turns (None: no limit).
    max_turns: int | None = None
    #: The most tokens one response may have.
    max_tokens: int = 8192
    #: Extended thinking (``{"type": "enabled", "budget_tokens": N}``).
    thinking: ThinkingConfig | None = None
    #: The context window runs work to, tokens (None: ``$JUPYTER_AGENT_CONTEXT_WINDOW``, else the
    #: model's, which ``query()`` reads before the run); past it the history is compacted.
    context_window: int | None = None
    #: End the run (``max_budget``) once it has spent this much, USD (the policy's limit still
    #: applies: ``query()`` bounds it before the run).
    max_budget_usd: float | None = None
    #: Answers the calls that ask (None: nobody answers, and they are refused).
    can_use_tool: CanUseTool | None = None
    #: Start tools while the response still streams.
    streaming_tools: bool = True
    #: Yield a ``Checkpoint`` after each step (the lessons' stepper).
    checkpoints: bool = False
