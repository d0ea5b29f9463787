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
"""

from __future__ import annotations

import asyncio
import bisect
import json
import logging
import os
import tempfile
import threading
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


def cached_view(path: str) -> NotebookView:
    """:func:`notebook_view`, kept while the file's size and mtime stay the same."""
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
    view = notebook_view(path)
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


def _outputs_text(outputs: list[dict[str, Any]]) -> str:
    parts: list[str] = []
    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            parts.append(source_text(output.get("text")))
        elif kind == "error":
            parts.append(f"{output.get('ename') or 'Error'}: {output.get('evalue') or ''}\n")
            traceback = output.get("traceback")
            if isinstance(traceback, list):
                parts.append("".join(str(line) + "\n" for line in traceback))
        elif kind in ("execute_result", "display_data"):
            data = output.get("data")
            if isinstance(data, dict) and "text/plain" in data:
                parts.append(source_text(data["text/plain"]))
        if parts and not parts[-1].endswith("\n"):
            parts[-1] += "\n"
    return strip_ansi("".join(parts))[:MAX_OUTPUT_TEXT_CHARS]


def notebook_view(path: str) -> NotebookView:
    """The plain-text view of one notebook; ``raw_reason`` set when it must be searched raw."""
    view = NotebookView(path=path)
    try:
        if os.path.getsize(path) > MAX_NOTEBOOK_BYTES:
            raise RawNotebook(f"larger than {MAX_NOTEBOOK_BYTES // (1024 * 1024)} MB")
        with open(path, "rb") as fh:
            data = json.loads(fh.read())
        cells = data.get("cells") if isinstance(data, dict) else None
        if not isinstance(cells, list):
            raise RawNotebook("no cells list")
    except RawNotebook as exc:
        view.raw_reason = str(exc)
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
        for label, text in ((name, source_text(cell.get("source"))), (name + " output", output_text)):
            lines = _segment_lines(text)
            if not lines:
                continue
            view.starts.append(line)
            view.labels.append(label)
            chunks.append("\n".join(lines) + "\n")
            line += len(lines)
    view.text = "".join(chunks)
    return view


def write_views(paths: list[str], folder: str, stop: threading.Event | None = None) -> dict[str, NotebookView]:
    """Each notebook's view written into ``folder`` as ``N.txt`` (a raw one as a link to the
    file itself), keyed by that name; runs in a worker thread (parsing is CPU work) that
    ``stop`` ends between two notebooks."""
    views: dict[str, NotebookView] = {}
    for i, path in enumerate(paths):
        if stop is not None and stop.is_set():
            break
        if i < MAX_NOTEBOOKS:
            view = cached_view(path)
        else:
            view = NotebookView(path=path, raw_reason=f"more than {MAX_NOTEBOOKS:,} notebooks in one search")
        name = f"{i}.txt"
        target = os.path.join(folder, name)
        if view.raw_reason is not None:
            os.symlink(path, target)
        else:
            with open(target, "wb") as fh:
                fh.write(view.text.encode("utf-8", "replace"))
        views[name] = view
    return views


#: Runs ripgrep over a folder of views (``search``'s own runner, with the request's options).
RunFolder = Callable[[str], Awaitable[list[Any]]]


async def search_views(paths: list[str], run_folder: RunFolder) -> tuple[list[Any], dict[str, NotebookView]]:
    """Write the views of ``paths`` to a temporary folder, let ``run_folder`` search it, and
    return its hits (paths are the views' names) with the views by name."""
    if not paths:
        return [], {}
    with tempfile.TemporaryDirectory(prefix="jupyter-agent-grep-") as folder:
        stop = threading.Event()
        writing = asyncio.ensure_future(asyncio.to_thread(write_views, paths, folder, stop))
        try:
            views = await asyncio.shield(writing)
        except asyncio.CancelledError:  # Stop: let the thread end before its folder is removed
            stop.set()
            await asyncio.wait([writing])
            raise
        hits = await run_folder(folder)
    log.debug("searched %d notebook(s) by cell", len(views))
    return hits, views
