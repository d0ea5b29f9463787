"""One tool call, from ``tool_use`` block to ``tool_result`` block (seed: ``runToolUse``).

In order: unknown tool, already aborted, schema validation, ``validate_input``,
``prepare`` (the call planned once: resolved paths, an edit's change and the hash it
is based on), PreToolUse hooks, the permission decision on that plan, ``call``
(which carries the plan out, with a timeout), PostToolUse hooks. Every path ends in exactly
one ``tool_result`` with the ``tool_use`` id; a failing tool never raises into the loop. Only
cancellation (Stop) propagates, and the caller turns that into a result too.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import logging
import os
import stat
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from collections.abc import Callable

from pydantic import ValidationError

from .tool import AnyTool, InputT, PreparedCall, Tool, ToolContext, ToolError, ToolOutput
from .events import Notice, ToolOutcome, ToolProgress, ToolStart
from .hooks import Hooks, ToolCallResult, call_hook
from .messages import INVALID_INPUT_KEY, cut_at_word, cut_middle, tool_result_block
from .permission_result import DENIED, NO_ONE_APPROVES, CanUseTool, PermissionAllow, PermissionAsk, PermissionDeny
from .wire import JSONObject, ToolOutputContent, ToolResultBlock, ToolUseBlock

log = logging.getLogger(__name__)

#: Error text longer than this is cut in the middle (the model needs head and tail).
MAX_ERROR_CHARS = 10_000
#: Characters of an oversized result the model still sees, beside the file's path.
PREVIEW_CHARS = 2_000
#: What follows a result cut to fit the context window (SHOWN: how many characters are shown).
WINDOW_CUT_NOTE = (
    "[Cut to fit the model's context window: SHOWN of {total:,} characters shown (at most {window_chars:,} "
    "fit). Ask for a smaller part at a time: for a file, Read with offset and limit from where this stops.]"
)

__all__ = ["CanUseTool", "CallResult", "RunControl", "ToolRunEnv", "error_result", "execute_tool_call",
           "format_validation_error", "private_results_dir", "results_dirs", "run_tool_call"]


@dataclass
class RunControl:
    """Flags a tool call can raise for the whole run (read by the loop after step 3)."""

    hook_stop_message: str | None = None
    interrupted: bool = False


@dataclass
class ToolRunEnv:
    """What every call in a run shares."""

    tools_by_name: dict[str, AnyTool]
    context: ToolContext
    can_use_tool: CanUseTool | None = None
    hooks: Hooks = field(default_factory=Hooks)
    control: RunControl = field(default_factory=RunControl)
    emit: Callable[[ToolStart | ToolProgress | Notice], None] = lambda event: None
    #: One result's size at most, from the context window (``ContextBudget.tool_result_tokens``
    #: in characters; the run's context sets it); None: only each tool's own cap.
    max_result_chars: int | None = None

    def is_concurrency_safe(self, block: ToolUseBlock) -> bool:
        """Safe to run beside others? Unknown tools and invalid input count as unsafe."""
        return self._ask(block, "is_concurrency_safe")

    def is_read_only(self, block: ToolUseBlock) -> bool:
        """Changes nothing? Unknown tools and invalid input count as changing something."""
        return self._ask(block, "is_read_only")

    def _ask(self, block: ToolUseBlock, question: str) -> bool:
        tool = self.tools_by_name.get(block.get("name", ""))
        if tool is None:
            return False
        try:
            return bool(getattr(tool, question)(tool.Input.model_validate(block.get("input") or {})))
        except ValidationError:  # the call fails validation when it runs; until then it counts as changing
            return False
        except Exception:  # a tool's own answer failed: assume the cautious one
            log.debug("%s.%s failed; counted as False", tool.name, question, exc_info=True)
            return False


def format_validation_error(tool_name: str, error: ValidationError) -> str:
    """Say which fields are missing, unexpected or of the wrong type, in the model's terms."""
    lines = []
    for problem in error.errors():
        where = ".".join(str(p) for p in problem["loc"]) or "input"
        if problem["type"] == "missing":
            lines.append(f"The required parameter `{where}` is missing")
        elif problem["type"] == "extra_forbidden":
            lines.append(f"An unexpected parameter `{where}` was provided")
        else:
            lines.append(f"The parameter `{where}` is invalid: {problem['msg']}")
    return f"InputValidationError: {tool_name} failed due to the following issue(s):\n" + "\n".join(lines)


