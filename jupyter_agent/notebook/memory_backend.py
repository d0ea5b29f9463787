"""A notebook held in memory: the same interface as a file, for tests and scratch work.

Register one (``register_document(tool_session(ctx), doc)``) and the notebook tools use it
instead of the file at that path (that is also how a live backend plugs in).
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from pathlib import Path
from collections.abc import Callable
from typing import Any

from .cells import cell_view, cell_views, new_cell, prefers_lists, replaced_cell, with_ids, with_outputs
from .document import (Cell, EditResult, KernelInfo, NotebookDocument, NotebookError, NotebookSnapshot, RunResult,
                       StaleNotebookError, chosen_cell_id, find_cell_index)
from .file_backend import validate_notebook

_counter = itertools.count(1)


class MemoryNotebook(NotebookDocument):
    """An nbformat v4.5 notebook dict in memory; ``version`` changes on every mutation."""

    def __init__(self, path: Path | str, notebook: dict[str, Any] | None = None, kernels: Any = None):
        self.path = Path(path)
        self.kernels = kernels
        nb: dict[str, Any] = copy.deepcopy(notebook) if notebook is not None else {
            "cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        nb["cells"] = with_ids(list(nb.get("cells", [])))
        nb["nbformat_minor"] = max(5, nb.get("nbformat_minor", 5))
        validate_notebook(nb)
        self.notebook = nb
        self._version = f"memory-{next(_counter)}"

    @property
    def cells(self) -> list[dict[str, Any]]:
        return self.notebook["cells"]

    async def snapshot(self) -> NotebookSnapshot:
        return NotebookSnapshot.of(self.path, cell_views(self.cells), self._version, self.notebook.get("metadata", {}))

    def _commit(self, expected_version: str | None, new_cells: list[dict[str, Any]]) -> str:
        candidate = {**self.notebook, "cells": new_cells}
        validate_notebook(candidate)
        self.notebook = candidate
        self._version = f"memory-{next(_counter)}"
        return self._version

    def _check(self, expected_version: str | None) -> None:
        if expected_version is not None and expected_version != self._version:
            raise StaleNotebookError()

    def _views(self) -> tuple[Cell, ...]:
        return cell_views(self.cells)

    async def insert_cell(self, index: int, cell_type: str, source: str, *,
                          expected_version: str | None = None, cell_id: str | None = None) -> EditResult:
        self._check(expected_version)
        cells = self.cells
        if not 0 <= index <= len(cells):
            raise NotebookError(f"Insert position {index} is out of range (0 to {len(cells)}).")
        taken = {c["id"] for c in cells}
        cell = new_cell(cell_type, source, chosen_cell_id(cell_id, taken), prefers_lists(cells))
        version = self._commit(expected_version, [*cells[:index], cell, *cells[index:]])
        return EditResult(cell=cell_view(cell, index, True), version=version)

    async def replace_cell(self, cell_id: str, source: str, cell_type: str | None = None, *,
                           expected_version: str | None = None) -> EditResult:
        return self._change(cell_id, expected_version, lambda cell: replaced_cell(cell, source, cell_type))

    async def delete_cell(self, cell_id: str, *, expected_version: str | None = None) -> EditResult:
        self._check(expected_version)
        index = find_cell_index(self._views(), cell_id)
        removed = cell_view(self.cells[index], index, True)
        version = self._commit(expected_version, [*self.cells[:index], *self.cells[index + 1:]])
        return EditResult(cell=removed, version=version)

    async def set_outputs(self, cell_id: str, outputs: list[dict[str, Any]], execution_count: int | None, *,
                          expected_version: str | None = None) -> EditResult:
        return self._change(cell_id, expected_version, lambda cell: with_outputs(cell, outputs, execution_count))

    def _change(self, cell_id: str, expected_version: str | None,
                change: Callable[[dict[str, Any]], dict[str, Any]]) -> EditResult:
        """Put ``change(cell)`` in the place of the cell named ``cell_id``."""
        self._check(expected_version)
        index = find_cell_index(self._views(), cell_id)
        cell = change(self.cells[index])
        version = self._commit(expected_version, [*self.cells[:index], cell, *self.cells[index + 1:]])
        return EditResult(cell=cell_view(cell, index, True), version=version)

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
