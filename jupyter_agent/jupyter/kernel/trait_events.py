"""What traitlets passes to a ``@validate`` method and to an ``observe`` handler, typed.

traitlets passes each as a ``Bunch`` (a dict with attribute access) and types it as no more
than that: a dict of anything. These say which keys our handlers read and what the values
are: the value proposed or changed is already of the trait's type (a ``Unicode`` trait's is a
str, a ``Float``'s a float). The other keys traitlets puts there (``trait``, ``owner``,
``type``) are left out: no handler of ours reads them.
"""

from __future__ import annotations

from typing import Generic, TypedDict, TypeVar

_V = TypeVar("_V")


class Proposal(TypedDict, Generic[_V]):
    """A ``@validate`` method's argument: the value proposed for the trait."""

    value: _V


class Change(TypedDict, Generic[_V]):
    """An ``observe`` handler's argument (``type="change"``): which trait changed, its old and
    new value (a handler of several traits of different types takes ``Change[object]``)."""

    name: str
    old: _V
    new: _V
