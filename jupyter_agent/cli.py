"""``jupyter agent run NOTEBOOK -p PROMPT``: the agent loop headless, for scripts and CI.

The same loop and tools as ``%%agent``, on a notebook file (``NotebookRun`` starts a
kernel for it). The answer streams to stdout; progress (turns, tool calls, the end
reason) goes to stderr. Approvals are asked on the terminal when stdin is one;
otherwise they follow the permission mode (an "ask" is denied, and the model is told
why). The exit status says how the run ended (see ``EXIT_CODES``).

Offline: ``--replay PATH`` (or ``$JUPYTER_AGENT_REPLAY``) plays a recorded transcript
instead of calling the API; ``--replay demo`` is the packaged demo.
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

from .jupyter.config import PERMISSION_MODES, positive_int
from .redact import redact
from .jupyter.environment import NO_KEY_MESSAGE, missing_key, prepare_replay_files, resolve_transcript

#: Exit status by end reason. 2 is also argparse's usage error.
EXIT_CODES = {
    "completed": 0,
    "model_error": 1,
    "max_turns": 3,
    "prompt_too_long": 4,
    "stop_hook_prevented": 5,
    "hook_stopped": 5,
    "aborted_streaming": 130,
    "aborted_tools": 130,
}
EXIT_USAGE = 2


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
    run.add_argument("--permission-mode", choices=PERMISSION_MODES, default="default",
                     help="default: writes ask; acceptEdits: edits allowed; plan: no writes; "
                     "bypassPermissions: allow (safety paths and cell runs still ask)")
    run.add_argument("--allow", action="append", default=[], metavar="RULE",
                     help="an allow rule, e.g. 'NotebookRun' or 'Edit(src/**)' (repeatable); running cells "
                     "asks in every mode unless a rule allows it")
    run.add_argument("--max-turns", type=positive_int, metavar="N", help="stop after N turns")
    run.add_argument("--cwd", metavar="DIR", help="working directory of the tools (default: here)")
    run.add_argument("--replay", metavar="PATH", help="offline: replay a recorded transcript "
                     "('demo' for the packaged one); also $JUPYTER_AGENT_REPLAY")
    run.add_argument("--quiet", action="store_true", help="print only the answer and errors")
    return parser


class TerminalDisplay:
    """Prints a run's events: text to ``out`` as it streams, the rest to ``err``."""

    def __init__(self, out: TextIO = sys.stdout, err: TextIO = sys.stderr, quiet: bool = False) -> None:
        self.out, self.err, self.quiet = out, err, quiet
        self._pending = ""  # text not yet printed: held back to the last space, so a
        self._tools: dict[str, dict[str, Any]] = {}  # secret is never printed in halves

    def note(self, text: str) -> None:
        if not self.quiet:
            self.err.write(redact(text) + "\n")
            self.err.flush()

    def _flush_text(self, final: bool) -> None:
        cut = len(self._pending) if final else max(self._pending.rfind(" "), self._pending.rfind("\n")) + 1
        if cut > 0:
            self.out.write(redact(self._pending[:cut]))
            self.out.flush()
            self._pending = self._pending[cut:]

    def handle(self, event: Any) -> None:
        from .jupyter.runmodel import end_reason_text, tool_summary
        from .loop import events as ev
        from .loop.state import Terminal

        if isinstance(event, ev.RequestStart):
            self.note(f"── turn {event.turn_count} · request {event.request_index} · {event.model}")
        elif isinstance(event, ev.StreamEvent):
            delta = event.delta or {}
            block = event.block or {}
            if event.type == "content_block_delta" and delta.get("type") == "text_delta":
                self._pending += delta.get("text", "")
                self._flush_text(final=False)
            elif event.type == "content_block_start" and block.get("type") == "thinking":
                self.note("💭 thinking…")
            elif event.type == "content_block_stop" and block.get("type") == "text":
                self._flush_text(final=True)
                self.out.write("\n")
                self.out.flush()
        elif isinstance(event, (ev.ModelRetry, ev.ModelFallback)):
            self._pending = ""
            self.note(f"! {getattr(event, 'error', '')} — starting the response over")
        elif isinstance(event, ev.AssistantMessage):
            for block in event.tool_uses:
                self._tools[block["id"]] = block
                self.note(f"● {block['name']} {tool_summary(block['name'], block.get('input') or {})}")
        elif isinstance(event, ev.ToolResult):
            block = self._tools.get(event.tool_use_id, {})
            summary = tool_summary(event.name, block.get("input") or {})
            if event.is_error:
                content = event.content if isinstance(event.content, str) else json.dumps(event.content)[:300]
                self.note(f"  ✗ {event.name} {summary}: {content.strip().splitlines()[0] if content.strip() else 'error'}")
            else:
                self.note(f"  ✓ {event.name} {summary} ({event.duration_s:.1f} s)")
        elif isinstance(event, ev.Notice):
            self.note(f"ℹ {event.text}")
        elif isinstance(event, Terminal):
            self._flush_text(final=True)
            reason, meaning = end_reason_text(event)
            usage = event.usage
            self.err.write(f"Ended: {reason} — {meaning}\n")
            if event.error:
                self.err.write(redact(f"Error: {event.message or event.error}\n"))
            if usage is not None and not self.quiet:
                self.err.write(f"turns {event.turn_count} · tokens in {usage.input_tokens:,} out "
                               f"{usage.output_tokens:,} cache read {usage.cache_read_input_tokens:,} "
                               f"write {usage.cache_creation_input_tokens:,} · ≈ ${usage.cost_usd:.4f}\n")
            self.err.flush()


