"""Deep, read-only copies (what a snapshot is made of) and the way back to plain data."""

from __future__ import annotations

import copy
from typing import Any


class FrozenDict(dict):
    """A dict that refuses changes (a snapshot's messages and blocks)."""

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("A snapshot is read-only: it shows what the loop held at that step. "
                        "Use thaw(...) to get a copy you can change.")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> Any:  # copy/deepcopy/pickle rebuild it whole, not key by key
        return (FrozenDict, (dict(self),))

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items(), key=lambda kv: str(kv[0]))))


def freeze(value: Any) -> Any:
    """A deep copy of ``value`` that cannot be changed (dicts -> FrozenDict, lists -> tuples)."""
    if isinstance(value, dict):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    if isinstance(value, (str, int, float, bool, type(None))):
        return value
    return copy.deepcopy(value)


def thaw(value: Any) -> Any:
    """Plain, mutable copies of frozen values (FrozenDict -> dict, tuple -> list)."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value
