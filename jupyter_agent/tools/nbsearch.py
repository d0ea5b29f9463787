"""Grep inside notebooks: ripgrep runs over each cell's text, and every hit names its cell.

A ``.ipynb`` is JSON: searched as it is, a hit is a JSON line (``"x = 1\\n",``) the model
cannot turn into a cell id, patterns meet escapes (``\\"`` for ``"``) and keys
(``"cell_type": "code"``) match. So the notebooks a search reaches are parsed here and
written to a private temporary folder as plain text, one *segment* per cell source and
one per cell's outputs (stream text, ``text/plain`` results, errors), and ripgrep searches
that folder with the request's own options; each line it reports is mapped back to its
segment: ``[cell c85] 3`` is line 3 of cell c85's source, ``[cell c85 output] 1`` the first
line of its outputs' text. Cell ids are the ones Read shows (``cell-N`` when the notebook
has no usable ids), so a hit leads straight to NotebookEdit or NotebookRun.

A notebook that is not valid JSON, or too large to parse (:data:`MAX_NOTEBOOK_BYTES`), or
beyond the first :data:`MAX_NOTEBOOKS` of one search, is searched as its raw lines, and its
result says so.

Parsing is most of a first search's time, so a notebook is parsed only when its raw bytes
may hold a hit (:class:`Needle`): every match of the pattern contains a run of characters
that it spells out literally, and a view's text holds such a run only where the file's
bytes do, when the run has no character JSON escapes or the view adds (quote, backslash,
slash, colon, space, braces, control characters) and the file has no ``\\u`` escape.
(Assumed, as every Jupyter writer does it: a cell's source or output text stored as a list
of lines is split at line ends, and its items are strings.) A notebook that cannot hold a
hit is not written to the folder either.
"""

from __future__ import annotations

import asyncio
import bisect
import json
import logging
import os
import re
import tempfile
import threading
import warnings
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..notebook.cells import has_usable_ids
from ..notebook.document import source_text
from ..notebook.render import strip_ansi

log = logging.getLogger(__name__)

#: A notebook larger than this is searched as raw lines (parsing it would cost too much).
MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024
#: At most this many notebooks of one search are mapped to cells; the rest as raw lines.
MAX_NOTEBOOKS = 2_000
#: A cell's outputs' text is capped so that one huge output cannot flood the search.
MAX_OUTPUT_TEXT_CHARS = 1_000_000
#: Views are kept for the next search while their notebook is unchanged (same size and
#: mtime), up to this many characters in all: parsing is most of a search's cost.
MAX_CACHED_CHARS = 32_000_000


class RawNotebook(Exception):
    """Why a notebook is searched as raw lines (the message is shown to the model)."""


@dataclass
class NotebookView:
    """One notebook as plain text: ``starts[k]`` is the first line (1-based) of segment ``labels[k]``."""

    path: str
    text: str = ""
    starts: list[int] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    raw_reason: str | None = None  # set: searched as the file's raw lines

    def locate(self, line: int) -> tuple[str, int]:
        """The segment label of a view line, and the line's number within that segment."""
        k = bisect.bisect_right(self.starts, line) - 1
        return self.labels[k], line - self.starts[k] + 1


_cache: OrderedDict[tuple[str, int, int], NotebookView] = OrderedDict()
_cache_chars = 0
_cache_lock = threading.Lock()  # views are built in worker threads, one per search


def _read_small(path: str) -> bytes:
    if os.path.getsize(path) > MAX_NOTEBOOK_BYTES:
        raise RawNotebook(f"larger than {MAX_NOTEBOOK_BYTES // (1024 * 1024)} MB")
    with open(path, "rb") as fh:
        return fh.read()


