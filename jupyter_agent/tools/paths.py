"""Turning the model's path strings into real paths, and matching paths against globs.

Every tool resolves its path argument here before anything touches the disk, and the
permission policy sees only the result: the path made absolute against the working
directory, ``~`` expanded, ``..`` collapsed, and every symlink resolved. A path that
cannot be resolved safely (NUL or control characters, unpaired surrogates, absurd
length) is refused with a message that says what to fix.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..loop.tool import ResolvedPath, ToolContext, ToolError
from .globmatch import compile_glob, escape_glob, expand_braces, glob_is_literal, unescape_glob

#: Folders never searched (version-control metadata), as Claude Code excludes them.
VCS_DIRS = (".git", ".svn", ".hg", ".bzr", ".jj", ".sl")
#: Longer than any real path (Linux PATH_MAX is 4096 bytes).
MAX_PATH_CHARS = 4096

_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


def check_path_text(raw: object, field: str = "file_path") -> str:
    """Refuse path strings no file system would accept, with a message naming the field."""
    if not isinstance(raw, str):
        raise ToolError(f"{field} must be a string path, got {type(raw).__name__}.")
    if not raw.strip():
        raise ToolError(f"{field} is empty: give the path of a file, e.g. an absolute path.")
    if len(raw) > MAX_PATH_CHARS:
        raise ToolError(f"{field} is {len(raw)} characters long; paths are at most {MAX_PATH_CHARS}.")
    if "\x00" in raw:
        raise ToolError(f"{field} contains a NUL byte, which no path can contain.")
    if _CONTROL_CHARS.search(raw):
        raise ToolError(f"{field} contains control characters (e.g. a newline); remove them.")
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError(f"{field} contains an unpaired surrogate character; use plain text.") from None
    return raw


def resolve_path(raw: object, cwd: Path | str, field: str = "file_path") -> ResolvedPath:
    """Resolve a path argument: relative to ``cwd``, ``~`` expanded, symlinks resolved."""
    text = check_path_text(raw, field)
    expanded = os.path.expanduser(text)
    joined = os.path.join(os.fspath(cwd), expanded)
    try:
        real = os.path.realpath(joined)
    except OSError as exc:  # a component was swapped while it was being resolved (a symlink removed)
        raise ToolError(f"{field} {text!r} changed while it was being resolved ({exc.strerror}); "
                        "try again once it stays put.") from None
    return ResolvedPath(raw=text, lexical=Path(os.path.normpath(joined)), real=Path(real))


def is_within(path: Path | str, root: Path | str) -> bool:
    """True when ``path`` is ``root`` or inside it (both should already be resolved)."""
    path, root = os.fspath(path), os.fspath(root)
    if path == root:
        return True
    return path.startswith(root.rstrip(os.sep) + os.sep)


def inside_roots(path: ResolvedPath, ctx: ToolContext) -> bool:
    """Is ``path`` in a folder the policy lets a call touch without asking? (The notebook
    open in the page is: the user's own notebook, wherever the kernel runs.)"""
    return path.in_page or any(is_within(path.real, root) for root in ctx.permissions.allowed_roots(ctx))


def display_path(path: Path | str, cwd: Path | str) -> str:
    """A path as shown to the model: relative when under ``cwd`` (shorter), else absolute."""
    path_s, cwd_s = os.fspath(path), os.path.realpath(os.fspath(cwd))
    if is_within(path_s, cwd_s) and path_s != cwd_s:
        return os.path.relpath(path_s, cwd_s)
    return path_s


# --- globs (the matcher itself is in .globmatch) --------------------------------------


def has_glob_chars(text: str) -> bool:
    return not glob_is_literal(text)


def split_glob_base(pattern: str) -> tuple[str, str]:
    """Split ``/a/b/**/*.py`` into the literal directory ``/a/b`` and the rest ``**/*.py``.

    The directory comes back unescaped (a real path); the rest stays a glob.
    """
    parts = pattern.split("/")
    literal: list[str] = []
    for part in parts[:-1]:
        if has_glob_chars(part):
            break
        literal.append(unescape_glob(part))
    rest = parts[len(literal) :]
    base = "/".join(literal) or ("/" if pattern.startswith("/") else "")
    return base, "/".join(rest)


def path_matches_rule(path: Path | str, rule_pattern: str, cwd: Path | str) -> bool:
    """Does a permission rule's glob (``src/**``, ``~/data/*.csv``, ``/abs/x``) cover ``path``?

    Relative patterns are anchored at ``cwd``; a pattern without glob characters covers
    that path and everything below it (``Edit(docs)`` covers ``docs/a.md``), and
    ``dir/**`` covers ``dir`` itself as well as everything below it. ``\\`` escapes a
    glob character, so ``Edit(/p/\\*\\*/x.txt)`` names a folder really called ``**``.
    """
    pattern = os.path.expanduser(rule_pattern.strip())
    if not pattern:
        return False
    if not os.path.isabs(pattern):
        pattern = os.path.join(escape_glob(os.path.realpath(os.fspath(cwd))), pattern)
    pattern = pattern.rstrip("/") or "/"
    if not has_glob_chars(pattern):
        return is_within(path, os.path.normpath(unescape_glob(pattern)))
    base, rest = split_glob_base(pattern)
    base = escape_glob(os.path.normpath(base))
    full = (base.rstrip("/") + "/" + rest) if rest else base
    try:
        if full.endswith("/**") and compile_glob(full[:-3]).match(os.fspath(path)):
            return True  # "src/**" covers the folder itself too (a search of src reads what is in it)
        return compile_glob(full).match(os.fspath(path))
    except ValueError:
        return False  # Rule.parse refuses such patterns; nothing else reaches here


__all__ = ["MAX_PATH_CHARS", "ResolvedPath", "check_path_text", "compile_glob", "display_path",
           "escape_glob", "expand_braces", "glob_is_literal", "has_glob_chars", "inside_roots", "is_within",
           "path_matches_rule", "resolve_path", "split_glob_base", "unescape_glob"]
