"""``%load_ext jupyter_agent``: the ``%%agent`` cell magic and the ``%agent`` line magic.

A cell magic cannot be ``async`` (docs/design.md, "Background tasks"), so ``%%agent`` starts the run as a task on
the kernel's event loop and returns its handle at once; the handle displays as the
live widget, and the transcript replaces the widget when the run ends.

Executed headless (nbclient, papermill, ``jupyter execute``) a cell must not return
before its run ends, or the next cell would start while it runs and its output would be
lost. There an input transformer rewrites the ``%%agent`` cell into ``await
run_cell_awaiting(...)``: IPython runs it as a top-level ``await``, the event loop keeps
driving the run, and the cell ends when the run does, transcript in its outputs.

Loading is fast: nothing here imports ``anthropic``, ``ipywidgets`` or the loop.
``%load_ext`` starts a background warm-up that imports them while the person types the
prompt (:mod:`.warmup`); a run started before it ended waits for it.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_cell_magic, magics_class

from ..kernel import warmup
from ...loop.permission_result import PERMISSION_MODES
from ...model.providers import PROVIDER_NAMES
from ...environment import positive_int, resolve_transcript, turn_limit
from .magic_text import remove_rule, rules_text, runs_table, status_text
from ..kernel.agent_session import AgentBusy, AgentSession, NoApiKey, get_session

if TYPE_CHECKING:  # (loading the extension imports no run machinery: see the module docstring)
    from ..widgets.run_handle import AgentRun

_CELL_START = re.compile(r"^%%agent(\s|$)")


class _ShownHelp(Exception):
    """``--help`` was printed; do nothing else."""


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad input as IPython's UsageError (no traceback)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message}\n{self.format_usage().rstrip()}\n(see `%agent --help`)")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            print(message)
        raise _ShownHelp()


def _directory(text: str) -> str:
    path = Path(text).expanduser()
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"no such directory: {text}")
    return str(path.resolve())


def _transcript_file(text: str) -> str:
    if text == "":
        return ""  # `%agent --replay ""`: back to the live model
    try:
        return resolve_transcript(text)
    except FileNotFoundError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_common(parser: argparse.ArgumentParser, *, line: bool) -> None:
    parser.add_argument("--model", metavar="M", help="model id (e.g. claude-sonnet-4-5)")
    parser.add_argument("--max-turns", metavar="N", type=turn_limit,
                        help="stop after N turns (0: no limit)")
    parser.add_argument("--permission-mode", metavar="MODE", choices=PERMISSION_MODES,
                        help="one of: " + ", ".join(PERMISSION_MODES))
    parser.add_argument("--cwd", metavar="DIR", type=_directory,
                        help="working directory of the tools (the conversation moves there)")
    parser.add_argument("--replay", metavar="PATH", type=_transcript_file,
                        help="offline: replay a recorded transcript instead of calling the API "
                        "('demo' for the packaged one)")
    if line:  # where the conversation's runs go (a cell's own run keeps the conversation's provider)
        parser.add_argument("--provider", metavar="P", choices=("", *PROVIDER_NAMES),
                            help="anthropic, bedrock, vertex or foundry ('' for $JUPYTER_AGENT_PROVIDER); "
                            "credentials from the provider's usual places (docs/providers.md in jupyter-agent)")


def cell_parser() -> _Parser:
    parser = _Parser(prog="%%agent", add_help=True, description=(
        "Run the agent on the prompt in the cell body. The run continues the kernel's "
        "conversation (earlier %%agent cells and the chat panel) and shows live; it "
        "returns its handle at once (headless: when the run ends)."))
    _add_common(parser, line=False)
    wait = parser.add_mutually_exclusive_group()
    wait.add_argument("--wait", dest="wait", action="store_const", const=True, default=None,
                      help="keep the cell busy until the run ends")
    wait.add_argument("--no-wait", dest="wait", action="store_const", const=False,
                      help="return at once even when executed headless")
    return parser


def line_parser() -> _Parser:
    parser = _Parser(prog="%agent", add_help=True, description=(
        "Show or change the agent's settings. With no arguments: show them. "
        "`new` starts a new conversation, `runs` lists past runs, `stop` stops the running one, "
        "`approvals` shows the approvals waiting for you, `rules` lists the permission rules "
        "(`rules --remove N` removes rule N), `undo [N]` puts back the files and cells the last "
        "run (or run N of `runs`) changed, `compact [instruction]` summarises the conversation "
        "now, keeping your own messages word for word; `mcp` lists the MCP servers, their state and tools; "
        "`resume` brings back this notebook's conversation after a kernel restart (its history, its "
        "session rules and its runs' undo records, saved after each turn) and tells the agent which "
        "variables are gone."))
    parser.add_argument("action", nargs="?", default="status",
                        choices=("status", "new", "runs", "stop", "approvals", "rules", "undo", "compact", "mcp",
                                 "resume"))
    parser.add_argument("words", nargs="*",
                        help="with `compact`: what the summary must keep; with `undo`: the run to undo, "
                        "as `%%agent runs` numbers them (default: the last)")
    parser.add_argument("--remove", metavar="N", type=positive_int,
                        help="with `rules`: remove the session rule number N")
    _add_common(parser, line=True)
    return parser


def _split(line: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"cannot read the options: {exc}") from None


@magics_class
class AgentMagics(Magics):
    """The agent's magics. ``%%agent`` runs a prompt; ``%agent`` shows and sets."""

    def __init__(self, shell: InteractiveShell, session: AgentSession) -> None:
        super().__init__(shell)
        self.session = session

    @line_cell_magic
    def agent(self, line: str, cell: str | None = None) -> AgentRun | None:
        """``%%agent [--model M] [--max-turns N] [--permission-mode MODE] [--cwd DIR]
        [--replay PATH] [--wait|--no-wait]`` with the prompt as the cell body;
        ``%agent [status|new|runs|stop] [--model M] [--permission-mode MODE]
        [--max-turns N] [--cwd DIR] [--replay PATH]``; ``%agent --help``."""
        if cell is None:
            return self._line(line)
        try:
            return self.start_cell(line, cell)
        except _ShownHelp:
            return None

    # -- %%agent -------------------------------------------------------------------------
    def start_cell(self, line: str, cell: str) -> AgentRun:
        """Parse, check and start; returns the run handle (raises UsageError, starts nothing,
        on bad input)."""
        args = cell_parser().parse_args(_split(line))
        warmup.wait()  # a run that starts during the warm-up joins it, never imports beside it
        try:
            return self.session.start(
                cell.strip("\n"), model=args.model, permission_mode=args.permission_mode,
                max_turns=args.max_turns, cwd=args.cwd, replay=args.replay,
            )
        except (AgentBusy, NoApiKey, ValueError) as exc:
            raise UsageError(str(exc)) from None

    # -- %agent --------------------------------------------------------------------------
    def _line(self, line: str) -> AgentRun | None:
        try:
            args = line_parser().parse_args(_split(line))
        except _ShownHelp:
            return None
        session = self.session
        try:
            session.set_defaults(model=args.model, permission_mode=args.permission_mode,
                                 max_turns=args.max_turns, cwd=args.cwd, replay=args.replay)
            if args.provider is not None:
                _set_provider(session, args.provider)
            number = _run_number(args) if args.action == "undo" else None
            if args.words and args.action not in ("compact", "undo"):
                raise UsageError(f"unexpected words after `{args.action}`: {' '.join(args.words)}")
            if args.action == "compact":
                instruction = " ".join(args.words)
                warmup.wait()
                return session.start(f"/compact {instruction}".strip(), compact=instruction)
            if args.action == "new":
                session.new_conversation()
                print("Started a new conversation: the next %%agent cell will not see earlier turns.")
            elif args.action == "stop":
                print("Stopping the run." if session.stop() else "No run is going.")
            elif args.action == "runs":
                print(runs_table(session))
            elif args.action == "resume":
                resume_line(session)
            elif args.action == "undo":
                undo_line(session, number)
            elif args.action == "approvals":
                show_approvals(session)
            elif args.action == "mcp":
                from ..kernel.mcp_status import mcp_text

                print(mcp_text(session))
            elif args.action == "rules":
                if args.remove is not None:
                    print(remove_rule(session, args.remove))
                print(rules_text(session))
            else:
                print(status_text(session))
        except (AgentBusy, NoApiKey) as exc:
            raise UsageError(str(exc)) from None
        if args.remove is not None and args.action != "rules":
            raise UsageError("--remove goes with `rules`: `%agent rules --remove N`.")
        return None


