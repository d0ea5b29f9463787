"""The ``Tool`` interface every tool implements, and the context a call runs in.

These are the loop's contracts (beside :mod:`.model_protocol`): the loop calls tools
through them, and ``tools/``, ``notebook/`` and ``permissions`` implement or read them.
Nothing here imports those packages.

A tool is a class with a pydantic ``Input`` model (its JSON schema is what the
model sees), a description, and an async ``call``. The loop validates the model's
input against ``Input`` before anything else, so ``call`` only ever sees valid input.
``Tool`` is generic over that model (``class Read(PathTool[ReadInput])``, ``Input =
ReadInput``): each method of a tool sees its own input's fields, and mypy checks that
``Input`` is the class's type argument. The model is the one declaration of the input:
its JSON schema is what the model is told, and what validation holds the call to.
Defaults are the safe choice: not read-only, not concurrency-safe, ask permission.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeAlias, TypeVar
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from ..errors import JupyterAgentError

from .events import Notice, ToolOutcome
from .permission_result import CanUseTool, PermissionAllow, PermissionAsk, PermissionResult
from .services import Services
from .wire import JSONObject, ToolDefinition, ToolOutputContent


class ToolInput(BaseModel):
    """Base of every tool's input model: unknown fields are an error, as in the API schema."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


#: A tool's input model (``Tool[InputT]``).
InputT = TypeVar("InputT", bound=ToolInput)


class ToolError(JupyterAgentError):
    """Raise from ``call`` for an expected failure: the message goes to the model as-is."""


@dataclass
class ToolOutput:
    """What ``call`` returns: ``content`` is text or a list of content blocks (text, image).

    ``display`` is optional extra for UIs (a cell's outputs); it is not sent to the
    model. An edit's diff is not here: it is planned before the call, on the
    :class:`PreparedCall`, where the approval card reads it.
    """

    content: ToolOutputContent
    is_error: bool = False
    display: object = None
    #: How the call ended when that is more than ok / error: ``raised`` (the code it ran
    #: raised ``exception``) or ``stopped`` (the user interrupted it). None: from ``is_error``.
    outcome: ToolOutcome | None = None
    exception: str = ""
    #: The exit status of the command a call ran (``Bash``), for the UIs; None: no command.
    exit_code: int | None = None


@dataclass
class FileReadRecord:
    """What a ``Read`` saw, so ``Write``/``Edit`` can refuse stale or unread files."""

    path: str
    mtime_ns: int
    content_hash: str
    partial: bool = False


@dataclass(frozen=True)
class CommandParts:
    """A shell command line (``Bash``) as a real parse read it, for rules that name commands.

    ``commands`` holds every simple command of the line (after ``;``, ``&&``, in a pipe, a
    subshell, a ``$( )``...), each as its words; ``unreadable`` says why the line could not
    be read for certain ("" when it was): then no rule can allow it. ``exact_only`` holds,
    for each command, why only an allow rule naming all its words may allow it ("" when a
    prefix rule may: it only reads, and writes only the files listed as the call's paths).
    """

    commands: tuple[tuple[str, ...], ...] = ()
    unreadable: str = ""
    exact_only: tuple[str, ...] = ()


@dataclass(frozen=True)
class ResolvedPath:
    """A path argument after resolution (``tools/paths.py`` resolves it).

    ``lexical`` is absolute and normalised but keeps symlinks (what the model named);
    ``real`` has every symlink resolved (what the disk will actually touch). Permission
    checks look at both: an allow must hold for ``real``, a deny for either.
    ``in_page``: the path names the notebook open in the page that started the run; the
    tools reach it through that page, never the kernel's disk (both paths are its key).
    """

    raw: str
    lexical: Path
    real: Path
    in_page: bool = False

    def __str__(self) -> str:
        return str(self.real)