@dataclass(frozen=True)
class CallResult:
    """One call's ``tool_result`` block and how the call ended (the loop's own verdict,
    which the fronts show: nobody reads it back from the block's words)."""

    block: ToolResultBlock
    outcome: ToolOutcome
    exception: str = ""
    exit_code: int | None = None


def error_result(tool_use_id: str, message: str, outcome: ToolOutcome = ToolOutcome.ERROR) -> CallResult:
    """An error ``tool_result`` (``message`` cut in the middle if long) with its outcome."""
    return CallResult(tool_result_block(tool_use_id, cut_middle(message, MAX_ERROR_CHARS), is_error=True), outcome)


async def execute_tool_call(block: ToolUseBlock, env: ToolRunEnv) -> ToolResultBlock:
    """Run one ``tool_use`` block and return its ``tool_result`` block."""
    return (await run_tool_call(block, env)).block


async def run_tool_call(block: ToolUseBlock, env: ToolRunEnv) -> CallResult:
    """Run one ``tool_use`` block: its ``tool_result`` block and the call's outcome."""
    tool_use_id, name = block["id"], block.get("name", "")
    raw_input = block.get("input")
    tool = env.tools_by_name.get(name)
    if tool is None:
        available = ", ".join(sorted(env.tools_by_name)) or "none"
        return error_result(tool_use_id, f"Error: No such tool available: {name}. Available tools: {available}.")
    if INVALID_INPUT_KEY in block:
        raw = cut_middle(str(block[INVALID_INPUT_KEY]), 2_000)
        return error_result(tool_use_id, f"InputValidationError: the input of this {name} call was not valid JSON, "
                                   f"so the tool did not run. Call it again with the input as one JSON "
                                   f"object.\nThe input received: {raw}")
    if env.context.abort.is_set():
        return error_result(tool_use_id, "The run was stopped before this tool call started.", ToolOutcome.STOPPED)
    if not isinstance(raw_input, dict):
        return error_result(tool_use_id, f"InputValidationError: {name} input must be a JSON object.")

    # A tool reports progress; a Notice it reports (a server that died) goes out as it is.
    context = env.context.for_call(tool_use_id, lambda data: env.emit(
        data if isinstance(data, Notice) else ToolProgress(tool_use_id, name, data)))
    parsed, prepared, problem = await _validate_and_plan(tool, raw_input, context)
    if problem or parsed is None:
        return error_result(tool_use_id, problem or f"{name}: the input did not validate.")

    hook_approved = False
    for hook in env.hooks.pre_tool_use:
        verdict = await call_hook(hook, name, raw_input, context)
        if verdict is None:
            continue
        if verdict.stop:
            env.control.hook_stop_message = verdict.message or "A PreToolUse hook stopped the run."
            return error_result(tool_use_id, f"Stopped by a hook: {env.control.hook_stop_message}", ToolOutcome.DENIED)
        if verdict.decision == "deny":
            return error_result(tool_use_id, verdict.message or f"A hook refused this {name} call.", ToolOutcome.DENIED)
        if verdict.updated_input is not None:
            raw_input = verdict.updated_input
            parsed, prepared, problem = await _validate_and_plan(tool, raw_input, context)
            if problem or parsed is None:
                return error_result(tool_use_id, f"A hook changed the input into something invalid. {problem}")
        hook_approved = hook_approved or verdict.decision == "allow"

    if not hook_approved:
        decision = await _decide(tool, parsed, raw_input, context, prepared, env)
        if isinstance(decision, PermissionDeny):
            if decision.interrupt:
                env.control.interrupted = True
            return error_result(tool_use_id, decision.message, decision.outcome)
        if decision.updated_input is not None:
            raw_input = decision.updated_input
            parsed, prepared, problem = await _validate_and_plan(tool, raw_input, context)
            if problem or parsed is None:
                return error_result(tool_use_id, problem or f"{name}: the input did not validate.")

    env.emit(ToolStart(tool_use_id, name, raw_input))
    limit = asyncio.timeout(tool.timeout_s)
    try:
        async with limit:
            output = await tool.call(parsed, context, prepared)
    except TimeoutError as exc:
        if limit.expired():  # the call's own time limit
            return error_result(tool_use_id, f"{name} timed out after {tool.timeout_s:g} s and was cancelled.")
        # a TimeoutError the tool raised (a tool with no limit of ours, or a wait of its own)
        return error_result(tool_use_id, f"{name} failed: TimeoutError: {exc or 'a wait timed out'}")
    except ToolError as exc:
        return error_result(tool_use_id, str(exc) or f"{name} failed.")
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a tool bug must not take the loop down: the model hears about it
        return error_result(tool_use_id, f"{name} failed: {type(exc).__name__}: {exc}")
    if not isinstance(output, ToolOutput):
        output = ToolOutput(content=str(output))
    content = _bounded_content(tool, output.content, tool_use_id, context, env.max_result_chars)
    is_error = output.is_error
    outcome = output.outcome or (ToolOutcome.ERROR if is_error else ToolOutcome.OK)

    for hook in env.hooks.post_tool_use:
        verdict = await call_hook(hook, name, raw_input, ToolCallResult(content, is_error), context)
        if verdict is None:
            continue
        if verdict.updated_output is not None:
            content = verdict.updated_output
        if verdict.stop:
            env.control.hook_stop_message = verdict.message or "A PostToolUse hook stopped the run."
    return CallResult(tool_result_block(tool_use_id, content, is_error=is_error), outcome, output.exception,
                      output.exit_code)


