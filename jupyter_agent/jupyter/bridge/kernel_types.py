"""The types of what the kernel hands this package, as the parts of them it uses.

``Comm`` is what every comm of ours is used for (``comm.base_comm.BaseComm``'s methods, as
ipykernel makes them): the bridge's, the side panel's, outside agents' and the run view's.
A ``Protocol``, so nothing here imports ipykernel or ``comm``, and a test's fake comm (a
recorder of sends) is one too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class Comm(Protocol):
    """One comm to the page: what we send, close and listen on."""

    def send(self, data: Any = None, metadata: Any = None, buffers: Any = None) -> None:
        """Send one message to the page."""

    def close(self, data: Any = None, metadata: Any = None, buffers: Any = None, deleting: bool = False) -> None:
        """Close the comm (the page is told)."""

    def on_msg(self, callback: Callable[[dict[str, Any]], Any] | None) -> None:
        """Call ``callback`` with each message the page sends."""

    def on_close(self, callback: Callable[[dict[str, Any]], Any] | None) -> None:
        """Call ``callback`` when the page closes the comm."""