@dataclass
class PreparedCall:
    """One call, planned once, before anyone decides about it.

    The permission policy decides on these facts, and ``call`` carries out exactly
    this plan: the paths were resolved once (``paths``; symlinks resolved, so a later
    swap cannot redirect the write), and an edit's ``change`` was computed from the
    content whose hash is ``content_hash``. ``call`` checks that hash again, under the
    same directory it resolved, before it writes.

    ``change`` is None when there is nothing to plan, or when the path is outside the
    working folders (nothing about the disk there is read before permission).
    """

    paths: list[ResolvedPath] = field(default_factory=list)  # in the order named
    read_only: bool = False
    edits_files: bool = False
    #: Runs code (a notebook cell): it can touch anything, so it asks in every mode.
    runs_code: bool = False
    #: The tool's own plan (a file's new content, a notebook's cells), of the tool's own type:
    #: only that tool (and a tool built on it) reads it; the loop passes it along.
    change: Any = None
    diff: str | None = None
    content_hash: str | None = None
    #: Why the plan cannot work (file not read, string not found...): the call's error result.
    problem: str | None = None
    #: The shell command line the call runs, as parsed (``Bash``); ``paths`` then holds the
    #: files its redirections write. None: the call runs no command line.
    commands: CommandParts | None = None
    #: The command runs in a sandbox (no network, writes only in the working folder).
    sandboxed: bool = False


class PermissionPolicy:
    """Decides allow / deny / ask for one call (modes and rules live behind this).

    The loop calls :meth:`decide` (with the call's :class:`PreparedCall`) before every call
    and :meth:`add_session_rules` after an
    "Always allow"; the tools ask :meth:`allowed_roots` (where a path needs no approval)
    and :meth:`is_read_denied` (Glob and Grep hide such files); an approval UI asks
    :meth:`would_allow` to release queued asks. Subclass it and override :meth:`decide`;
    every other method has a safe default (``permissions.Permissions`` overrides them all).
    """

    #: The permission mode the policy applies (``loop.permission_result.PERMISSION_MODES``),
    #: or None for a policy without modes.
    mode: str | None = None

    async def decide(self, tool: Tool[InputT], input: InputT, context: ToolContext,
                     prepared: PreparedCall) -> PermissionResult:
        """Allow, deny or ask for this call, on the facts of its plan (``prepared``)."""
        raise NotImplementedError(f"{type(self).__name__} must implement decide()")

    def add_session_rules(self, rules: tuple[str, ...]) -> None:
        """Allow rules for the rest of the session ("Always allow"). Default: kept nowhere."""
        return None

    async def would_allow(self, tool: AnyTool | str, input: JSONObject | ToolInput,
                          context: ToolContext | None = None) -> bool:
        """Would this call run without asking now? Default: no (a queued ask stays queued)."""
        return False

    def allowed_roots(self, context: ToolContext) -> list[Path]:
        """The folders a call may touch without asking. Default: the working folder."""
        return [Path(os.path.realpath(context.cwd))]

    def is_read_denied(self, path: str | Path, context: ToolContext | None = None) -> bool:
        """Does the user forbid reading ``path``? (Glob and Grep hide such files.) Default: no."""
        return False

    def system_prompt_note(self) -> str:
        """Text the system prompt needs for this policy (plan mode says what it means), or ""."""
        return ""


class ToolCheckPolicy(PermissionPolicy):
    """The simplest policy: whatever each tool's own ``check_permissions`` says."""

    async def decide(self, tool: Tool[InputT], input: InputT, context: ToolContext,
                     prepared: PreparedCall) -> PermissionResult:
        return await tool.check_permissions(input, context, prepared)


@dataclass
class ToolContext:
    """Everything a call may use besides its input.

    ``services`` holds what the tools of one conversation share (the notebook tools'
    kernels and documents, a tool's settings), each part under its own class: the loop
    never looks inside. ``read_file_state`` is the files read; ``abort`` is set when the
    user stops the run.
    """

    cwd: Path
    abort: asyncio.Event = field(default_factory=asyncio.Event)
    permissions: PermissionPolicy = field(default_factory=ToolCheckPolicy)
    read_file_state: dict[str, FileReadRecord] = field(default_factory=dict)
    services: Services = field(default_factory=Services)
    tool_use_id: str = ""
    progress: Callable[[object], None] = lambda data: None
    #: Where oversized results are saved (None: a private folder of this user's; tests set it).
    tool_results_dir: Path | None = None

    def for_call(self, tool_use_id: str, progress: Callable[[object], None]) -> ToolContext:
        """The same context, labelled for one call (shares every mutable part)."""
        return replace(self, tool_use_id=tool_use_id, progress=progress)


