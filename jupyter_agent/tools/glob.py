"""``Glob {pattern, path?}``: files matching a glob, newest first, at most 100."""

from __future__ import annotations

import asyncio
import os
import threading

from pydantic import Field

from ..loop.tool import PreparedCall, ToolContext, ToolError, ToolInput, ToolOutput
from .common import PathTool
from .paths import (
    VCS_DIRS,
    ResolvedPath,
    compile_glob,
    resolve_path,
    split_glob_base,
)

MAX_RESULTS = 100
MAX_PATTERN_CHARS = 4096
#: Stop walking after this many entries (a glob over a whole disk would never finish).
MAX_ENTRIES_SCANNED = 1_000_000


class GlobInput(ToolInput):
    pattern: str = Field(description="The glob pattern to match files against")
    path: str | None = Field(
        default=None,
        description="The directory to search in. If not specified, the current working directory will be used. "
                    "IMPORTANT: Omit this field to use the default directory. DO NOT enter \"undefined\" or "
                    "\"null\" - simply omit it for the default behavior. Must be a valid directory path if provided.",
    )


class Glob(PathTool[GlobInput]):
    name = "Glob"
    Input = GlobInput
    path_field = "path"
    path_optional = True
    read_only = True
    description = (
        "- Fast file pattern matching tool that works with any codebase size\n"
        "- Supports glob patterns like \"**/*.js\" or \"src/**/*.ts\" (and braces: \"*.{py,ipynb}\")\n"
        "- Returns matching file paths sorted by modification time, newest first (at most 100)\n"
        "- Use this tool when you need to find files by name patterns\n"
        "- Hidden files are included; .git and other version-control folders are skipped"
    )

    def search_root(self, input: GlobInput, ctx: ToolContext) -> tuple[ResolvedPath, str]:
        """The folder actually walked (the pattern's literal prefix joined to ``path``) and the rest."""
        base = self.resolve(input, ctx)
        pattern = os.path.expanduser(input.pattern)
        literal, rest = split_glob_base(pattern)
        if ".." in rest.split("/"):
            raise ToolError("pattern may not contain '..' after a wildcard; put the folder in path instead.")
        root = resolve_path(os.path.join(str(base.real), literal) if literal else str(base.real), ctx.cwd, "path")
        return root, rest

    def permission_paths(self, input: GlobInput, ctx: ToolContext) -> list[ResolvedPath]:
        try:
            return [self.resolve(input, ctx), self.search_root(input, ctx)[0]]
        except ToolError:
            return []

    async def validate_input(self, input: GlobInput, context: ToolContext) -> str | None:
        if not input.pattern.strip():
            return "pattern is empty: give a glob such as **/*.py."
        if len(input.pattern) > MAX_PATTERN_CHARS or "\x00" in input.pattern:
            return f"pattern must be at most {MAX_PATTERN_CHARS} characters, without NUL bytes."
        if input.path is not None and not input.path.strip():
            return "path is empty: omit it to search the working directory."
        try:
            _, rest = self.search_root(input, context)
            compile_glob(rest)
        except ToolError as exc:
            return str(exc)
        except ValueError as exc:
            return f"pattern is not a usable glob: {exc}."
        return None

    async def call(self, input: GlobInput, context: ToolContext, prepared: PreparedCall) -> ToolOutput:
        root, rest = self.search_root(input, context)
        if not root.real.exists():
            raise ToolError(f"Directory does not exist: {input.path or root.real}")
        if not root.real.is_dir():
            raise ToolError(f"Path is not a directory: {input.path or root.real}. Glob searches folders.")
        stop = threading.Event()  # a thread cannot be cancelled: it is told to stop instead
        try:
            matches, capped = await asyncio.to_thread(find_files, str(root.real), rest, stop)
        finally:
            stop.set()
        # files the user's deny rules hide stay hidden here too
        matches = [m for m in matches if not context.permissions.is_read_denied(m[1], context)]
        if not matches:
            return ToolOutput("No files found")
        matches.sort(key=lambda item: (-item[0], item[1]))
        shown = [str(p) for _, p in matches[:MAX_RESULTS]]  # absolute: what Read and Edit take
        text = "\n".join(shown)
        if len(matches) > MAX_RESULTS or capped:
            text += "\n(Results are truncated. Consider using a more specific path or pattern.)"
        return ToolOutput(text)


def find_files(root: str, pattern: str, stop: threading.Event | None = None) -> tuple[list[tuple[int, str]], bool]:
    """(mtime_ns, path) of every file under ``root`` whose relative path matches ``pattern``.

    Matching is linear in the path (:mod:`.globmatch`); ``stop`` ends the walk early
    (the caller was cancelled or timed out).
    """
    regex = compile_glob(pattern)
    recursive = "**" in pattern or "/" in pattern
    out: list[tuple[int, str]] = []
    scanned = 0
    stack = [root]
    prefix = len(root.rstrip("/")) + 1
    while stack:
        if stop is not None and stop.is_set():
            return out, True
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        scanned += len(entries)
        if scanned > MAX_ENTRIES_SCANNED:
            return out, True
        for entry in entries:
            rel = entry.path[prefix:]
            try:
                if entry.is_dir(follow_symlinks=False):
                    if recursive and entry.name not in VCS_DIRS:
                        stack.append(entry.path)
                    continue
                if regex.match(rel):
                    out.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.path))
            except OSError:
                continue
    return out, False
