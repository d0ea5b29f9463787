"""``jupyter agent run NOTEBOOK -p PROMPT``: the agent loop headless, for scripts and CI.

The same loop and tools as ``%%agent``, on a notebook file (``NotebookRun`` starts a
kernel for it). The answer streams to stdout; progress (turns, tool calls, the end
reason) goes to stderr. Approvals are asked on the terminal when stdin is one
(``terminal_approvals.py``); otherwise they follow the permission mode (an "ask" is denied,
and the model is told why). The exit status says how the run ended (see ``EXIT_CODES``).

MCP servers: ``--mcp-config`` names them (a file or JSON, as ``.mcp.json`` holds them); they
are the user's own choice and start without asking. A ``.mcp.json`` in the working folder
is another matter (a repository's file can run any program): on a terminal each of its
servers is asked about; without one they are not started, and stderr says so and how to
opt in. Either way an MCP tool's calls ask unless a rule allows them (``--allow``).

Offline: ``--replay PATH`` (or ``$JUPYTER_AGENT_REPLAY``) plays a recorded transcript
instead of calling the API; ``--replay demo`` is the packaged demo.

Everything untrusted that is printed (the streamed answer, tool names and paths, notices,
the approval's message, code and diff, the end's error message) goes through
``render.terminal.terminal_text``: redacted, control characters and escape sequences shown
as signs (``␛[2J``), invisible characters marked. An approval prints the whole of what will
run or be written before ``[y/N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, TextIO

from .options import AgentOptions
from .environment import REPLAY_ENV, missing_key, no_key_message, prepare_replay_files, resolve_transcript, turn_limit
from .loop.permission_result import PERMISSION_MODES
from .model.providers import PROVIDER_NAMES
from .redact import redact, safe_prefix_length
from .render.terminal import terminal_text
from .terminal_approvals import (ALWAYS, NO, YES, approval_text, interpret_answer, no_terminal_denier,
                                 refuse_project_servers, terminal_approver)

#: Exit status by end reason. 2 is also argparse's usage error.
EXIT_CODES = {
    "completed": 0,
    "model_error": 1,
    "max_turns": 3,
    "prompt_too_long": 4,
    "stop_hook_prevented": 5,
    "hook_stopped": 5,
    "max_budget": 6,
    "aborted_streaming": 130,
    "aborted_tools": 130,
}
EXIT_USAGE = 2


def _cost_suffix(usd: float, model: Any) -> str:
    from .view.labels import cost_text

    cost = cost_text(usd, offline=model.offline, known=model.cost_known)
    return f" · {cost}" if cost else ""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jupyter agent",
        description="A Jupyter-native coding agent. `run` runs it headless on a notebook.",
        epilog="exit status: " + ", ".join(f"{code} {reason}" for reason, code in EXIT_CODES.items())
        + f", {EXIT_USAGE} usage error or no API key",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = commands.add_parser("run", help="run the agent on a notebook with a prompt",
                              description="Run the agent loop on NOTEBOOK with PROMPT.")
    run.add_argument("notebook", metavar="NOTEBOOK", help="the .ipynb file the agent works on")
    run.add_argument("-p", "--prompt", help="what the agent should do ('-' reads stdin; "
                     "with --replay, defaults to the transcript's prompt)")
    run.add_argument("--model", help="model id (default: $JUPYTER_AGENT_MODEL or Sonnet)")
    run.add_argument("--provider", choices=PROVIDER_NAMES,
                     help="where requests go (default: $JUPYTER_AGENT_PROVIDER or anthropic); credentials "
                     "from the provider's usual places, see docs/providers.md in jupyter-agent")
    run.add_argument("--permission-mode", choices=PERMISSION_MODES, default="default",
                     help="default: writes ask; acceptEdits: edits allowed; plan: no writes; "
                     "bypassPermissions: allow (safety paths and cell runs still ask)")
    run.add_argument("--max-turns", type=turn_limit, metavar="N", help="stop after N turns (0: no limit)")
    run.add_argument("--allow", action="append", default=[], metavar="RULE",
                     help="allow calls matching RULE without asking, e.g. 'Edit(src/**)' or "
                     "'NotebookRun' (repeatable); running cells asks in every mode unless a rule allows it")
    run.add_argument("--mcp-config", action="append", default=[], metavar="FILE_OR_JSON",
                     help="MCP servers to use (repeatable): a JSON file or string, "
                     "'{\"mcpServers\": {...}}' as in .mcp.json or the bare mapping; they start without "
                     "asking, their tools ask unless allowed, e.g. --allow 'mcp__SERVER__TOOL' or 'mcp__SERVER'")
    run.add_argument("--cwd", metavar="DIR", help="working directory of the tools (default: here)")
    run.add_argument("--replay", metavar="PATH", help="offline: replay a recorded transcript "
                     "('demo' for the packaged one); also $JUPYTER_AGENT_REPLAY")
    run.add_argument("--quiet", action="store_true", help="print only the answer and errors")
    from .mcp_server.stdio import add_command

    add_command(commands)  # `jupyter agent mcp`: the open notebooks as an MCP server (docs/mcp-server.md)
    return parser


class TerminalDisplay:
    """Prints a run as its :class:`~jupyter_agent.view.runmodel.RunModel` sees it (the
    view model the widgets and the transcript are drawn from, so they cannot disagree):
    the answer to ``out`` as it streams, the rest to ``err``, with the shared labels
    (``view/labels.py``). ``view/`` imports no widget stack."""

    def __init__(self, out: TextIO = sys.stdout, err: TextIO = sys.stderr, quiet: bool = False,
                 cwd: Path | None = None) -> None:
        from .view.runmodel import RunModel

        self.out, self.err, self.quiet, self.cwd = out, err, quiet, cwd
        self.model = RunModel(cwd=cwd)
        self.model.listen(self._on_model)
        self._requests = 0
        #: item -> characters printed so far (text is held back to the last space, so a
        #: secret is never printed in halves; a tool: its "●" line is out)
        self._printed: dict[Any, int] = {}
        self._finished: set[Any] = set()  # items printed to their end
        self._shown: dict[Any, str] = {}  # a command's output printed so far (its last screenful)

    def note(self, text: str) -> None:
        if not self.quiet:
            self.err.write(terminal_text(text) + "\n")
            self.err.flush()

    def handle(self, event: Any) -> None:
        """Fold one event into the model (which calls :meth:`_on_model`); at the end, the summary."""
        from .loop.state import Terminal

        self.model.handle(event)
        if isinstance(event, Terminal):
            self._end(event)

    # -- what the model says changed ----------------------------------------------------
    def _on_model(self, kind: str, item: Any) -> None:
        from .view.labels import NOTICE_LABELS, compaction_text, context_meter_text, plan_lines
        from .view.items import CompactionItem, NoticeItem, PlanItem, TextItem, ThinkingItem, ToolItem

        model = self.model
        if kind == "header" and model.requests != self._requests and model.ended is None:
            self._requests = model.requests
            meter = f" · {context_meter_text(model.context, model.window_known)}" if model.context is not None else ""
            self.note(f"── turn {model.turn_count} · request {model.requests} · {model.model}{meter}")
        elif isinstance(item, CompactionItem) and kind == "add" and item.event is not None:
            self.note(f"⇊ {compaction_text(item.event)}")
        elif kind == "remove" and isinstance(item, TextItem):
            self._printed.pop(item, None)  # a retry starts the response over
        elif isinstance(item, TextItem) and kind in ("add", "update"):
            self._print_text(item)
        elif isinstance(item, ThinkingItem) and kind == "add":
            self.note("thinking…")
        elif isinstance(item, PlanItem) and kind == "add":  # (added again each time it changes)
            for line in plan_lines(item):
                self.note(line)
        elif isinstance(item, NoticeItem) and kind == "add":
            self.note(f"{NOTICE_LABELS.get(item.level, NOTICE_LABELS['info'])} {item.text}")
        elif isinstance(item, ToolItem):
            self._tool_line(item)

    def _print_text(self, item: Any) -> None:
        if item in self._finished:
            return
        printed = self._printed.get(item, 0)
        text = item.text
        # a tail that could be the start of a secret waits until it can be judged
        cut = len(text) if item.done else max(safe_prefix_length(text), printed)
        if cut > printed:
            self.out.write(terminal_text(text[printed:cut]))
            self._printed[item] = cut
        if item.done:
            self.out.write("\n")
            self._finished.add(item)
        self.out.flush()

    def _tool_line(self, tool: Any) -> None:
        from .view.labels import STATE_ICONS, STATE_LABELS

        if tool.state == "input" or tool in self._finished:
            return
        if tool not in self._printed:
            self._printed[tool] = 0
            self.note(f"● {tool.name} {tool.summary}")
        if tool.name == "Bash" and tool.progress and isinstance(tool.progress[-1], str):
            self._command_output(tool, tool.progress[-1], done=tool.state != "running")
        if tool.state not in ("done", "error", "denied", "stopped", "not_run", "raised"):
            return
        self._finished.add(tool)
        icon = STATE_ICONS[tool.state]
        exit_code = f" · exit code {tool.exit_code}" if tool.exit_code is not None else ""
        if tool.state == "done":
            self.note(f"  {icon} {tool.name} {tool.summary} ({tool.duration_s:.1f} s){exit_code}")
        elif tool.state == "raised":
            self.note(f"  {icon} {tool.name} {tool.summary}: {STATE_LABELS['raised']} {tool.exception}")
        else:
            # redacted before it is shortened: a key cut in two is no longer found
            text = tool.result if isinstance(tool.result, str) else json.dumps(tool.result, default=str)
            content = redact(text)[:300]
            first = content.strip().splitlines()[0] if content and content.strip() else tool.state
            self.note(f"  {icon} {tool.name} {tool.summary} {tool.state}{exit_code}: {first}")

    def _command_output(self, tool: Any, screen: str, done: bool) -> None:
        """A command's output as it arrives: each report is its latest screenful (``\r``
        updates settled), so the lines not printed yet are found after the last line
        printed; at the end, the unfinished last line too. Each line goes out inert."""
        printed = self._shown.get(tool, "")
        start = 0
        if printed and screen.startswith(printed):
            start = len(printed)
        elif printed:  # the screenful moved on: continue after the last line printed
            last = printed[printed.rstrip("\n").rfind("\n") + 1:]
            found = screen.rfind(last)
            start = found + len(last) if found >= 0 else 0
            if found < 0:
                self.note("  │ …")
        end = len(screen) if done else screen.rfind("\n") + 1
        for line in screen[start:end].splitlines():
            self.note(f"  │ {line}")
        self._shown[tool] = screen[:end] if end > start else printed

    def _end(self, terminal: Any) -> None:
        from .view.labels import end_explanation, end_reason_text
        from .view.transcript import stopped_calls

        reason, _ = end_reason_text(terminal)
        explanation = end_explanation(terminal, stopped_calls=stopped_calls(self.model))
        self.err.write(terminal_text(f"Ended: {reason}" + (f" — {explanation}" if explanation else "")) + "\n")
        self._changes()
        usage = self.model.total_usage
        if not self.quiet:
            self.err.write(f"turns {terminal.turn_count} · tokens in {usage.input_tokens:,} out "
                           f"{usage.output_tokens:,} cache read {usage.cache_read_input_tokens:,} "
                           f"write {usage.cache_creation_input_tokens:,}"
                           + _cost_suffix(usage.cost_usd, self.model) + "\n")
        self.err.flush()


    def _changes(self) -> None:
        """The run's list of changes (files created or changed, cells inserted, replaced,
        deleted) and the kernel's names its cells changed."""
        from .view.review import changes_lines

        changes = self.model.changes
        lines = changes_lines(changes, self.cwd) if changes is not None else []
        if lines:
            self.err.write("Changes:\n" + "".join(f"  {terminal_text(line)}\n" for line in lines))


