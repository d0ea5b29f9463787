"""What the agent is told about the kernel's variables, without running the user's code.

At the start of each run (``%%agent``, ``chat()``, the side panel) the agent gets a short
list of the user's variables: name, type, and for data the shape, plus the columns and
dtypes of a data frame. "What is in ``df``?" then needs no tool call.

The listing must never run code of the user's objects: a ``__repr__``, a ``shape``
property, a ``__getattr__``, ``__len__`` or ``__class__`` of a user class may be slow,
raise, or have effects (open a connection, consume an iterator). So:

- the type comes from ``type(obj)`` (never ``obj.__class__``), and its name from the
  ``type`` descriptors themselves (a metaclass cannot override them);
- ``isinstance`` is not used (it may consult ``obj.__class__`` or a metaclass's
  ``__instancecheck__``); containers are found by walking ``type(obj).__mro__``;
- a shape is read only for the array and frame types of numpy and pandas, recognised by
  identity: the real classes are looked up in the already imported modules
  (``sys.modules``, never imported here) and ``type(obj)`` must be one of them exactly.
  A subclass, wherever it was defined, gets its type name only (it may override what the
  library's code calls), and so does a class that merely calls itself ``numpy.ndarray``
  (a ``__module__`` or ``__qualname__`` is a claim, not an identity);
- a dtype is spelt out only when its type is numpy's own ``dtype`` or a dtype class of
  pandas (again by identity);
- lengths only for the builtin containers, through the builtin's own ``__len__``;
- values only for builtin scalars and short strings (a secret-looking name hides it).

It runs on the kernel thread at run start and is cheap: ``benchmarks/bench_context.py``
lists 1,000 variables including a million-row data frame.
"""

from __future__ import annotations

import collections
import logging
import re
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from ...redact import redact
from ..bridge.kernel_types import Shell

log = logging.getLogger(__name__)

#: The ``type`` descriptors: calling them directly bypasses anything a metaclass defines.
_NAME_OF = type.__dict__["__qualname__"].__get__
_MODULE_OF = type.__dict__["__module__"].__get__
_MRO_OF = type.__dict__["__mro__"].__get__
_DICT_OF = type.__dict__["__dict__"].__get__
_FUNCTION_MODULE = types.FunctionType.__dict__["__module__"].__get__

#: Names IPython puts in the namespace (besides ``_``-names, always skipped).
IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.I)
_SCALARS = (bool, int, float, complex, type(None))
_CONTAINERS = (list, tuple, dict, set, frozenset, bytes, bytearray, str, range, collections.deque)
#: The agent's own objects (runs, panels, its functions and classes) are not the user's data.
_SKIP_MODULES = ("jupyter_agent",)

MAX_NAMES = 100
MAX_CHARS = 4000
MAX_COLUMNS = 30
MAX_VALUE = 60


def _among(cls: type, classes: Iterable[type]) -> bool:
    """``cls in classes`` by identity (``in`` would call a metaclass's ``__eq__``)."""
    return any(cls is c for c in classes)


def _type_name(cls: type) -> str:
    """How a type is named in the listing: the library's public name for a known class
    (``pandas.DataFrame``), else the name the class gives itself, marked when it takes the
    name of a known class it is not."""
    known = _known.names.get(id(cls))
    if known is not None and _known.by_id.get(id(cls)) is cls:
        return known
    module, name = _MODULE_OF(cls), _NAME_OF(cls)
    module = module if type(module) is str else "?"
    name = name if type(name) is str else "?"
    label = name if module in ("builtins", "__main__") else f"{module}.{name}"
    if label in _known.labels:
        return f"{label} (a look-alike, not that library's class)"
    return label


def _static(cls: type, attr: str, obj: object) -> Any:
    """``obj.attr`` as the library class ``cls`` defines it (never the object's own): any
    value the library keeps there."""
    for base in _MRO_OF(cls):
        namespace = _DICT_OF(base)
        if attr in namespace:
            descriptor = namespace[attr]
            getter = getattr(type(descriptor), "__get__", None)
            return getter(descriptor, obj, cls) if getter is not None else descriptor
    raise AttributeError(attr)


