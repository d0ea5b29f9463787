"""Which tool calls run, which ask a person, which are refused (docs/tools.md, "Permission modes").

Modes:

* ``default`` — reads inside the working folders run; edits and cell runs ask.
* ``acceptEdits`` — file and notebook edits inside the working folders run too.
* ``plan`` — nothing that writes or runs; the model is told so (``system_prompt_note``).
* ``bypassPermissions`` — everything runs, except what a deny or ask rule names,
  writes to safety paths (git directories and hooks, shell and Python start-up files,
  ``~/.local/bin``...: :mod:`jupyter_agent.safety`) and running code (``NotebookRun``),
  which still ask. Code that runs cannot be checked path by path, so it asks in every
  mode unless an allow rule covers it.

The decision is made on the call's :class:`~jupyter_agent.loop.tool.PreparedCall` (its
resolved paths, whether it only reads, edits files or runs code), planned once before.

``Bash`` rules name commands, not paths: ``Bash(git status)`` exactly, ``Bash(git diff:*)``
a prefix of whole words; a command line is allowed only when every simple command in it
is (read by a real shell parse, :mod:`jupyter_agent.tools.shell_parse`). A prefix rule
covers a command of the tables (:mod:`jupyter_agent.tools.shell_commands`) only in its
forms that read: one that runs other code needs a rule naming all its words
(``CommandParts.exact_only``), and a file an option writes is judged as an edit's path.

Rules are ``Tool`` or ``Tool(glob)`` in ``allow``, ``ask`` and ``deny`` lists; deny beats
ask beats allow. A rule naming any file-editing tool (Edit, Write, NotebookEdit) covers all three,
``Read`` rules every file-reading one (Read, Glob, Grep). Globs are paths: relative to the
working folder, ``/absolute`` or ``~/home``; ``**`` spans folders; a glob without wildcards
covers that path and everything below it. Paths are compared after ``..`` and symlinks are
resolved, and an allow must hold for where a symlink really leads.

An "ask" reaches a person through the loop's ``can_use_tool`` callback; :class:`ApprovalBroker`
is a ready-made one for UIs: each ask becomes an awaitable :class:`ApprovalRequest` that
the UI resolves with allow, allow-always (a session rule, which also releases other
pending requests it now covers) or deny (with optional feedback for the model).
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import logging
import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .loop.permission_result import (
    DENIED,
    PermissionAllow,
    PermissionAsk,
    PermissionDeny,
    PermissionResult,
    ask_with_note,
    check_permission_mode,
)
from .policy import load_policy
from .safety import SafetyHit, credential_hit, rule_names_place, safety_hit
from .loop.tool import AnyTool, CommandParts, InputT, PermissionPolicy, PreparedCall, Tool, ToolContext, ToolInput
from .loop.wire import JSONObject
from .loop.tool_execution import results_dirs
from .tools.paths import ResolvedPath, compile_glob, escape_glob, is_within, path_matches_rule
from .tools.shell_parse import rule_allows, rule_covers, rule_words

log = logging.getLogger(__name__)

#: The file-editing tools are one family: a rule naming any of them covers them all
#: (``Write(pyproject.toml)`` also stops an Edit of it), as in Claude Code.
EDIT_FAMILY = ("Edit", "Write", "NotebookEdit")
#: The tools that run code in a notebook's kernel: a ``NotebookRun`` rule covers the range run
#: and the scratch run too (allowing NotebookRun under acceptEdits already lets any code run:
#: the model can write it into a cell), and a ``NotebookRun`` deny stops them all.
RUN_FAMILY = ("NotebookRun", "NotebookRunCells", "KernelRun")
#: A rule naming the first tool also covers the others (a ``Grep`` rule stays a Grep rule).
RULE_FAMILIES = {**{name: EDIT_FAMILY for name in EDIT_FAMILY}, "Read": ("Read", "Glob", "Grep"),
                 "NotebookRun": RUN_FAMILY}
PLAN_MODE_NOTE = (
    "Plan mode is active. You may read files, search and think, but you must not change anything: do not "
    "edit or write files, do not edit or run notebook cells. Such calls will be refused. Research the task, "
    "then present your plan to the user and wait for them to approve it."
)
_RULE = re.compile(r"^\s*([A-Za-z_][\w-]*)\s*(?:\((.*)\))?\s*$", re.DOTALL)


@dataclass(frozen=True)
class Rule:
    """``Tool`` or ``Tool(pattern)``."""

    tool: str
    pattern: str | None = None

    @classmethod
    def parse(cls, text: str) -> Rule:
        match = _RULE.match(text) if isinstance(text, str) else None
        if not match or (match.group(2) is not None and not match.group(2).strip()):
            raise ValueError(f"Invalid permission rule {text!r}: write Tool or Tool(glob), e.g. 'Edit(src/**)'.")
        pattern = match.group(2).strip() if match.group(2) is not None else None
        if pattern is not None and match.group(1) == "Bash":  # words: `git status`, `git diff:*`
            try:
                rule_words(pattern)
            except ValueError as exc:
                raise ValueError(f"Invalid permission rule {text!r}: {exc}.") from None
        elif pattern is not None:
            try:
                compile_glob(pattern)
            except ValueError as exc:
                raise ValueError(f"Invalid permission rule {text!r}: {exc}.") from None
        return cls(match.group(1), pattern)

    def __str__(self) -> str:
        return self.tool if self.pattern is None else f"{self.tool}({self.pattern})"

    def names(self, tool_name: str, server: str | None = None) -> bool:
        """Does the rule name the tool ``tool_name`` (of the MCP server ``server``, when it is
        one)? ``mcp__github`` names the tools of the server ``github`` only: its name is
        compared whole, never as a prefix of ``github_``'s tools."""
        if tool_name == self.tool or tool_name in RULE_FAMILIES.get(self.tool, ()):
            return True
        if self.mcp_server is None:
            return False
        if server is not None:
            return server == self.mcp_server and tool_name.startswith(f"mcp__{server}__")
        return _mcp_servers_of(tool_name) == {self.mcp_server}

    @property
    def mcp_server(self) -> str | None:
        """``mcp__<server>`` names every tool of that MCP server: the server's name, else None."""
        server = self.tool[len("mcp__"):] if self.tool.startswith("mcp__") else ""
        return server if server and "__" not in server and self.pattern is None else None