def run_options(args: argparse.Namespace, *, cwd: Path, notebook: Path, replay: str | None,
                servers: dict[str, Any] | None) -> AgentOptions:
    """The options ``jupyter agent run``'s flags make (those read from files already read:
    the replay transcript found, the MCP servers' configurations)."""
    return AgentOptions(model=args.model, provider=args.provider, replay=replay,
                        permission_mode=args.permission_mode, allow=tuple(args.allow), cwd=cwd,
                        notebook_path=str(notebook.resolve()), max_turns=args.max_turns or None,
                        mcp_servers=servers)


async def run_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .conversation import Conversation

    notebook = Path(args.notebook).expanduser()
    if notebook.suffix != ".ipynb" or not notebook.is_file():
        err.write(f"jupyter agent run: {args.notebook}: no such notebook (a .ipynb file is needed)\n")
        return EXIT_USAGE
    cwd = Path(args.cwd).expanduser() if args.cwd else Path.cwd()
    if not cwd.is_dir():
        err.write(f"jupyter agent run: --cwd {args.cwd}: no such directory\n")
        return EXIT_USAGE
    try:
        from .mcp.config import read_mcp_configs

        servers = read_mcp_configs(args.mcp_config, Path.cwd())  # (paths as the shell gave them)
    except ValueError as exc:
        err.write(terminal_text(f"jupyter agent run: --mcp-config: {exc}") + "\n")
        return EXIT_USAGE
    replay = args.replay or (os.environ.get(REPLAY_ENV) if not args.model else None)
    if replay:
        try:
            replay = resolve_transcript(replay)
        except FileNotFoundError as exc:
            err.write(f"jupyter agent run: {exc}\n")
            return EXIT_USAGE
    prompt = args.prompt
    if prompt == "-":
        prompt = sys.stdin.read()
    if not prompt and replay:
        prompt = json.loads(Path(replay).read_text(encoding="utf-8")).get("prompt")
    if not prompt or not prompt.strip():
        err.write("jupyter agent run: say what to do with -p PROMPT\n")
        return EXIT_USAGE
    try:
        if missing_key(args.model, replay, provider=args.provider):
            err.write(no_key_message("terminal", provider=args.provider) + "\n")
            return EXIT_USAGE
    except ValueError as exc:  # $JUPYTER_AGENT_PROVIDER unknown, the policy refused the provider
        err.write(terminal_text(f"jupyter agent run: {exc}") + "\n")
        return EXIT_USAGE
    if replay:
        for rel in prepare_replay_files(replay, cwd):
            err.write(f"(replay: wrote {rel}, which the recorded run expects)\n")

    interactive = sys.stdin.isatty()
    try:
        from .permissions import Rule

        for rule in args.allow:
            Rule.parse(rule)
        conv = Conversation(options=run_options(args, cwd=cwd, notebook=notebook, replay=replay, servers=servers))
    except ValueError as exc:  # a bad --allow rule
        err.write(f"jupyter agent run: {exc}\n")
        return EXIT_USAGE
    if not interactive:
        refuse_project_servers(conv, err)
    display = TerminalDisplay(out, err, quiet=args.quiet, cwd=conv.context.cwd)
    display.note(f"jupyter-agent · {conv.model_name} · mode {conv.permission_mode} · {notebook}"
                 + ("" if interactive else " · not a terminal: asks are denied (see --allow, --permission-mode)"))
    try:
        run = conv.send(prompt, can_use_tool=terminal_approver(err, conv.permissions) if interactive
                        else no_terminal_denier(err, conv.permissions, conv.tools))
    except ValueError as exc:  # the administrator's policy refused the model or the spend limit
        err.write(f"jupyter agent run: {exc}\n")
        await conv.aclose()
        return EXIT_USAGE
    display.model.changes = conv.changes_of(run)  # its end lists what the run changed
    loop = asyncio.get_running_loop()
    stops = 0

    def on_sigint() -> None:
        nonlocal stops
        stops += 1
        if stops > 1:
            raise KeyboardInterrupt
        err.write("\nStopping (Ctrl-C again to quit at once)…\n")
        run.stop()

    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    except (NotImplementedError, RuntimeError):  # (Windows, or not the main thread: Ctrl-C quits)
        pass
    try:
        async for event in run:
            display.handle(event)
    finally:
        try:
            loop.remove_signal_handler(signal.SIGINT)
        except (NotImplementedError, RuntimeError):  # (none was added, as above)
            pass
        await conv.aclose()
    terminal = run.terminal
    return EXIT_CODES.get(terminal.reason.value if terminal else "model_error", 1)


def main(argv: list[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Entry point of ``jupyter-agent`` (so ``jupyter agent ...`` works)."""
    out, err = out or sys.stdout, err or sys.stderr
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "mcp":
        from .mcp_server.stdio import run

        return run(args, err)
    if args.command != "run":
        parser.print_help(err)
        return EXIT_USAGE
    try:
        return asyncio.run(run_command(args, out, err))
    except KeyboardInterrupt:
        err.write("Interrupted.\n")
        return EXIT_CODES["aborted_tools"]


#: The public names; the terminal's approvals (``terminal_approvals.py``) are importable from
#: here too, where they were before they had a module of their own.
__all__ = ["ALWAYS", "EXIT_CODES", "EXIT_USAGE", "NO", "YES", "TerminalDisplay", "approval_text", "build_parser",
           "interpret_answer", "main", "no_terminal_denier", "refuse_project_servers", "run_command", "run_options",
           "terminal_approver"]


if __name__ == "__main__":
    sys.exit(main())
