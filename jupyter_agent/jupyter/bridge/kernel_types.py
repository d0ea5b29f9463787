"""The types of what the kernel hands this package, as the parts of them it uses.

``Comm`` is what every comm of ours is used for (``comm.base_comm.BaseComm``'s methods, as
ipykernel makes them): the bridge's, the side panel's, outside agents' and the run view's.
``Shell`` is what we read of IPython's ``InteractiveShell`` (the running one, or a test's);
``Kernel`` and ``CommManager`` what we use of the ipykernel instance a shell in a kernel has
(terminal IPython has none: :func:`kernel_of` says None there). Protocols, so nothing here
imports ipykernel, IPython or ``comm``, and a test's fake comm (a recorder of sends) or
shell is one too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, cast


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


class Events(Protocol):
    """IPython's ``EventManager``: callbacks around each cell (``pre_run_cell``, ...)."""

    def register(self, event: str, function: Callable[..., Any]) -> None:
        """Call ``function`` on ``event``."""

    def unregister(self, event: str, function: Callable[..., Any]) -> None:
        """Stop calling ``function``; ValueError when it was not registered."""


class DisplayHook(Protocol):
    """IPython's ``DisplayHook``: what sets ``_`` after a cell."""

    def update_user_ns(self, result: Any) -> None:
        """Make ``result`` the last result (``_``, ``Out``)."""


class Shell(Protocol):
    """What we read of IPython's ``InteractiveShell``: the user's namespace, the cell events,
    the display hook, the magics and input transformers ``%load_ext`` registers, the
    configurables ``%config`` reaches. A shell in a kernel has a ``kernel`` too: :func:`kernel_of`."""

    @property
    def user_ns(self) -> dict[str, Any]:
        """The user's variables."""

    @property
    def user_ns_hidden(self) -> dict[str, Any]:
        """Names IPython put in ``user_ns`` itself (``In``, ``Out``, ``get_ipython``, ...)."""

    @property
    def events(self) -> Events:
        """The cell events."""

    @property
    def displayhook(self) -> DisplayHook:
        """What sets ``_`` after a cell."""

    @property
    def configurables(self) -> list[Any]:
        """The objects ``%config`` lists and configures."""

    @property
    def input_transformers_cleanup(self) -> list[Callable[[list[str]], list[str]]]:
        """Transformers of a cell's lines, before IPython's own."""

    @property
    def magics_manager(self) -> Any:
        """The registry of magics (``magics[kind]``, ``registry``)."""

    def register_magics(self, *objs: Any) -> None:
        """Register a ``Magics`` class or instance."""


class CommManager(Protocol):
    """A kernel's comm manager: the targets a page opens comms to, and the comms open."""

    comms: Mapping[str, Any]

    def register_target(self, target_name: str, f: Callable[..., Any]) -> None:
        """Call ``f(comm, open_msg)`` for each comm opened to ``target_name``."""

    def unregister_target(self, target_name: str, f: Callable[..., Any] | None) -> Any:
        """Stop answering ``target_name``."""


class Kernel(Protocol):
    """What we use of the ipykernel instance: its comm manager and the request being handled."""

    comm_manager: CommManager

    def get_parent(self, channel: str | None = None) -> dict[str, Any]:
        """The message (header, metadata, content) the kernel is handling."""


def kernel_of(shell: Shell | None) -> Kernel | None:
    """``shell``'s kernel; None for terminal IPython or plain Python (no comms, no page)."""
    return cast("Kernel | None", getattr(shell, "kernel", None))


def comm_manager_of(shell: Shell | None) -> CommManager | None:
    """The comm manager of ``shell``'s kernel, if it has one."""
    return cast("CommManager | None", getattr(kernel_of(shell), "comm_manager", None))
