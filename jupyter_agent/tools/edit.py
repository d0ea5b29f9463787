"""``Edit {file_path, old_string, new_string, replace_all?}``: exact string replacement."""

from __future__ import annotations

from pydantic import Field

import difflib
from dataclasses import replace
from pathlib import Path

from ..loop.permission_result import PermissionResult
from ..loop.tool import PreparedCall, ToolContext, ToolError
from ..notebook import is_notebook_path
from .common import check_text_size
from .fileio import MAX_TEXT_BYTES, check_read_before_write, content_hash, read_text_file
from .quotes import find_actual_string, preserve_quote_style
from .write import FileChange, FileEditTool, FileInput

SNIPPET_CONTEXT_LINES = 4


class EditInput(FileInput):
    file_path: str = Field(description="The absolute path to the file to modify")
    old_string: str = Field(description="The text to replace")
    new_string: str = Field(description="The text to replace it with (must be different from old_string)")
    replace_all: bool | None = Field(default=False, description="Replace all occurrences of old_string (default false)")


class Edit(FileEditTool[EditInput]):
    name = "Edit"
    Input = EditInput
    description = (
        "Performs exact string replacements in files.\n\n"
        "Usage:\n"
        "- You must use your `Read` tool at least once in the conversation before editing. This tool will "
        "error if you attempt an edit without reading the file, or if the file changed since you read it.\n"
        "- When editing text from Read tool output, preserve the exact indentation (tabs/spaces) as it appears "
        "AFTER the line number prefix (line number + tab). Never include the line number prefix in "
        "old_string or new_string.\n"
        "- The edit will FAIL if `old_string` is not unique in the file. Either provide a larger string with "
        "more surrounding context to make it unique or use `replace_all` to change every instance.\n"
        "- Use `replace_all` for replacing and renaming strings across the file.\n"
        "- An empty old_string creates a new file (or fills an empty one) with new_string.\n"
        "- To edit Jupyter notebooks (.ipynb) use NotebookEdit."
    )

    async def validate_input(self, input: EditInput, context: ToolContext) -> str | None:
        error = (self.validate_path_text(input, context) or check_text_size(input.old_string, "old_string")
                 or check_text_size(input.new_string, "new_string"))
        if error:
            return error
        if input.old_string == input.new_string:
            return "No changes to make: old_string and new_string are exactly the same."
        path = self.resolve(input, context)
        if is_notebook_path(path.real):
            return "File is a Jupyter Notebook. Use the NotebookEdit tool to edit this file."
        return None

    def plan(self, input: EditInput, context: ToolContext, path: Path) -> FileChange:
        if path.is_dir():
            raise ToolError(f"{input.file_path} is a directory; give the path of a file to edit.")
        if not path.exists():
            if input.old_string == "":
                return FileChange(path, None, input.new_string, input.new_string.encode("utf-8"), None)
            raise ToolError(f"File does not exist: {input.file_path}. (Current working directory: {context.cwd})")
        current = read_text_file(path)
        if input.old_string == "":
            if current.text.strip():
                raise ToolError("Cannot create new file - file already exists. Give old_string to edit it.")
            check_read_before_write(context, path, current.raw, need_whole=True)
            return FileChange(path, current.text, input.new_string, current.encode(input.new_string), current.mode,
                              content_hash(current.raw))
        check_read_before_write(context, path, current.raw, need_whole=True)
        old, new = _match_line_endings(current.text, input.old_string, input.new_string, current.newline)
        actual = find_actual_string(current.text, old)  # straight quotes also match curly ones
        if actual is None:
            raise ToolError(f"String to replace not found in file.\nString: {_shorten(input.old_string)}")
        old, new = actual, preserve_quote_style(old, actual, new)
        count = current.text.count(old)
        if count > 1 and not input.replace_all:
            raise ToolError(
                f"Found {count} matches of the string to replace, but replace_all is false. To replace all "
                "occurrences, set replace_all to true. To replace only one occurrence, please provide more "
                f"context to uniquely identify the instance.\nString: {_shorten(input.old_string)}")
        # Bound the result before building it: "a" -> 10 million characters, replace_all, once
        # built a 1 GB string (5 GB at its peak) before anyone could say no.
        replacements = count if input.replace_all else 1
        size = len(current.text) + replacements * (len(new) - len(old))
        if size > MAX_TEXT_BYTES:
            raise ToolError(f"This edit would make the file {size:,} characters long ({replacements:,} "
                            f"replacement(s)); the limit is {MAX_TEXT_BYTES:,}. Make a smaller change.")
        after = current.text.replace(old, new) if input.replace_all else current.text.replace(old, new, 1)
        return FileChange(path, current.text, after, current.encode(after), current.mode, content_hash(current.raw))

    async def check_permissions(self, input: EditInput, context: ToolContext,
                                prepared: PreparedCall) -> PermissionResult:
        ask = self.ask("change", input, context, prepared)
        if ask.diff is None:
            # Outside the working folders the file is read only once allowed (FileEditTool.prepare):
            # the person approves the change asked for, as a diff of its own strings, not JSON.
            label = f"{input.file_path}{' (every occurrence)' if input.replace_all else ''}"
            lines = difflib.unified_diff(input.old_string.splitlines(), input.new_string.splitlines(),
                                         label, label, n=0, lineterm="")
            ask = replace(ask, diff="\n".join(lines) + "\n")
        return ask

    def updated(self, input: EditInput, change: FileChange, shown: str) -> str:
        if input.replace_all:
            return (f"The file {shown} has been updated. All occurrences of "
                    f"{_shorten(input.old_string, 200)!r} were successfully replaced with "
                    f"{_shorten(input.new_string, 200)!r}.")
        return (f"The file {shown} has been updated. Here's the result of running `cat -n` on a "
                f"snippet of the edited file:\n{_snippet(change.before or '', change.after)}")


def _match_line_endings(text: str, old: str, new: str, newline: str) -> tuple[str, str]:
    """The model writes ``\\n``; in a CRLF file look for (and write) ``\\r\\n`` instead."""
    if newline == "\r\n" and "\n" in old and "\r\n" not in old:
        crlf_old = old.replace("\n", "\r\n")
        if find_actual_string(text, crlf_old) is not None:
            return crlf_old, new.replace("\r\n", "\n").replace("\n", "\r\n")
    return old, new


def _shorten(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit:,} more characters]"


def _snippet(before: str, after: str) -> str:
    """Lines around the first change, numbered as Read numbers them."""
    b, a = before.split("\n"), after.split("\n")
    if a and a[-1] == "" and len(a) > 1:  # a final newline is not a line of its own
        a.pop()
        if b and b[-1] == "":
            b.pop()
    first = next((i for i, (x, y) in enumerate(zip(b, a)) if x != y), min(len(a), len(b)))
    tail = 0
    while tail < min(len(a), len(b)) - first and b[-1 - tail] == a[-1 - tail]:
        tail += 1
    last_changed = max(first, len(a) - tail - 1)
    start = max(0, first - SNIPPET_CONTEXT_LINES)
    end = min(len(a), last_changed + SNIPPET_CONTEXT_LINES + 1, start + 60)
    return "\n".join(f"{n + 1}\t{a[n].removesuffix(chr(13))[:2000]}" for n in range(start, end))


__all__ = ["Edit", "EditInput"]
