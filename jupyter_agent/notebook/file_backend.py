"""Notebooks as ``.ipynb`` files: read every nbformat version, write v4.5, keep every untouched byte.

The file is re-read for every operation (a person may save it in between) and every
mutation checks the caller's version against the file's content hash before writing.
A v4.5 notebook is edited by splicing its JSON text (see :mod:`.nbjson`). A v4.0-4.4
one (no cell ids) gets its ids spliced into the text first, so it too keeps every other
byte. An nbformat 1-3 notebook is upgraded by nbformat's own conversion
(``nbformat.reads(..., as_version=4)``) and, when first edited, written whole as v4.5 in
the file's own JSON style (indent, ``\\u`` escapes or raw UTF-8). Every result is
validated before it is written, atomically.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import os
import stat
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import nbformat
from nbformat.v4.rwbase import split_lines

from ..files.atomic import atomic_write
from ..files.filestat import read_regular_file, stat_file
from .cells import (cell_view, cell_views, has_usable_ids, new_cell, prefers_lists, replaced_cell, restored_cell,
                    with_ids, with_outputs)
from .document import (VALID_CELL_ID, Cell, CellRestore, EditResult, KernelInfo, NotebookDocument, NotebookError,
                       NotebookSnapshot, RunResult, StaleNotebookError, chosen_cell_id, index_from_position_id,
                       new_cell_id)
from .nbjson import NotebookText, parse

#: Larger notebooks are refused (reading one would take seconds and flood the model).
MAX_NOTEBOOK_BYTES = 256 * 1024 * 1024
_TOO_LARGE = f"notebooks over {MAX_NOTEBOOK_BYTES:,} bytes are refused."


#: Parsed notebooks by file identity, and content hashes known to be valid notebooks:
#: a 10 MB notebook takes ~30 ms to parse and ~50 ms to validate, so an edit re-uses both
#: when the bytes on disk are still the ones parsed (always checked by hash before writing).
_PARSED: OrderedDict[str, tuple[tuple[int, int, int], _Loaded]] = OrderedDict()
_VALID_HASHES: OrderedDict[str, None] = OrderedDict()
_PROBLEMS: OrderedDict[str, str] = OrderedDict()
_CACHE_SIZE = 8
_CACHE_LOCK = threading.Lock()


@dataclass
class _Loaded:
    raw_version: str
    mtime_ns: int
    mode: int
    text: NotebookText
    cells: list[dict[str, Any]]  # v4 cell dicts (converted from v3 when needed)
    metadata: dict[str, Any]
    spliceable: bool  # a v4.5 file with good ids: edit its text in place
    upgrade: str = ""  # what saving it changes beyond the edit (an older format), for the tool result
    _views: tuple[Cell, ...] | None = None
    _index: dict[str, int] | None = None

    @property
    def use_ids(self) -> bool:
        return self.spliceable

    def views(self) -> tuple[Cell, ...]:
        if self._views is None:
            self._views = cell_views(self.cells, self.use_ids)
        return self._views

    def index_of(self, cell_id: str) -> int:
        """The index of ``cell_id`` (an id, or ``cell-N``), without building every view."""
        if self.use_ids:
            if self._index is None:
                self._index = {c["id"]: i for i, c in enumerate(self.cells)}
            if cell_id in self._index:
                return self._index[cell_id]
        return index_from_position_id(cell_id, len(self.cells))


def _stat_notebook(path: Path) -> os.stat_result:
    return stat_file(path, max_bytes=MAX_NOTEBOOK_BYTES, too_large=_TOO_LARGE,
                     missing=f"Notebook does not exist: {path}", error=NotebookError)


def _remember(cache: OrderedDict, key: str, value: Any) -> None:
    with _CACHE_LOCK:  # Reads run concurrently, each in a worker thread
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > _CACHE_SIZE:
            cache.popitem(last=False)


def load_notebook(path: Path, *, verify: bool = False) -> _Loaded:
    """Read and parse a notebook file, with errors that say what is wrong.

    A notebook parsed before is re-used while its size, mtime and inode are unchanged;
    with ``verify`` (before any write) the bytes are read and hashed every time, and
    only the parse is re-used when the hash matches.
    """
    st = _stat_notebook(path)
    identity = (st.st_mtime_ns, st.st_size, st.st_ino)
    cached = _PARSED.get(str(path))
    if cached is not None and not verify and cached[0] == identity:
        return cached[1]
    raw, st = read_regular_file(path, max_bytes=MAX_NOTEBOOK_BYTES, too_large=_TOO_LARGE,
                                missing=f"Notebook does not exist: {path}", error=NotebookError)
    identity = (st.st_mtime_ns, st.st_size, st.st_ino)
    digest = hashlib.sha256(raw).hexdigest()
    if cached is not None and cached[1].raw_version == digest:
        loaded = cached[1]
        loaded.mtime_ns, loaded.mode = st.st_mtime_ns, stat.S_IMODE(st.st_mode)
    else:
        loaded = _parse_notebook(raw, digest, st)
    _remember(_PARSED, str(path), (identity, loaded))
    return loaded


def _parse_notebook(raw: bytes, digest: str, st: os.stat_result) -> _Loaded:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotebookError(f"Notebook is not valid UTF-8 (byte {exc.start}); "
                            ".ipynb files must be UTF-8 JSON.") from None
    nt = parse(text)
    data = nt.data
    major, minor = data.get("nbformat"), data.get("nbformat_minor", 0)
    upgrade = ""
    if major == 4 and isinstance(data.get("cells"), list):
        cells = [c if isinstance(c, dict) else {} for c in data["cells"]]
        spliceable = isinstance(minor, int) and minor >= 5 and nt.cells_span is not None and has_usable_ids(cells)
        metadata = data["metadata"] if isinstance(data.get("metadata"), dict) else {}
        if not spliceable:
            upgrade = (f"The notebook was nbformat 4.{minor} without usable cell ids; saving it upgraded it to "
                       "nbformat 4.5: every cell now has an id (Read it again to see them; cell-N still works). "
                       "Nothing else in the file changed.")
    else:
        cells, metadata = _upgraded(text, major, minor)
        spliceable = False
        upgrade = (f"The notebook was nbformat {major if isinstance(major, int) else 1}; it was saved upgraded "
                   "to nbformat 4.5 by nbformat's own conversion (as Jupyter does when it saves an old "
                   "notebook): one list of cells, each with an id, outputs in today's form.")
    return _Loaded(raw_version=digest, mtime_ns=st.st_mtime_ns, mode=stat.S_IMODE(st.st_mode), text=nt,
                   cells=cells, metadata=metadata, spliceable=spliceable, upgrade=upgrade)


def _upgraded(text: str, major: Any, minor: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Cells and metadata of an nbformat 1-3 notebook, upgraded by nbformat itself.

    ``nbformat.reads(..., as_version=4)`` is what Jupyter runs when it opens one: each
    version's reader first (it rejoins list-of-lines sources), then the chain of upgrades.
    """
    version = f"{major}.{minor}" if isinstance(major, int) else "without an nbformat version (so 1)"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            converted = nbformat.reads(text, as_version=4)
            split_lines(converted)  # stored as nbformat.write would store it
        except Exception as exc:  # nbformat raises many kinds on malformed old notebooks
            message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if major not in nbformat.versions:
                raise NotebookError(f"Unsupported notebook format {version}: nbformat reads versions "
                                    f"{', '.join(map(str, sorted(nbformat.versions)))}.") from None
            raise NotebookError(f"Cannot read this nbformat {version} notebook: {message}") from None
    cells = [_plain(c) for c in converted.get("cells", [])]
    metadata = _plain(converted.get("metadata", {}))
    for key in ("orig_nbformat", "orig_nbformat_minor"):  # nbformat.write drops these too
        metadata.pop(key, None)
    return cells, metadata


