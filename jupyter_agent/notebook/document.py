"""The notebook as the tools see it: cells with ids, edits by id, runs, a version.

:class:`NotebookDocument` is async so that a live backend (the JupyterLab page, reached
over a comm with request/response messages) fits beside the file and memory backends.
Every mutation takes ``expected_version``: the backend refuses the change when the
document moved since the caller looked (a person saved it, another tool edited it),
which closes the gap between "check" and "write".
"""

from __future__ import annotations

import asyncio
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nbformat.v4.nbbase import random_cell_id

from ..loop.tool import ToolError

CELL_TYPES = ("code", "markdown", "raw")
#: ``cell-N``: the cell at 0-based position N, accepted wherever an id is asked (docs/design.md, "Notebook files").
POSITION_ID = re.compile(r"^cell-(\d+)$")
#: nbformat 4.5 cell ids: 1-64 characters of letters, digits, "-" and "_".
VALID_CELL_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class NotebookError(ToolError):
    """A notebook operation failed in a way the model can act on."""


class StaleNotebookError(NotebookError):
    """The document changed since the caller read it."""

    def __init__(self, message: str = ""):
        super().__init__(
            message
            or "Notebook has been modified since read, either by the user or by another program. "
            "Read it again before editing it."
        )


@dataclass(frozen=True)
class Cell:
    """One cell as the model addresses it.

    ``id`` is the cell's nbformat id, or ``cell-N`` (its 0-based index) when the
    notebook is older than nbformat 4.5 and has no ids yet.
    """

    id: str
    index: int
    cell_type: str
    source: str
    outputs: tuple[Mapping[str, Any], ...] = ()
    execution_count: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class NotebookSnapshot:
    """The document at one version."""

    path: Path
    cells: tuple[Cell, ...]
    version: str
    language: str = "python"
    kernel_name: str | None = None
    mtime_ns: int = 0

    @classmethod
    def of(cls, path: Path, cells: tuple[Cell, ...], version: str, metadata: Mapping[str, Any],
           mtime_ns: int = 0) -> NotebookSnapshot:
        """A snapshot whose language and kernel come from the notebook's ``metadata``."""
        return cls(path=path, cells=cells, version=version, language=notebook_language(metadata),
                   kernel_name=kernel_name_of(metadata), mtime_ns=mtime_ns)

    def find(self, cell_id: str) -> Cell:
        """The cell named by ``cell_id``: its real id first, else ``cell-N`` by index."""
        return self.cells[find_cell_index(self.cells, cell_id)]

    def runnable_cell(self, cell_id: str, expected_version: str | None) -> Cell:
        """The code cell ``cell_id``, on the version the run was planned on (else a clear error)."""
        if expected_version is not None and self.version != expected_version:
            raise StaleNotebookError()
        cell = self.find(cell_id)
        if cell.cell_type != "code":
            raise NotebookError(f"Cell {cell_id} is a {cell.cell_type} cell; only code cells can be run.")
        return cell


@dataclass(frozen=True)
class KernelInfo:
    """The kernel a notebook's cells run in, as a Read tells it: whether it is running, the
    folder its code runs in, and (when known) the source it ran under each execution count
    (a cell whose count names other source shows outputs older than its source)."""

    running: bool
    working_folder: str = ""
    sources: Mapping[int, str] | None = None


@dataclass(frozen=True)
class EditResult:
    """What a mutation did: the cell touched (as it is now, or as it was if deleted)."""

    cell: Cell
    version: str
    mtime_ns: int = 0
    note: str = ""  # what saving changed beyond the edit itself (an old format upgraded)


@dataclass(frozen=True)
class RunResult:
    """A cell's run: nbformat v4 output dicts, the execution count, and how it ended.

    ``status`` is ``ok``, ``error`` (the cell raised), ``timeout`` or ``interrupted``.
    ``saved`` tells whether the outputs were written back into the document.
    """

    cell: Cell
    outputs: list[dict[str, Any]]
    execution_count: int | None
    status: str = "ok"
    version: str = ""
    mtime_ns: int = 0
    saved: bool = True
    note: str = ""
    #: top-level names the cell created or rebound in its kernel (see ``namespace.py``)
    names_changed: tuple[str, ...] = ()