def _safe_label(value: object) -> str:
    """A column name or series name; only builtin scalar and string labels are spelt out."""
    # (``type(value) is C``, never isinstance, which a metaclass could answer; spelt out each
    # time: the type checker then knows what ``value`` is)
    kind = type(value)
    if type(value) is str:
        return value if len(value) <= MAX_VALUE else value[: MAX_VALUE - 1] + "…"
    if _among(kind, _SCALARS) and not (type(value) is int and value.bit_length() > 64):
        return repr(value)
    if type(value) is tuple and len(value) <= 4:
        return "(" + ", ".join(repr(_safe_label(v)) if type(v) is str else _safe_label(v) for v in value) + ")"
    return f"<{_type_name(kind)}>"


def _dtype_text(dtype: object) -> str:
    kind = type(dtype)
    numpy_dtype = _known.numpy_dtype
    if numpy_dtype is not None and _among(numpy_dtype, _MRO_OF(kind)):
        # numpy's own dtypes (its C subclasses too; Python code cannot subclass them), in the
        # library's spelling: int64, datetime64[ns]
        return cast(Callable[[object], str], numpy_dtype.__str__)(dtype)
    if _among(kind, _known.pandas_dtypes):
        return str(dtype)  # exactly a pandas dtype class: category, str, Int64
    return f"<{_type_name(kind)}>"


def _shape_text(shape: object) -> str:
    if type(shape) is tuple and all(type(n) is int for n in shape):
        return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"
    return "?"


def _frame(obj: object, cls: type) -> str:
    rows, ncols = _static(cls, "shape", obj)
    columns = _static(cls, "columns", obj)
    dtypes = _static(cls, "dtypes", obj)
    shown = min(ncols, MAX_COLUMNS)
    names = list(columns[:shown])
    kinds = list(dtypes.iloc[:shown])
    parts = [f"{_safe_label(n)} {_dtype_text(k)}" for n, k in zip(names, kinds)]
    more = f", … {ncols - shown} more" if ncols > shown else ""
    return f"{rows} rows × {ncols} columns; columns: {', '.join(parts)}{more}"


def _array(obj: object, cls: type) -> str:
    return f"shape {_shape_text(_static(cls, 'shape', obj))}, dtype {_dtype_text(_static(cls, 'dtype', obj))}"


def _series(obj: object, cls: type) -> str:
    text = f"length {_static(cls, 'shape', obj)[0]}, dtype {_dtype_text(_static(cls, 'dtype', obj))}"
    name = _static(cls, "name", obj)
    return text if name is None else f"{text}, name {_safe_label(name)}"


#: (module, class names, describe) for the array and frame types whose shape is shown;
#: only objects of exactly these classes (the module's own, by identity) are described.
KNOWN_TYPES: tuple[tuple[str, tuple[str, ...], Callable[[object, type], str]], ...] = (
    ("pandas", ("DataFrame",), _frame),
    ("pandas", ("Series",), _series),
    ("pandas", ("Index", "RangeIndex", "DatetimeIndex", "TimedeltaIndex", "PeriodIndex",
                "CategoricalIndex", "IntervalIndex", "MultiIndex"), _array),
    ("numpy", ("ndarray",), _array),
)


class _KnownClasses:
    """The real classes of :data:`KNOWN_TYPES` in this kernel, found in ``sys.modules``
    (a library not imported yet has no objects to describe: nothing is imported here)."""

    def __init__(self) -> None:
        self.by_id: dict[int, type] = {}
        self.describe: dict[int, Callable[[object, type], str]] = {}
        self.names: dict[int, str] = {}
        self.labels: set[str] = set()
        self.numpy_dtype: type | None = None
        self.pandas_dtypes: tuple[type, ...] = ()

    @classmethod
    def loaded(cls) -> _KnownClasses:
        """The known classes of the libraries imported now."""
        self = cls()
        for module_name, class_names, describe in KNOWN_TYPES:
            self.labels.update(f"{module_name}.{name}" for name in class_names)
            namespace = _module_namespace(module_name)
            for name in class_names:
                known = namespace.get(name)
                if type(known) is type:  # the libraries' classes have no metaclass
                    self.by_id[id(known)] = known
                    self.describe[id(known)] = describe
                    self.names[id(known)] = f"{module_name}.{name}"
        numpy_dtype = _module_namespace("numpy").get("dtype")  # its metaclass is numpy's own
        self.numpy_dtype = numpy_dtype if _among(type, _MRO_OF(type(numpy_dtype))) else None
        self.pandas_dtypes = tuple(value for name, value in _module_namespace("pandas").items()
                                   if type(name) is str and name.endswith("Dtype") and type(value) is type)
        return self

    def find(self, cls: type) -> Callable[[object, type], str] | None:
        """How to describe an object whose type is exactly ``cls``, if it is a known class."""
        return self.describe.get(id(cls)) if self.by_id.get(id(cls)) is cls else None


