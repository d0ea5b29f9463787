"""``query()``: the agent, wired. The public entry point (seed: ``query()``).

It turns the caller's arguments into the loop's :class:`QueryParams`: the model (an id,
a :class:`Model`, or the environment's choice), the system prompt and user context,
the permission policy, the default tools; then hands them to a :class:`QueryRun`,
which drives :func:`~jupyter_agent.loop.query.query_loop`. The loop itself (``loop/``)
knows none of these: it takes whatever the wiring gives it.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from .environment import CONTEXT_WINDOW_ENV, REPLAY_ENV
from .loop.hooks import Hooks
from .loop.messages import create_user_message
from .loop.model_protocol import Model
from .loop.query import QueryParams
from .loop.run import QueryRun
from .loop.state import State
from .loop.tool_execution import CanUseTool
from .policy import load_policy
from .prompts import DEFAULT_SYSTEM_PROMPT, permission_setup, permission_setup_text, user_context
from .loop.tool import PermissionPolicy, Tool, ToolContext
from .loop.wire import Message, SystemBlock, ThinkingConfig


def query(
    prompt: str | list[Message],
    *,
    model: Any = None,
    tools: list[Tool] | None = None,
    max_turns: int | None = None,
    permission_mode: str = "default",
    can_use_tool: CanUseTool | None = None,
    hooks: Any = None,
    cwd: Any = None,
    system_prompt: str | None = None,
    checkpoints: bool = False,
    streaming_tools: bool = True,
    permissions: Any = None,
    context: ToolContext | None = None,
    notebook_path: str | None = None,
    max_tokens: int = 8192,
    thinking: ThinkingConfig | None = None,
    context_window: int | None = None,
    compact: str | None = None,
    max_budget_usd: float | None = None,
    mcp_servers: dict[str, Any] | None = None,
    user_notes: dict[str, str] | None = None,
    provider: str | None = None,
    provider_settings: Any = None,
) -> QueryRun:
    """Start the agent loop on ``prompt`` (a string, or Messages-API messages) and return
    its run handle at once. Nothing is sent until the run is iterated or awaited.

    ``model`` is a model id, a :class:`Model`, or ``None`` (``JUPYTER_AGENT_REPLAY`` for
    the offline replay, else ``JUPYTER_AGENT_MODEL``, else a current Sonnet). ``tools``
    defaults to the file and notebook tools. ``context`` shares files-read and kernels
    between runs of one conversation (``jupyter_agent.Conversation`` does this for you).
    ``context_window`` (tokens) overrides ``$JUPYTER_AGENT_CONTEXT_WINDOW`` and the
    model's known window; the loop compacts the history to stay inside it. ``compact``
    (an instruction, or ""): summarise the history ``prompt`` now and end, answering nothing.
    ``max_budget_usd``: end the run (``max_budget``) once it has spent this much.

    An administrator's policy (``jupyter_agent_policy.json``, :mod:`jupyter_agent.policy`)
    bounds the model, the permission mode and the spend limit: a setting it does not allow
    raises :class:`~jupyter_agent.policy.PolicyViolation`, naming the file, and nothing starts.
    ``mcp_servers`` (``{"name": {"command", "args", "env"} | {"type": "http", "url", "headers"}}``)
    offers those MCP servers' tools as ``mcp__<server>__<tool>``; with a ``context`` they are the
    conversation's (started once, stopped when it ends), else this run's (stopped at its end).
    ``user_notes`` adds entries to the user context put in front of every request (what the
    model should know about where it is, e.g. that the kernel restarted since the history).
    ``provider`` (``anthropic``, ``bedrock``, ``vertex``, ``foundry``; default
    ``$JUPYTER_AGENT_PROVIDER``, else ``anthropic``) and ``provider_settings`` (a
    :class:`~jupyter_agent.model.providers.ProviderSettings`: region, project, resource) say
    where a model named by id is reached (docs/providers.md); the policy may pin both.
    """
    if max_turns is not None and (not isinstance(max_turns, int) or max_turns < 1):
        raise ValueError(f"max_turns must be a whole number of at least 1, not {max_turns!r}.")
    if permissions is not None and not isinstance(permissions, PermissionPolicy):
        raise TypeError(f"permissions must be a PermissionPolicy (jupyter_agent.loop.tool), not "
                        f"{type(permissions).__name__}: subclass it and implement decide().")
    if compact is None:
        messages = _initial_messages(prompt)
    elif isinstance(prompt, list):
        messages = list(prompt)  # the history to summarise, as it is
    else:
        raise TypeError("With compact=, the prompt is the history to compact: a list of messages.")
    policy = load_policy()
    budget = policy.check_budget(max_budget_usd)
    resolved_model = resolve_model(model, provider=provider, provider_settings=provider_settings)
    if not _offline(resolved_model):  # a replay sends nothing anywhere and costs nothing
        policy.check_model(resolved_model.name)
        if fallback := getattr(resolved_model, "fallback_model", None):  # (used after overloaded errors)
            policy.check_model(fallback, "fallback model")
        if (made_with := getattr(resolved_model, "provider", None)) is not None:  # also a model made elsewhere
            policy.check_provider(made_with)
            policy.check_reach(resolved_model)
    owns_servers = context is None
    if context is None:
        context = ToolContext(cwd=Path(cwd or Path.cwd()).expanduser().resolve())
    elif cwd is not None:
        context = replace(context, cwd=Path(cwd).expanduser().resolve())
    if permissions is None:
        from .permissions import Permissions

        permissions = Permissions(mode=permission_mode, cwd=context.cwd)
    if permissions.mode is not None:  # the policy may have changed since the mode was set
        policy.check_permission_mode(permissions.mode)
    context = replace(context, permissions=permissions)  # the caller's context stays as it was
    system_text = system_prompt if system_prompt is not None else DEFAULT_SYSTEM_PROMPT
    if tools is None:
        from .tools import default_tools

        tools = default_tools()
    # What runs, what asks, what cannot run: said once per run (byte-stable within it).
    setup = permission_setup(permissions, tools, no_one_answers=no_one_answers(can_use_tool))
    notes = [n for n in (permissions.system_prompt_note(), setup and permission_setup_text(setup)) if n]
    hooks = Hooks.coerce(hooks)
    # A tool no call of which can run here is named in the prompt ("Cannot run") and its
    # definition is not sent: it would cost every request its tokens for nothing. (A PreToolUse
    # hook may allow a call: then every tool is sent.)
    unsent = frozenset(setup.unavailable) if setup and not hooks.pre_tool_use else frozenset()
    system: list[SystemBlock] = [{"type": "text", "text": "\n\n".join([system_text, *notes])}]
    from .mcp import mcp_servers as servers_of

    servers = servers_of(context)  # also reads the working folder's .mcp.json when the run starts
    if mcp_servers is not None:
        servers.configure(mcp_servers)

    params = QueryParams(
        model=resolved_model,
        tools=list(tools),
        context=context,
        system=system,
        user_context={**_user_context(context, notebook_path), **(user_notes or {})},
        max_turns=max_turns,
        can_use_tool=can_use_tool,
        hooks=hooks,
        streaming_tools=streaming_tools,
        checkpoints=checkpoints,
        max_tokens=max_tokens,
        thinking=thinking,
        context_window=context_window_setting(context_window),
        compact_now=compact,
        max_budget_usd=budget,
        owns_model=model is None or isinstance(model, str),
        tool_sources=[servers],
        owns_tool_sources=owns_servers,
        unsent_tools=unsent,
    )
    return QueryRun(params, State(messages=tuple(messages)), permission_mode=permissions.mode or permission_mode)


#: The attribute a ``can_use_tool`` callback sets to say that no person answers it (it
#: refuses every ask: a headless CLI run). The model is then told which calls cannot run.
NO_ONE_ANSWERS = "no_one_answers"


def no_one_answers(can_use_tool: Any) -> bool:
    """No person can answer an ask in this run: no callback, or one that says so."""
    return can_use_tool is None or getattr(can_use_tool, NO_ONE_ANSWERS, False) is True


def _offline(model: Model) -> bool:
    from .replay.model import ReplayModel

    return isinstance(model, ReplayModel)


def _user_context(context: ToolContext, notebook_path: str | None) -> dict[str, str]:
    """The user context of a run: where it works, and the notebook (with the ``%%agent`` cell
    the request came from, and whether the notebook is reached only through its page)."""
    from .notebook.session import tool_session

    session = tool_session(context)
    page = session.page_notebook
    remote = page is not None and page.remote and page.key == notebook_path
    return user_context(context.cwd, notebook_path, session.agent_cell_id, notebook_remote=remote)


def context_window_setting(value: int | None = None) -> int | None:
    """The context window a run works to: ``value``, else ``$JUPYTER_AGENT_CONTEXT_WINDOW``,
    else None (the model's own, from the loop's table)."""
    if value is None:
        raw = os.environ.get(CONTEXT_WINDOW_ENV, "").strip()
        if not raw:
            return None
        try:
            value = int(raw.replace("_", ""))
        except ValueError:
            raise ValueError(f"${CONTEXT_WINDOW_ENV} must be a number of tokens, not {raw!r}.") from None
    if not isinstance(value, int) or value < 1_000:
        raise ValueError(f"context_window must be a number of tokens of at least 1000, not {value!r}.")
    return value


def _initial_messages(prompt: str | list[Message]) -> list[Message]:
    if isinstance(prompt, str):
        if not prompt.strip():
            raise ValueError("The prompt is empty: say what the agent should do.")
        return [create_user_message(prompt)]
    if isinstance(prompt, list) and prompt and all(isinstance(m, dict) and "role" in m for m in prompt):
        if prompt[-1].get("role") != "user":
            raise ValueError("The last message of a prompt list must have role 'user'.")
        return list(prompt)
    raise TypeError("prompt must be a string or a non-empty list of Messages-API messages "
                    "({'role': ..., 'content': ...}).")


def resolve_model(model: Any = None, *, replay: str | None = None, provider: str | None = None,
                  provider_settings: Any = None) -> Model:
    """A Model object as is; ``replay`` or ``$JUPYTER_AGENT_REPLAY`` for the offline replay
    of a recorded transcript; otherwise the Anthropic model named (or the default), reached
    through ``provider`` with ``provider_settings`` (the administrator's pins applied).
    ``anthropic`` is imported here, and only when a real model is needed."""
    if model is not None and not isinstance(model, str):
        if not isinstance(model, Model):
            raise TypeError(f"model must be a model id string or a Model, not {type(model).__name__}.")
        return model
    replay = replay or (os.environ.get(REPLAY_ENV) if model is None else None)
    if replay:
        from .replay.model import ReplayModel

        return ReplayModel(replay)
    from .model import AnthropicModel

    policy = load_policy()
    return AnthropicModel(model, provider=policy.check_provider(provider),
                          provider_settings=policy.provider_settings(provider_settings))
