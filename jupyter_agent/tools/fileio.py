"""Reading and writing files the way an editor a person trusts would.

* Text keeps its encoding (UTF-8, UTF-8 with BOM, UTF-16 with BOM; invalid UTF-8 bytes
  survive an edit untouched thanks to ``surrogateescape``), its line endings and its
  permission bits.
* Writes are atomic (:func:`~jupyter_agent.files.atomic.atomic_write`: a temporary file
  in the same folder, fsync, rename). A crash leaves the old file or the new one.
* What ``Read`` saw is recorded (mtime, hash, whole or partial) so ``Write``/``Edit``/
  ``NotebookEdit`` can refuse files the model has not read or that changed since.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path

from ..files.atomic import MODIFIED_SINCE_READ, content_hash
from ..files.filestat import read_regular_file
from ..loop.tool import FileReadRecord, ToolContext, ToolError
from ..notebook.session import tool_session

#: A text file is held whole in memory up to this size: Edit/Write load it, Read pages it,
#: a multiline Grep scans it. Larger ones are refused or skipped (the model could not hold
#: them either); Read says to search them with Grep.
MAX_TEXT_BYTES = 64 * 1024 * 1024

_BOMS = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)

NOT_READ_YET = "File has not been read yet. Read it first before writing to it."


def looks_binary(data: bytes) -> bool:
    """A NUL byte in the first 8 KiB (and no UTF-16 BOM) means binary, as git and grep decide."""
    head = data[:8192]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False
    return b"\x00" in head


@dataclass
class TextFile:
    """A decoded text file plus everything needed to write it back the same way."""

    path: Path
    raw: bytes
    text: str
    encoding: str  # codec used, with errors="surrogateescape" for UTF-8
    bom: bytes
    newline: str  # the dominant line ending: "\n" or "\r\n"
    invalid_bytes: int  # bytes that are not valid UTF-8 (kept as-is on write)
    mtime_ns: int
    mode: int

    def encode(self, text: str) -> bytes:
        return encode_text(text, self.encoding, self.bom, self.path)


def decode_bytes(data: bytes) -> tuple[str, str, bytes, int]:
    """(text, encoding, bom, number of invalid UTF-8 bytes)."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            body = data[len(bom) :]
            if encoding == "utf-8":
                text = body.decode("utf-8", errors="surrogateescape")
                return text, encoding, bom, _count_surrogates(text)
            try:
                return body.decode(encoding), encoding, bom, 0
            except UnicodeDecodeError:
                break
    text = data.decode("utf-8", errors="surrogateescape")
    return text, "utf-8", b"", _count_surrogates(text)


def _count_surrogates(text: str) -> int:
    if text.isascii():
        return 0
    return sum(1 for ch in text if "\udc80" <= ch <= "\udcff")


def encode_text(text: str, encoding: str, bom: bytes = b"", path: Path | None = None) -> bytes:
    try:
        errors = "surrogateescape" if encoding == "utf-8" else "strict"
        return bom + text.encode(encoding, errors=errors)
    except UnicodeEncodeError as exc:
        where = f" {path}" if path else ""
        raise ToolError(
            f"Cannot write{where} in its encoding ({encoding}): character {exc.object[exc.start]!r} "
            "cannot be encoded. Use characters the file's encoding can hold."
        ) from None


def dominant_newline(text: str) -> str:
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"


def read_text_file(path: Path) -> TextFile:
    """Load a file for editing; refuses directories, binaries and huge files clearly."""
    raw, st = read_regular_file(path, max_bytes=MAX_TEXT_BYTES,
                                too_large=f"files over {MAX_TEXT_BYTES:,} bytes cannot be edited here.")
    if looks_binary(raw):
        raise ToolError(f"{path} is a binary file; only text files can be edited.")
    text, encoding, bom, invalid = decode_bytes(raw)
    return TextFile(
        path=path,
        raw=raw,
        text=text,
        encoding=encoding,
        bom=bom,
        newline=dominant_newline(text),
        invalid_bytes=invalid,
        mtime_ns=st.st_mtime_ns,
        mode=stat.S_IMODE(st.st_mode),
    )


# --- what was read ----------------------------------------------------------------------


def record_read(
    ctx: ToolContext,
    path: Path,
    raw_hash: str,
    mtime_ns: int,
    *,
    lines: tuple[int, int] | None = None,
    total_lines: int | None = None,
) -> FileReadRecord:
    """Remember a Read. ``lines`` is the 1-based inclusive range shown when only part was.

    Pages of the same content add up: once every line has been shown the file counts
    as read whole, so a big file can be edited after reading it page by page.
    """
    key = str(path)
    partial = False
    if lines is not None and total_lines is not None and (lines[0] > 1 or lines[1] < total_lines):
        coverage = tool_session(ctx).read_coverage
        seen_hash, ranges = coverage.get(key, (None, []))
        ranges = ranges if seen_hash == raw_hash else []
        ranges = _merge([*ranges, lines])
        coverage[key] = (raw_hash, ranges)
        partial = not (len(ranges) == 1 and ranges[0][0] <= 1 and ranges[0][1] >= total_lines)
    record = FileReadRecord(path=key, mtime_ns=mtime_ns, content_hash=raw_hash, partial=partial)
    ctx.read_file_state[key] = record
    return record


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def check_read_before_write(ctx: ToolContext, path: Path, current_raw: bytes, *, need_whole: bool = True) -> None:
    """Raise unless the model read ``path`` (whole, if asked) and it has not changed since."""
    record = ctx.read_file_state.get(str(path))
    if record is None:
        raise ToolError(NOT_READ_YET)
    if record.content_hash != content_hash(current_raw):
        raise ToolError(MODIFIED_SINCE_READ)
    if need_whole and record.partial:
        coverage = tool_session(ctx).read_coverage.get(str(path), (None, []))[1]
        seen = ", ".join(f"{a}-{b}" for a, b in coverage)
        raise ToolError(
            "File has only been read in part" + (f" (lines {seen})" if seen else "") + ". Read the rest of it "
            "(Read with offset/limit, or without them) before writing to it."
        )


def note_write(ctx: ToolContext, path: Path, data: bytes, mtime_ns: int) -> None:
    """After our own write the model knows the content: keep later edits possible."""
    ctx.read_file_state[str(path)] = FileReadRecord(
        path=str(path), mtime_ns=mtime_ns, content_hash=content_hash(data), partial=False
    )
    tool_session(ctx).read_coverage.pop(str(path), None)
