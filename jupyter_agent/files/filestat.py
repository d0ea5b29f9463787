"""The one check every file tool makes before it opens a file: what is at this path?

``Read``, ``Write``/``Edit`` (through :func:`~.fileio.read_text_file`) and the notebook
file backend all ask :func:`stat_file` and get the same answers: missing, not
accessible, a directory, not a regular file (a FIFO, device or socket: opening one can
block for ever), or too large. :func:`read_regular_file` then opens without blocking
(``O_NONBLOCK``) and checks the opened file again, so a path swapped for a FIFO between
the check and the open cannot hang the reading thread either.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from ..loop.tool import ToolError

#: How a non-regular file is named in messages.
_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def classify(path: Path | str, st: os.stat_result, *, max_bytes: int | None = None, too_large: str = "",
             error: type[ToolError] = ToolError) -> os.stat_result:
    """Raise ``error`` unless ``st`` is a regular file of at most ``max_bytes``."""
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{path} is a directory, not a file. Use Glob to list the files in it.")
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{path} is {_kind(st.st_mode)}, not a regular file; only regular files can be read or "
                    "edited.")
    if max_bytes is not None and st.st_size > max_bytes:
        raise error(f"{path} is {st.st_size:,} bytes; {too_large or f'files over {max_bytes:,} bytes are refused.'}")
    return st


def _missing(path: Path | str, missing: str | Callable[[], str] | None) -> str:
    if callable(missing):
        return missing()
    return missing or f"File does not exist: {path}"


def stat_file(path: Path | str, *, max_bytes: int | None = None, too_large: str = "",
              missing: str | Callable[[], str] | None = None, error: type[ToolError] = ToolError) -> os.stat_result:
    """``os.stat(path)`` for a regular file, or ``error`` with a message that says what to do.

    ``too_large`` finishes the sentence "PATH is N bytes; ..."; ``missing`` (a text, or a
    function that makes one) replaces the default "File does not exist" message.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise error(_missing(path, missing)) from None
    except OSError as exc:
        raise error(f"Cannot access {path}: {exc.strerror}") from None
    return classify(path, st, max_bytes=max_bytes, too_large=too_large, error=error)


def read_regular_file(path: Path | str, *, max_bytes: int | None = None, too_large: str = "",
                      missing: str | Callable[[], str] | None = None,
                      error: type[ToolError] = ToolError) -> tuple[bytes, os.stat_result]:
    """The bytes of a regular file and its stat, checked on the opened descriptor.

    Opening a FIFO for reading blocks until a writer appears; ``O_NONBLOCK`` makes the
    open return at once, and ``fstat`` on the descriptor refuses it before any read.
    """
    stat_file(path, max_bytes=max_bytes, too_large=too_large, missing=missing, error=error)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise error(_missing(path, missing)) from None
    except OSError as exc:
        raise error(f"Cannot read {path}: {exc.strerror}") from None
    try:
        st = classify(path, os.fstat(fd), max_bytes=max_bytes, too_large=too_large, error=error)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)  # a regular file: ordinary reads from here on
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if max_bytes is not None and size > max_bytes:  # it grew while we read
                raise error(f"{path} is over {max_bytes:,} bytes; "
                            f"{too_large or f'files over {max_bytes:,} bytes are refused.'}")
            chunks.append(chunk)
        return b"".join(chunks), st
    except OSError as exc:
        raise error(f"Cannot read {path}: {exc.strerror}") from None
    finally:
        os.close(fd)


__all__ = ["classify", "read_regular_file", "stat_file"]