class Tool(Generic[InputT]):
    """Base class of all tools, generic over the input model. Subclasses set ``name``,
    ``description``, ``Input`` (the class's type argument) and implement ``call``; the rest
    has safe defaults."""

    name: ClassVar[str]
    description: ClassVar[str]
    #: The input's model, set on the class (a ClassVar cannot name the type argument).
    Input: type[InputT]
    #: Output longer than this (characters) is saved to a file; the model gets a preview.
    max_result_size_chars: ClassVar[int] = 50_000
    #: Seconds before a call is cancelled with an error result (None: no limit).
    timeout_s: ClassVar[float | None] = 120.0
    #: What the approval's note calls this tool's work when it asks in every permission mode
    #: (its ``PreparedCall.runs_code``): "Running code always asks unless...".
    always_asks_as: ClassVar[str] = "Running code"

    def input_schema(self) -> JSONObject:
        schema = self.Input.model_json_schema(by_alias=True)
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        return schema

    def to_api(self) -> ToolDefinition:
        """The tool definition as the Messages API takes it."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema()}

    def is_read_only(self, input: InputT) -> bool:
        return False

    def is_concurrency_safe(self, input: InputT) -> bool:
        return False

    async def validate_input(self, input: InputT, context: ToolContext) -> str | None:
        """Return an error message for input that is well-formed but unusable, else None."""
        return None

    async def prepare(self, input: InputT, context: ToolContext) -> PreparedCall:
        """Plan the call once: what it touches and, for an edit, the change and its diff.

        Raise ``ToolError`` for a plan that cannot work (the model gets the message).
        The default plans nothing: no paths, read-only as ``is_read_only`` says.
        """
        return PreparedCall(read_only=self.is_read_only(input))

    async def check_permissions(self, input: InputT, context: ToolContext, prepared: PreparedCall) -> PermissionResult:
        """This tool's own view of the planned call: read-only calls are allowed, everything else asks."""
        if self.is_read_only(input):
            return PermissionAllow()
        return PermissionAsk(message=f"{self.name} wants to make a change.")

    async def call(self, input: InputT, context: ToolContext, prepared: PreparedCall) -> ToolOutput:
        """Carry out the call as ``prepared`` planned it (the plan the permission was given for)."""
        raise NotImplementedError(f"{type(self).__name__} must implement call()")

    def rule_content(self, input: InputT) -> str | None:
        """What a ``Tool(pattern)`` rule is matched against for a call that names no path
        (a command, a URL). None, the default: a rule with a pattern never covers such a call."""
        return None

    def reread_input(self, input: JSONObject) -> JSONObject | None:
        """After a compaction, the input that reads again what this call read (so the
        model keeps the file, and the read-before-edit rule its record), or None: this
        tool reads nothing worth reading again. The default: None."""
        return None

    def carry_over(self, context: ToolContext) -> str | None:
        """What of this tool's conversation state a compacted history must still hold (the
        plan of ``TodoWrite``), as text for the model, or None (the default: nothing)."""
        return None

    def summary(self, input: JSONObject) -> str:
        """A one-line description of a call for UIs (e.g. the file path)."""
        for key in ("file_path", "notebook_path", "pattern", "path"):
            if isinstance(value := input.get(key), str):
                return value
        return ""


#: A tool of whatever input: what the loop holds where tools of every kind sit side by side
#: (a run's list, the tools by name). Each call's input is made by that same tool's ``Input``,
#: so the pair agrees at run time; a tool's own methods see their input's type.
AnyTool: TypeAlias = Tool[Any]


class ToolSource:
    """Tools known only once something has started (an MCP server's: its process must run
    before it can list them). The loop asks each source once per run, before the first
    request, and offers what it returns beside the run's own tools; Stop cancels the wait.

    ``can_use_tool`` is the run's approval callback (None: no one is there to ask), for a
    source that needs a person's yes before it starts something.
    """

    async def load_tools(self, context: ToolContext,
                         can_use_tool: CanUseTool | None,
                         ) -> tuple[list[AnyTool], list[Notice]]:
        """The tools to offer now, and notices for the user (a server that failed to start)."""
        raise NotImplementedError(f"{type(self).__name__} must implement load_tools()")

    async def aclose(self) -> None:
        """Stop what the source started (called at the end of a run that owns it)."""
        return None
