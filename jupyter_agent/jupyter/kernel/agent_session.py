"""What ``%%agent`` cells and the chat panel of one kernel share: settings, the
conversation, the runs, the running one.

:meth:`AgentSession.start` is the one way a run starts in a kernel: it checks the
ground (one run at a time, an API key or a replay), builds the run's model and view,
wires the approval cards in as ``can_use_tool`` (or none when no person is there:
an "ask" is then a deny with a clear message), and starts the driver task.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ...errors import Busy, JupyterAgentError
from ..bridge.kernel_types import Shell
from .agent_config import AgentConfig, agent_config
from .kernel_hooks import KernelHooks
from .session_services import Services, SessionRun
from .trait_events import Change
from ...environment import (NOTEBOOK_ENV, REPLAY_ENV, missing_key, no_key_message, prepare_replay_files,
                          resolve_notebook_path, resolve_transcript)

if TYPE_CHECKING:
    from traitlets.config import Configurable

    from ...conversation import Conversation
    from ...loop.run import QueryRun
    from ...loop.wire import ContentBlock, Message
    from ...view.runmodel import RunModel
    from ..bridge.kernel_bridge import KernelBridge
    from ..bridge.kernel_links import KernelLinks
    from ..persistence.resume import ConversationSaver
    from ..widgets.approvals import ApprovalCards
    from ..widgets.run_handle import AgentRun
    from ..widgets.runview import RunView

log = logging.getLogger(__name__)


#: A run is still going; a second one would fork the conversation.
AgentBusy = Busy


class NoApiKey(JupyterAgentError, RuntimeError):
    """No key and no replay: say what to do, start nothing."""


class AgentSession(KernelHooks):
    """Per-kernel state of the Jupyter front of the agent (its kernel hooks: :class:`KernelHooks`)."""

    def __init__(self, shell: Shell | None = None, config: AgentConfig | None = None) -> None:
        self.shell = shell
        # (an IPython shell is a Configurable: %config reaches the AgentConfig through it)
        parent = cast("Configurable", shell) if shell is not None and hasattr(shell, "config") else None
        self.config = config or agent_config(parent)
        self._conversation: Conversation | None = None
        self.active: AgentRun | None = None  # the run still going
        #: this kernel's runs, oldest first (its own, an outside agent's calls, resumed ones)
        self.runs: list[SessionRun] = []
        self._sigint_installed = False
        self._shutdown_installed = False
        #: called with each new run, its own or an outside agent's (the chat panel shows them)
        self.listeners: list[Callable[[SessionRun], None]] = []
        #: called when the kernel shuts down or restarts (chat panels leave their transcript)
        self.shutdown_listeners: list[Callable[[str], None]] = []
        #: called with no argument after a new conversation started (the side panel clears)
        self.reset_listeners: list[Callable[[], None]] = []
        #: saves the conversation after each turn (resume.py), once a run started
        self.saver: ConversationSaver | None = None
        #: the notice that no page shows the kernel's notebook was shown (live_notebook.py:
        #: once a session)
        self.no_page_said = False
        #: what %load_ext started kernel-wide and %unload_ext closes (magic/kernel_services.py):
        #: the bridge, the tracker, the kernel's client of itself, the side panels' and outside
        #: agents' comm hubs; made by the first %load_ext, kept (closed) after %unload_ext
        self.services: Services | None = None
        self.config.observe(self._config_changed, names=[
            "model", "permission_mode", "max_turns", "cwd", "replay", "notebook_path", "allow",
            "context_window", "max_budget_usd", "bash_sandbox", "mcp_servers", "provider", "provider_region",
            "provider_project", "provider_resource"])

    def add_runs(self, runs: Sequence[SessionRun]) -> None:
        """Add ``runs`` (a resumed conversation's: ``persistence/resume.py``) to this kernel's runs."""
        self.runs.extend(runs)

    @property
    def links(self) -> KernelLinks | None:
        """The services' bridge, tracker and client of the kernel (None: never loaded)."""
        return self.services.links if self.services is not None else None

    # -- the conversation ---------------------------------------------------------------
    @property
    def conversation(self) -> Conversation:
        """The conversation every ``%%agent`` cell and the chat panel continue."""
        if self._conversation is None:
            self._conversation = self._make_conversation()
        return self._conversation

    def _make_conversation(self) -> Conversation:
        from ...conversation import Conversation

        return Conversation(options=self.config.options(notebook_path=self.notebook_path()))

    def new_conversation(self) -> None:
        """Forget the history: the next run starts a new conversation."""
        if self.active is not None:
            raise AgentBusy("A run is still going: stop it (Stop button or `%agent stop`) first.")
        old, self._conversation = self._conversation, None
        self._close_later(old)
        for listener in list(self.reset_listeners):
            listener()

    def _close_later(self, conversation: Conversation | None) -> None:
        if conversation is None:
            return
        try:
            asyncio.get_event_loop().create_task(conversation.aclose())
        except Exception:  # no event loop to close it on: its HTTP client is collected instead
            log.debug("could not schedule closing the old conversation", exc_info=True)

    def set_defaults(self, *, model: str | None = None, permission_mode: str | None = None,
                     max_turns: int | None = None, cwd: str | None = None,
                     replay: str | None = None) -> None:
        """Change the session's settings (``%agent --model ...``), as ``%config
        AgentConfig...`` does; the history stays unless the replay transcript changes
        (a replay starts from its own beginning)."""
        if (cwd is not None or replay is not None) and self.active is not None:
            raise AgentBusy("A run is still going: stop it before changing the working "
                            "directory or the replay.")
        cfg = self.config
        for name, value in (("model", model), ("permission_mode", permission_mode),
                            ("max_turns", max_turns), ("replay", replay),
                            ("cwd", str(Path(cwd).expanduser().resolve()) if cwd else cwd)):
            if value is not None:
                setattr(cfg, name, value)

    def _config_changed(self, change: Change[object]) -> None:
        """Settings changed (``%config``, ``%agent --...``): the conversation follows."""
        conv, name, new = self._conversation, change["name"], change["new"]
        if conv is None:
            return
        # (traits of several types: the name says which; the value is of the trait's type)
        if name == "model":
            conv.model_name = cast(str, new) or None  # empty: back to the default (env or Sonnet)
        elif name == "permission_mode":
            conv.permission_mode = cast(str, new)
        elif name in ("max_turns", "context_window", "max_budget_usd"):  # (0: not set, as options() says)
            setattr(conv, name, getattr(self.config.options(), name))
        elif name == "notebook_path":
            conv.notebook_path = self.notebook_path()
        elif name == "bash_sandbox":
            conv.bash_sandbox = cast(bool, new)
        elif name == "allow":  # rules added to the running conversation (remove: %agent rules --remove)
            conv.permissions.add_session_rules(cast("list[str]", new))
        elif name == "mcp_servers":  # the next run starts what changed (and stops what went)
            conv.mcp_servers.configure(cast("dict[str, object]", new))
        elif name.startswith("provider"):  # the next run makes its model with the new provider
            conv.provider, conv.provider_settings = self.config.provider or None, self.config.provider_settings()
            conv.model_name = conv.model_spec if isinstance(conv.model_spec, str) else None
        else:
            self._reconcile()

    def _reconcile(self) -> None:
        """Make the conversation match the working directory and replay settings."""
        conv, cfg = self._conversation, self.config
        if conv is None or (self.active is not None and not self.active.done):
            return
        if (cfg.replay or None) != conv.replay:
            self._conversation = None
            self._close_later(conv)
        elif cfg.cwd and Path(cfg.cwd).resolve() != conv.context.cwd:
            new = self._make_conversation()
            new.messages = list(conv.messages)
            new.context_notes = dict(conv.context_notes)  # (a resumed one's restart notice)
            new.resumed_changes = list(conv.resumed_changes)
            self._conversation = new
            self._close_later(conv)

    # -- where we are ---------------------------------------------------------------------
    def notebook_path(self) -> str | None:
        """The notebook this kernel serves, if the server or editor told us."""
        if self.config.notebook_path:
            return str(Path(self.config.notebook_path).expanduser().resolve())
        ns = getattr(self.shell, "user_ns", None) or {}
        for candidate in (os.environ.get(NOTEBOOK_ENV), ns.get("__vsc_ipynb_file__"),
                          os.environ.get("JPY_SESSION_NAME"), ns.get("__session__")):
            path = resolve_notebook_path(candidate if isinstance(candidate, str) else None)
            if path:
                return path
        return None

    def parent_request(self) -> dict[str, Any]:
        kernel = getattr(self.shell, "kernel", None)
        try:
            return kernel.get_parent() or {} if kernel is not None else {}
        except Exception:
            return {}

    def is_batch(self) -> bool:
        """Executed by a batch runner (nbclient, papermill, ``jupyter execute``): no person
        is there. Those send ``allow_stdin: false`` and no ``cellId``; JupyterLab and
        Notebook 7 send a ``cellId``, consoles allow stdin."""
        if getattr(self.shell, "kernel", None) is None:
            return True  # terminal IPython, plain Python: no widgets, nobody to click
        parent = self.parent_request()
        if not parent:
            return False
        content = parent.get("content") or {}
        metadata = parent.get("metadata") or {}
        return content.get("allow_stdin") is False and not metadata.get("cellId")

    def should_wait(self, force: bool | None = None) -> bool:
        """Whether an ``%%agent`` cell stays busy until its run ends."""
        if force is not None:
            return force
        if getattr(self.shell, "kernel", None) is None:
            return True  # no kernel loop keeps running after the cell
        mode = self.config.wait
        return mode == "always" or (mode == "auto" and self.is_batch())

    # -- starting a run --------------------------------------------------------------------
    def start(self, prompt: str, *, model: str | None = None, permission_mode: str | None = None,
              max_turns: int | None = None, cwd: str | None = None, replay: str | None = None,
              batch: bool | None = None, show_prompt: bool = False, view: bool = True,
              compact: str | None = None, context: str = "", clicked_cell: tuple[str, str] | None = None) -> AgentRun:
        """Start a run of the shared conversation; returns the :class:`AgentRun` at once.
        ``compact`` (an instruction, or ""): the run summarises the history instead (``%agent compact``).
        ``view=False``: no widget (the side panel draws the run and answers its asks).
        ``max_turns`` 0: no limit for this run, whatever the session's default.
        ``context``: a note the model gets before the prompt, not shown as the prompt (where
        the user is in the notebook, the error a Fix with agent click is about).
        ``clicked_cell``: (id, source) of the cell such a click quoted: the tools count it as
        read in the open notebook while its source is still that (``ToolSession.clicked_cell``)."""
        from ...view.runmodel import RunModel
        from ..bridge.live_notebook import bind_notebook  # the live page for this kernel's notebook, or a guard

        self._refuse_to_start(prompt)
        conv = self._conversation_for_run(model, cwd=cwd, replay=replay)
        batch = self.is_batch() if batch is None else batch
        run_model = RunModel(prompt=prompt, model=model or conv.model_name,
                             permission_mode=permission_mode or conv.permission_mode, cwd=conv.context.cwd)
        self._write_replay_files(conv, model, run_model)
        bound_to = bind_notebook(self, conv, run_model.notice, batch=batch, links=self.links)
        _note_clicked_cell(conv, clicked_cell)
        run_view, broker = (None, None) if batch else self._approval_surface(run_model, conv, view, show_prompt)
        run = self._send(conv, prompt, broker, run_view, context, model=model, permission_mode=permission_mode,
                         max_turns=max_turns, compact=compact)
        handle = self._track(run, run_model, run_view, broker, prompt=prompt, batch=batch, conv=conv)
        from ...notebook.session import tool_session as tool_session_of

        bound = tool_session_of(conv.context)
        handle.cell_id = bound.agent_cell_id
        if bound_to in ("live", "waiting") and bound.page_notebook is not None:
            handle.notebook_key = bound.page_notebook.key
        handle.start()
        for listener in list(self.listeners):
            listener(handle)
        return handle

    def _refuse_to_start(self, prompt: str) -> None:
        """One run at a time, and never an empty prompt."""
        if self.active is not None and not self.active.done:
            raise AgentBusy(
                "An agent run is still going in this kernel; nothing new was started. Stop it "
                "with its Stop button or `%agent stop` (or wait for it), then run this again.")
        if not prompt.strip():
            raise ValueError("The prompt is empty: write what the agent should do in the cell "
                             "below `%%agent`.")

    def _conversation_for_run(self, model: str | None, *, cwd: str | None, replay: str | None) -> Conversation:
        """The conversation the run goes into, with the cell's folder and replay applied, an
        API key checked (before anything shows) and the notebook it belongs to."""
        if replay is not None or cwd is not None:
            self.set_defaults(replay=replay, cwd=cwd)
        self._reconcile()
        conv = self.conversation
        spec = model or conv.model_spec
        if (model or not conv.model_ready) and missing_key(spec, conv.replay, provider=conv.provider,
                                                           settings=conv.provider_settings):
            # a remote kernel: the message says how the key gets there
            from ..bridge.live_notebook import kernel_is_remote

            links = self.links
            remote = kernel_is_remote(self, links.bridge if links is not None else None)
            raise NoApiKey(no_key_message("notebook", remote=remote, provider=conv.provider,
                                          settings=conv.provider_settings))
        if conv.notebook_path is None:
            conv.notebook_path = self.notebook_path()
        return conv

    def _write_replay_files(self, conv: Conversation, model: str | None, run_model: RunModel) -> None:
        """A replay (set here or by $JUPYTER_AGENT_REPLAY, as ``./dev demo`` does offline):
        write the files the recorded run expects, and say so in the run."""
        replay = conv.replay or (os.environ.get(REPLAY_ENV) if model is None and conv.model_spec is None else None)
        if not replay:
            return
        try:
            replay = resolve_transcript(replay)  # a packaged name ("demo") or a path
        except FileNotFoundError:
            pass  # the model says so when it is made
        for rel in prepare_replay_files(replay, conv.context.cwd):
            run_model.notice(f"Replay: wrote {rel}, which the recorded run expects.")

    def _approval_surface(self, run_model: RunModel, conv: Conversation, want_view: bool,
                          show_prompt: bool) -> tuple[RunView | None, ApprovalCards]:
        """The run's widget (unless the side panel draws it) and the approval cards that
        answer its asks."""
        from ..widgets.approvals import ApprovalCards

        view = None
        if want_view:
            from ..widgets.runview import RunView

            view = RunView(run_model, frame_interval=self.config.frame_interval, show_prompt=show_prompt)
        return view, ApprovalCards(view, run_model, policy=conv.permissions)

    def _send(self, conv: Conversation, prompt: str, broker: ApprovalCards | None, view: RunView | None,
              context: str = "", *, model: str | None, permission_mode: str | None, max_turns: int | None,
              compact: str | None) -> QueryRun:
        """Send the prompt (with the kernel's variables and ``context``) into the conversation;
        the run's own options go with it (None: the conversation's; ``compact``: summarise the
        history instead). A run still going there is :class:`AgentBusy`."""
        from ...conversation import ConversationBusy

        try:
            run = conv.send(self.with_kernel_context(prompt, context),
                            can_use_tool=broker.can_use_tool if broker else None, model=model,
                            permission_mode=permission_mode, max_turns=max_turns, compact=compact)
        except BaseException as exc:
            if view is not None:
                view.close()
            if isinstance(exc, ConversationBusy):
                raise AgentBusy(str(exc)) from None
            raise
        if broker is not None:  # "Always allow" releases what this run's policy (its mode) allows
            broker.requests.policy = run.params.context.permissions
        return run

    def _track(self, run: QueryRun, run_model: RunModel, view: RunView | None, broker: ApprovalCards | None, *,
               prompt: str, batch: bool, conv: Conversation) -> AgentRun:
        """The run's handle, wired to the view, the approvals and this session (the active
        run, Stop from a kernel interrupt, the shutdown hook)."""
        from ..widgets.run_handle import AgentRun

        def ended(handle: AgentRun) -> None:
            if self.active is handle:
                self.active = None

        handle = AgentRun(run, run_model, view=view, broker=broker, prompt=prompt,
                          interactive=not batch, on_end=ended)
        handle.conversation = conv
        handle.changes = run_model.changes = conv.changes_of(run)
        if broker is not None:
            broker.on_show = lambda: handle.refresh_fallback(force=True)
        if view is not None:
            view.stop_with(handle.stop)
        self.active = handle
        self.runs.append(handle)
        if getattr(self.shell, "kernel", None) is not None:  # what `%agent resume` brings back after a restart
            from ..persistence.resume import saver_of

            saver_of(self).watch(handle)
        self._install_interrupt_handler()
        self.install_shutdown_hook()
        return handle

    def with_kernel_context(self, prompt: str, context: str = "") -> str | list[Message]:
        """The run's user message: the prompt, after a note listing the kernel's
        variables (``kernel_context.py``: computed now, on the kernel thread, without
        running the user's code) and ``context`` (where the user is). It goes with the
        prompt, not into the context put in front of every request, so earlier requests'
        bytes stay the same (prompt cache)."""
        notes = []
        if self.config.kernel_variables:
            from .kernel_context import variables_reminder

            notes.append(variables_reminder(self.shell))
        notes.append(context)
        blocks: list[ContentBlock] = [{"type": "text", "text": note} for note in notes if note]
        if not blocks:
            return prompt
        return [{"role": "user", "content": [*blocks, {"type": "text", "text": prompt}]}]

    def stop(self) -> bool:
        """Stop the running run, if any."""
        if self.active is None or self.active.done:
            return False
        self.active.stop()
        return True


#: The session of each shell, by its id: the one module-level mapping of kernel-wide state
#: in ``jupyter/``. Everything else kernel-wide hangs off the session's ``services`` (the
#: bridge, the tracker and the kernel's client of itself in ``services.links``, the comm
#: hubs), so what is kernel-wide is always found from ``get_session(shell)``.
_sessions: dict[int, AgentSession] = {}


def get_session(shell: Shell | None = None) -> AgentSession:
    """The session of ``shell`` (default: the running IPython), created on first use."""
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    key = id(shell)
    session = _sessions.get(key)
    if session is None:
        session = _sessions[key] = AgentSession(shell)
        if shell is not None and hasattr(shell, "configurables"):
            shell.configurables.append(session.config)
    return session


def get_bridge(shell: Shell | None = None) -> KernelBridge | None:
    """The live-notebook bridge of ``shell``'s session (default: the running IPython's), if
    ``%load_ext`` started one: a shorthand for code run in a kernel (tests, benchmarks)."""
    links = get_session(shell).links
    return links.bridge if links is not None else None


def _note_clicked_cell(conv: Conversation, clicked: tuple[str, str] | None) -> None:
    """Tell the tools which cell of the open notebook a click quoted (None: no click)."""
    from ...notebook.session import tool_session

    session = tool_session(conv.context)
    page = session.page_notebook
    session.clicked_cell = (page.key, *clicked) if clicked is not None and page is not None else None
