"""The root of jupyter-agent's exceptions, and the families callers catch by kind.

- :class:`JupyterAgentError`: everything the package raises on purpose (``except
  JupyterAgentError`` catches them all, and nothing else).
- :class:`Busy`: a run is still going, and a second one would fork the conversation (one
  run at a time). ``Conversation.send()``'s ``ConversationBusy`` and the kernel session's
  ``AgentBusy`` are this class under their old names.
- :class:`Refused`: something asked for cannot be done now; the message says why and what
  to do (an undo, a resume, an outside agent's call). ``UndoRefused``, ``ResumeRefused``
  and the outside calls' ``Refused`` are this class under their old names.

The model's and the tools' own failures (``loop.model_protocol.ModelError``,
``loop.tool.ToolError``), a policy's (``policy.PolicyViolation``), a saved conversation's
(``SavedConversationError``), a missing key (``NoApiKey``), the page's (``BridgeError``) and
the MCP servers' (``McpServerError``, the MCP server's ``OutsideError``) derive from the root
too; tests/loop/test_errors.py checks that no other exception starts a tree of its own.
This module imports nothing of the package: every part may raise these.
"""

from __future__ import annotations

__all__ = ["Busy", "JupyterAgentError", "Refused"]


class JupyterAgentError(Exception):
    """The root of the exceptions jupyter-agent raises on purpose."""


class Busy(JupyterAgentError, RuntimeError):
    """A run is still going: stop it or wait for it before starting the next (one run at a
    time, or the conversation would fork). The message says how."""


class Refused(JupyterAgentError, RuntimeError):
    """It cannot be done now (no such run, nothing saved, a stale read...): the message
    says why and what to do instead."""