@dataclass(frozen=True)
class CellRestore:
    """One step of putting cells back as they were (an undo): ``delete`` the cell
    ``cell_id``; ``restore`` it to the type, source, outputs and metadata given; or
    ``insert`` such a cell (with id ``cell_id`` when it is free) after the cell ``after_id``
    ("" : first; an ``after_id`` no longer there: at ``index``); or ``move`` the cell
    ``cell_id`` as it is (id, outputs, metadata) to just after ``after_id`` (the same rule;
    ``index`` counts the cells without it). A move is also how ``move_cell`` moves a cell."""

    op: str  # delete | restore | insert | move
    cell_id: str
    cell_type: str = "code"
    source: str = ""
    outputs: tuple[Mapping[str, Any], ...] = ()
    execution_count: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    after_id: str = ""
    index: int = 0

    def position(self, cells: tuple[Cell, ...] | list[Cell]) -> int:
        """Where an ``insert`` goes among ``cells``."""
        if not self.after_id:
            return 0
        for cell in cells:
            if cell.id == self.after_id:
                return cell.index + 1
        return min(self.index, len(cells))


def find_cell_index(cells: tuple[Cell, ...] | list[Cell], cell_id: str) -> int:
    """The index of the cell named ``cell_id``: its real id first, else ``cell-N``."""
    for cell in cells:
        if cell.id == cell_id:
            return cell.index
    return index_from_position_id(cell_id, len(cells))


def index_from_position_id(cell_id: str, count: int) -> int:
    """``cell-N`` -> N (checked against ``count`` cells); anything else is "not found"."""
    match = POSITION_ID.match(cell_id)
    if match:
        index = int(match.group(1))
        if index < count:
            return index
        raise NotebookError(
            f"Cell index {index} is out of range: the notebook has {count} cells "
            f"(cell-0 to cell-{count - 1})." if count else "The notebook has no cells."
        )
    raise NotebookError(f'Cell with ID "{cell_id}" not found in notebook. Read the notebook to see its cell ids.')


def check_cell_id_text(cell_id: str) -> str | None:
    """An error message for a cell id no notebook can contain, else None."""
    if not cell_id.strip():
        return "cell_id is empty: give the id shown in <cell id=\"...\"> or cell-N (0-based index)."
    if not VALID_CELL_ID.match(cell_id):
        shown = cell_id if len(cell_id) <= 80 else cell_id[:80] + "..."
        return (f"cell_id {shown!r} is not a valid cell id (1-64 letters, digits, '-' or '_'). "
                "Use an id shown by Read, or cell-N for the cell at 0-based index N.")
    return None


def chosen_cell_id(wanted: str | None, taken: set[str]) -> str:
    """``wanted`` when no cell has it (else ``NotebookError``); without one, a fresh id."""
    if wanted is None:
        return new_cell_id(taken)
    if wanted in taken:
        raise NotebookError(f"A cell with id {wanted!r} is already in the notebook: choose another new_cell_id, "
                            "or leave it out for a fresh one.")
    return wanted


def new_cell_id(taken: set[str]) -> str:
    """A fresh id made the way nbformat makes them (8 hex characters), not already in the notebook."""
    while True:
        candidate = random_cell_id()
        if candidate not in taken:
            return candidate


def source_text(value: Any) -> str:
    """nbformat stores multi-line strings as a string or a list of lines."""
    if isinstance(value, list):
        return "".join(str(part) for part in value)
    return value if isinstance(value, str) else ""


def notebook_language(metadata: Mapping[str, Any]) -> str:
    info = metadata.get("language_info") or {}
    spec = metadata.get("kernelspec") or {}
    name = (info.get("name") if isinstance(info, Mapping) else None) or (
        spec.get("language") if isinstance(spec, Mapping) else None)
    return str(name or "python").lower()


def kernel_name_of(metadata: Mapping[str, Any]) -> str | None:
    spec = metadata.get("kernelspec")
    return str(spec["name"]) if isinstance(spec, Mapping) and spec.get("name") else None