def _set_provider(session: AgentSession, provider: str) -> None:
    """``%agent --provider P``: as ``%config AgentConfig.provider``; the policy's refusal as a usage error."""
    from traitlets import TraitError

    try:
        session.config.provider = provider
    except TraitError as exc:
        raise UsageError(str(exc)) from None


def _run_number(args: argparse.Namespace) -> int | None:
    """``%agent undo [N]``: the run's number, or None for the last run."""
    if not args.words:
        return None
    if len(args.words) > 1:
        raise UsageError(f"`%agent undo` takes one run number, not {' '.join(args.words)!r}.")
    try:
        return positive_int(args.words[0])
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"`%agent undo N`: N {exc} (see `%agent runs`).") from None


def undo_line(session: AgentSession, number: int | None) -> None:
    """``%agent undo [N]`` (loaded when used: the undo's modules import the loop)."""
    from ..widgets.undo_bar import UndoRefused, show_undo

    try:
        show_undo(session, number)
    except UndoRefused as exc:
        raise UsageError(str(exc)) from None


def resume_line(session: AgentSession) -> None:
    """``%agent resume`` (loaded when used: it reads the saved file and the undo's records)."""
    from ..persistence.resume import ResumeRefused, resume, resume_text

    try:
        saved, gone = resume(session)
    except ResumeRefused as exc:
        raise UsageError(str(exc)) from None
    print(resume_text(saved, gone))


