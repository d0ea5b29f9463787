"""Results of pure functions of history messages, remembered by the messages' identity.

The whole history is resent on every turn, and its messages are never mutated (the loop
builds new dicts for what changes), so work done on a message once — cleaning it for the
wire, checking its tool calls are answered, applying the result budget — holds for as
long as the message lives. Looking it up by identity keeps the loop's own time per turn
flat as the history grows, instead of a walk of the whole history on every turn.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

V = TypeVar("V")

#: Entries a memo keeps by default: a long run's whole history.
DEFAULT_SIZE = 4096


#: ``get``'s default for ``other``: the entry is keyed by one object.
_ONE = object()


class IdentityMemo(Generic[V]):
    """A bounded map from one object, or a pair, (by identity) to a value.

    Each entry holds its key objects, so their ids cannot be reused by other objects while
    the entry lives; the least recently used entry goes first once ``size`` is reached.
    A lookup runs once per history message on every turn, so it builds no tuple for one
    object (its ``id`` is the key).
    """

    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        self.size = size
        self._entries: OrderedDict[int | tuple[int, ...], tuple[tuple[object, ...], V]] = OrderedDict()

    def get(self, key: object, other: object = _ONE) -> V | None:
        """The value remembered for ``key`` (or for the pair ``key``, ``other``), or None."""
        ids = id(key) if other is _ONE else (id(key), id(other))
        entry = self._entries.get(ids)
        if entry is None:
            return None
        self._entries.move_to_end(ids)
        return entry[1]

    def put(self, keys: tuple[object, ...], value: V) -> V:
        """Remember ``value`` for ``keys`` (one object, or a pair) and return it."""
        ids = id(keys[0]) if len(keys) == 1 else tuple(map(id, keys))
        self._entries[ids] = (keys, value)
        if len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._entries)