def _mcp_servers_of(tool_name: str) -> set[str]:
    """The servers an MCP tool's name ``mcp__<server>__<tool>`` may belong to. A server's
    name has no ``__`` but may end in ``_``, and a tool's may start with one, so
    ``mcp__github___x`` is ``github_``'s ``x`` or ``github``'s ``_x``: both are returned, and
    a rule naming one server names the tool only when its server is known for certain."""
    if not tool_name.startswith("mcp__"):
        return set()
    rest = tool_name[len("mcp__"):]
    first = rest.find("__")
    servers = set()
    while first > 0 and rest[first:first + 2] == "__":
        if rest[first + 2:]:
            servers.add(rest[:first])
        first += 1  # `github___x`: the separator may start one `_` later
    return servers


class Permissions(PermissionPolicy):
    """The permission policy the loop asks before every tool call: modes and rules."""

    def __init__(self, mode: str = "default", allow: Iterable[str] = (), deny: Iterable[str] = (),
                 ask: Iterable[str] = (), cwd: Path | str | None = None, additional_dirs: Iterable[Path | str] = ()):
        self.mode = mode
        self.allow = [Rule.parse(r) for r in allow]
        self.deny = [Rule.parse(r) for r in deny]
        self.ask = [Rule.parse(r) for r in ask]
        self.session_allow: list[Rule] = []
        self.cwd = Path(os.path.realpath(cwd)) if cwd is not None else None
        self.additional_dirs = [Path(os.path.realpath(os.path.expanduser(str(d)))) for d in additional_dirs]
        self._tools: dict[str, AnyTool] = {}
        self._last_ctx: ToolContext | None = None

    @property  # always one of the modes here
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, value: str) -> None:
        # The administrator's policy (jupyter_agent_policy.json) bounds every mode set here.
        self._mode = load_policy().check_permission_mode(check_permission_mode(value))

    def with_mode(self, mode: str) -> Permissions:
        """This policy in another ``mode`` (one run's own), sharing the rules: session rules
        added through either ("Always allow") hold for both."""
        other = copy.copy(self)
        other.mode = mode
        return other

    def system_prompt_note(self) -> str:
        """Text for the system prompt: what plan mode means, or ""."""
        return PLAN_MODE_NOTE if self.mode == "plan" else ""

    def add_session_rules(self, rules: Iterable[str]) -> None:
        """Allow rules for the rest of the session ("Always allow")."""
        for text in rules:
            rule = Rule.parse(text)
            if rule not in self.session_allow:
                self.session_allow.append(rule)

    def _cwd(self, ctx: ToolContext | None) -> Path:
        return self.cwd or Path(os.path.realpath(ctx.cwd if ctx is not None else os.getcwd()))

    def allowed_roots(self, ctx: ToolContext) -> list[Path]:
        """The working folder and the additional ones: inside them reads need no approval."""
        return [self._cwd(ctx), *self.additional_dirs]

    # -- matching -------------------------------------------------------------------------

    def _matches(self, rule: Rule, tool: Tool[InputT], input: InputT, paths: list[ResolvedPath], ctx: ToolContext, *,
                 real_only: bool) -> bool:
        if not rule.names(tool.name, getattr(tool, "server_name", None)):
            return False
        if rule.pattern is None:
            return True
        if paths:
            cwd = self._cwd(ctx)
            if real_only:  # an allow must hold where the call really goes, for every path it touches
                return all(path_matches_rule(p.real, rule.pattern, cwd) for p in paths)
            return any(path_matches_rule(c, rule.pattern, cwd) for p in paths for c in (p.lexical, p.real))
        content = tool.rule_content(input)
        if content is not None:
            from fnmatch import fnmatchcase

            return fnmatchcase(content, rule.pattern)
        return False

    def _matches_call(self, rule: Rule, tool: Tool[InputT], input: InputT, paths: list[ResolvedPath], ctx: ToolContext,
                      commands: CommandParts | None) -> bool:
        """Does a deny or ask rule name this call? For a shell command line: a rule that
        names any of its simple commands, or an edit rule that names a file it writes."""
        if commands is None:
            return self._matches(rule, tool, input, paths, ctx, real_only=False)
        if not rule.names(tool.name):
            cwd = self._cwd(ctx)
            return (rule.names("Edit") and rule.pattern is not None
                    and any(path_matches_rule(c, rule.pattern, cwd) for p in paths for c in (p.lexical, p.real)))
        return rule.pattern is None or any(rule_covers(rule.pattern, words) for words in commands.commands)

    def _command_allowed(self, tool: AnyTool, commands: CommandParts, paths: list[ResolvedPath], ctx: ToolContext,
                         allow_rules: list[Rule]) -> bool:
        """Allow rules cover every simple command of the line (each by some rule: exact
        words or a prefix of whole words), and every file it writes is one an edit may
        write without asking. A line the parser could not read is covered only by a
        rule naming the tool alone."""
        if any(r.pattern is None and r.names(tool.name) for r in allow_rules):
            return True
        if commands.unreadable or not commands.commands:
            return False
        rules = [r for r in allow_rules if r.names(tool.name) and r.pattern is not None]
        exact_only = commands.exact_only or ("",) * len(commands.commands)
        if not all(any(rule_allows(r.pattern or "", words, why) for r in rules)
                   for words, why in zip(commands.commands, exact_only)):
            return False
        roots = self.allowed_roots(ctx)
        cwd = self._cwd(ctx)
        for path in paths:
            by_rule = any(r.names("Edit") and (r.pattern is None or path_matches_rule(path.real, r.pattern, cwd))
                          for r in allow_rules)
            by_mode = self.mode == "bypassPermissions" or (
                self.mode == "acceptEdits" and any(is_within(path.real, root) for root in roots))
            if not (by_rule or by_mode):
                return False
        return True

    def is_read_denied(self, path: str | Path, ctx: ToolContext | None = None) -> bool:
        """Does a deny rule forbid reading ``path``? (Grep and Glob hide such files.)"""
        real = Path(os.path.realpath(path))
        cwd = self._cwd(ctx)
        if any(r.names("Read") and (r.pattern is None or path_matches_rule(real, r.pattern, cwd))
               for r in self.deny):
            return True
        # a credential place is left out of searches unless a rule opens that very place
        hit = credential_hit(ResolvedPath(str(path), Path(os.path.abspath(path)), real))
        return hit is not None and not self._rule_opens(hit, "Read", real, cwd)

    def _rule_opens(self, hit: SafetyHit, tool_name: str, real: Path, cwd: Path) -> bool:
        """Does an allow rule for ``tool_name`` name the protected place ``hit`` itself?"""
        return any(r.names(tool_name) and r.pattern and rule_names_place(r.pattern, hit)
                   and path_matches_rule(real, r.pattern, cwd) for r in [*self.allow, *self.session_allow])

    # -- the decision ---------------------------------------------------------------------

    async def decide(self, tool: Tool[InputT], input: InputT, ctx: ToolContext,
                     prepared: PreparedCall) -> PermissionResult:
        """Allow, ask or deny one call, on the facts of its plan (``prepared``, made once by the
        loop before anyone decides; :meth:`check` plans and decides for a caller without one)."""
        self._tools[tool.name] = tool
        self._last_ctx = ctx
        paths: list[ResolvedPath] = list(prepared.paths)
        read_only = prepared.read_only
        where = f" on {paths[0].real}" if paths else ""

        commands = prepared.commands
        for rule in self.deny:
            if self._matches_call(rule, tool, input, paths, ctx, commands):
                return PermissionDeny(f"Permission to use {tool.name}{where} has been denied by the rule "
                                      f"'{rule}'. Do not try to get around it.")
        if self.mode == "plan" and not read_only:
            return PermissionDeny(f"{tool.name} is not allowed in plan mode. " + PLAN_MODE_NOTE)
        own = await tool.check_permissions(input, ctx, prepared)
        if isinstance(own, PermissionDeny):
            return own
        diff = own.diff if isinstance(own, PermissionAsk) else None
        own_message = own.message if isinstance(own, PermissionAsk) else f"{tool.name} wants to run{where}."
        own_rules = own.suggested_rules if isinstance(own, PermissionAsk) else ()

        for rule in self.ask:
            if self._matches_call(rule, tool, input, paths, ctx, commands):
                return PermissionAsk(ask_with_note(own_message, f"(The rule '{rule}' asks for approval.)"), diff,
                                     own_rules, why=f"the rule '{rule}' asks for approval")
        allow_rules = [*self.allow, *self.session_allow]
        if not read_only:
            for path in paths:
                hit = safety_hit(path)
                # Only a rule that names the protected place itself, component by component,
                # releases it: "Edit(./**)" (what "Always allow" suggests) must not open .git/,
                # and neither may "Edit(me.github.io/**)", whose text merely contains ".git".
                if hit and not any(r.pattern and rule_names_place(r.pattern, hit)
                                   and self._matches(r, tool, input, [path], ctx, real_only=True)
                                   for r in allow_rules):
                    return PermissionAsk(ask_with_note(own_message, f"{path.real} is a protected path ({hit.reason}); "
                                                       "it always needs approval."),
                                         diff, (f"{tool.name}({escape_glob(str(path.real))})",),
                                         why=f"{path.real} is a protected path ({hit.reason})")
        if commands is not None:  # a shell command line: every part must be allowed
            allowed_by_rule = self._command_allowed(tool, commands, paths, ctx, allow_rules)
            if not allowed_by_rule and prepared.sandboxed and not commands.unreadable:
                return PermissionAllow()  # the sandbox confines it: no network, writes only here
        else:
            allowed_by_rule = any(self._matches(r, tool, input, paths, ctx, real_only=True) for r in allow_rules)
        if read_only and commands is None:
            for path in paths:
                hit = credential_hit(path)
                # What a tool reads goes to the model: a key read is a key sent away, so this
                # asks in every mode, bypassPermissions too, unless a rule names the place.
                if hit and not self._rule_opens(hit, "Read", path.real, self._cwd(ctx)):
                    return PermissionAsk(ask_with_note(own_message, f"{path.real} may hold credentials "
                                                       f"({hit.reason}); reading it always needs approval."),
                                         diff, (f"Read({escape_glob(str(path.real))})",))
        if prepared.runs_code and not allowed_by_rule:
            # Code that runs can write anything, safety paths included, and cannot be checked
            # path by path: it asks in every mode, bypassPermissions too, unless a rule allows it.
            return PermissionAsk(ask_with_note(own_message, f"({tool.always_asks_as} always asks unless an allow "
                                               "rule covers it, in every permission mode.)"), diff, own_rules,
                                 why=f"{tool.always_asks_as.lower()} needs a person's approval")
        if self.mode == "bypassPermissions" or allowed_by_rule:
            return PermissionAllow()
        roots = self.allowed_roots(ctx)
        # The notebook open in the page is the user's own, wherever the kernel runs (its
        # path may be the notebook server's, outside the kernel's folders or not on its disk).
        if read_only:  # what the tools saved for this user (a whole traceback, an oversized result)
            roots = [*roots, *results_dirs(ctx.tool_results_dir)]
        outside = [p for p in paths if not p.in_page and not any(is_within(p.real, root) for root in roots)]
        linked = [p for p in paths if not p.in_page and p not in outside and _hard_linked(p)]
        if outside or linked:
            place = (outside or linked)[0].real
            folder = place if place.is_dir() else place.parent
            rules = own_rules if not read_only else (f"Read({escape_glob(str(folder))}/**)",)
            why = (f"is outside the working folders ({', '.join(map(str, roots))})" if outside else
                   "has other hard links, which may be outside the working folders")
            return PermissionAsk(ask_with_note(own_message, f"{place} {why}."), diff, rules, why=f"{place} {why}")
        if read_only:
            return PermissionAllow()
        if self.mode == "acceptEdits" and prepared.edits_files:
            return PermissionAllow()
        if isinstance(own, PermissionAllow):
            return own
        return PermissionAsk(own_message, diff, own_rules)

    async def would_allow(self, tool: AnyTool | str, input: JSONObject | ToolInput,
                          ctx: ToolContext | None = None) -> bool:
        """Would this call run without asking now? (A UI re-checks queued asks with it.)"""
        if isinstance(tool, str):
            found = self._tools.get(tool)
            if found is None:
                return False
            tool = found
        ctx = ctx or self._last_ctx or ToolContext(cwd=self._cwd(None))
        try:
            if isinstance(input, dict):
                input = tool.Input.model_validate(input)
            return isinstance(await self.check(tool, input, ctx), PermissionAllow)
        except ValidationError:  # an input the tool refuses is not allowed
            return False
        except Exception:  # a check that fails allows nothing
            log.debug("checking %s failed; not allowed", tool.name, exc_info=True)
            return False

    async def check(self, tool: Tool[InputT], input: InputT, ctx: ToolContext) -> PermissionResult:
        """Plan the call now, then :meth:`decide` on that plan (for a caller outside the loop:
        a UI re-checking a queued ask, a test)."""
        return await self.decide(tool, input, ctx, await _prepare(tool, input, ctx))


