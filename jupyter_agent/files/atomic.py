"""Writing a file so that a crash, a swapped folder or a changed file never leaves it half-written.

:func:`atomic_write` is what ``Write``/``Edit`` and the notebook file backend save
through. It lives below both (``tools/`` and ``notebook/`` import it, it imports
neither), with the hash its ``expected_hash`` check compares.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import secrets
import stat
from pathlib import Path

from ..loop.tool import ToolError

log = logging.getLogger(__name__)

MODIFIED_SINCE_READ = (
    "File has been modified since read, either by the user or by another program. "
    "Read it again before writing to it."
)


def content_hash(data: bytes) -> str:
    """The hash a planned change is based on (``PreparedCall.content_hash``, ``FileReadRecord``)."""
    return hashlib.sha256(data).hexdigest()


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
            log.debug("fsync of the folder of %s not possible here", path, exc_info=True)
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
        except OSError:  # the write's own error is what the caller sees
            log.debug("could not remove the temporary file %s", tmp, exc_info=True)
        raise


def _keep_metadata(fd: int, old: os.stat_result, dir_fd: int, name: str) -> None:
    """Give the new file the old one's owner (root may; others keep their own) and xattrs."""
    if (old.st_uid, old.st_gid) != (os.getuid(), os.getgid()):
        try:
            os.fchown(fd, old.st_uid, old.st_gid)
        except OSError:  # not allowed (not root): the file becomes ours, as any editor's save does
            log.debug("could not give %s its old owner back", name, exc_info=True)
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
            except OSError:  # e.g. security.* without the right to set it
                log.debug("could not copy the extended attribute %s of %s", attr, name, exc_info=True)
    except OSError:  # a file system without extended attributes: nothing to copy
        log.debug("could not list the extended attributes of %s", name, exc_info=True)
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
