"""One browser page on the live-notebook bridge, kernel side: what the kernel knows of it
(docs/bridge.md).

A :class:`Page` is made from a page's hello (who it is, which notebook it shows, what it
can do) and kept until it says goodbye or its comm closes. It counts the changes of its
document the kernel knows of (the page's ``changed`` notices, and the replies of the
requests that changed it), so a caller can tell whether its last read is still current
without a message; and it keeps how long its recent answers took, so a slow page is not
taken for a gone one.
"""

from __future__ import annotations

import collections
import itertools
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .comm_protocol import BRIDGE_VERSION
from .kernel_types import Comm

PROTOCOL_VERSION = BRIDGE_VERSION
#: The key under which a reply's result carries its page's ``changes`` as the kernel
#: counted them when the reply arrived (kernel side only: the page never sends it).
CHANGES_SEEN = "_changes_seen"
#: Requests whose success changed the page's document.
CHANGING_OPS = frozenset({"insert", "replace", "delete", "restore", "run", "show_run", "show_outputs"})
#: ... and the subset of them that change the cells' ids, types or sources (the version).
SOURCE_OPS = frozenset({"insert", "replace", "delete", "restore"})
#: The key under which a reply's result carries the page's ``source_changes`` likewise.
SOURCES_SEEN = "_sources_seen"
#: A page that has been slow to answer (a loaded machine, many notebooks busy in one page)
#: is busy, not gone: it gets this many times its slowest recent answer before a request
#: counts as unanswered (at least the request's own timeout, at most MAX_NO_ANSWER_S).
SLOW_PAGE_PATIENCE = 10
MAX_NO_ANSWER_S = 60.0
#: How many of a page's recent answers (cell runs aside) that patience looks at.
RECENT_ANSWERS = 16

_page_serials = itertools.count(1)


@dataclass
class Page:
    """One browser page (tab) showing a notebook on this kernel."""

    client_id: str
    comm: Comm
    path: str = ""
    server_root: str = ""
    version: str = ""
    app: str = ""
    protocol: Any = PROTOCOL_VERSION
    seen: float = field(default_factory=time.monotonic)
    gone: bool = False
    #: the page sends a ``changed`` notice on the first change of its document after a
    #: reply to a request that asked for it (``notify``)
    notices: bool = False
    #: of those, the ones that may have changed the cells' ids, types or sources (a notice
    #: says ``sources: false`` when only outputs or metadata changed)
    source_changes: int = 0
    #: the page shows runs the kernel makes itself (``show_run``; ``jupyter/bridge/self_client.py``)
    kernel_runs: bool = False
    #: the page shows an outside agent's ask about its notebook in the background as a notification
    #: (``ask`` / ``ask_end``; ``outside_ask.py``)
    asks: bool = False
    #: the page says which notebook is current and its active cell (``focus``; ``active_notebook``)
    focus: bool = False
    #: the page opens a notebook the kernel names (``open``; ``create_notebook``)
    open: bool = False
    #: the page moves a cell as it is, in one step (a ``restore`` step ``move``; ``move_cell``)
    moves: bool = False
    #: changes of the page's document this kernel knows of: notices, and the replies of
    #: requests that changed it (each reply carries the count as ``CHANGES_SEEN``)
    changes: int = 0
    #: tells this entry from an earlier one of the same page (a new hello makes a new entry)
    serial: int = field(default_factory=lambda: next(_page_serials))
    #: seconds each recent answer took (cell runs aside: their time is the cell's)
    answer_s: collections.deque[float] = field(default_factory=lambda: collections.deque(maxlen=RECENT_ANSWERS))

    def no_answer_after(self, timeout: float | None) -> float | None:
        """How long a request with ``timeout`` waits for this page before it counts as gone."""
        if timeout is None or not self.answer_s:
            return timeout
        return max(timeout, min(MAX_NO_ANSWER_S, SLOW_PAGE_PATIENCE * max(self.answer_s)))

    @property
    def compatible(self) -> bool:
        """Whether the page speaks this kernel's bridge protocol version."""
        return bool(self.protocol == PROTOCOL_VERSION)

    def notebook_path(self, kernel_cwd: Path | None = None) -> Path | None:
        """The notebook's absolute path, from the server root the page reports."""
        if not self.path:
            return None
        if self.server_root:
            return (Path(self.server_root).expanduser() / self.path).resolve()
        if kernel_cwd is not None:  # a server started in the notebook's folder or above it
            for base in (kernel_cwd, *kernel_cwd.parents):
                candidate = base / self.path
                if candidate.exists():
                    return candidate.resolve()
        return None

    def count_reply(self, op: str, result: dict[str, Any]) -> None:
        """Count a successful reply to ``op`` among the changes of the page's document, and
        stamp ``result`` with the counts as they stand now (``CHANGES_SEEN``, ``SOURCES_SEEN``)."""
        if op in CHANGING_OPS:
            self.changes += 1
        self.source_changes += op in SOURCE_OPS
        result[CHANGES_SEEN] = (self.serial, self.changes)
        result[SOURCES_SEEN] = (self.serial, self.source_changes)

    def count_notice(self, sources: bool) -> None:
        """Count a ``changed`` notice (``sources``: the cells' ids, types or sources may
        have changed)."""
        self.changes += 1
        self.source_changes += sources
