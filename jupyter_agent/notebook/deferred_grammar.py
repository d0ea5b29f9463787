"""Keep ``import nbformat`` from building the RFC 3987 grammar (docs/design.md, "Kernel start
and nbformat").

nbformat imports jsonschema, whose format checkers import ``rfc3987_syntax`` when it is
installed; that module builds a ``lark`` Earley parser at import time (~1.9 s of CPU, at
every kernel start that loads the extension). Nothing here validates an IRI, so
:func:`defer_iri_grammar` puts a stand-in in ``sys.modules`` first: jsonschema registers
its "iri" checker as before, and the real module is imported the first time anything
uses it (its checker included), so nobody's IRI validation changes. Importing this module
does it (``jupyter_agent.notebook`` imports it before anything imports nbformat).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
import threading
import types
from typing import Any

__all__ = ["GRAMMAR_MODULE", "defer_iri_grammar"]

log = logging.getLogger(__name__)

GRAMMAR_MODULE = "rfc3987_syntax"
_lock = threading.Lock()


class _DeferredGrammar(types.ModuleType):
    """Stands in for ``rfc3987_syntax`` until something uses it, then is the real module."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            # Tools that walk sys.modules (inspect.getmodule for a traceback, pickling)
            # probe dunders: answering them must not build the grammar in the foreground.
            raise AttributeError(name)
        return getattr(_real_module(), name)


def _real_module() -> types.ModuleType:
    with _lock:
        current = sys.modules.get(GRAMMAR_MODULE)
        if isinstance(current, _DeferredGrammar):
            del sys.modules[GRAMMAR_MODULE]
        log.debug("loading %s (builds its grammar) on first use", GRAMMAR_MODULE)
        return importlib.import_module(GRAMMAR_MODULE)


def _is_valid_syntax(term: str, value: str) -> Any:
    """``rfc3987_syntax.is_valid_syntax``, imported on first call (jsonschema binds this
    name at its import, so it is a function here rather than a module attribute)."""
    return _real_module().is_valid_syntax(term, value)


def defer_iri_grammar() -> bool:
    """Put the stand-in in ``sys.modules`` unless jsonschema's format checkers or the real
    module are loaded already, or the package is not installed. Returns whether the
    stand-in is (now) in place."""
    with _lock:
        current = sys.modules.get(GRAMMAR_MODULE)
        if isinstance(current, _DeferredGrammar):
            return True
        if current is not None or "jsonschema._format" in sys.modules:
            return False  # too late: the grammar is built, or jsonschema has bound the real one
        spec = importlib.util.find_spec(GRAMMAR_MODULE)
        if spec is None:
            return False
        stand_in = _DeferredGrammar(GRAMMAR_MODULE, __doc__)
        # The real spec and package path: importing one of its submodules directly finds
        # it without loading the package through the stand-in first.
        stand_in.__spec__ = spec
        stand_in.__file__ = spec.origin
        stand_in.__path__ = list(spec.submodule_search_locations or [])
        stand_in.is_valid_syntax = _is_valid_syntax  # type: ignore[attr-defined]
        sys.modules[GRAMMAR_MODULE] = stand_in
        return True


defer_iri_grammar()
