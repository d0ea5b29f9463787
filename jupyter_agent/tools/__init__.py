"""The tools the model sees, with Claude Code's names and input schemas (DESIGN §3).

``default_tools()`` gives the standard set: Read, Write, Edit, Glob, Grep, NotebookEdit,
NotebookRun. Each lives in its own module; :mod:`.base` is the interface.

The tool classes are imported on first use: the notebook package needs
``tools.base``/``tools.fileio`` and the notebook tools need the notebook package, so
importing everything here eagerly would make the two packages import each other.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .base import FileReadRecord, Tool, ToolContext, ToolError, ToolInput, ToolOutput

if TYPE_CHECKING:
    from .edit import Edit
    from .glob import Glob
    from .grep import Grep
    from .notebook_edit import NotebookEdit
    from .notebook_run import NotebookRun
    from .read import Read
    from .write import Write

_TOOL_MODULES = {
    "Read": "read", "Write": "write", "Edit": "edit", "Glob": "glob", "Grep": "grep",
    "NotebookEdit": "notebook_edit", "NotebookRun": "notebook_run",
}

__all__ = [
    "Edit",
    "FileReadRecord",
    "Glob",
    "Grep",
    "NotebookEdit",
    "NotebookRun",
    "Read",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolInput",
    "ToolOutput",
    "Write",
    "default_tools",
]


def __getattr__(name: str) -> Any:
    module = _TOOL_MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)


def default_tools() -> list[Tool]:
    """A fresh instance of every standard tool, in the order the model is shown them."""
    return [__getattr__(name)() for name in _TOOL_MODULES]
