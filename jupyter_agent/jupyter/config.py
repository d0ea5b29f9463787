"""``AgentConfig``'s old place, kept for code that imports it from here: the class lives in
:mod:`jupyter_agent.jupyter.kernel.agent_config` (traitlets configures it by class name,
``c.AgentConfig...``, wherever it lives)."""

from .kernel.agent_config import AgentConfig, agent_config

__all__ = ["AgentConfig", "agent_config"]
