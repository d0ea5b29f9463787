"""Which top-level names a cell created or rebound in its kernel, found without running
the user's code: the namespace's names and the ids of their objects, before and after.

Only names and ``id()`` are read (no ``repr``, no attribute, no ``__eq__`` of a user's
object). A name rebound to a new object that happens to get the old one's id (the old
object was freed first) is not seen; a name whose object was changed in place (a list
appended to) is not a rebinding either.
"""

from __future__ import annotations

import ast
import json
import logging
from collections.abc import Mapping
from typing import Any

log = logging.getLogger(__name__)

#: What the kernel evaluates for a kernel that is not this process (a notebook file's
#: kernel): names and ids as JSON, IPython's own names and ``_``-names left out.
NAMESPACE_EXPRESSION = (
    "__import__('json').dumps({k: id(v) for k, v in globals().items() if not k.startswith('_') "
    "and k not in get_ipython().user_ns_hidden})"
)


def namespace_ids(user_ns: Mapping[str, Any], hidden: Mapping[str, Any] | None = None) -> dict[str, int]:
    """The names of ``user_ns`` (without ``_``-names and IPython's ``hidden`` ones) and the
    ids of their objects."""
    hidden = hidden or {}
    return {name: id(value) for name, value in list(user_ns.items())
            if isinstance(name, str) and not name.startswith("_") and name not in hidden}


def parse_namespace_reply(value: Any) -> dict[str, int] | None:
    """The ids from a kernel's ``user_expressions`` reply of :data:`NAMESPACE_EXPRESSION`."""
    try:
        text = ast.literal_eval(value["data"]["text/plain"])
        data = json.loads(text)
    except (KeyError, TypeError, ValueError, SyntaxError):
        log.debug("the kernel's namespace reply was not readable: %r", value, exc_info=True)
        return None
    return {str(k): int(v) for k, v in data.items()} if isinstance(data, dict) else None


def changed_names(before: Mapping[str, int] | None, after: Mapping[str, int] | None) -> tuple[str, ...]:
    """Names new in ``after`` or bound to another object than in ``before``, in order."""
    if before is None or after is None:
        return ()
    return tuple(name for name, ident in after.items() if before.get(name) != ident)
