"""The tools the model sees, with Claude Code's names and input schemas (docs/tools.md).

``default_tools()`` gives the standard set: Read, Write, Edit, Glob, Grep, NotebookEdit,
NotebookRun, NotebookRunCells, KernelRun, Bash, TodoWrite, NotebookRestart.
Each lives in its own module; the interface they implement (``Tool``,
``ToolContext``, ``ToolOutput``, ``ToolError``) is the loop's, in :mod:`jupyter_agent.loop.tool`.
"""

from __future__ import annotations

from ..loop.tool import AnyTool
from .bash import Bash
from .edit import Edit
from .glob import Glob
from .grep import Grep
from .kernel_run import KernelRun
from .notebook_edit import NotebookEdit
from .notebook_restart import NotebookRestart
from .notebook_run import NotebookRun
from .notebook_run_cells import NotebookRunCells
from .read import Read
from .todo_write import TodoWrite
from .write import Write

__all__ = ["Bash", "Edit", "Glob", "Grep", "KernelRun", "NotebookEdit", "NotebookRestart", "NotebookRun",
           "NotebookRunCells", "Read", "TodoWrite", "Write", "default_tools"]


def default_tools() -> list[AnyTool]:
    """A fresh instance of every standard tool, in the order the model is shown them."""
    return [Read(), Write(), Edit(), Glob(), Grep(), NotebookEdit(), NotebookRun(), NotebookRunCells(), KernelRun(),
            Bash(), TodoWrite(), NotebookRestart()]
