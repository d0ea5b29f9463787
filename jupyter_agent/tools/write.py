"""``Write {file_path, content}``: create a file, or replace one the model has read whole."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import Field

from ..loop.permission_result import PermissionAsk, PermissionResult
from ..notebook import NotebookError, is_notebook_path, validate_notebook
from ..notebook.session import tool_session
from ..loop.tool import PreparedCall, ToolContext, ToolError, ToolInput, ToolOutput
from .common import PathTool, check_text_size, unified_diff
from ..files.atomic import atomic_write
from .fileio import check_read_before_write, content_hash, note_write, read_text_file
from .paths import display_path, escape_glob, inside_roots
from .undo import current_bytes, run_changes


@dataclass
class FileChange:
    """A planned write: what is there now (None: no file yet) and the bytes to put there.

    ``base_hash`` is the hash of the bytes the plan was made from (None: no file);
    :meth:`apply` writes only if the file still has them.
    """

    path: Path
    before: str | None
    after: str
    data: bytes
    mode: int | None
    base_hash: str | None = None

    def diff(self, cwd: Path) -> str:
        return unified_diff(self.before or "", self.after, display_path(self.path, cwd))

    def apply(self, ctx: ToolContext) -> None:
        before = current_bytes(self.path, self.base_hash)  # for the run's checkpoint
        mtime = atomic_write(self.path, self.data, self.mode, expected_hash=self.base_hash)
        run_changes(ctx).file_written(str(self.path), before, self.data)
        note_write(ctx, self.path, self.data, mtime)


class FileInput(ToolInput):
    """The input of a tool that changes one file: its path (each tool says it in its words)."""

    file_path: str


#: The input model of a :class:`FileEditTool` (Write's, Edit's).
FileInputT = TypeVar("FileInputT", bound=FileInput)


class FileEditTool(PathTool[FileInputT]):
    """Write and Edit: plan the change once (one read, one hash), then apply that plan.

    :meth:`prepare` plans inside the working folders (a bad plan is the call's error
    result, before anyone is asked); outside them nothing on the disk is read before
    permission, so the plan is made in :meth:`call`, on the path resolved at preparation.
    """

    edits_files = True

    def plan(self, input: FileInputT, context: ToolContext, path: Path) -> FileChange:
        raise NotImplementedError

    async def prepare(self, input: FileInputT, context: ToolContext) -> PreparedCall:
        prepared = await super().prepare(input, context)
        if prepared.paths and inside_roots(prepared.paths[0], context):
            try:
                change = self.plan(input, context, prepared.paths[0].real)
            except ToolError as exc:
                prepared.problem = str(exc)
            else:
                prepared.change, prepared.diff = change, change.diff(context.cwd)
                prepared.content_hash = change.base_hash
        return prepared

    def planned_change(self, input: FileInputT, context: ToolContext, prepared: PreparedCall) -> FileChange:
        """The plan's change; for a path outside the working folders, whose file is read only
        once the call is allowed (see :meth:`prepare`), it is computed now."""
        if prepared.change is not None:
            return prepared.change
        return self.plan(input, context, prepared.paths[0].real)

    def ask(self, verb: str, input: FileInputT, context: ToolContext, prepared: PreparedCall) -> PermissionAsk:
        return PermissionAsk(message=f"{self.name} wants to {verb} {input.file_path}.", diff=prepared.diff,
                             suggested_rules=suggest_edit_rules(prepared.paths[0].real, context))

    async def call(self, input: FileInputT, context: ToolContext, prepared: PreparedCall) -> ToolOutput:
        """Carry out the plan; the model is told the file was created, or :meth:`updated`."""
        change = self.planned_change(input, context, prepared)
        change.apply(context)
        shown = str(change.path)  # absolute, as every tool's input must be: the model can use it as it is
        if change.before is None:
            return ToolOutput(f"File created successfully at: {shown}")
        return ToolOutput(self.updated(input, change, shown))

    def updated(self, input: FileInputT, change: FileChange, shown: str) -> str:
        """What the model is told after an existing file was changed."""
        return f"The file {shown} has been updated."


class WriteInput(FileInput):
    file_path: str = Field(description="The absolute path to the file to write (must be absolute, not relative)")
    content: str = Field(description="The content to write to the file")


class Write(FileEditTool[WriteInput]):
    name = "Write"
    Input = WriteInput
    description = (
        "Writes a file to the local filesystem.\n\n"
        "Usage:\n"
        "- This tool will overwrite the existing file if there is one at the provided path.\n"
        "- If this is an existing file, you MUST use the Read tool first to read the file's contents. "
        "This tool will fail if you did not read the file first, or if it changed since you read it.\n"
        "- ALWAYS prefer editing existing files in the codebase. NEVER write new files unless explicitly required.\n"
        "- The file keeps its encoding, line endings and permissions."
    )

    async def validate_input(self, input: WriteInput, context: ToolContext) -> str | None:
        error = self.validate_path_text(input, context) or check_text_size(input.content, "content")
        if error:
            return error
        path = self.resolve(input, context)
        if is_notebook_path(path.real):
            if str(path.real) in tool_session(context).notebook_documents:
                # the open notebook (a page, or an editor that would overwrite the file)
                return ("This notebook is open in the user's editor: writing the whole file would be lost "
                        "or would lose the user's work. Change it cell by cell with NotebookEdit.")
            try:
                validate_notebook(json.loads(input.content))
            except (ValueError, NotebookError) as exc:
                return (f"content is not a valid Jupyter notebook ({exc}). Write a complete nbformat 4 JSON "
                        "document, or use NotebookEdit to change cells.")
        return None

    def plan(self, input: WriteInput, context: ToolContext, path: Path) -> FileChange:
        if path.is_dir():
            raise ToolError(f"{input.file_path} is a directory; give the path of a file to write.")
        if not path.exists():
            if path.is_symlink():
                raise ToolError(f"{input.file_path} is a broken symlink; remove it or write to its target.")
            return FileChange(path, None, input.content, input.content.encode("utf-8"), None)
        current = read_text_file(path)
        check_read_before_write(context, path, current.raw, need_whole=True)
        content = input.content
        if current.newline == "\r\n" and "\r\n" not in content:
            content = content.replace("\n", "\r\n")  # keep the file's line endings
        return FileChange(path, current.text, content, current.encode(content), current.mode,
                          content_hash(current.raw))

    async def check_permissions(self, input: WriteInput, context: ToolContext,
                                prepared: PreparedCall) -> PermissionResult:
        change = prepared.change
        verb = "write" if change is None else "create" if change.before is None else "overwrite"
        return self.ask(verb, input, context, prepared)


def suggest_edit_rules(path: Path, context: ToolContext) -> tuple[str, ...]:
    """What "Always allow" would add for an edit of ``path``: file edits in its folder.

    An ``Edit`` rule covers Write and NotebookEdit too (see :mod:`jupyter_agent.permissions`).
    """
    folder = display_path(path.parent, context.cwd)
    # A folder really named "**" or "[x]" must not become a wildcard that allows much more.
    pattern = "./**" if folder == os.path.realpath(context.cwd) else f"{escape_glob(folder)}/**"
    return (f"Edit({pattern})",)


__all__ = ["FileChange", "FileEditTool", "Write", "WriteInput", "suggest_edit_rules"]
