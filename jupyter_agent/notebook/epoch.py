"""Which kernel a conversation ran its cells in, per notebook: a restarted kernel is an error.

A kernel of the pool can be replaced under a conversation: it died (a cell killed it) and
the next run started a fresh one, or someone restarted it (its manager's
``restart_kernel``, a client of its connection file). A fresh kernel has none of the
variables the conversation built, so a cell run there silently would compute from
nothing. Each kernel process has its own identity (``NotebookKernel.identity``: its process
id when it runs here, known without asking it; else the session id of its replies, the
``session`` of every reply's header); :class:`KernelEpochs` remembers the one the
conversation last ran a cell in, and
the first run in another raises :class:`KernelRestartedError` (nothing runs). The next
run goes ahead in the fresh kernel: the model has been told. A restart the agent asked
for itself (``NotebookRestart``) is no surprise: :meth:`KernelEpochs.forget`.
"""

from __future__ import annotations

import logging

from .document import NotebookError

log = logging.getLogger(__name__)

#: Names listed in the error at most (the rest are counted).
MAX_NAMES_SHOWN = 60


def names_shown(names: list[str], most: int = MAX_NAMES_SHOWN) -> str:
    """``a, b, c and 12 more``: the first ``most`` names and how many were left out."""
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


class KernelRestartedError(NotebookError):
    """The notebook's kernel is not the one this conversation ran its cells in (it was
    restarted, or it died and a fresh one started): the call ran nothing."""

    def __init__(self, path: str, gone: list[str] | None) -> None:
        self.path = path
        #: the names the old kernel held (None: not known)
        self.gone = gone
        if gone:
            lost = f"Its variables are gone: {names_shown(gone)}."
        else:
            lost = "Everything it held is gone."
        super().__init__(
            f"The kernel of {path} was restarted since this conversation last ran a cell in it (someone restarted "
            f"it, or it died and a fresh kernel started), so this call ran nothing. {lost} The next NotebookRun "
            "runs in the fresh kernel: run the cells that define what you need again, in order.")


class KernelEpochs:
    """The kernel (its session id) each notebook's cells last ran in, and the names it held."""

    def __init__(self) -> None:
        self._known: dict[str, str] = {}
        self._names: dict[str, list[str]] = {}

    def check(self, key: str, identity: str | None) -> None:
        """Before a cell runs in the kernel ``identity`` (None: it did not say, nothing is
        checked): raise :class:`KernelRestartedError` once when it is not the kernel of
        the last run, and take it as the notebook's kernel from now on."""
        if identity is None:
            return
        known = self._known.get(key)
        self._known[key] = identity
        if known is not None and known != identity:
            log.info("the kernel of %s was replaced (%s -> %s)", key, known, identity)
            raise KernelRestartedError(key, self._names.pop(key, None))

    def saw(self, key: str, names: list[str]) -> None:
        """The names the notebook's kernel holds after a run (what a restart loses)."""
        self._names[key] = sorted(names)

    def forget(self, key: str) -> None:
        """The agent restarted the kernel itself: the next kernel is expected."""
        self._known.pop(key, None)
        self._names.pop(key, None)


__all__ = ["KernelEpochs", "KernelRestartedError"]
