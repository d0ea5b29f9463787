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


class IdentityMemo(Generic[V]):
    """A bounded map from a tuple of objects (by identity) to a value.

    Each entry holds its key objects, so their ids cannot be reused by other objects while
    the entry lives; the least recently used entry goes first once ``size`` is reached.
    """

    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[int, ...], tuple[tuple[object, ...], V]] = OrderedDict()

    def get(self, *keys: object) -> V | None:
        ids = tuple(map(id, keys))
        entry = self._entries.get(ids)
        if entry is None:
            return None
        self._entries.move_to_end(ids)
        return entry[1]

    def put(self, keys: tuple[object, ...], value: V) -> V:
        self._entries[tuple(map(id, keys))] = (keys, value)
        if len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._entries)
