"""A multi-turn conversation: what ``%%agent`` cells and the chat panel share.

Each ``send()`` starts one run of the loop on the history so far plus the new prompt,
with the same tool session (files read, kernels started) and the same permission rules.
When the run ends its history (always valid: every ``tool_use`` answered) becomes the
conversation's. Imports nothing from IPython or widgets.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Unpack

from .changes import RunChanges, undo_note
from .loop.events import AssistantMessage
from .loop.hooks import Hooks
from .loop.messages import create_user_message, ensure_tool_result_pairing
from .loop.wire import ContentBlock, Message, blocks_of
from .agent import compact as compact_history, query, resolve_model
from .options import AgentOptions, OptionKeywords, OptionKeywordsExceptModel, RunOptionKeywords
from .loop.model_protocol import Model
from .loop.permission_result import check_permission_mode
from .loop.run import QueryRun
from .errors import Busy
from .loop.usage import Usage
from .loop.tool import ToolContext
from .policy import load_policy
from .mcp import McpServers
from .mcp import mcp_servers as servers_of


#: ``send()`` while a run of the conversation is still going (one run at a time).
ConversationBusy = Busy


class _Option:
    """A setting of the conversation that reads, and replaces, one field of its ``options``
    (so each option is declared once, in :class:`AgentOptions`)."""

    def __init__(self, field: str | None = None) -> None:
        self.field = field or ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.field = self.field or name

    def __get__(self, conv: Any, owner: type | None = None) -> Any:
        return self if conv is None else getattr(conv.options, self.field)

    def __set__(self, conv: Any, value: Any) -> None:
        conv.options = conv.options.replace(**{self.field: value})


class Conversation:
    """History, settings and tool session for a series of runs.

    The settings are an :class:`~jupyter_agent.options.AgentOptions` (``conv.options``), given
    as ``options=`` or as keywords (``permission_mode=``, ``cwd=``, ``allow=``, ``deny=``,
    ``ask=``, ``max_turns=``, ``tools=``, ``mcp_servers=``, ...; the names of ``query()``).
    ``model`` is an id, a Model, or None (``JUPYTER_AGENT_REPLAY``, ``JUPYTER_AGENT_MODEL``,
    else the default Sonnet); ``replay`` a transcript path for the offline replay model.
    The model is created on the first ``send()``, so building a Conversation never
    needs an API key. ``provider``/``provider_settings``: where a model named by id is
    reached (``query()`` says how; docs/providers.md).
    """

    #: the settings below are the options' fields, read and replaced there
    _model_spec = _Option("model")
    #: where a model named by id is reached (None: $JUPYTER_AGENT_PROVIDER, else anthropic)
    provider = _Option()
    provider_settings = _Option()
    replay = _Option()
    tools = _Option()
    max_turns = _Option()
    #: tokens (None: $JUPYTER_AGENT_CONTEXT_WINDOW, else the model's known window)
    context_window = _Option()
    #: what one run may spend, USD (None: no limit but the administrator's policy)
    max_budget_usd = _Option()
    system_prompt = _Option()
    can_use_tool = _Option()
    hooks = _Option()
    notebook_path = _Option()

    def __init__(self, model: str | Model | None = None, *, options: AgentOptions | None = None,
                 **kwargs: Unpack[OptionKeywordsExceptModel]) -> None:
        opts = AgentOptions.of(options, **kwargs)
        if model is not None:
            opts = opts.replace(model=model)
        spec = opts.model
        self.options = opts.replace(hooks=Hooks.coerce(opts.hooks), allow=tuple(opts.allow),
                                    deny=tuple(opts.deny), ask=tuple(opts.ask))
        self._model: Model | None = spec if spec is not None and not isinstance(spec, str) else None
        #: model name -> the window an earlier run learned the API has (smaller than the one
        #: it assumed): later runs work to it from their first request, not after a refusal
        self.learned_windows: dict[str, int] = {}
        self.rules = {"allow": self.options.allow, "deny": self.options.deny, "ask": self.options.ask}
        self.messages: list[Message] = []
        #: entries added to the user context of every request (data the model is told in
        #: front of the history, e.g. that the kernel restarted since a resumed history)
        self.context_notes: dict[str, str] = dict(opts.user_notes)
        self.runs: list[QueryRun] = []
        #: each run's checkpoint (what it changed), in the order of ``runs``
        self.run_changes: list[RunChanges] = []
        #: the checkpoints of the runs of a resumed conversation (made by an earlier kernel)
        self.resumed_changes: list[RunChanges] = []
        self.usage = Usage()
        self.context = ToolContext(cwd=Path(opts.cwd or Path.cwd()).expanduser().resolve())
        if opts.bash_sandbox:
            self.bash_sandbox = True
        self._permissions: Any = None
        given = opts.permissions  # a policy object: its mode is the conversation's
        self.permission_mode = (given.mode if given is not None else None) or opts.permission_mode
        self._permissions = given
        if opts.mcp_servers is not None:  # checked now; started by the first run, stopped by aclose()
            self.mcp_servers.configure(opts.mcp_servers)

    # -- settings ------------------------------------------------------------------
    @property
    def permission_mode(self) -> str:
        return self.options.permission_mode

    @permission_mode.setter
    def permission_mode(self, mode: str) -> None:
        self.options = self.options.replace(
            permission_mode=load_policy().check_permission_mode(check_permission_mode(mode)))
        if self._permissions is not None:
            self._permissions.mode = mode

    @property
    def bash_sandbox(self) -> bool:
        """Whether Bash commands run in the sandbox (no network, writes only in the working
        folder) and so without asking. Turning it on raises ValueError, saying why, where
        ``bwrap`` is missing or cannot run."""
        from .tools.bash import BashSettings

        return self.context.services.get(BashSettings).sandbox

    @bash_sandbox.setter
    def bash_sandbox(self, on: bool) -> None:
        from .tools.bash import enable_sandbox

        enable_sandbox(self.context, bool(on))
        self.options = self.options.replace(bash_sandbox=bool(on))

    @property
    def permissions(self) -> Any:
        """The permission policy (modes, rules, session rules from "Always allow")."""
        if self._permissions is None:
            from .permissions import Permissions

            self._permissions = Permissions(mode=self.permission_mode, cwd=self.context.cwd, **self.rules)
        return self._permissions

    @property
    def mcp_servers(self) -> McpServers:
        """The conversation's MCP servers (settings, state, tools): ``%agent mcp`` shows them."""
        return servers_of(self.context)

    @property
    def model_name(self) -> str:
        if self._model is not None:
            return self._model.name
        if isinstance(self._model_spec, str):
            return self._model_spec
        from os import environ

        from .model.anthropic_model import DEFAULT_MODEL

        return environ.get("JUPYTER_AGENT_MODEL", DEFAULT_MODEL)

    @model_name.setter
    def model_name(self, name: str | None) -> None:
        """Switch models for the next runs; ``None`` goes back to the default."""
        self._model_spec, self._model = name, None

    @property
    def model_spec(self) -> str | Model | None:
        """What ``model=`` said (an id, a Model, or None for the default)."""
        return self._model_spec

    @property
    def model_ready(self) -> bool:
        """Whether the model object exists yet (it is made on the first ``send()``)."""
        return self._model is not None

    @property
    def model(self) -> Model:
        if self._model is None:
            self._model = resolve_model(self._model_spec, replay=self.replay, provider=self.provider,
                                        provider_settings=self.provider_settings)
        return self._model

    @property
    def running(self) -> QueryRun | None:
        """The run still going, if any."""
        return next((r for r in reversed(self.runs) if r.terminal is None and r._iterated), None)

    # -- runs ------------------------------------------------------------------------
    def send(self, prompt: str | list[Message], *, can_use_tool: Any = None,
             max_turns: int | None = None, checkpoints: bool = False, model: str | Model | None = None,
             permission_mode: str | None = None, compact: str | None = None,
             **options: Unpack[RunOptionKeywords]) -> QueryRun:
        """Start a run on the history plus ``prompt``; returns its handle at once.

        ``model``, ``max_turns`` (0: no limit), ``permission_mode`` and the other options
        (``AgentOptions``' fields as keywords) apply to this run only (a cell's own options):
        they go into the run, and the conversation's settings are never changed. ``compact``
        (an instruction, or ""): summarise the history instead (:meth:`compact`). Raises
        :class:`ConversationBusy` while a run is going.
        """
        if self.running is not None:
            raise ConversationBusy(
                "A run of this conversation is still going. Stop it (run.stop() or the Stop "
                "button) or wait for it before sending the next prompt."
            )
        new = [create_user_message(prompt)] if isinstance(prompt, str) else list(prompt)
        instruction = compact
        if instruction is not None:
            new = []  # a compaction: the history alone, summarised (see compact())
        elif isinstance(prompt, str) and not prompt.strip():
            raise ValueError("The prompt is empty: say what the agent should do.")
        new = self._with_undo_note(new)
        changes = RunChanges()  # this run's checkpoint: its tools record into it
        self.context.services.put(changes)
        run_options = self.options.replace(
            model=self.model if model is None else model,
            max_turns=self.max_turns if max_turns is None else (max_turns or None),
            can_use_tool=can_use_tool or self.can_use_tool,
            checkpoints=checkpoints,
            permissions=self._permissions_for(permission_mode),
            user_notes=dict(self.context_notes),
            context_window=self._window_for(
                self.model_name if model is None else model if isinstance(model, str) else model.name),
            # what the run's context already holds (the folder, the sandbox, the MCP servers), and the
            # replay, which the model already is
            cwd=None, bash_sandbox=False, mcp_servers=None, replay=None,
        ).replace(**options)
        history = [*self.messages, *new]
        run = (query(history, options=run_options, context=self._run_context()) if instruction is None
               else compact_history(history, instruction, options=run_options, context=self._run_context()))
        run.add_done_callback(self._absorb)
        self.runs.append(run)
        self.run_changes.append(changes)
        return run

    def changes_of(self, run: QueryRun) -> RunChanges:
        """What ``run`` (a run of this conversation) changed: its checkpoint."""
        return self.run_changes[self.runs.index(run)]

    def _with_undo_note(self, new: list[Message]) -> list[Message]:
        """Tell the model, in front of the next prompt, about runs the user undid since the
        last request: it must not assume its edits are there."""
        undone = [c for c in (*self.resumed_changes, *self.run_changes)
                  if c.undo_report is not None and not c.undo_told]
        if not undone or not new or new[-1].get("role") != "user":
            return new
        notes = [undo_note(c.undo_report) for c in undone if c.undo_report is not None]
        for changes in undone:
            changes.undo_told = True
        note: ContentBlock = {"type": "text", "text": "\n\n".join(notes)}
        return [*new[:-1], {**new[-1], "content": [note, *blocks_of(new[-1])]}]

    def compact(self, instruction: str = "", **options: Unpack[OptionKeywords]) -> QueryRun:
        """Summarise the history now (``%agent compact``), keeping the user's messages word
        for word; ``instruction`` says what the summary must keep. Returns the run (one
        summary request); when it ends, its history is the conversation's."""
        return self.send(f"/compact {instruction}".strip(), compact=instruction, **options)

    def _permissions_for(self, mode: str | None) -> Any:
        """The policy of one run: the conversation's, or (another ``mode``) a copy in that
        mode that shares its rules, so an "Always allow" during the run still lasts."""
        if mode is None or mode == self.permission_mode:
            return self.permissions
        return self.permissions.with_mode(mode)

    def _run_context(self) -> ToolContext:
        """A fresh abort flag per run; files read and kernels shared with earlier runs."""
        import asyncio

        return replace(self.context, abort=asyncio.Event(), permissions=self.permissions)

    def _absorb(self, run: QueryRun) -> None:
        messages, _ = ensure_tool_result_pairing(list(run.state.messages))
        self.messages = messages
        self.usage.add(run.usage)
        if run.record.learned_window:
            self.learned_windows[run.params.model.name] = run.record.learned_window

    def _window_for(self, model_name: str) -> int | None:
        """The window a run of ``model_name`` works to: ``context_window``, or the smaller
        one an earlier run of this conversation learned from the API."""
        learned = self.learned_windows.get(model_name)
        if learned is None or (self.context_window is not None and self.context_window <= learned):
            return self.context_window
        return learned

    def last_answer(self) -> str:
        """The text of the last assistant message, if any."""
        for message in reversed(self.messages):
            if message.get("role") == "assistant":
                return AssistantMessage(message, Usage(), "", None).text
        return ""

    async def aclose(self) -> None:
        """Stop any run, shut down the kernels and stop the MCP servers this conversation started."""
        if self.running is not None:
            self.running.stop()
            await self.running.wait()
        from .notebook.session import close_session, tool_session

        try:
            await close_session(tool_session(self.context))
        finally:
            await self.mcp_servers.aclose()
