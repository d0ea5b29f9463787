"""Settings of the ``%%agent`` magic and the chat panel, the Jupyter way (traitlets).

Set them in ``ipython_config.py``::

    c.AgentConfig.model = "claude-sonnet-4-5"
    c.AgentConfig.permission_mode = "acceptEdits"

or at run time with ``%config AgentConfig.max_turns = 20``, or with the line magic
``%agent --model M --permission-mode P``. A cell's own options (``%%agent --model M``)
apply to that run only.

An administrator's ``jupyter_agent_policy.json`` (docs/deploy.md, "JupyterHub") bounds
``model``, ``permission_mode`` and ``max_budget_usd``, and may pin ``provider``: a value it
does not allow is refused here, with a message naming the file.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, Unpack

from traitlets import Bool, CaselessStrEnum, Dict, Float, Int, List, TraitError, Unicode, default, validate
from traitlets.config import Config, Configurable

from ...loop.permission_result import PERMISSION_MODES
from ...model.providers import PROVIDER_NAMES
from ...options import AgentOptions, OptionKeywords
from ...policy import AdminPolicy, PolicyViolation, load_policy
from .trait_events import Proposal

if TYPE_CHECKING:
    from ...model.providers import ProviderSettings

log = logging.getLogger(__name__)

_R = TypeVar("_R")


class AgentConfig(Configurable):
    """Defaults for agent runs started from this kernel."""

    model = Unicode(
        "",
        help="Model name (empty: $JUPYTER_AGENT_MODEL, else the default Sonnet).",
    ).tag(config=True)
    provider = CaselessStrEnum(
        ("", *PROVIDER_NAMES),
        default_value="",
        help="Where requests go: anthropic (the Anthropic API), bedrock (Amazon Bedrock), vertex "
        "(Google Vertex AI) or foundry (Microsoft Foundry); empty: $JUPYTER_AGENT_PROVIDER, else "
        "anthropic. Credentials come from each provider's usual places (docs/providers.md).",
    ).tag(config=True)
    provider_region = Unicode(
        "", help="The AWS region (bedrock) or Google Cloud region (vertex); empty: AWS_REGION / CLOUD_ML_REGION.",
    ).tag(config=True)
    provider_project = Unicode(
        "", help="The Google Cloud project (vertex); empty: ANTHROPIC_VERTEX_PROJECT_ID, else your credentials'.",
    ).tag(config=True)
    provider_resource = Unicode(
        "", help="The Microsoft Foundry resource name (foundry); empty: ANTHROPIC_FOUNDRY_RESOURCE.",
    ).tag(config=True)
    permission_mode = CaselessStrEnum(
        PERMISSION_MODES,
        default_value="default",
        help="default: reads allowed, writes and runs ask; acceptEdits: edits in the "
        "working directory allowed; plan: no writes; bypassPermissions: allow (safety "
        "paths and cell runs still ask).",
    ).tag(config=True)
    max_budget_usd = Float(
        0.0,
        help="End a run once it has spent this much, in US dollars (estimated from list prices; "
        "0: no limit of your own). An administrator's limit, if any, still applies and "
        "cannot be raised.",
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

    @default("permission_mode")
    def _default_mode(self) -> str:
        try:
            return load_policy().default_mode("default")
        except PolicyViolation:  # a broken policy file: every run refuses, naming it
            log.debug("the administrator's policy cannot be read", exc_info=True)
            return "default"

    @validate("model")
    def _allowed_model(self, proposal: Proposal[str]) -> str:
        return _within_policy(lambda p: p.check_model(proposal["value"]) if proposal["value"] else "")

    @validate("provider")
    def _allowed_provider(self, proposal: Proposal[str]) -> str:
        if not proposal["value"]:
            return ""
        return str(_within_policy(lambda p: p.check_provider(proposal["value"]).value))

    def options(self, **changes: Unpack[OptionKeywords]) -> AgentOptions:
        """The runs' options these settings make (0 and empty mean "not set": the default),
        with ``changes`` (e.g. the notebook found from the kernel)."""
        return AgentOptions(
            model=self.model or None, provider=self.provider or None, provider_settings=self.provider_settings(),
            replay=self.replay or None, permission_mode=self.permission_mode, allow=tuple(self.allow),
            cwd=self.cwd or None, notebook_path=self.notebook_path or None, max_turns=self.max_turns or None,
            context_window=self.context_window or None, max_budget_usd=self.max_budget_usd or None,
            mcp_servers=dict(self.mcp_servers), bash_sandbox=self.bash_sandbox,
        ).replace(**changes)

    def provider_settings(self) -> ProviderSettings:
        """The region, project and resource set here, as the model layer takes them."""
        from ...model.providers import ProviderSettings

        return ProviderSettings(region=self.provider_region, project=self.provider_project,
                                resource=self.provider_resource)

    @validate("permission_mode")
    def _allowed_mode(self, proposal: Proposal[str]) -> str:
        return _within_policy(lambda p: p.check_permission_mode(proposal["value"]))

    @validate("max_budget_usd")
    def _allowed_budget(self, proposal: Proposal[float]) -> float:
        _within_policy(lambda p: p.check_budget(proposal["value"]))
        return float(proposal["value"])

    @validate("allow")
    def _valid_rules(self, proposal: Proposal[list[str]]) -> list[str]:
        from ...permissions import Rule

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
    def _valid_servers(self, proposal: Proposal[dict[str, object]]) -> dict[str, object]:
        from ...mcp import parse_servers

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
    bash_sandbox = Bool(
        False,
        help="Run the agent's Bash commands in a sandbox (bubblewrap: no network, writes only inside "
        "the working folder); sandboxed commands run without asking (deny and ask rules still apply). "
        "Needs bwrap; where it is missing or cannot run, turning this on is refused with the reason.",
    ).tag(config=True)

    @validate("bash_sandbox")
    def _sandbox_available(self, proposal: Proposal[bool]) -> bool:
        from ...tools.bash import sandbox_unavailable

        if proposal["value"] and (why := sandbox_unavailable()):
            raise TraitError(f"AgentConfig.bash_sandbox: {why}")
        return bool(proposal["value"])

    stop_on_interrupt = Bool(
        True,
        help="A kernel interrupt while the kernel is idle stops the running agent run.",
    ).tag(config=True)
    save_conversation = Bool(
        True,
        help="Save the conversation after each turn (history with secrets redacted, session rules, undo "
        "records) in the Jupyter data folder, so that `%agent resume` brings it back after a kernel restart.",
    ).tag(config=True)



def _within_policy(check: Callable[[AdminPolicy], _R]) -> _R:
    """``check(policy)``, with the administrator's refusal as the TraitError ``%config`` shows."""
    try:
        return check(load_policy())
    except ValueError as exc:  # PolicyViolation, or a value no policy could allow
        raise TraitError(str(exc)) from None


#: The settings an administrator's policy bounds.
POLICY_TRAITS = ("model", "permission_mode", "max_budget_usd", "provider")


def agent_config(parent: Configurable | None) -> AgentConfig:
    """The kernel's :class:`AgentConfig` from ``parent``'s config (IPython's). A value from
    the user's own config files that the administrator's policy refuses is left out, and
    said on stderr naming the policy file, so the extension still loads, within the policy."""
    try:
        return AgentConfig(parent=parent)
    except TraitError:
        section = parent.config.get("AgentConfig") if parent is not None else None
        if not section:
            raise
    for name in POLICY_TRAITS:
        if name not in section:
            continue
        try:
            AgentConfig(config=Config({"AgentConfig": {name: section[name]}}))
        except TraitError as refused:
            print(f"jupyter-agent: AgentConfig.{name} from your configuration was left out. {refused}",
                  file=sys.stderr)
            del section[name]
    return AgentConfig(parent=parent)
