"""``Bash {command, timeout?, description?}``: run a shell command in the working folder.

Claude Code's schema and wording (Claude models are trained on them). The command runs
with ``bash -c`` in the working folder, with the kernel's environment minus its secrets
(the removal kernels get: :func:`~jupyter_agent.redact.without_secrets`), stdin empty; its
output streams to the card and comes back settled and bounded (:mod:`.shell_run`), with
its exit code. Stop and the time limit end every process it started (:mod:`.shell_reaper`).

Permission: running a command asks in every mode unless allow rules cover *every* simple
command of the line, read by a real shell parse (:mod:`.shell_parse`) and judged by what
its options do (:mod:`.shell_commands`: a prefix rule does not cover a form that runs other
code), and every file its redirections and options write (the permission policy decides:
``jupyter_agent.permissions``). With
the sandbox on (:class:`BashSettings`, where ``bwrap`` works) a command runs with no
network and can write only inside the working folder, and may then run without asking.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from ..loop.permission_result import CONTENT_FOLLOWS, PermissionAsk, PermissionResult
from ..loop.tool import PreparedCall, Tool, ToolContext, ToolError, ToolInput, ToolOutput
from ..loop.tool_execution import private_results_dir
from ..loop.wire import JSONObject
from ..redact import redact, without_secrets
from .common import clean_schema
from .sandbox import prepare_sandbox, probe_argv
from .paths import resolve_path
from .shell_parse import parse_command_line, suggested_rule
from .shell_run import MODEL_OUTPUT_CHARS, run_shell

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000

class BashInput(ToolInput):
    command: str = Field(description="The command to execute")
    timeout: int | None = Field(default=None, ge=1, le=MAX_TIMEOUT_MS,
                                description=f"Optional timeout in milliseconds (max {MAX_TIMEOUT_MS})")
    description: str | None = Field(
        default=None,
        description="Clear, concise description of what this command does in 5-10 words, in active voice.")


@dataclass
class BashSettings:
    """The ``Bash`` tool's settings for a conversation (a ``ToolContext.services`` part).

    ``sandbox``: run commands under bubblewrap, with no network and writes only inside the
    working folder; such commands run without asking (deny and ask rules still apply).
    Turn it on with :func:`enable_sandbox`, which says why when it is unavailable.
    """

    sandbox: bool = False


def sandbox_unavailable() -> str | None:
    """Why the sandbox cannot be used here, or None when ``bwrap`` works."""
    return _probe_bwrap(shutil.which("bwrap") or "")


@functools.lru_cache(maxsize=4)
def _probe_bwrap(bwrap: str) -> str | None:
    if not bwrap:
        return ("The Bash sandbox is unavailable: bwrap (bubblewrap) is not installed. Install it "
                "(apt-get install bubblewrap, dnf install bubblewrap) or leave the sandbox off.")
    try:
        done = subprocess.run(probe_argv(bwrap), capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"The Bash sandbox is unavailable: {bwrap} could not run ({exc})."
    if done.returncode != 0:  # e.g. no user namespaces
        why = done.stderr.decode(errors="replace").strip() or f"exit code {done.returncode}"
        return f"The Bash sandbox is unavailable: {bwrap} cannot make a sandbox here ({why})."
    return None


def enable_sandbox(context: ToolContext, on: bool = True) -> None:
    """Turn the Bash sandbox on (or off) for the conversation of ``context``; a ValueError
    that says why when it is unavailable."""
    if on and (why := sandbox_unavailable()):
        raise ValueError(why)
    context.services.get(BashSettings).sandbox = on


class Bash(Tool[BashInput]):
    name = "Bash"
    Input = BashInput
    timeout_s = None  # the command's own limit applies (and ends its process group)
    max_result_size_chars = MODEL_OUTPUT_CHARS + 2_000  # the tool bounds its output itself
    description = (
        "Executes a bash command in the working folder and returns its output (stdout and stderr together) and "
        "exit code. Use it for git, package managers, test runners and other terminal work; prefer Read, Edit, "
        "Write, Glob and Grep for reading, changing and finding files. Each call is a fresh shell: `cd` does not "
        "carry over. Quote paths that contain spaces. `timeout` is in milliseconds (default "
        f"{DEFAULT_TIMEOUT_MS:,}, at most {MAX_TIMEOUT_MS:,}). Output beyond {MODEL_OUTPUT_CHARS:,} characters "
        "is cut in the middle and saved whole to a file you can Read. Commands that wait for input get none. "
        "Always give a short `description` of what the command does."
    )

    def input_schema(self) -> JSONObject:
        return clean_schema(super().input_schema())  # `"type": "integer"`, as Claude Code's

    async def validate_input(self, input: BashInput, context: ToolContext) -> str | None:
        if not input.command.strip():
            return "The command is empty."
        if len(input.command) > 100_000:
            return "The command is longer than 100,000 characters; write a script file and run it."
        return None

    async def prepare(self, input: BashInput, context: ToolContext) -> PreparedCall:
        # (in a thread: a long line takes milliseconds to judge, about 25 ms for 10,000
        # characters, and the kernel's loop keeps answering meanwhile)
        parsed = await asyncio.to_thread(parse_command_line, input.command)
        writes = []
        for target in parsed.writes:
            try:
                writes.append(resolve_path(target, context.cwd, "redirection"))
            except ToolError as exc:
                log.debug("a redirection target cannot be resolved: %s", exc)
                parsed = type(parsed)(parsed.commands, parsed.writes, f"it writes to {target!r}, which is not a "
                                      "usable path", parsed.judged)
        return PreparedCall(paths=writes, runs_code=True, commands=parsed.parts(),
                            sandboxed=context.services.get(BashSettings).sandbox)

    async def check_permissions(self, input: BashInput, context: ToolContext,
                                prepared: PreparedCall) -> PermissionResult:
        parts = prepared.commands
        rules: tuple[str, ...] = ()
        if parts is not None and not parts.unreadable:
            # no wider than this command needs: a prefix only where the tables judge what follows it
            exact_only = parts.exact_only or ("",) * len(parts.commands)
            rules = tuple(dict.fromkeys(f"Bash({suggested_rule(words, why)})"
                                        for words, why in zip(parts.commands, exact_only)))
        else:  # no rule can cover an unreadable line: "Always allow" adds this exact command
            rules = (f"Bash({input.command.strip()})",)
        # one line each: the question must not be able to pass for the command that follows it
        description = " ".join((input.description or "").split())[:300]
        about = f" ({description})" if description else ""
        unreadable = " ".join(parts.unreadable.split()) if parts is not None else ""
        why = f" The rules cannot judge it: {unreadable}." if unreadable else ""
        exact = [" ".join(reason.split())[:200] for reason in (parts.exact_only if parts is not None else ()) if reason]
        if exact and not why:  # why a prefix rule (`Bash(sort:*)`) does not cover it
            why = f" Only a rule naming the whole command allows it: {'; '.join(dict.fromkeys(exact))}."
        # The whole command, never a part: what the person approves is what runs.
        return PermissionAsk(message=f"Bash wants to run a command{about}.{why}{CONTENT_FOLLOWS}{input.command}",
                             suggested_rules=rules)

    async def call(self, input: BashInput, context: ToolContext, prepared: PreparedCall) -> ToolOutput:
        cwd = Path(os.path.realpath(context.cwd))
        sandboxed = context.services.get(BashSettings).sandbox
        if sandboxed != prepared.sandboxed:
            raise ToolError("The sandbox setting changed after this command was approved; run it again.")
        if sandboxed and (why := sandbox_unavailable()):
            raise ToolError(why)
        # (in a thread: the check walks the working folder)
        run = await asyncio.to_thread(prepare_sandbox, input.command, str(cwd)) if sandboxed else None
        argv = run.argv if run is not None else ["bash", "-c", input.command]
        timeout_ms = input.timeout or DEFAULT_TIMEOUT_MS
        digest = hashlib.sha1(f"{context.tool_use_id}{id(input)}".encode()).hexdigest()[:12]
        try:
            result = await run_shell(argv, cwd=cwd, env=without_secrets(dict(os.environ)),
                                     timeout_s=timeout_ms / 1000, on_output=context.progress,
                                     spill_dir=lambda: private_results_dir(context.tool_results_dir),
                                     spill_name=f"Bash-{digest}.txt")
        except FileNotFoundError as exc:
            raise ToolError(f"bash could not be started: {exc}") from None
        finally:  # also after Stop: what the command made is checked once its processes are gone
            blocked = await asyncio.shield(asyncio.to_thread(run.finish)) if run is not None else []
        output = redact(result.output).rstrip("\n")
        notes = list(blocked)
        if result.spill is not None:
            notes.append(f"[The output was {result.total_chars:,} characters; only its start and end are shown. "
                         f"The whole output is in {result.spill}: Read it in pages, or Grep it.]")
        if result.timed_out:
            notes.append(f"Command timed out after {timeout_ms / 1000:g} s and was ended.")
            return ToolOutput("\n".join([output, *notes]).strip(), is_error=True)
        code = result.exit_code if result.exit_code is not None else -1
        notes.append(f"Exit code {code}" if code >= 0 else f"Killed by signal {-code}")
        return ToolOutput("\n".join([output, *notes]).strip() if output else "\n".join(notes),
                          is_error=code != 0, exit_code=code)

    def summary(self, input: JSONObject) -> str:
        command = input.get("command")
        return command if isinstance(command, str) else ""


__all__ = ["Bash", "BashInput", "BashSettings", "enable_sandbox", "sandbox_unavailable"]