def _module_namespace(name: str) -> dict[str, Any]:
    """The namespace of the imported module ``name`` (empty when not imported); read from
    the module's dictionary (a module ``__getattr__`` is never called)."""
    module = sys.modules.get(name)
    if type(module) is not types.ModuleType:
        return {}
    namespace = _MODULE_DICT(module)
    return namespace if type(namespace) is dict else {}


_MODULE_DICT = cast(Callable[[types.ModuleType], Any], vars(types.ModuleType)["__dict__"].__get__)
_known = _KnownClasses()


def describe(name: str, obj: Any) -> str:
    """One line about ``obj``: its type and what can be known without running its code."""
    cls = type(obj)
    label = _type_name(cls)
    if _among(cls, _SCALARS):
        if cls is int and obj.bit_length() > 64:
            return f"{label} ({obj.bit_length()} bits)"
        return f"{label} = {_value(name, repr(obj))}"
    mro = _MRO_OF(cls)
    describe_known = _known.find(cls)
    if describe_known is not None:
        try:
            return f"{label}, {describe_known(obj, cls)}"
        except Exception:  # an odd object of a known type: the type alone will do
            log.debug("could not describe %s %r", label, name, exc_info=True)
            return label
    for container in _CONTAINERS:
        if _among(container, mro):
            size = container.__len__(obj)
            if container is str:
                text = str.__repr__(obj) if size <= MAX_VALUE else None
                return f"{label} = {_value(name, text)}" if text else f"{label}, length {size}"
            return f"{label}, length {size}"
    if _among(type, mro):
        return "class"
    return label


def _value(name: str, text: str) -> str:
    if _SECRET_NAME.search(name):
        return "(hidden: the name looks like a secret)"
    return redact(text)


def _skip(name: str, obj: object, hidden: Mapping[str, object]) -> bool:
    if name.startswith("_") or name in IPYTHON_NAMES:
        return True
    if name in hidden and hidden[name] is obj:
        return True  # put there by IPython at startup
    cls = type(obj)
    mro = _MRO_OF(cls)
    if _among(types.ModuleType, mro):
        return True
    # the agent's own objects, and functions and classes imported from it
    module = (_FUNCTION_MODULE(obj) if cls is types.FunctionType
              else _MODULE_OF(obj) if _among(type, mro) else _MODULE_OF(cls))
    return type(module) is str and module.startswith(_SKIP_MODULES)


def kernel_variables(namespace: Mapping[str, object], *, hidden: Mapping[str, object] | None = None,
                     max_names: int = MAX_NAMES, max_chars: int = MAX_CHARS) -> list[str]:
    """One line per user variable of ``namespace`` (``name: description``), newest
    ``max_names`` names at most and about ``max_chars`` characters in all; the last line
    says how many were left out."""
    global _known
    _known = _KnownClasses.loaded()
    names = [(k, v) for k, v in list(namespace.items())
             if type(k) is str and not _skip(k, v, hidden or {})]
    left_out = max(0, len(names) - max_names)
    lines: list[str] = []
    size = 0
    for name, obj in names[left_out:]:
        try:
            line = f"{name}: {describe(name, obj)}"
        except Exception:  # never let one odd object cost the listing
            log.debug("could not describe %r", name, exc_info=True)
            line = f"{name}: {_type_name(type(obj))}"
        if size + len(line) > max_chars:
            left_out += len(names) - left_out - len(lines)
            break
        lines.append(line)
        size += len(line) + 1
    if left_out:
        lines.append(f"({left_out} more names not listed)")
    return lines


def variables_reminder(shell: Shell | None) -> str:
    """The text the agent gets at run start about ``shell``'s variables ("" without a shell)."""
    namespace = getattr(shell, "user_ns", None)
    if not isinstance(namespace, dict):
        return ""
    lines = kernel_variables(namespace, hidden=getattr(shell, "user_ns_hidden", None))
    if not lines:
        return ("<system-reminder>\nThe user's kernel has no variables defined yet.\n</system-reminder>\n")
    listing = "\n".join(f"- {line}" for line in lines)
    return ("<system-reminder>\nVariables in the user's kernel when this message was sent "
            "(name: type, shape; values only for short scalars). Use them by name in the "
            f"cells you write:\n{listing}\n</system-reminder>\n")
