"""Pure operations on nbformat v4 cell dicts, shared by the file and memory backends.

Each returns new dicts and never mutates its input, so a backend can validate the
result before anything is written, and untouched cells stay the very same objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import nbformat
from nbformat.v4.rwbase import split_lines

from .document import CELL_TYPES, VALID_CELL_ID, Cell, CellRestore, NotebookError, new_cell_id, source_text
from .nbjson import split_source



def cell_view(raw: Mapping[str, Any], index: int, use_ids: bool) -> Cell:
    """The model-facing :class:`Cell` of a raw cell dict (lenient about odd cells)."""
    # isinstance(dict), not typing.Mapping (an ABC check is slow): this runs for every
    # cell of every Read. NotebookNode is a dict subclass, so it passes too.
    cell_id = raw.get("id") if use_ids else None
    execution_count = raw.get("execution_count")
    outputs = raw.get("outputs")
    metadata = raw.get("metadata")
    return Cell(
        id=str(cell_id) if cell_id else f"cell-{index}",
        index=index,
        cell_type=str(raw.get("cell_type") or "code"),
        source=source_text(raw.get("source")),
        outputs=tuple(o for o in outputs if isinstance(o, dict)) if isinstance(outputs, list) else (),
        execution_count=(execution_count if isinstance(execution_count, int) and not isinstance(execution_count, bool)
                         else None),
        metadata=metadata if isinstance(metadata, dict) else {},
    )


def cell_views(cells: list[Any], use_ids: bool = True) -> tuple[Cell, ...]:
    """The :class:`Cell` of each raw cell dict, in order."""
    return tuple(cell_view(c, i, use_ids) for i, c in enumerate(cells))


def has_usable_ids(cells: list[Any]) -> bool:
    """True when every cell has a valid id and no two share one (nbformat 4.5 rules)."""
    seen: set[str] = set()
    for cell in cells:
        cell_id = cell.get("id") if isinstance(cell, dict) else None
        if not isinstance(cell_id, str) or not VALID_CELL_ID.match(cell_id) or cell_id in seen:
            return False
        seen.add(cell_id)
    return True


def with_ids(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Cells upgraded to nbformat 4.5: missing, invalid or duplicate ids replaced by fresh ones."""
    # Not nbformat's: its upgrade() adds missing ids and normalize() repairs duplicates, but
    # an invalid id ("a b", 65 characters) stays and fails validation; this is one pass that
    # fixes all three and keeps every valid id as it was.
    taken = {c["id"] for c in cells if isinstance(c.get("id"), str)}
    seen: set[str] = set()
    out = []
    for cell in cells:
        cell_id = cell.get("id")
        if isinstance(cell_id, str) and VALID_CELL_ID.match(cell_id) and cell_id not in seen:
            seen.add(cell_id)
            out.append(cell)
            continue
        fresh = new_cell_id(taken)
        taken.add(fresh)
        seen.add(fresh)
        out.append({**cell, "id": fresh})
    return out


def prefers_lists(cells: list[Any]) -> bool:
    """Does this notebook store sources as lists of lines (nbformat) rather than strings?"""
    sources = [c.get("source") for c in cells if isinstance(c, dict)]
    if not sources:
        return True
    return sum(isinstance(s, list) for s in sources) * 2 >= len(sources)


_NEW_CELL = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell,
             "raw": nbformat.v4.new_raw_cell}


def new_cell(cell_type: str, source: str, cell_id: str, as_list: bool) -> dict[str, Any]:
    """A fresh cell as nbformat makes it (and validates it), keys in nbformat's (sorted) order."""
    if cell_type not in CELL_TYPES:
        raise NotebookError(f"cell_type must be one of {', '.join(CELL_TYPES)}, not {cell_type!r}.")
    stored = source.splitlines(keepends=True) if as_list else source
    return dict(sorted(_NEW_CELL[cell_type](stored, id=cell_id).items()))


def replaced_cell(cell: Mapping[str, Any], source: str, cell_type: str | None) -> dict[str, Any]:
    """``cell`` with a new source (and maybe type); a code cell loses outputs and count."""
    out = dict(cell)
    new_type = cell_type or str(cell.get("cell_type") or "code")
    if new_type not in CELL_TYPES:
        raise NotebookError(f"cell_type must be one of {', '.join(CELL_TYPES)}, not {new_type!r}.")
    out["cell_type"] = new_type
    out["source"] = split_source(source, cell.get("source", []))
    if new_type == "code":
        out["outputs"] = []
        out["execution_count"] = None
        out.pop("attachments", None)  # code cells cannot carry attachments
    else:
        out.pop("outputs", None)
        out.pop("execution_count", None)
    return out


def _split_lines(output: dict[str, Any]) -> dict[str, Any]:
    """nbformat's on-disk form of an output (multi-line text as lists of lines): nbformat's
    own ``split_lines``, which knows which MIME types it splits, on a one-cell notebook."""
    node = nbformat.from_dict({"cells": [{"cell_type": "code", "source": [], "outputs": [output]}]})
    return split_lines(node).cells[0].outputs[0]


def with_outputs(cell: Mapping[str, Any], outputs: list[dict[str, Any]],
                 execution_count: int | None) -> dict[str, Any]:
    """``cell`` after a run: outputs stored the way nbformat stores them."""
    out = dict(cell)
    stored = []
    for output in outputs:
        output = dict(output)
        if output.get("output_type") == "execute_result":
            output["execution_count"] = execution_count
        stored.append(_split_lines(output) if isinstance(cell.get("source"), list) else output)
    out["outputs"] = stored
    out["execution_count"] = execution_count
    return out


def restored_cell(cell: Mapping[str, Any] | None, step: CellRestore, cell_id: str, as_list: bool) -> dict[str, Any]:
    """The cell a :class:`CellRestore` puts back: ``cell`` (None: a new one with
    ``cell_id``) with the step's type, source, outputs, count and metadata."""
    out = dict(cell) if cell is not None else new_cell(step.cell_type, step.source, cell_id, as_list)
    out["cell_type"] = step.cell_type
    out["source"] = split_source(step.source, cell.get("source", []) if cell is not None else out["source"])
    out["metadata"] = dict(step.metadata)
    if step.cell_type == "code":
        out["outputs"] = [dict(o) for o in step.outputs]
        out["execution_count"] = step.execution_count
        out.pop("attachments", None)
    else:
        out.pop("outputs", None)
        out.pop("execution_count", None)
    return out
