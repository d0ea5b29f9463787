"""The side panel's requests about cells: where the user is when they write a prompt, and
the Fix with agent / Explain buttons on an error output (``labextension/src/errorActions.ts``).

The page sends cells as plain data (``{id, source, cell_type, index}``) and an error as its
output (``{ename, evalue, traceback}``). Everything here is untrusted text from a notebook:
it is checked for shape, cut to size, its traceback's ANSI colour codes removed and secrets
redacted, and it reaches the model quoted as data (``prompts.py``), never as instructions.
"""

from __future__ import annotations

import logging
from typing import Any

from ...prompts import (MAX_CELLS_ABOVE, MAX_SELECTED_CELLS, ErrorHelp, QuotedCell, cell_view_context,
                       error_help_context, error_help_prompt)
from ...redact import redact

log = logging.getLogger(__name__)

#: Characters of one id the page may send (a cell id is at most 64 in nbformat).
MAX_ID = 64


def quoted_cell(data: Any) -> QuotedCell | None:
    """A cell the page sent, or None when it is not one."""
    if not isinstance(data, dict):
        return None
    cell_id, source = data.get("id"), data.get("source")
    if not isinstance(cell_id, str) or not cell_id or len(cell_id) > MAX_ID or '"' in cell_id or "\n" in cell_id:
        return None
    if not isinstance(source, str):
        return None
    kind = data.get("cell_type")
    index = data.get("index")
    return QuotedCell(cell_id, source, kind if kind in ("code", "markdown", "raw") else "code",
                      index if isinstance(index, int) and not isinstance(index, bool) and index >= 0 else None)


def _cells(data: Any, limit: int) -> list[QuotedCell]:
    cells = [quoted_cell(c) for c in data[-limit:]] if isinstance(data, list) else []
    return [c for c in cells if c is not None]


def prompt_context(data: Any) -> str:
    """The note a side-panel prompt carries about where the user is (``send``'s ``context``:
    ``active`` cell, ``selected`` cells, ``selection`` text), or "" when it says nothing."""
    if not isinstance(data, dict):
        return ""
    selection = data.get("selection")
    return cell_view_context(quoted_cell(data.get("active")), _cells(data.get("selected"), MAX_SELECTED_CELLS),
                             selection if isinstance(selection, str) else "")


def traceback_text(error: Any) -> str:
    """An error output's traceback as plain text: ANSI colour codes removed, secrets redacted."""
    from ...notebook.render import strip_ansi

    if not isinstance(error, dict):
        return ""
    lines = error.get("traceback")
    text = "\n".join(str(line) for line in lines) if isinstance(lines, list) else ""
    if not text.strip():  # no traceback (some kernels): the name and the message
        text = f"{error.get('ename', 'Error')}: {error.get('evalue', '')}"
    return redact(strip_ansi(text))


def error_help_request(action: ErrorHelp, data: dict[str, Any]) -> tuple[str, str, QuotedCell]:
    """(the prompt shown, the note the model gets with it, the cell) for a ``fix`` or
    ``explain`` request; ValueError (said in the panel) when the page sent no cell."""
    cell = quoted_cell(data.get("cell"))
    if cell is None:
        raise ValueError("That error output's cell could not be read; nothing was started.")
    above = _cells(data.get("above"), MAX_CELLS_ABOVE)
    return (error_help_prompt(action, cell), error_help_context(action, cell, traceback_text(data.get("error")), above),
            cell)
