"""Settings of the ``%%agent`` magic and the chat panel, the Jupyter way (traitlets).

Set them in ``ipython_config.py``::

    c.AgentConfig.model = "claude-sonnet-4-5"
    c.AgentConfig.permission_mode = "acceptEdits"

or at run time with ``%config AgentConfig.max_turns = 20``, or with the line magic
``%agent --model M --permission-mode P``. A cell's own options (``%%agent --model M``)
apply to that run only.
"""

from __future__ import annotations

from traitlets import Bool, CaselessStrEnum, Dict, Float, Int, List, TraitError, Unicode, validate
from traitlets.config import Configurable

from ..loop.permission_result import PERMISSION_MODES


class AgentConfig(Configurable):
    """Defaults for agent runs started from this kernel."""

    model = Unicode(
        "",
        help="Model name (empty: $JUPYTER_AGENT_MODEL, else the default Sonnet).",
    ).tag(config=True)
    permission_mode = CaselessStrEnum(
        PERMISSION_MODES,
        default_value="default",
        help="default: reads allowed, writes and runs ask; acceptEdits: edits in the "
        "working directory allowed; plan: no writes; bypassPermissions: allow (safety "
        "paths and cell runs still ask).",
    ).tag(config=True)
    max_turns = Int(
        0, help="Stop after this many turns (0: no limit).",
    ).tag(config=True)
    allow = List(
        Unicode(), default_value=[],
        help="Allow rules, e.g. ['NotebookRun'] or ['Edit(src/**)']: matching calls run "
        "without asking (deny rules and safety paths still win). Running cells asks in every "
        "mode unless a rule allows it, so unattended runs need 'NotebookRun' here.",
    ).tag(config=True)

    @validate("allow")
    def _valid_rules(self, proposal: dict) -> list:
        from ..permissions import Rule

        for text in proposal["value"]:
            try:
                Rule.parse(text)
            except ValueError as exc:
                raise TraitError(f"AgentConfig.allow: {exc}") from None
        return proposal["value"]

    mcp_servers = Dict(
        default_value={},
        help="MCP servers whose tools the agent may use (as mcp__<server>__<tool>), in Claude Code's "
        "shape: {'name': {'command': ..., 'args': [...], 'env': {...}}} (stdio) or {'name': {'type': "
        "'http', 'url': ..., 'headers': {...}}}. Each tool asks before it runs unless an allow rule "
        "('mcp__<server>__<tool>' or 'mcp__<server>') covers it. `%agent mcp` lists them.",
    ).tag(config=True)

    @validate("mcp_servers")
    def _valid_servers(self, proposal: dict) -> dict:
        from ..mcp import parse_servers

        try:
            parse_servers(proposal["value"])
        except ValueError as exc:
            raise TraitError(f"AgentConfig.mcp_servers: {exc}") from None
        return proposal["value"]

    cwd = Unicode(
        "", help="Working directory of the agent's tools (empty: the kernel's).",
    ).tag(config=True)
    notebook_path = Unicode(
        "",
        help="The notebook the agent works on (empty: found from the server's "
        "JPY_SESSION_NAME or the editor's variables).",
    ).tag(config=True)
    replay = Unicode(
        "",
        help="Path of a recorded transcript: runs use the offline replay model "
        "(no API key, no network). $JUPYTER_AGENT_REPLAY does the same.",
    ).tag(config=True)
    wait = CaselessStrEnum(
        ("auto", "always", "never"),
        default_value="auto",
        help="Whether a %%agent cell stays busy until its run ends. auto: only when "
        "executed headless (nbclient, papermill, jupyter execute), so each run "
        "finishes before the next cell; interactive frontends get the cell back at once.",
    ).tag(config=True)
    frame_interval = Float(
        0.06,
        help="Seconds between widget updates while text streams (one update per frame, "
        "not one per token).",
    ).tag(config=True)
    kernel_variables = Bool(
        True,
        help="Tell the agent, at the start of each run, the kernel's variables (names, "
        "types, shapes, data frame columns; values of short scalars), found without "
        "running any of their code.",
    ).tag(config=True)
    context_window = Int(
        0,
        help="The context window runs work to, in tokens (0: $JUPYTER_AGENT_CONTEXT_WINDOW, else "
        "the model's). Past it the conversation is compacted: old tool results cleared, then "
        "summarised, keeping your own messages word for word.",
    ).tag(config=True)
    stop_on_interrupt = Bool(
        True,
        help="A kernel interrupt while the kernel is idle stops the running agent run.",
    ).tag(config=True)