def _plain(value: Any) -> Any:
    """NotebookNode -> plain dicts/lists (so json and equality behave as for parsed JSON)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def validation_problem(loaded: _Loaded) -> str | None:
    """Why this notebook does not validate, or None; remembered by content hash.

    ``Read`` asks this, so the edits that follow only validate what they change. An older
    notebook (v3, v4 before ids) is validated after its upgrade, when it is first written.
    """
    if loaded.raw_version in _VALID_HASHES or not loaded.spliceable:
        return None
    problem = _PROBLEMS.get(loaded.raw_version)
    if problem is None:
        try:
            validate_notebook(loaded.text.data)
        except NotebookError as exc:
            problem = str(exc)
            _remember(_PROBLEMS, loaded.raw_version, problem)
            return problem
        _remember(_VALID_HASHES, loaded.raw_version, None)
    return problem


def validate_edit(base_version: str, data: dict[str, Any], changed: list[dict[str, Any]]) -> None:
    """Validate an edited notebook: in full, or (when the notebook before the edit is known
    to be valid) just the changed cells and the uniqueness of ids."""
    if base_version not in _VALID_HASHES:
        validate_notebook(data)
        return
    ids = [c.get("id") for c in data["cells"]]
    if len(set(ids)) != len(ids):
        raise NotebookError("two cells would share an id")
    if changed:
        validate_notebook({**data, "cells": changed})


def validate_notebook(data: dict[str, Any]) -> None:
    """Raise a short, actionable NotebookError when ``data`` is not a valid notebook."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            nbformat.validate(data)
        except nbformat.ValidationError as exc:
            where = "/".join(str(p) for p in getattr(exc, "absolute_path", []) or [])
            message = str(getattr(exc, "message", exc)).splitlines()[0]
            raise NotebookError(f"{message}" + (f" (at {where})" if where else "")) from None