class Needle:
    """What every hit of a search holds, looked for in a notebook's raw bytes before it is
    parsed: the longest run of characters the pattern spells out literally at its top level,
    of those a view's text holds only where the file holds them too (the module's docstring
    says why). :meth:`of` gives None when the pattern has no such run of 3 characters or more."""

    #: Characters JSON escapes (quote, backslash, and a slash it may), or that a view adds
    #: between texts (": " after an error's name, line ends), and braces (a repetition to
    #: ripgrep where Python's parser may read them as text): never part of a needle.
    UNSAFE = frozenset('"\\/: {}')
    #: A run that starts so is not a needle: it came right after a character class, where
    #: ripgrep's class may go on (nested classes, [[:alpha:]]) after Python's parser ended it.
    AFTER_CLASS = "\0"

    def __init__(self, text: str, ignore_case: bool) -> None:
        self.ignore_case = ignore_case
        self.literal = text.lower() if ignore_case else text
        self.text = self.literal.encode("ascii")
        # (ripgrep's -i folds k and s with the Kelvin sign and the long s, which lower() does not)
        self.folds = [b"\xe2\x84\xaa", b"\xc5\xbf"] if ignore_case and set("ks") & set(text.lower()) else []

    @classmethod
    def of(cls, pattern: str, ignore_case: bool) -> Needle | None:
        """The needle of a ripgrep ``pattern`` (None: every notebook is parsed)."""
        try:
            with warnings.catch_warnings():  # (Python's own "possible nested set": ripgrep's syntax)
                warnings.simplefilter("ignore")
                parsed = re._parser.parse(pattern)  # type: ignore[attr-defined]
        except (re.error, RecursionError, OverflowError):  # (ripgrep's own syntax: no needle, nothing lost)
            return None
        ignore_case = ignore_case or bool(parsed.state.flags & re.IGNORECASE)
        runs = [""]
        cls._runs(list(parsed), runs)
        best = max((run for run in runs if not run.startswith(cls.AFTER_CLASS)), key=len)
        if len(best) < 3 or best.lower() in "error":  # (an error output without a name is shown as Error)
            return None
        return cls(best, ignore_case)

    @classmethod
    def _runs(cls, items: list[Any], runs: list[str]) -> None:
        """Add the literal runs of a sequence of parsed items to ``runs`` (its last one open)."""
        for op, arg in items:
            name = str(op)
            if name == "LITERAL" and 32 <= arg < 127 and chr(arg) not in cls.UNSAFE:
                runs[-1] += chr(arg)
            elif name == "SUBPATTERN" and not arg[1] and not arg[2]:  # a group without flags of its own
                cls._runs(list(arg[3]), runs)
            elif name == "AT":
                continue  # (an anchor matches no character)
            else:
                runs.append(cls.AFTER_CLASS if name == "IN" else "")

    def in_view(self, text: str) -> bool:
        """Whether a view's text holds the needle (casefold() folds the Kelvin sign and the long s too)."""
        return self.literal in (text.casefold() if self.ignore_case else text)

    def may_be_in(self, raw: bytes) -> bool:
        """Whether a notebook of these bytes may hold a hit (False: it cannot)."""
        if b"\\u" in raw or any(fold in raw for fold in self.folds):
            return True
        return self.text in (raw.lower() if self.ignore_case else raw)


def cached_view(path: str, needle: Needle | None = None) -> NotebookView:
    """:func:`notebook_view`, kept while the file's size and mtime stay the same. A notebook
    whose bytes cannot hold a hit of ``needle`` is not parsed: its view is empty, and not kept."""
    global _cache_chars
    try:
        st = os.stat(path)
    except OSError:
        return notebook_view(path)
    key = (path, st.st_size, st.st_mtime_ns)
    with _cache_lock:
        view = _cache.get(key)
        if view is not None:
            _cache.move_to_end(key)
            return view
    raw = None
    if needle is not None:
        try:
            raw = _read_small(path)
        except (OSError, RawNotebook):
            raw = None  # (notebook_view says why)
        if raw is not None and not needle.may_be_in(raw):
            return NotebookView(path=path)
    view = notebook_view(path, raw)
    with _cache_lock:
        if key not in _cache and len(view.text) <= MAX_CACHED_CHARS:
            _cache[key] = view
            _cache_chars += len(view.text)
            while _cache_chars > MAX_CACHED_CHARS:
                _, old = _cache.popitem(last=False)
                _cache_chars -= len(old.text)
    return view


def _segment_lines(text: str) -> list[str]:
    # ripgrep ends lines at "\n" only: split the same way so line numbers agree.
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _joined(value: Any) -> str:
    """:func:`source_text`, at C speed for the usual list of strings (most of a view's time)."""
    if isinstance(value, list):
        try:
            return "".join(value)
        except TypeError:  # (an item that is not a string: source_text makes it one)
            return source_text(value)
    return value if isinstance(value, str) else ""


