"""What the file and notebook tools share: a clean schema, path resolution, permission facts.

:class:`PathTool` is the base of every tool here. Its :meth:`~PathTool.prepare` resolves
the paths a call touches once (``permission_paths``) and says whether it is a file
edit that ``acceptEdits`` mode may allow (``edits_files``): the facts the permission
policy decides on.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from ..loop.tool import InputT, PreparedCall, Tool, ToolContext, ToolError, ToolInput
from ..loop.wire import JSONObject
from ..notebook.session import page_notebook_named, tool_session
from .paths import ResolvedPath, check_path_text, resolve_path

#: Inputs larger than this (characters) are refused: no real edit needs more.
MAX_TEXT_INPUT_CHARS = 10_000_000


def clean_schema(node: Any) -> Any:
    """Make pydantic's schema read like Claude Code's: ``"integer"``, not ``anyOf [integer, null]``."""
    if isinstance(node, dict):
        any_of = node.get("anyOf")
        if isinstance(any_of, list):
            rest = [s for s in any_of if s != {"type": "null"}]
            if len(rest) == 1 and len(rest) < len(any_of):
                merged = {k: v for k, v in node.items() if k != "anyOf"}
                merged.update(rest[0])
                node = merged
        if node.get("default", 0) is None:
            node = {k: v for k, v in node.items() if k != "default"}
        return {k: clean_schema(v) for k, v in node.items()}
    if isinstance(node, list):
        return [clean_schema(v) for v in node]
    return node


class PathTool(Tool[InputT]):
    """A tool whose input names one file, notebook or folder (``path_field``); generic over
    its input model, as :class:`~jupyter_agent.loop.tool.Tool` is."""

    path_field: ClassVar[str] = "file_path"
    #: A file/notebook edit (``acceptEdits`` allows it inside the working directory).
    edits_files: ClassVar[bool] = False
    #: The path may be omitted (Glob/Grep default to the working directory).
    path_optional: ClassVar[bool] = False
    #: The call runs code (NotebookRun): it asks in every permission mode unless a rule allows it.
    runs_code: ClassVar[bool] = False
    #: The tool only looks (Read, Glob, Grep): it changes nothing, so it may run beside other calls.
    read_only: ClassVar[bool] = False

    def is_read_only(self, input: InputT) -> bool:
        return self.read_only

    def is_concurrency_safe(self, input: InputT) -> bool:
        return self.read_only

    def input_schema(self) -> JSONObject:
        return clean_schema(super().input_schema())

    def raw_path(self, input: InputT) -> str | None:
        value: str | None = input.model_dump(by_alias=True).get(self.path_field)
        return value

    def resolve(self, input: InputT, ctx: ToolContext) -> ResolvedPath:
        """The call's path: the notebook open in the page when the argument names it (by its
        key, or by the notebook server's path of it, which the kernel's disk may not have),
        else the path on the kernel's disk (:func:`~.paths.resolve_path`)."""
        raw = self.raw_path(input)
        if raw is None and self.path_optional:
            raw = "."
        session = tool_session(ctx)
        text = check_path_text(raw, self.path_field)
        key = page_notebook_named(session, text)
        if key is not None:
            return ResolvedPath(raw=text, lexical=Path(key), real=Path(key), in_page=True)
        resolved = resolve_path(raw, ctx.cwd, self.path_field)
        page = session.page_notebook
        if page is not None and str(resolved.real) == page.key:
            return replace(resolved, in_page=True)
        if page is not None and page.remote and not os.path.lexists(resolved.lexical):
            # The path under the server's root, made absolute from the kernel's folder (as a
            # model does, told that paths must be absolute): the page's notebook, when the
            # kernel's disk has nothing there.
            key = page_notebook_named(session, os.path.relpath(resolved.lexical, ctx.cwd))
            if key is not None:
                return ResolvedPath(raw=text, lexical=Path(key), real=Path(key), in_page=True)
        return resolved

    def permission_paths(self, input: InputT, ctx: ToolContext) -> list[ResolvedPath]:
        """The paths this call reads or writes, for the permission policy."""
        try:
            return [self.resolve(input, ctx)]
        except ToolError:
            return []

    async def prepare(self, input: InputT, context: ToolContext) -> PreparedCall:
        paths = self.permission_paths(input, context)
        problem = None
        if not paths:
            # Every call of a path tool names at least one path. None resolving here, though
            # validate_input resolved it, means the file system changed in between (a folder
            # swapped for a symlink): the call's error, before anyone is asked.
            try:
                self.resolve(input, context)
                problem = f"{self.raw_path(input)} could not be resolved; check the path and call again."
            except ToolError as exc:
                problem = str(exc)
        return PreparedCall(paths=paths, read_only=self.is_read_only(input), edits_files=self.edits_files,
                            runs_code=self.runs_code, problem=problem)

    def validate_path_text(self, input: InputT, ctx: ToolContext) -> str | None:
        try:
            self.resolve(input, ctx)
        except ToolError as exc:
            return str(exc)
        return None

    def summary(self, input: JSONObject) -> str:
        value = input.get(self.path_field)
        return value if isinstance(value, str) else super().summary(input)


def check_text_size(value: str, field: str) -> str | None:
    if len(value) > MAX_TEXT_INPUT_CHARS:
        return (f"{field} is {len(value):,} characters; the limit is {MAX_TEXT_INPUT_CHARS:,}. "
                "Split the change into smaller edits.")
    return None


def unified_diff(before: str, after: str, label: str, *, context: int = 3) -> str:
    """A unified diff a person can approve (``--- a/label`` / ``+++ b/label``)."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True),
        fromfile=f"a/{label}", tofile=f"b/{label}", n=context,
    )
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def numbered(text: str, start: int = 1) -> str:
    """``cat -n`` style as Claude Code prints it: ``N<TAB>line``."""
    return "\n".join(f"{n}\t{line}" for n, line in enumerate(text.split("\n"), start))


__all__ = ["PathTool", "ToolInput", "check_text_size", "clean_schema", "numbered", "unified_diff"]