def terminal_approver(err: TextIO = sys.stderr, policy: Any = None) -> Any:
    """``can_use_tool`` that asks on the terminal: y = allow, a = always, n = deny,
    anything else = deny with that text as feedback to the model.

    It is a :class:`~jupyter_agent.permissions.ApprovalBroker` whose listener asks, one
    question at a time; a request that an earlier "always" (checked against ``policy``)
    already released is not asked.
    """
    from .permissions import ApprovalBroker, ApprovalRequest

    turn = asyncio.Lock()  # concurrent asks must not interleave their prompts on one terminal

    async def ask_on_terminal(request: ApprovalRequest) -> None:
        async with turn:
            await broker.drain()  # an "always" answered just before may have released this one
            if request.done:
                return
            err.write(redact(f"\n✋ {request.tool_name} wants approval: {request.message}\n"
                             f"{json.dumps(request.input, indent=1, ensure_ascii=False)[:2000]}\n"))
            if request.diff:
                err.write(redact(request.diff[:4000]) + "\n")
            err.write("Allow? [y]es / [a]lways / [n]o, or type feedback to deny with it: ")
            err.flush()
            answer = (await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)).strip()
            if answer.lower() in ("y", "yes"):
                request.allow()
            elif answer.lower() in ("a", "always"):
                request.allow_always()
            else:
                request.deny(None if answer.lower() in ("", "n", "no") else answer)
            await asyncio.wait({request.future}, timeout=1)  # the answer lands before the next question

    broker = ApprovalBroker(policy, on_request=ask_on_terminal)
    return broker


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
    replay = args.replay or (os.environ.get("JUPYTER_AGENT_REPLAY") if not args.model else None)
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
    if missing_key(args.model, replay):
        err.write(NO_KEY_MESSAGE.replace("%agent --replay PATH", "jupyter agent run ... --replay PATH") + "\n")
        return EXIT_USAGE
    if replay:
        for rel in prepare_replay_files(replay, cwd):
            err.write(f"(replay: wrote {rel}, which the recorded run expects)\n")

    interactive = sys.stdin.isatty()
    conv = Conversation(model=args.model, permission_mode=args.permission_mode, cwd=cwd, allow=args.allow,
                        max_turns=args.max_turns, notebook_path=str(notebook.resolve()), replay=replay)
    display = TerminalDisplay(out, err, quiet=args.quiet)
    display.note(f"jupyter-agent · {conv.model_name} · mode {conv.permission_mode} · {notebook}"
                 + ("" if interactive else " · approvals: none (not a terminal): asks are denied"))
    run = conv.send(prompt, can_use_tool=terminal_approver(err, conv.permissions) if interactive else None)
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
    except (NotImplementedError, RuntimeError):
        pass
    try:
        async for event in run:
            display.handle(event)
    finally:
        try:
            loop.remove_signal_handler(signal.SIGINT)
        except (NotImplementedError, RuntimeError):
            pass
        await conv.aclose()
    terminal = run.terminal
    return EXIT_CODES.get(terminal.reason.value if terminal else "model_error", 1)


def main(argv: list[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Entry point of ``jupyter-agent`` (so ``jupyter agent ...`` works)."""
    out, err = out or sys.stdout, err or sys.stderr
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command != "run":
        parser.print_help(err)
        return EXIT_USAGE
    try:
        return asyncio.run(run_command(args, out, err))
    except KeyboardInterrupt:
        err.write("Interrupted.\n")
        return EXIT_CODES["aborted_tools"]


if __name__ == "__main__":
    sys.exit(main())