def _outputs_text(outputs: list[dict[str, Any]]) -> str:
    parts: list[str] = []
    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            parts.append(_joined(output.get("text")))
        elif kind == "error":
            parts.append(f"{output.get('ename') or 'Error'}: {output.get('evalue') or ''}\n")
            traceback = output.get("traceback")
            if isinstance(traceback, list):
                parts.append("".join(str(line) + "\n" for line in traceback))
        elif kind in ("execute_result", "display_data"):
            data = output.get("data")
            if isinstance(data, dict) and "text/plain" in data:
                parts.append(_joined(data["text/plain"]))
        if parts and not parts[-1].endswith("\n"):
            parts[-1] += "\n"
    return strip_ansi("".join(parts))[:MAX_OUTPUT_TEXT_CHARS]


def notebook_view(path: str, raw: bytes | None = None) -> NotebookView:
    """The plain-text view of one notebook (its bytes ``raw``, if read already); ``raw_reason``
    set when it must be searched raw."""
    view = NotebookView(path=path)
    try:
        if raw is None:
            raw = _read_small(path)
        data = json.loads(raw)
        cells = data.get("cells") if isinstance(data, dict) else None
        if not isinstance(cells, list):
            raise RawNotebook("no cells list")
    except RawNotebook as exc:
        view.raw_reason = str(exc)
        return view
    except OSError as exc:
        view.raw_reason = f"not readable ({exc})"
        return view
    except (ValueError, RecursionError) as exc:  # json.JSONDecodeError and bad UTF-8 are ValueErrors
        view.raw_reason = f"not valid JSON ({exc})"
        return view
    chunks: list[str] = []
    line = 1
    use_ids = has_usable_ids(cells)
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict):
            continue
        # The id Read shows (notebook.cells.cell_view): the cell's own, else "cell-N".
        cell_id = cell.get("id") if use_ids else None
        name = f"cell {cell_id}" if cell_id else f"cell cell-{index}"
        outputs = cell.get("outputs")
        output_text = _outputs_text([o for o in outputs if isinstance(o, dict)]) if isinstance(outputs, list) else ""
        for label, text in ((name, _joined(cell.get("source"))), (name + " output", output_text)):
            lines = _segment_lines(text)
            if not lines:
                continue
            view.starts.append(line)
            view.labels.append(label)
            chunks.append("\n".join(lines) + "\n")
            line += len(lines)
    view.text = "".join(chunks)
    return view


def write_views(paths: list[str], folder: str, stop: threading.Event | None = None,
                needle: Needle | None = None) -> dict[str, NotebookView]:
    """Each notebook's view written into ``folder`` as ``N.txt`` (a raw one as a link to the
    file itself), keyed by that name; runs in a worker thread (parsing is CPU work) that
    ``stop`` ends between two notebooks. A notebook that cannot hold a hit of ``needle`` (its
    bytes, or its view, lack it) is not written: nothing of it to search."""
    views: dict[str, NotebookView] = {}
    for i, path in enumerate(paths):
        if stop is not None and stop.is_set():
            break
        if i < MAX_NOTEBOOKS:
            view = cached_view(path, needle)
        else:
            view = NotebookView(path=path, raw_reason=f"more than {MAX_NOTEBOOKS:,} notebooks in one search")
        name = f"{i}.txt"
        target = os.path.join(folder, name)
        if view.raw_reason is not None:
            os.symlink(path, target)
        elif not view.text or (needle is not None and not needle.in_view(view.text)):
            continue
        else:
            with open(target, "wb") as fh:
                fh.write(view.text.encode("utf-8", "replace"))
        views[name] = view
    return views


#: Runs ripgrep over a folder of views (``search``'s own runner, with the request's options).
RunFolder = Callable[[str], Awaitable[list[Any]]]


async def search_views(paths: list[str], run_folder: RunFolder,
                       needle: Needle | None = None) -> tuple[list[Any], dict[str, NotebookView]]:
    """Write the views of ``paths`` to a temporary folder, let ``run_folder`` search it, and
    return its hits (paths are the views' names) with the views by name. ``needle``: what
    every hit holds (:class:`Needle`), so that a notebook without it is not parsed."""
    if not paths:
        return [], {}
    with tempfile.TemporaryDirectory(prefix="jupyter-agent-grep-") as folder:
        stop = threading.Event()
        writing = asyncio.ensure_future(asyncio.to_thread(write_views, paths, folder, stop, needle))
        try:
            views = await asyncio.shield(writing)
        except asyncio.CancelledError:  # Stop: let the thread end before its folder is removed
            stop.set()
            await asyncio.wait([writing])
            raise
        hits = await run_folder(folder)
    log.debug("searched %d notebook(s) by cell", len(views))
    return hits, views