async def _validate_and_plan(tool: Tool[InputT], raw_input: JSONObject,
                             context: ToolContext) -> tuple[InputT | None, PreparedCall, str | None]:
    """The schema, ``validate_input``, then the call planned once: (input, plan, problem's
    text or None). The plan goes to the policy and to ``call`` as an argument."""
    parsed, problem = _validate(tool, raw_input)
    if parsed is None:  # (the schema's problem is said)
        return None, PreparedCall(), problem
    try:
        problem = await tool.validate_input(parsed, context)
        if problem:
            return parsed, PreparedCall(), problem
        prepared = await tool.prepare(parsed, context)
        return parsed, prepared, prepared.problem
    except ToolError as exc:
        return parsed, PreparedCall(), str(exc) or f"{tool.name} cannot run with this input."
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a tool bug must not take the loop down
        return parsed, PreparedCall(), f"{tool.name} failed: {type(exc).__name__}: {exc}"


def _validate(tool: Tool[InputT], raw_input: JSONObject) -> tuple[InputT | None, str | None]:
    try:
        return tool.Input.model_validate(raw_input), None
    except ValidationError as exc:
        return None, format_validation_error(tool.name, exc)


async def _decide(tool: Tool[InputT], parsed: InputT, raw_input: JSONObject, context: ToolContext,
                  prepared: PreparedCall, env: ToolRunEnv) -> PermissionAllow | PermissionDeny:
    decision = await context.permissions.decide(tool, parsed, context, prepared)
    if not isinstance(decision, PermissionAsk):
        return decision
    if env.can_use_tool is None:
        # Written for the model (what, why, what instead); the developer's ways to let such
        # calls run (can_use_tool=, an allow rule) are in docs/tools.md and the log.
        log.info("%s was denied: it asks and nothing answers (pass can_use_tool= or an allow rule)", tool.name)
        why = decision.why or ("running code needs approval" if prepared.runs_code else
                               "changing a file or notebook needs approval" if prepared.edits_files else
                               "it needs approval")
        return PermissionDeny(
            f"{tool.name} was not run: {why}, {NO_ONE_APPROVES}. Do not call it again "
            "the same way: do the task with the tools that run without approval (see Permissions in the system "
            "prompt), or, if it cannot be done without this call, say so in your final answer."
        )
    decision = replace(decision, tool_use_id=context.tool_use_id)  # the UI's card knows its call
    answer = env.can_use_tool(tool.name, raw_input, decision)
    if inspect.isawaitable(answer):
        answer = await answer
    if isinstance(answer, bool):  # a plain yes/no from a simple callback
        answer = PermissionAllow() if answer else PermissionDeny(DENIED, interrupt=True)
    if isinstance(answer, PermissionAllow):
        if answer.always:
            context.permissions.add_session_rules(answer.always)
        return answer
    if isinstance(answer, PermissionDeny):
        return answer
    return PermissionDeny(f"can_use_tool returned {type(answer).__name__}; expected allow or deny.",
                          outcome=ToolOutcome.ERROR)


