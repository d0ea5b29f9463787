"""What an ``AgentSession`` holds of the owner of what is kernel-wide, typed as the rooms
below ``magic/`` read it.

The owner is ``magic/kernel_services.py``'s ``KernelServices`` (``session.services``), which
this room may not import (tests/test_package_graph.py): :class:`Services` is the part of it
that ``kernel/`` and the rooms above it up to ``panel/`` see, so reading it stays typed. An
outside agent's ask reads ``services.panel_hub`` (:class:`PanelsOpen`: is a side panel there
to show the card?); the live notebook's parts are ``services.links``. :class:`SessionRun` is what
the session's list of runs holds, of whichever room each kind comes from.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ..bridge.kernel_types import Comm

if TYPE_CHECKING:
    from ...changes import RunChanges, UndoReport
    from ...loop.state import Terminal
    from ...view.runmodel import RunModel
    from ..bridge.kernel_links import KernelLinks


class PanelsOpen(Protocol):
    """What the rooms below ``panel/`` read of its side panels' hub (``PanelHub``): the
    panels' open comms (none: no side panel follows this kernel)."""

    @property
    def comms(self) -> Sequence[Comm]:
        """The side panels' comms, open now."""


class Services(Protocol):
    """What the session holds of ``magic/kernel_services.py``'s ``KernelServices``, the owner
    of what is kernel-wide (this room may not import ``magic/``), typed as the rooms below
    read it."""

    @property
    def links(self) -> KernelLinks:
        """The bridge, the execution tracker and the kernel's client of itself."""

    @property
    def panel_hub(self) -> PanelsOpen | None:
        """The side panels' hub, while the extension is loaded in a kernel."""

    def start(self) -> None:
        """Start every part (``%load_ext``)."""

    def close(self) -> None:
        """Close every part (``%unload_ext``)."""


class SessionRun(Protocol):
    """A run of the session (``session.runs``, ``session.listeners``), whichever kind: an
    ``AgentRun`` (``widgets/``), an outside agent's calls (``outside/``'s ``OutsideRun``, a room
    above this one) or a run brought back by ``%agent resume`` (``persistence/``'s
    ``ResumedRun``); what ``%agent runs``, ``%agent undo`` and the status read of each."""

    @property
    def display_id(self) -> str:
        """Its id among the kernel's runs (the side panel's key for it)."""

    @property
    def prompt(self) -> str:
        """What was asked (for an outside agent: whose calls these are)."""

    @property
    def model(self) -> RunModel:
        """What the views draw of it."""

    @property
    def terminal(self) -> Terminal | None:
        """How it ended (None: not ended)."""

    @property
    def done(self) -> bool:
        """Whether nothing of it is going on now."""

    @property
    def changes(self) -> RunChanges | None:
        """What it changed, for an undo (None: not recorded)."""

    def undo(self) -> asyncio.Task[UndoReport]:
        """Put back what it changed."""

    def stop(self) -> None:
        """Stop what of it is going on."""
