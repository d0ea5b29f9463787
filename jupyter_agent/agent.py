"""``query()``: the agent, wired. The public entry point (seed: ``query()``).

It turns the caller's options (an :class:`~jupyter_agent.options.AgentOptions`, or its
fields as keywords) into the loop's :class:`QueryParams`, in one place (``_start``): the
model (an id, a :class:`Model`, or the environment's choice), the system prompt and user
context, the permission policy, the default tools; then hands them to a :class:`QueryRun`,
which drives :func:`~jupyter_agent.loop.query.query_loop`. The loop itself (``loop/``)
knows none of these: it takes whatever the wiring gives it. :func:`compact` (summarise a
history now, ``%agent compact``) is a run of the same loop that makes one summary request.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Unpack

from .environment import CONTEXT_WINDOW_ENV, REPLAY_ENV
from .loop.hooks import Hooks
from .loop.messages import create_user_message
from .loop.model_protocol import Model
from .loop.query import QueryParams
from .loop.run import QueryRun
from .loop.state import State
from .policy import load_policy
from .prompts import DEFAULT_SYSTEM_PROMPT, permission_setup, permission_setup_text, user_context
from .loop.tool import PermissionPolicy, ToolContext
from .loop.wire import Message, SystemBlock
from .options import AgentOptions, OptionKeywords


def query(prompt: str | list[Message], *, options: AgentOptions | None = None, context: ToolContext | None = None,
          compact: str | None = None, **kwargs: Unpack[OptionKeywords]) -> QueryRun:
    """Start the agent loop on ``prompt`` (a string, or Messages-API messages) and return
    its run handle at once. Nothing is sent until the run is iterated or awaited.

    The options are :class:`~jupyter_agent.options.AgentOptions`' fields, given as keywords
    (``model=``, ``tools=``, ``max_turns=``, ``permission_mode=``, ``can_use_tool=``, ``hooks=``,
    ``cwd=``, ``system_prompt=``, ``context_window=``, ``max_budget_usd=``, ``mcp_servers=``,
    ``provider=``, ...; each is documented there) or as ``options=`` (keywords then change it).
    ``model=None`` is ``JUPYTER_AGENT_REPLAY`` for the offline replay, else
    ``JUPYTER_AGENT_MODEL``, else a current Sonnet; ``tools=None`` the file and notebook tools.

    ``context`` shares files-read, kernels and MCP servers between runs of one conversation
    (``jupyter_agent.Conversation`` does this for you); without one, the run's MCP servers stop
    at its end. ``compact`` (an instruction, or ""): :func:`compact` the history ``prompt``
    instead, answering nothing.

    An administrator's policy (``jupyter_agent_policy.json``, :mod:`jupyter_agent.policy`)
    bounds the model, the provider, the permission mode and the spend limit: a setting it does
    not allow raises :class:`~jupyter_agent.policy.PolicyViolation`, naming the file, and nothing starts.
    """
    opts = AgentOptions.of(options, **kwargs)
    if compact is not None:
        if not isinstance(prompt, list):
            raise TypeError("With compact=, the prompt is the history to compact: a list of messages.")
        return _start(list(prompt), opts, context, compact_now=compact)
    return _start(_initial_messages(prompt), opts, context)


def compact(history: Sequence[Message], instruction: str = "", *, options: AgentOptions | None = None,
            context: ToolContext | None = None, **kwargs: Unpack[OptionKeywords]) -> QueryRun:
    """Summarise ``history`` now and end (``%agent compact``): one summary request, keeping the
    user's messages word for word; ``instruction`` says what the summary must keep. The run's
    history, when it ends, is the compacted one. Options as :func:`query`'s."""
    if not isinstance(history, (list, tuple)):  # (a run's ``state.messages`` is a tuple)
        raise TypeError("compact() takes the history to compact: a list of messages.")
    return _start(list(history), AgentOptions.of(options, **kwargs), context, compact_now=instruction)


