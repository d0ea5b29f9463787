"""The agent's NotebookEdit as an outside agent's calls use it: the same tool (its name, its
rules, the policy, the card, undo), taking raw cells too.

The model-facing NotebookEdit keeps Claude Code's schema (``cell_type``: code or markdown;
the tools a model sees are part of the prompt's cached prefix), so the kernel carries out an
MCP ``insert_cell`` / ``replace_cell`` through this subclass instead.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...tools.notebook_edit import NotebookEdit, NotebookEditInput


class OutsideNotebookEditInput(NotebookEditInput):
    cell_type: Literal["code", "markdown", "raw"] | None = Field(default=None, description=(  # type: ignore[assignment]
        "The type of the cell (code, markdown or raw). If not specified, it defaults to the current cell type. "
        "If using edit_mode=insert, this is required."))


class OutsideNotebookEdit(NotebookEdit):
    """NotebookEdit (same name: the same rules and policy decide it) with raw cells."""

    Input = OutsideNotebookEditInput