class NotebookDocument(ABC):
    """A notebook the tools can read, edit and run, whatever holds it."""

    path: Path

    @abstractmethod
    async def snapshot(self) -> NotebookSnapshot:
        """All cells, with the document's current version."""

    async def sources_snapshot(self) -> NotebookSnapshot:
        """A snapshot whose cells' ids, types and sources and version are current, though
        its outputs may be older (enough to plan and check a run). By default a snapshot."""
        return await self.snapshot()

    async def changes_refused(self) -> str | None:
        """Why no edit or run of this document would be carried out (no page answers for
        it, or another program owns it), or None. Checked before a person is asked to
        approve one: an approval drawn from the file, which lags behind the page the user
        looks at, would number and show cells the user does not see."""
        return None

    async def kernel_info(self) -> KernelInfo | None:
        """The notebook's kernel as a Read tells it (None: not known here)."""
        return None

    async def validation_problem(self) -> str | None:
        """Why nbformat would refuse the saved notebook, or None (a live or memory
        document is checked by whoever saves it: None)."""
        return None

    @abstractmethod
    async def insert_cell(self, index: int, cell_type: str, source: str, *,
                          expected_version: str | None = None, cell_id: str | None = None) -> EditResult:
        """Insert a new cell so that it ends up at ``index``: with id ``cell_id`` (raise
        ``NotebookError`` when a cell has it already, or the backend cannot choose ids),
        else a fresh one."""

    @abstractmethod
    async def replace_cell(self, cell_id: str, source: str, cell_type: str | None = None, *,
                           expected_version: str | None = None) -> EditResult:
        """Replace a cell's source (and type); a code cell loses its outputs and count."""

    @abstractmethod
    async def delete_cell(self, cell_id: str, *, expected_version: str | None = None) -> EditResult:
        """Remove a cell."""

    async def restore_cells(self, steps: list[CellRestore], *, expected_version: str | None = None) -> str:
        """Put cells back (an undo), in order; returns the new version. This default makes
        one ordinary edit per step (outputs are not put back, an inserted cell gets a new id,
        a moved one keeps its id but not its outputs); a backend that can do better (the file,
        the page: one undo step) overrides it."""
        version = expected_version
        for step in steps:
            if step.op == "move":
                cells = (await self.snapshot()).cells
                cell = cells[find_cell_index(cells, step.cell_id)]
                version = (await self.delete_cell(step.cell_id, expected_version=version)).version
                position = step.position((await self.snapshot()).cells)
                result = await self.insert_cell(position, cell.cell_type, cell.source, expected_version=version,
                                                cell_id=cell.id)  # (its id is free again: deleted above)
            elif step.op == "delete":
                result = await self.delete_cell(step.cell_id, expected_version=version)
            elif step.op == "restore":
                result = await self.replace_cell(step.cell_id, step.source, step.cell_type, expected_version=version)
            else:
                position = step.position((await self.snapshot()).cells)
                result = await self.insert_cell(position, step.cell_type, step.source, expected_version=version)
            version = result.version
        return version or (await self.snapshot()).version

    @abstractmethod
    async def run_cell(self, cell_id: str, *, timeout: float, abort: asyncio.Event | None = None,
                       expected_version: str | None = None) -> RunResult:
        """Execute one code cell and keep its outputs in the document."""

    async def run_code(self, code: str, *, timeout: float, abort: asyncio.Event | None = None) -> RunResult:
        """Execute ``code`` in the notebook's kernel and keep nothing in the document (KernelRun).
        The result's ``cell`` is :func:`scratch_cell`; ``saved`` is False. By default refused."""
        raise NotebookError("Code cannot run in this notebook's kernel here.")


#: The id a scratch run's result names (no cell of the notebook has it: ids have no spaces).
SCRATCH_ID = "(scratch)"


def scratch_cell(code: str) -> Cell:
    """The stand-in cell of a scratch run (``KernelRun``): its code, in no notebook."""
    return Cell(id=SCRATCH_ID, index=-1, cell_type="code", source=code)
