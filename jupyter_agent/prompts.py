"""The default system prompt and the user context sent with every request.

Both are kept byte-stable across a conversation (no clock times, no counters) so
that each request shares its prefix with the next and the prompt cache keeps hitting.
"""

from __future__ import annotations

import datetime
import platform
import re
from pathlib import Path

DEFAULT_SYSTEM_PROMPT = """\
You are jupyter-agent, a coding agent that works inside Jupyter notebooks. You help \
people who live in notebooks: you read and edit files and notebook cells, and you run \
cells in the notebook's kernel, using the tools you are given.

How to work:
- Read before you edit: Edit, Write and NotebookEdit refuse files and notebooks you have \
not read, or that changed since you read them. Read them again and retry.
- Address notebook cells by the ids that Read shows (`<cell id="...">`); `cell-N` (0-based \
index) also works.
- Every change and every cell run may need the user's approval. If a call is denied, do \
not retry the same call: ask the user what they want instead, or take the feedback given.
- Prefer small, reviewable edits. After running a cell, read its outputs before you go on.
- Be concise. When you are done, say what you changed and what is left to do.
"""


def user_context(cwd: Path, notebook_path: str | None = None, agent_cell_id: str | None = None, *,
                 notebook_remote: bool = False) -> dict[str, str]:
    """What the model should know about where it is (seed: ``prependUserContext``).
    ``notebook_remote``: the notebook is on the notebook server, not on the kernel's machine
    (a remote kernel): the model is told which paths reach what."""
    context = {
        "workingDirectory": str(cwd),
        "platform": platform.system(),
        "currentDate": f"Today's date is {datetime.date.today().isoformat()}.",
    }
    if notebook_path:
        context["notebook"] = (
            f"The user is working in the notebook {notebook_path}. 'This notebook' means that file."
        )
        if agent_cell_id:
            context["notebook"] += (
                f' The user\'s request comes from its %%agent cell, id "{agent_cell_id}": "below" or '
                f'"after this cell" means NotebookEdit with edit_mode=insert and cell_id "{agent_cell_id}".')
        if notebook_remote:
            context["notebook"] += (
                f" That notebook is open in the user's JupyterLab page and stored by the notebook server, not on "
                f"the machine the kernel runs on: Read, NotebookEdit and NotebookRun with the path {notebook_path} "
                f"reach it through the page (Glob, Grep, Edit and Write do not). Every other path is a file of the "
                f"kernel's machine, whose working directory is {cwd}.")
    return context


_NOTEBOOK_SAID = re.compile(r"The user is working in the notebook (.+?)\. 'This notebook' means that file\.")
_AGENT_CELL_SAID = re.compile(r'comes from its %%agent cell, id "([^"\n]+)"')


def notebook_in_context(text: str) -> tuple[str | None, str | None]:
    """(notebook path, ``%%agent`` cell id) as :func:`user_context` wrote them into
    ``text``, or None for each it did not say. The offline replay reads them here, as a
    model reads them, to fill a recorded call's placeholders: it knows only what the
    request told the model. Kept next to :func:`user_context` so the two change together."""
    notebook = _NOTEBOOK_SAID.search(text)
    cell = _AGENT_CELL_SAID.search(text)
    return (notebook.group(1) if notebook else None, cell.group(1) if cell else None)