def _bounded_content(tool: AnyTool, content: ToolOutputContent, tool_use_id: str, context: ToolContext,
                     window_chars: int | None = None) -> ToolOutputContent:
    """Empty output gets a sentence; text over the tool's cap goes to a file, the model
    gets a preview; text over what the context window allows (``window_chars``) is cut,
    with a note saying how to get the rest."""
    if content is None or content == "" or content == []:
        return f"({tool.name} completed with no output)"
    if not isinstance(content, str):
        return content
    if len(content) <= tool.max_result_size_chars:
        if window_chars is None or len(content) <= window_chars:
            return content
        note = WINDOW_CUT_NOTE.format(total=len(content), window_chars=window_chars)
        shown = _cut_at_line(content, max(window_chars - len(note), 0))
        return f"{shown}\n{note.replace('SHOWN', f'{len(shown):,}')}"
    preview = cut_at_word(content, min(PREVIEW_CHARS, window_chars // 2) if window_chars else PREVIEW_CHARS)
    digest = hashlib.sha1(tool_use_id.encode()).hexdigest()[:12]
    try:
        folder = private_results_dir(context.tool_results_dir)
        path = folder / f"{tool.name}-{digest}.txt"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write(content)
    except OSError as exc:
        return (f"Output too large ({len(content)} characters), and it could not be saved ({exc}). "
                f"Preview (first {len(preview)} characters):\n{preview}")
    return (
        f"Output too large ({len(content)} characters). The full output was saved to {path}; "
        f"Read it in pages if you need more.\nPreview (first {len(preview)} characters):\n{preview}"
    )


def _cut_at_line(text: str, limit: int) -> str:
    """The first ``limit`` characters of ``text``, ending at a line's end when one is in
    its second half (a file's numbered lines stay whole), else at a word's."""
    head = text[:limit]
    end = head.rfind("\n")
    return head[:end] if end >= limit // 2 else cut_at_word(text, limit)


def private_results_dir(wanted: Path | None = None) -> Path:
    """A folder only this user can enter, for oversized results (which may hold secrets).

    ``wanted`` (or ``$TMPDIR/jupyter-agent-<uid>``) is used when it is a real folder
    (not a symlink) owned by this user with mode 0700 (made so if new); otherwise a
    fresh private folder is made with ``mkdtemp``. Files in it are created 0600.
    """
    global _fallback_dir
    folder = wanted or Path(tempfile.gettempdir()) / f"jupyter-agent-{os.getuid()}"
    present = True
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError:
        present = False
    if present:
        st = os.lstat(folder)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077:
            return Path(folder)
    if _fallback_dir is None or not os.path.isdir(_fallback_dir):
        _fallback_dir = Path(tempfile.mkdtemp(prefix="jupyter-agent-"))
    return _fallback_dir


_fallback_dir: Path | None = None


def results_dirs(wanted: Path | None = None) -> list[Path]:
    """The private results folders in use now (made by :func:`private_results_dir`, none
    made here): a Read inside them reads what the tools wrote there for this user."""
    folders = [wanted or Path(tempfile.gettempdir()) / f"jupyter-agent-{os.getuid()}", _fallback_dir]
    found = []
    for folder in [f for f in folders if f is not None]:
        try:
            st = os.lstat(folder)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077:
            found.append(Path(os.path.realpath(folder)))
    return found