def _start(messages: list[Message], opts: AgentOptions, context: ToolContext | None,
           compact_now: str | None = None) -> QueryRun:
    """The one place options become the loop's :class:`QueryParams` (resolved: the model
    made, the policy applied, the window read from the environment)."""
    max_turns, permissions = opts.max_turns, opts.permissions
    if max_turns is not None and (not isinstance(max_turns, int) or max_turns < 1):
        raise ValueError(f"max_turns must be a whole number of at least 1, not {max_turns!r}.")
    if permissions is not None and not isinstance(permissions, PermissionPolicy):
        raise TypeError(f"permissions must be a PermissionPolicy (jupyter_agent.loop.tool), not "
                        f"{type(permissions).__name__}: subclass it and implement decide().")
    policy = load_policy()
    budget = policy.check_budget(opts.max_budget_usd)
    resolved_model = resolve_model(opts.model, replay=opts.replay, provider=opts.provider,
                                   provider_settings=opts.provider_settings)
    if not _offline(resolved_model):  # a replay sends nothing anywhere and costs nothing
        policy.check_model(resolved_model.name)
        if fallback := getattr(resolved_model, "fallback_model", None):  # (used after overloaded errors)
            policy.check_model(fallback, "fallback model")
        if (made_with := getattr(resolved_model, "provider", None)) is not None:  # also a model made elsewhere
            policy.check_provider(made_with)
            policy.check_reach(resolved_model)
    owns_servers = context is None
    if context is None:
        context = ToolContext(cwd=Path(opts.cwd or Path.cwd()).expanduser().resolve())
    elif opts.cwd is not None:
        context = replace(context, cwd=Path(opts.cwd).expanduser().resolve())
    if permissions is None:
        from .permissions import Permissions

        permissions = Permissions(mode=opts.permission_mode, cwd=context.cwd, allow=opts.allow,
                                  deny=opts.deny, ask=opts.ask)
    if permissions.mode is not None:  # the policy may have changed since the mode was set
        policy.check_permission_mode(permissions.mode)
    context = replace(context, permissions=permissions)  # the caller's context stays as it was
    if opts.bash_sandbox:  # (off: the context's own setting stays, a conversation's for one)
        from .tools.bash import enable_sandbox

        enable_sandbox(context)
    system_text = opts.system_prompt if opts.system_prompt is not None else DEFAULT_SYSTEM_PROMPT
    if opts.tools is None:
        from .tools import default_tools

        tools = default_tools()
    else:
        tools = list(opts.tools)
    # What runs, what asks, what cannot run: said once per run (byte-stable within it).
    setup = permission_setup(permissions, tools, no_one_answers=no_one_answers(opts.can_use_tool))
    notes = [n for n in (permissions.system_prompt_note(), setup and permission_setup_text(setup)) if n]
    hooks = Hooks.coerce(opts.hooks)
    # A tool no call of which can run here is named in the prompt ("Cannot run") and its
    # definition is not sent: it would cost every request its tokens for nothing. (A PreToolUse
    # hook may allow a call: then every tool is sent.)
    unsent = frozenset(setup.unavailable) if setup and not hooks.pre_tool_use else frozenset()
    system: list[SystemBlock] = [{"type": "text", "text": "\n\n".join([system_text, *notes])}]
    from .mcp import mcp_servers as servers_of

    servers = servers_of(context)  # also reads the working folder's .mcp.json when the run starts
    if opts.mcp_servers is not None:
        servers.configure(opts.mcp_servers)

    params = QueryParams(
        model=resolved_model,
        tools=tools,
        context=context,
        # the run's options as given, but for the two read from elsewhere before the run
        options=opts.replace(context_window=context_window_setting(opts.context_window), max_budget_usd=budget),
        system=system,
        user_context={**_user_context(context, opts.notebook_path), **opts.user_notes},
        hooks=hooks,
        compact_now=compact_now,
        owns_model=opts.model is None or isinstance(opts.model, str),
        tool_sources=[servers],
        owns_tool_sources=owns_servers,
        unsent_tools=unsent,
    )
    return QueryRun(params, State(messages=tuple(messages)), permission_mode=permissions.mode or opts.permission_mode)


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
