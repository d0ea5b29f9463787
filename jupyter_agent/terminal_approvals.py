"""Approvals on a terminal, for ``jupyter agent run``: each ask printed whole (made inert by
``render.terminal``) and answered ``[y/N]``, one question at a time; without a terminal every
ask is denied (the model is told what it can do instead, stderr how to allow it next time),
and a project's ``.mcp.json`` servers are left unstarted."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
import threading
from pathlib import Path
from typing import Any, TextIO

from .render.invisible import INVISIBLE_WARNING, has_invisible
from .render.terminal import terminal_text

#: Answers to the approval prompt. Enter is "no" (the safe default, shown as [y/N]).
YES = ("y", "yes", "ok", "okay", "allow", "sure")
ALWAYS = ("a", "always")
NO = ("", "n", "no", "deny", "nope")


def _read_line_in_daemon(loop: asyncio.AbstractEventLoop, stdin: TextIO) -> asyncio.Future:
    """A line of ``stdin``, read on a daemon thread.

    Not ``run_in_executor``: ``asyncio.run`` waits for its executor's threads at exit, so
    after Ctrl-C a prompt blocked in ``readline`` kept the process alive until Enter.
    A daemon thread dies with the process."""
    future = loop.create_future()

    def read() -> None:
        try:
            line = stdin.readline()
        except Exception:  # stdin closed under us: treat as end of input
            line = ""

        def settle() -> None:
            if not future.done():
                future.set_result(line)

        try:
            loop.call_soon_threadsafe(settle)
        except RuntimeError:  # the loop is gone: nobody waits for the answer
            pass

    threading.Thread(target=read, name="jupyter-agent prompt", daemon=True).start()
    return future


def interpret_answer(answer: str) -> tuple[str, str | None]:
    """``(choice, feedback)`` for a typed answer: ``allow`` for y/yes/ok/allow,
    ``always`` for a/always, ``deny`` for Enter/n/no/deny, else ``deny`` with the text
    as feedback for the model."""
    word = answer.strip()
    if word.lower() in YES:
        return "allow", None
    if word.lower() in ALWAYS:
        return "always", None
    if word.lower() in NO:
        return "deny", None
    return "deny", word


def approval_text(tool_name: str, input: dict[str, Any], message: str, diff: str | None) -> str:
    """What the terminal shows before ``[y/N]``: the question and the whole of what will
    run or be written (the message, with a cell's code; the diff, or the input when there
    is none), all of it made inert; a warning when it holds invisible characters."""
    raw_input = json.dumps(input, indent=1, ensure_ascii=False)
    body = diff if diff else raw_input
    lines = [f"? {tool_name} wants approval: {message}", body]
    if any(has_invisible(t) for t in (message, body)):
        lines.append(f"! {INVISIBLE_WARNING}")
    count = sum(t.count("\n") + 1 for t in (message, body))
    lines.append(f"(all of it is shown above: {count:,} lines; scroll back to read it before you answer)")
    return "\n" + "\n".join(terminal_text(line) for line in lines) + "\n"


def terminal_approver(err: TextIO = sys.stderr, policy: Any = None, stdin: TextIO | None = None) -> Any:
    """``can_use_tool`` that asks on the terminal: ``[y/N]``; y/yes/ok/allow allows,
    a/always allows and adds the suggested rule, Enter/n/no/deny denies, anything else
    denies with that text as feedback to the model (the prompt says so).

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
            err.write(approval_text(request.tool_name, request.input, request.message, request.diff))
            rules = ", ".join(request.suggested_rules or (request.tool_name,))
            err.write(terminal_text(f"Allow? [y/N]  y/yes/ok = allow · a = always (adds {rules}) · Enter/n = deny · "
                                    "or type a note to deny with it: "))
            err.flush()
            line = await _read_line_in_daemon(asyncio.get_running_loop(), stdin or sys.stdin)
            choice, feedback = interpret_answer(line)
            if choice == "deny":
                err.write(terminal_text(f"Denied; your note goes to the model: {feedback}") + "\n" if feedback
                          else "Denied.\n")
            request.answer(choice, feedback)
            await asyncio.wait({request.future}, timeout=1)  # the answer lands before the next question

    broker = ApprovalBroker(policy, on_request=ask_on_terminal)
    return broker


def no_terminal_denier(err: TextIO | None = None, permissions: Any = None, tools: Any = None) -> Any:
    """``can_use_tool`` without a terminal: deny every ask. The model is told what was
    refused and what it can do instead (``prompts.denial_for_model``); how the person running
    the command can allow such calls next time goes to ``err`` only (``prompts.operator_hint``)."""
    from .agent import NO_ONE_ANSWERS
    from .loop.permission_result import PermissionDeny
    from .prompts import denial_for_model, operator_hint, permission_setup
    from .tools import default_tools

    by_name = {t.name: t for t in (tools or default_tools())}
    setup = permission_setup(permissions, by_name.values(), no_one_answers=True) if permissions else None

    async def deny(tool_name: str, input: dict[str, Any], ask: Any) -> Any:
        tool = by_name.get(tool_name)
        if err is not None:
            hint = operator_hint(tool_name, getattr(ask, "suggested_rules", ()) or (),
                                 str(getattr(permissions, "mode", "") or ""), tool)
            err.write(terminal_text(hint) + "\n")
        return PermissionDeny(denial_for_model(tool_name, setup, tool, str(getattr(ask, "why", "") or "")))

    setattr(deny, NO_ONE_ANSWERS, True)
    return deny


def refuse_project_servers(conv: Any, err: TextIO) -> None:
    """Without a terminal no one can approve the servers of the working folder's .mcp.json:
    they are left unstarted (not asked about, so not silently either), and stderr says how
    to opt in."""
    from .mcp.config import PROJECT_FILE

    refused = conv.mcp_servers.refuse_project_servers(conv.context.cwd)
    if refused:
        names = ", ".join(repr(config.name) for config in refused)
        path = conv.context.cwd / PROJECT_FILE
        given = PROJECT_FILE if conv.context.cwd == Path.cwd().resolve() else shlex.quote(str(path))
        err.write(terminal_text(
            f"jupyter agent run: {path} names the MCP server(s) {names}; they are not started: a project's "
            f"{PROJECT_FILE} can run any program, and no one is at a terminal to approve them. To use them, "
            f"pass the file: --mcp-config {given} (servers given on the command line start without asking), "
            "or run from a terminal to be asked.") + "\n")