def _hard_linked(path: ResolvedPath) -> bool:
    """A regular file with more than one link: its other names cannot be seen from here,
    so it may be a file outside the working folder (or one a deny rule hides)."""
    try:
        st = os.stat(path.real)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_nlink > 1


async def _prepare(tool: Tool[InputT], input: InputT, ctx: ToolContext) -> PreparedCall:
    try:
        return await tool.prepare(input, ctx)
    except Exception:  # an unusable plan: decide on what is known (the loop reports the error)
        try:
            read_only = bool(tool.is_read_only(input))
        except Exception:
            read_only = False
        return PreparedCall(read_only=read_only)


# --- approvals -----------------------------------------------------------------------------

_ids = itertools.count(1)


@dataclass
class ApprovalRequest:
    """One pending "ask": everything a person needs to decide, and how to answer.

    ``await request`` gives the decision: it wakes on the answer itself, with no polling.
    ``allow``/``allow_always``/``deny`` may be called from any thread (widget callbacks
    may run on another one): the answer reaches the Future with
    ``loop.call_soon_threadsafe``; the first answer wins. Stop does not need a wake-up
    either: the loop's abort cancels the tool's task, which cancels this wait (and the
    Future, so a UI learns of it). Once answered, ``feedback`` holds the
    deny text and ``released_by`` the rules of another request's "Always allow" that
    answered this one, so a UI can say what happened.
    """

    tool_name: str
    input: dict[str, Any]
    ask: PermissionAsk
    loop: asyncio.AbstractEventLoop
    id: int = field(default_factory=lambda: next(_ids))
    future: asyncio.Future = field(init=False)
    on_always: Callable[[ApprovalRequest, tuple[str, ...]], None] | None = None
    feedback: str | None = field(default=None, init=False)
    released_by: tuple[str, ...] = field(default=(), init=False)

    def __post_init__(self) -> None:
        self.future = self.loop.create_future()

    @property
    def tool_use_id(self) -> str:
        """The ``tool_use`` id of the call this request is about."""
        return self.ask.tool_use_id

    @property
    def message(self) -> str:
        return self.ask.message

    @property
    def diff(self) -> str | None:
        return self.ask.diff

    @property
    def suggested_rules(self) -> tuple[str, ...]:
        return self.ask.suggested_rules

    @property
    def done(self) -> bool:
        return self.future.done()

    def _resolve(self, result: PermissionAllow | PermissionDeny, *, feedback: str | None = None,
                 released_by: tuple[str, ...] = ()) -> None:
        def settle() -> None:
            if not self.future.done():
                self.feedback, self.released_by = feedback, released_by
                self.future.set_result(result)
                if isinstance(result, PermissionAllow) and result.always and self.on_always:
                    self.on_always(self, result.always)

        try:
            self.loop.call_soon_threadsafe(settle)
        except RuntimeError:  # the loop is closed: nobody awaits the answer any more
            pass

    def allow(self, updated_input: dict[str, Any] | None = None) -> None:
        self._resolve(PermissionAllow(updated_input=updated_input))

    def allow_always(self, rules: Iterable[str] | None = None) -> None:
        """Allow, and add ``rules`` (default: the suggested ones, else the tool's name) for the session."""
        chosen = tuple(rules) if rules is not None else (self.suggested_rules or (self.tool_name,))
        for rule in chosen:
            Rule.parse(rule)  # refuse a bad rule now, in the UI, not later in the loop
        self._resolve(PermissionAllow(always=chosen))

    def deny(self, feedback: str | None = None) -> None:
        """Refuse. Without feedback the turn stops (``aborted_tools``); with it the model reads it."""
        if feedback and feedback.strip():
            self._resolve(PermissionDeny(f"{DENIED.split(' STOP')[0]} To tell you how to proceed, the user said:\n"
                                         f"{feedback.strip()}"), feedback=feedback.strip())
        else:
            self._resolve(PermissionDeny(DENIED, interrupt=True))

    def answer(self, choice: str, feedback: str | None = None) -> None:
        """Answer with a button's or a prompt's word: ``allow``, ``always`` or ``deny``
        (``feedback`` goes with a deny). Any other word is refused."""
        if choice == "allow":
            self.allow()
        elif choice == "always":
            self.allow_always()
        elif choice == "deny":
            self.deny(feedback)
        else:
            raise ValueError(f"Unknown answer {choice!r}: use allow, always or deny.")

    async def wait(self) -> PermissionAllow | PermissionDeny:
        """The decision, as soon as it is given (cancelling the wait cancels the request)."""
        return await self.future

    def __await__(self):
        return self.wait().__await__()


