"""Text kept one Read away: a cell's whole traceback, saved where oversized results go.

The model gets a compact traceback (``notebook/tracebacks.py``); the whole text is written
to the private results folder (``loop.tool_execution.private_results_dir``: this user's
only, files 0600, never through a symlink), and the compact text names the file. A Read of
a file in that folder needs no approval (``permissions.Permissions.decide``): it holds only
what the tools themselves wrote there for this user.
"""

from __future__ import annotations

import hashlib
import logging
import os

from ..loop.tool import ToolContext
from ..loop.tool_execution import private_results_dir
from ..notebook.session import tool_session
from ..notebook.tracebacks import TracebackSaver

log = logging.getLogger(__name__)


def traceback_saver(context: ToolContext) -> TracebackSaver:
    """``save(text) -> path`` into the run's private results folder (None when it cannot)."""

    def save(text: str) -> str | None:
        if not tool_session(context).save_full_tracebacks:
            return None
        try:
            folder = private_results_dir(context.tool_results_dir)
            path = folder / f"traceback-{hashlib.sha1(text.encode('utf-8', 'replace')).hexdigest()[:12]}.txt"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as fh:
                fh.write(text + "\n")
        except OSError:
            log.debug("a traceback could not be saved; the compact one says so", exc_info=True)
            return None
        return str(path)

    return save


__all__ = ["traceback_saver"]
