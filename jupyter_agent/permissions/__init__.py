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
(``approvals.py``) is a ready-made one for UIs: each ask becomes an awaitable
:class:`ApprovalRequest` that the UI resolves with allow, allow-always (a session rule, which
also releases other pending requests it now covers) or deny (with optional feedback for the
model). The rule grammar and the tool families are in ``rules.py``.
"""

from __future__ import annotations

import copy
import logging
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from ..loop.permission_result import (
    DENIED,
    PermissionAllow,
    PermissionAsk,
    PermissionDeny,
    PermissionResult,
    ask_with_note,
    check_permission_mode,
)
from ..policy import load_policy
from ..safety import SafetyHit, credential_hit, rule_names_place, safety_hit
from ..loop.tool import AnyTool, CommandParts, InputT, PermissionPolicy, PreparedCall, Tool, ToolContext, ToolInput
from ..loop.wire import JSONObject
from ..loop.tool_execution import results_dirs
from ..tools.paths import ResolvedPath, escape_glob, is_within, path_matches_rule
from ..tools.shell_parse import rule_allows, rule_covers
from .approvals import ApprovalBroker, ApprovalRequest
from .rules import EDIT_FAMILY, RULE_FAMILIES, RUN_FAMILY, Rule

log = logging.getLogger(__name__)

PLAN_MODE_NOTE = (
    "Plan mode is active. You may read files, search and think, but you must not change anything: do not "
    "edit or write files, do not edit or run notebook cells. Such calls will be refused. Research the task, "
    "then present your plan to the user and wait for them to approve it."
)


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


#: The public names, from where they were before the rules and the approvals had modules of
#: their own (``from jupyter_agent.permissions import ApprovalBroker`` keeps working).
__all__ = ["DENIED", "EDIT_FAMILY", "PLAN_MODE_NOTE", "RULE_FAMILIES", "RUN_FAMILY", "ApprovalBroker",
           "ApprovalRequest", "Permissions", "Rule"]
