"""The typed slot a conversation's tools keep their shared parts in.

The loop carries a :class:`Services` on every ``ToolContext`` and never looks inside: the
packages that own a part (the notebook tools' kernels and documents, a search backend's
setting) define its class, and ask for it by that class. A part is made on first use, by
calling its class with no arguments, and shared by every call of the conversation (a
call's context is a copy that keeps the same ``Services``).
"""

from __future__ import annotations

from typing import TypeVar

Part = TypeVar("Part")


class Services:
    """Parts of one conversation, one per class, found by their class.

    ``Services(part, ...)`` starts with those parts (each under its own class: a test or a
    front that wants a particular one in place before the first call); :meth:`get` returns
    the part of a class, making it with ``kind()`` if there is none yet.
    """

    def __init__(self, *parts: object) -> None:
        self._parts: dict[type[object], object] = {}
        for part in parts:
            self.put(part)

    def get(self, kind: type[Part]) -> Part:
        """The part of class ``kind``, made with ``kind()`` on first use."""
        part = self._parts.get(kind)
        if part is None:
            part = self._parts.setdefault(kind, kind())
        assert isinstance(part, kind)  # put() keys every part by its own class
        return part

    def put(self, part: object) -> None:
        """Use ``part`` for its class from now on (replacing any part of that class)."""
        self._parts[type(part)] = part

    def __repr__(self) -> str:
        return f"Services({', '.join(sorted(kind.__name__ for kind in self._parts))})"