def _restored(step: CellRestore, cell: dict[str, Any]) -> dict[str, Any]:
    return restored_cell(cell, step, "", False)


class FileNotebook(NotebookDocument):
    """A notebook file on disk. ``kernels`` (a :class:`KernelPool`) is needed to run cells."""

    def __init__(self, path: Path | str, kernels: Any = None):
        self.path = Path(path)
        self.kernels = kernels

    async def snapshot(self) -> NotebookSnapshot:
        loaded = await asyncio.to_thread(load_notebook, self.path)
        return self._snapshot(loaded)

    def _snapshot(self, loaded: _Loaded) -> NotebookSnapshot:
        return NotebookSnapshot.of(self.path, loaded.views(), loaded.raw_version, loaded.metadata,
                                   mtime_ns=loaded.mtime_ns)

    async def validation_problem(self) -> str | None:
        """Why the notebook on disk does not pass nbformat validation, or None."""
        return await asyncio.to_thread(lambda: validation_problem(load_notebook(self.path)))

    # -- mutations --------------------------------------------------------------------------

    async def insert_cell(self, index: int, cell_type: str, source: str, *,
                          expected_version: str | None = None, cell_id: str | None = None) -> EditResult:
        def edit(loaded: _Loaded, cells: list[dict[str, Any]]):
            if not 0 <= index <= len(cells):
                raise NotebookError(f"Insert position {index} is out of range (0 to {len(cells)}).")
            if cell_id is not None and not loaded.use_ids:
                raise NotebookError("This notebook's cells have no ids (an older nbformat): leave new_cell_id "
                                    "out and address the new cell as cell-N.")
            taken = {str(c.get("id")) for c in cells}
            cell = new_cell(cell_type, source, chosen_cell_id(cell_id, taken), prefers_lists(cells))
            return [*cells[:index], cell, *cells[index:]], index, lambda nt: nt.insert(index, cell)

        return await asyncio.to_thread(self._mutate, expected_version, edit)

    async def replace_cell(self, cell_id: str, source: str, cell_type: str | None = None, *,
                           expected_version: str | None = None) -> EditResult:
        return await self._change(cell_id, expected_version, lambda cell: replaced_cell(cell, source, cell_type))

    async def delete_cell(self, cell_id: str, *, expected_version: str | None = None) -> EditResult:
        removed: list[Cell] = []

        def edit(loaded: _Loaded, cells: list[dict[str, Any]]):
            index = loaded.index_of(cell_id)
            removed.append(cell_view(cells[index], index, loaded.use_ids))
            return [*cells[:index], *cells[index + 1:]], None, lambda nt: nt.delete(index)

        result = await asyncio.to_thread(self._mutate, expected_version, edit)
        return EditResult(cell=removed[0], version=result.version, mtime_ns=result.mtime_ns)

    async def set_outputs(self, cell_id: str, outputs: list[dict[str, Any]], execution_count: int | None, *,
                          expected_version: str | None = None) -> EditResult:
        return await self._change(cell_id, expected_version, lambda cell: with_outputs(cell, outputs, execution_count))

    async def _change(self, cell_id: str, expected_version: str | None,
                      change: Callable[[dict[str, Any]], dict[str, Any]]) -> EditResult:
        """Put ``change(cell)`` in the place of the cell named ``cell_id``, in the file."""
        def edit(loaded: _Loaded, cells: list[dict[str, Any]]):
            index = loaded.index_of(cell_id)
            cell = change(cells[index])
            return [*cells[:index], cell, *cells[index + 1:]], index, lambda nt: nt.replace(index, cell)

        return await asyncio.to_thread(self._mutate, expected_version, edit)

    async def restore_cells(self, steps: list[CellRestore], *, expected_version: str | None = None) -> str:
        """Put cells back exactly (outputs, count, metadata, the cell's own id), one write each."""
        version = expected_version
        for step in steps:
            if step.op == "delete":
                result = await self.delete_cell(step.cell_id, expected_version=version)
            elif step.op == "restore":
                result = await self._change(step.cell_id, version, functools.partial(_restored, step))
            elif step.op == "move":
                result = await asyncio.to_thread(self._mutate, version, functools.partial(self._move, step))
            else:
                result = await asyncio.to_thread(self._mutate, version, functools.partial(self._reinsert, step))
            version = result.version
        return version or (await self.snapshot()).version

    @staticmethod
    def _move(step: CellRestore, loaded: _Loaded, cells: list[dict[str, Any]]):
        index = loaded.index_of(step.cell_id)
        cell, rest = cells[index], [*cells[:index], *cells[index + 1:]]
        to = step.position(cell_views(rest, True))
        return [*rest[:to], cell, *rest[to:]], to, lambda nt: parse(nt.delete(index)).insert(to, cell)

    @staticmethod
    def _reinsert(step: CellRestore, loaded: _Loaded, cells: list[dict[str, Any]]):
        taken = {str(c.get("id")) for c in cells}
        cell_id = step.cell_id if step.cell_id not in taken and VALID_CELL_ID.match(step.cell_id) \
            else new_cell_id(taken)
        index = step.position(cell_views(cells, True))
        cell = restored_cell(None, step, cell_id, prefers_lists(cells))
        return [*cells[:index], cell, *cells[index:]], index, lambda nt: nt.insert(index, cell)

    async def run_cell(self, cell_id: str, *, timeout: float, abort: asyncio.Event | None = None,
                       expected_version: str | None = None) -> RunResult:
        from .kernels import run_cell_in_kernel

        return await run_cell_in_kernel(self, self.kernels, cell_id, timeout=timeout, abort=abort,
                                        expected_version=expected_version)

    async def kernel_info(self) -> KernelInfo | None:
        from .pool_runs import pool_kernel_info

        return pool_kernel_info(self.kernels, self.path)

    async def run_code(self, code: str, *, timeout: float, abort: asyncio.Event | None = None) -> RunResult:
        from .pool_runs import run_code_in_kernel

        return await run_code_in_kernel(self, self.kernels, code, timeout=timeout, abort=abort)

    def _mutate(self, expected_version: str | None, edit: Callable) -> EditResult:
        loaded = load_notebook(self.path, verify=True)
        if expected_version is not None and loaded.raw_version != expected_version:
            raise StaleNotebookError()
        base_version = loaded.raw_version
        if loaded.spliceable:
            text_in, cells = loaded.text, loaded.cells
        elif loaded.text.cells_span is not None and loaded.text.data.get("nbformat") == 4:
            # v4 before ids: give each cell an id in the text itself, so every other byte
            # (escapes, indent, key order, numbers) stays as the file had it
            ids = [c.get("id") for c in with_ids(loaded.cells)]
            old = [c.get("id") for c in loaded.cells]
            text_in = parse(loaded.text.with_ids([n if n != o else None for n, o in zip(ids, old)]))
            cells, base_version = text_in.cells, ""  # validate all of it
        else:
            text_in, cells = None, with_ids(loaded.cells)
        new_cells, index, splice = edit(loaded, cells)
        if text_in is not None:
            data = dict(text_in.data)
            text = splice(text_in)
            if loaded.text.style.bom:
                text = "\ufeff" + text
        else:  # nbformat 1-3, converted by nbformat: written whole as v4.5 in the file's style
            new_cells = with_ids(new_cells)
            data = {"cells": new_cells, "metadata": loaded.metadata, "nbformat": 4, "nbformat_minor": 5}
            text = replace(loaded.text.style, sort_keys=True).dumps_document(data)
            base_version = ""
        data["cells"] = new_cells
        changed = [new_cells[index]] if index is not None else []
        try:
            validate_edit(base_version, data, changed)
        except NotebookError as exc:
            raise NotebookError(f"Edit refused: the notebook would not be valid: {exc}. "
                                "The file was not changed.") from None
        encoded = text.encode("utf-8")
        mtime_ns = atomic_write(self.path, encoded, loaded.mode)
        version = hashlib.sha256(encoded).hexdigest()
        _remember(_VALID_HASHES, version, None)
        cell = cell_view(new_cells[index], index, True) if index is not None else None
        return EditResult(cell=cell, version=version, mtime_ns=mtime_ns, note=loaded.upgrade)  # type: ignore[arg-type]
