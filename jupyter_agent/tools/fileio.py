"""Reading and writing files the way an editor a person trusts would.

* Text keeps its encoding (UTF-8, UTF-8 with BOM, UTF-16 with BOM; invalid UTF-8 bytes
  survive an edit untouched thanks to ``surrogateescape``), its line endings and its
  permission bits.
* Writes are atomic: a temporary file in the same folder, fsync, rename. A crash leaves
  the old file or the new one, never half of one.
* What ``Read`` saw is recorded (mtime, hash, whole or partial) so ``Write``/``Edit``/
  ``NotebookEdit`` can refuse files the model has not read or that changed since.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from .base import FileReadRecord, ToolContext, ToolError
from .filestat import read_regular_file

#: Files larger than this are not loaded whole for editing (the model cannot hold them either).
MAX_EDIT_BYTES = 64 * 1024 * 1024

_BOMS = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)

MODIFIED_SINCE_READ = (
    "File has been modified since read, either by the user or by another program. "
    "Read it again before writing to it."
)
NOT_READ_YET = "File has not been read yet. Read it first before writing to it."


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


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
    raw, st = read_regular_file(path, max_bytes=MAX_EDIT_BYTES,
                                too_large=f"files over {MAX_EDIT_BYTES:,} bytes cannot be edited here.")
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


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


#: ``atomic_write(expected_hash=ANY)``: write whatever is there now (no check).
ANY = object()
CHANGED_DURING_APPROVAL = ("{path} changed on disk after this call was planned (a folder became a symlink, or "
                           "the file was replaced). Nothing was written. Read it again and retry.")


def _open_dir_nofollow(folder: Path, *, create: bool) -> int:
    """Open ``folder`` one component at a time, never following a symlink.

    ``folder`` was resolved (every symlink followed) when the call was planned. If a
    component has become a symlink since, the walk fails here instead of writing where
    the symlink now points: what was approved is what gets written.
    """
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    fd = os.open("/", flags)
    try:
        for name in folder.parts[1:]:
            try:
                next_fd = os.open(name, flags, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(name, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
                next_fd = os.open(name, flags, dir_fd=fd)
            os.close(fd)
            fd = next_fd
    except OSError:
        os.close(fd)
        raise
    return fd


def _hash_at(dir_fd: int, name: str) -> tuple[str | None, os.stat_result | None]:
    """Hash and stat of ``name`` in ``dir_fd``, read without following a symlink."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except FileNotFoundError:
        return None, None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{name} is not a regular file")
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
        return digest.hexdigest(), st
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, mode: int | None = None, *, expected_hash: object = ANY) -> int:
    """Write ``data`` to ``path`` atomically; return the new mtime (ns).

    ``path`` should be resolved (no symlinks). The folder is opened without following
    symlinks and everything after happens relative to it, so a folder swapped for a
    symlink meanwhile makes the write fail rather than land elsewhere.
    ``expected_hash`` is the content hash the change was planned on (None: there was
    no file); if the file no longer has it, nothing is written.

    The temporary file is created with ``O_EXCL`` beside the target, fsynced, given the
    old file's permission bits, owner (when allowed) and extended attributes, then
    renamed over it. A file with several hard links is rewritten in place instead, so
    the links keep sharing it (the permission policy has asked before such a write).
    Missing parent folders are created.
    """
    path = Path(os.path.abspath(path))
    if expected_hash is ANY:  # a caller without a plan: resolve now (a planned path is resolved already)
        path = Path(os.path.realpath(path))
    try:
        dir_fd = _open_dir_nofollow(path.parent, create=True)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise ToolError(CHANGED_DURING_APPROVAL.format(path=path)) from None
        raise
    try:
        try:
            current_hash, st = _hash_at(dir_fd, path.name)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR) or "not a regular file" in str(exc):
                raise ToolError(CHANGED_DURING_APPROVAL.format(path=path)) from None
            raise
        if expected_hash is not ANY and current_hash != expected_hash:
            raise ToolError(MODIFIED_SINCE_READ if expected_hash is not None and current_hash is not None
                            else CHANGED_DURING_APPROVAL.format(path=path))
        if mode is None:
            mode = stat.S_IMODE(st.st_mode) if st is not None else _default_mode()
        if st is not None and st.st_nlink > 1:
            _write_in_place(dir_fd, path.name, data)
        else:
            _replace(dir_fd, path.name, data, mode, st)
        try:
            os.fsync(dir_fd)  # make the rename itself durable (not every platform allows it)
        except OSError:
            pass
        return os.stat(path.name, dir_fd=dir_fd, follow_symlinks=False).st_mtime_ns
    finally:
        os.close(dir_fd)


def _replace(dir_fd: int, name: str, data: bytes, mode: int, old: os.stat_result | None) -> None:
    for _ in range(100):
        tmp = f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dir_fd)
            break
        except FileExistsError:
            continue
    else:
        raise ToolError("Could not create a temporary file beside the target.")
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            if old is not None:
                _keep_metadata(fd, old, dir_fd, name)
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def _keep_metadata(fd: int, old: os.stat_result, dir_fd: int, name: str) -> None:
    """Give the new file the old one's owner (root may; others keep their own) and xattrs."""
    if (old.st_uid, old.st_gid) != (os.getuid(), os.getgid()):
        try:
            os.fchown(fd, old.st_uid, old.st_gid)
        except OSError:
            pass  # not allowed (not root): the file becomes ours, as any editor's save does
    if not hasattr(os, "listxattr"):
        return
    try:
        src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return
    try:
        for attr in os.listxattr(src):
            try:
                os.setxattr(fd, attr, os.getxattr(src, attr))
            except OSError:
                pass  # e.g. security.* without the right to set it
    except OSError:
        pass
    finally:
        os.close(src)


def _write_in_place(dir_fd: int, name: str, data: bytes) -> None:
    """Overwrite a hard-linked file through its inode, so every link sees the new content."""
    fd = os.open(name, os.O_WRONLY | os.O_NOFOLLOW, dir_fd=dir_fd)
    try:
        view = memoryview(data)
        offset = 0
        while offset < len(data):
            offset += os.pwrite(fd, view[offset:], offset)
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    finally:
        os.close(fd)


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
        coverage = ctx.session.setdefault("read_coverage", {})
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
        coverage = ctx.session.get("read_coverage", {}).get(str(path), (None, []))[1]
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
    ctx.session.get("read_coverage", {}).pop(str(path), None)