class ApprovalBroker:
    """A ``can_use_tool`` callback that turns each ask into an :class:`ApprovalRequest`, and
    the one registry of the requests still waiting for an answer.

    ``listeners`` are called with every new request (a UI shows its card and watches
    ``request.future`` to learn the outcome, which is cancelled if the wait is); every face
    of an approval (a cell's card, the side panel, the lessons' widget, a terminal) reads
    what is pending here and keeps no list of its own. ``pending`` lists the unanswered
    ones in the order they were asked; :meth:`get` and :meth:`for_call` find one by its
    id or its call's ``tool_use_id``. A request leaves the registry the moment it is
    answered, released or cancelled (before any listener's callback on its future runs).
    When one is answered "always", the new rules go to the policy at once and every other
    pending request the policy's ``would_allow`` now covers is allowed too (without a
    policy, only the answered one is).
    """

    def __init__(self, policy: PermissionPolicy | None = None,
                 on_request: Callable[[ApprovalRequest], Any] | None = None):
        self.policy = policy
        self.listeners: list[Callable[[ApprovalRequest], Any]] = [on_request] if on_request else []
        #: request id -> the request, while it waits (dicts keep the order they were asked in)
        self._waiting: dict[int, ApprovalRequest] = {}
        #: the call's ``tool_use_id`` -> its request, for the requests that carry one
        self._by_call: dict[str, ApprovalRequest] = {}
        self._tasks: set[asyncio.Task] = set()

    @property
    def pending(self) -> list[ApprovalRequest]:
        """The requests waiting for an answer, in the order they were asked (a new list)."""
        return [r for r in self._waiting.values() if not r.done]

    def get(self, request_id: int) -> ApprovalRequest | None:
        """The waiting request of this id (None: answered, cancelled, or never this broker's)."""
        request = self._waiting.get(request_id)
        return request if request is not None and not request.done else None

    def for_call(self, tool_use_id: str) -> ApprovalRequest | None:
        """The waiting request about the call ``tool_use_id`` (None when there is none)."""
        request = self._by_call.get(tool_use_id)
        return request if request is not None and not request.done else None

    async def __call__(
        self, tool_name: str, input: dict[str, Any], ask: PermissionAsk
    ) -> PermissionAllow | PermissionDeny:
        request = ApprovalRequest(tool_name, dict(input), ask, asyncio.get_running_loop(), on_always=self._always)
        self._waiting[request.id] = request
        if request.tool_use_id:
            self._by_call[request.tool_use_id] = request
        # first of the future's callbacks: a listener's own sees the registry without it
        request.future.add_done_callback(lambda _f: self._forget(request))
        try:
            for listener in list(self.listeners):
                outcome = listener(request)
                if asyncio.iscoroutine(outcome):
                    await outcome
            return await request
        finally:
            request.future.cancel()  # no-op once answered; tells listeners a cancelled wait ended

    def _forget(self, request: ApprovalRequest) -> None:
        self._waiting.pop(request.id, None)
        if self._by_call.get(request.tool_use_id) is request:
            del self._by_call[request.tool_use_id]

    async def drain(self) -> None:
        """Wait until the releases started by "Always allow" answers have run."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _always(self, request: ApprovalRequest, rules: tuple[str, ...]) -> None:
        if self.policy is None:
            return
        # now, so the release below sees them (the loop adds them again; idempotent)
        self.policy.add_session_rules(rules)
        task = asyncio.get_running_loop().create_task(self._release_covered(request, rules))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _release_covered(self, answered: ApprovalRequest, rules: tuple[str, ...]) -> None:
        assert self.policy is not None
        for other in list(self.pending):
            if other is not answered and not other.done and await self.policy.would_allow(other.tool_name, other.input):
                other._resolve(PermissionAllow(), released_by=rules)