def _lost_card_line(tool_name: str, summary: str) -> str:
    """The line an approval card leaves where it is not drawn (answered and closed, a view
    that cannot draw widgets, a kernel that is gone)."""
    return (f"*(An approval card for {tool_name} `{summary}` was shown here: while its run waits for it, "
            "`%agent approvals` shows it again.)*")


def show_approvals(session: AgentSession) -> None:
    """``%agent approvals``: show the cards still waiting (again), here. A card is one
    widget: answering it in any of its places answers it everywhere (e.g. when the
    ``%%agent`` cell that showed it first was deleted)."""
    from IPython.display import display

    active = session.active
    broker = getattr(active, "broker", None) if active is not None and not active.done else None
    cards = list(broker.cards.values()) if broker is not None else []
    if not cards or active is None:  # (no run going on has none)
        print("No approvals are waiting.")
        return
    from ..widgets.fallback import Fallback, live_class
    from ...view.items import tool_summary

    print(f"{len(cards)} approval{'s' if len(cards) != 1 else ''} waiting (run: {active.prompt[:60]!r}):")
    for request, card in cards:
        summary = tool_summary(request.tool_name, request.input, cwd=active.model.cwd)
        # like every widget of the front, the card leaves a plain line where it is not drawn
        fallback = Fallback(functools.partial(_lost_card_line, request.tool_name, summary))
        card.add_class(live_class(fallback.key))
        display(card)
        fallback.show()


# -- headless: the awaiting form of a %%agent cell -------------------------------------------

def _wants_wait(session: AgentSession, line: str) -> bool:
    try:
        tokens = shlex.split(line)
    except ValueError:
        return False  # let the magic report the bad options
    force = True if "--wait" in tokens else False if "--no-wait" in tokens else None
    return session.should_wait(force)


def _agent_transformer(lines: list[str]) -> list[str]:
    """Rewrite ``%%agent`` cells into an awaited call when the cell must wait for its run."""
    if not lines or not _CELL_START.match(lines[0]):
        return lines
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None or not _wants_wait(get_session(shell), lines[0][len("%%agent"):]):
        return lines
    line = lines[0][len("%%agent"):].strip()
    body = "".join(lines[1:])
    return [f"await __import__('jupyter_agent.jupyter.magic.agent_magic', fromlist=['_'])"
            f".run_cell_awaiting({line!r}, {body!r})\n"]


async def run_cell_awaiting(line: str, cell: str) -> None:
    """Run an ``%%agent`` cell to its end (what the transformer makes of a headless cell)."""
    from IPython import get_ipython

    shell = get_ipython()
    magics = shell.magics_manager.registry.get("AgentMagics")
    if magics is None:
        raise UsageError("The jupyter_agent extension is not loaded: `%load_ext jupyter_agent`.")
    try:
        handle = magics.start_cell(line, cell)
    except _ShownHelp:
        return None
    handle._ipython_display_()
    try:
        await handle.wait()
    except asyncio.CancelledError:  # a kernel interrupt: the run was stopped; let it end
        if handle.task is not None:
            await asyncio.wait({handle.task}, timeout=10)
        raise
    shell.displayhook.update_user_ns(handle)  # `_` is the run, as after an interactive cell
    return None


# -- extension entry points -----------------------------------------------------------------

def load_ipython_extension(ipython: InteractiveShell) -> None:
    """``%load_ext jupyter_agent``: register ``%%agent`` and ``%agent``, and start
    loading what the first run needs in the background (the SDK takes seconds)."""
    from .kernel_services import KernelServices

    session = get_session(ipython)
    ipython.register_magics(AgentMagics(ipython, session))
    if session.services is None:
        session.services = KernelServices(ipython, session)
    session.services.start()  # the bridge, the side panel's and outside agents' comms, ...
    cleanup = ipython.input_transformers_cleanup
    if _agent_transformer not in cleanup:
        cleanup.append(_agent_transformer)
    warmup.start()


def unload_ipython_extension(ipython: InteractiveShell) -> None:
    """``%unload_ext jupyter_agent``: remove the magics (IPython cannot unregister a
    Magics class), the transformer and the interrupt handler, and stop a run still
    going. The conversation stays, so ``%reload_ext`` continues it."""
    session = get_session(ipython)
    session.stop()
    session.uninstall()
    if session.services is not None:
        session.services.close()
    for kind in ("line", "cell"):
        ipython.magics_manager.magics[kind].pop("agent", None)
    ipython.magics_manager.registry.pop("AgentMagics", None)
    if _agent_transformer in ipython.input_transformers_cleanup:
        ipython.input_transformers_cleanup.remove(_agent_transformer)
