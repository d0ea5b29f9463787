"""One set of options for a run, declared once: :class:`AgentOptions`.

Every front produces one: ``query(**kwargs)`` and ``Conversation(**kwargs)`` from their
keywords, the kernel's ``AgentConfig`` (traitlets: ``ipython_config.py``, ``%config``, the
``%agent`` line magic's flags) with ``AgentConfig.options()``, and ``jupyter agent run``'s
flags in ``cli.py``. ``query()`` turns it into the loop's ``QueryParams`` (resolved: the
model made, the policy applied, the window read from the environment) in one place, and the
run's ``QueryParams.options`` is this object, so the loop reads its own options
(``loop/loop_options.py``: ``LoopOptions``, which this class extends) where they are declared.
A new option is a field here (or there, if the loop reads it), plus the flags of the fronts
that offer it.

It is frozen: a run's own settings (a cell's ``--model``) are :meth:`AgentOptions.replace`'s
copy, never a change to the conversation's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from .loop.loop_options import LoopOptions

if TYPE_CHECKING:
    from .loop.hooks import Hooks
    from .loop.model_protocol import Model
    from .loop.tool import AnyTool, PermissionPolicy
    from .loop.tool_execution import CanUseTool
    from .loop.wire import ThinkingConfig
    from .model.providers import ProviderSettings


@dataclass(frozen=True)
class AgentOptions(LoopOptions):
    """What a run is told to do, each option once (the fronts' flags and traitlets map here):
    :class:`~jupyter_agent.loop.loop_options.LoopOptions`' fields, the ones the loop reads
    (``max_turns``, ``max_tokens``, ``thinking``, ``context_window``, ``max_budget_usd``,
    ``can_use_tool``, ``streaming_tools``, ``checkpoints``), and these, which the wiring reads."""

    #: A model id, a :class:`~jupyter_agent.loop.model_protocol.Model`, or None:
    #: ``$JUPYTER_AGENT_REPLAY`` for the offline replay, else ``$JUPYTER_AGENT_MODEL``, else a current Sonnet.
    model: str | Model | None = None
    #: Where a model named by id is reached: ``anthropic``, ``bedrock``, ``vertex``, ``foundry``
    #: (None: ``$JUPYTER_AGENT_PROVIDER``, else ``anthropic``); the administrator's policy may pin it.
    provider: str | None = None
    #: The provider's region, project, resource (docs/providers.md).
    provider_settings: ProviderSettings | None = None
    #: A recorded transcript (a path, or ``demo``): the offline replay model, no API key, no network.
    replay: str | None = None
    #: The tools the model may call (None: the file and notebook tools).
    tools: list[AnyTool] | None = None
    #: ``default``, ``acceptEdits``, ``plan`` or ``bypassPermissions`` (bounded by the policy).
    permission_mode: str = "default"
    #: Permission rules (``Tool`` or ``Tool(glob)``) whose calls run without asking.
    allow: tuple[str, ...] = ()
    #: Rules whose calls are refused (they win over ``allow``).
    deny: tuple[str, ...] = ()
    #: Rules whose calls always ask, whatever the mode.
    ask: tuple[str, ...] = ()
    #: A permission policy object instead of the mode and rules above (``Permissions(...)``).
    permissions: PermissionPolicy | None = None
    #: ``Hooks`` or a dict of hook lists (PreToolUse, PostToolUse, Stop).
    hooks: Hooks | dict[str, Any] | None = None
    #: The working folder of the tools (None: the process's).
    cwd: str | Path | None = None
    #: The notebook the agent works on, named in the user context.
    notebook_path: str | None = None
    #: Replaces the default system prompt.
    system_prompt: str | None = None
    #: Entries added to the user context in front of every request (e.g. that the kernel restarted).
    user_notes: dict[str, str] = field(default_factory=dict)
    #: MCP servers whose tools the model may use, ``{"name": {"command", "args", "env"} |
    #: {"type": "http", "url", "headers"}}``; their tools are ``mcp__<server>__<tool>``.
    mcp_servers: dict[str, Any] | None = None
    #: Bash commands run in the sandbox (no network, writes only in the working folder), without asking.
    bash_sandbox: bool = False

    def replace(self, **changes: Unpack[OptionKeywords]) -> AgentOptions:
        """A copy with ``changes`` (option names as keywords); a name that is no option is a
        TypeError that lists the options."""
        unknown = sorted(set(changes) - OPTION_NAMES)
        if unknown:
            raise TypeError(f"{', '.join(unknown)}: no such option. "
                            f"The options are: {', '.join(sorted(OPTION_NAMES))}.")
        return dataclasses.replace(self, **changes) if changes else self

    @classmethod
    def of(cls, options: AgentOptions | None = None, **changes: Unpack[OptionKeywords]) -> AgentOptions:
        """``options`` (or the defaults) with ``changes``: what ``query()`` and ``Conversation``
        make of their keywords."""
        return (options if options is not None else cls()).replace(**changes)


class RunOptionKeywords(TypedDict, total=False):
    """:class:`AgentOptions`' fields as keywords, but the five ``Conversation.send`` names
    itself (``model``, ``permission_mode``, ``can_use_tool``, ``max_turns``, ``checkpoints``):
    what ``send(prompt, **these)`` takes beside them. Each field's meaning is on
    :class:`AgentOptions`; ``tests/test_options.py`` fails when these and it differ."""

    provider: str | None
    provider_settings: ProviderSettings | None
    replay: str | None
    tools: list[AnyTool] | None
    allow: tuple[str, ...]
    deny: tuple[str, ...]
    ask: tuple[str, ...]
    permissions: PermissionPolicy | None
    hooks: Hooks | dict[str, Any] | None
    cwd: str | Path | None
    notebook_path: str | None
    system_prompt: str | None
    user_notes: dict[str, str]
    max_tokens: int
    thinking: ThinkingConfig | None
    context_window: int | None
    max_budget_usd: float | None
    mcp_servers: dict[str, Any] | None
    bash_sandbox: bool
    streaming_tools: bool


class OptionKeywordsExceptModel(RunOptionKeywords, total=False):
    """:class:`AgentOptions`' fields but ``model``, as keywords: ``Conversation(model, **these)``
    (its ``model`` comes first, by position or by name)."""

    permission_mode: str
    can_use_tool: CanUseTool | None
    max_turns: int | None
    checkpoints: bool


class OptionKeywords(OptionKeywordsExceptModel, total=False):
    """:class:`AgentOptions`' fields as keywords, for a type checker: what ``query(**these)``,
    ``compact()`` and :meth:`AgentOptions.replace` take (a name that is no option is an error
    there, a wrong type too)."""

    model: str | Model | None


#: The names of the options, as keywords of ``query()``, ``Conversation`` and :meth:`AgentOptions.replace`.
OPTION_NAMES = frozenset(f.name for f in dataclasses.fields(AgentOptions))
