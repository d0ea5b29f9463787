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
  ``__instancecheck__``): known types are found by walking ``type(obj).__mro__``;
- a shape is read only for known array and frame types (numpy, pandas), through the
  library's own descriptor looked up on the library's class, and only when every class
  between ``type(obj)`` and that class comes from a trusted library (a user subclass
  could override what the library's code calls);
- lengths only for the builtin containers, through the builtin's own ``__len__``;
- values only for builtin scalars and short strings (a secret-looking name hides it).

It runs on the kernel thread at run start and is cheap: ``benchmarks/bench_context.py``
lists 1,000 variables including a million-row data frame.
"""

from __future__ import annotations

import collections
import re
import types
from typing import Any, Mapping

from ..redact import redact

#: The ``type`` descriptors: calling them directly bypasses anything a metaclass defines.
_NAME_OF = type.__dict__["__qualname__"].__get__
_MODULE_OF = type.__dict__["__module__"].__get__
_MRO_OF = type.__dict__["__mro__"].__get__
_DICT_OF = type.__dict__["__dict__"].__get__
_FUNCTION_MODULE = types.FunctionType.__dict__["__module__"].__get__

#: Names IPython puts in the namespace (besides ``_``-names, always skipped).
IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})
#: Libraries whose classes may stand between an object's type and a known type.
TRUSTED_MODULES = ("numpy", "pandas", "builtins")
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.I)
_SCALARS = (bool, int, float, complex, type(None))
_CONTAINERS = (list, tuple, dict, set, frozenset, bytes, bytearray, str, range, collections.deque)
#: The agent's own objects (runs, panels, its functions and classes) are not the user's data.
_SKIP_MODULES = ("jupyter_agent",)

MAX_NAMES = 100
MAX_CHARS = 4000
MAX_COLUMNS = 30
MAX_VALUE = 60


def _among(cls: type, classes: Any) -> bool:
    """``cls in classes`` by identity (``in`` would call a metaclass's ``__eq__``)."""
    return any(cls is c for c in classes)


def _type_name(cls: type) -> str:
    module, name = _MODULE_OF(cls), _NAME_OF(cls)
    module = module if type(module) is str else "?"
    if module in ("builtins", "__main__"):
        return name
    if module.startswith(("pandas.", "numpy.")) and "." not in name:
        return f"{module.split('.')[0]}.{name}"  # pandas.core.frame.DataFrame -> pandas.DataFrame
    return f"{module}.{name}"


def _known_base(cls: type, module: str, name: str) -> type | None:
    """The class ``module.name`` in ``cls``'s MRO, if every class before it is trusted."""
    for base in _MRO_OF(cls):
        base_module = _MODULE_OF(base)
        if type(base_module) is not str:
            return None
        if _NAME_OF(base) == name and (base_module == module or base_module.startswith(module + ".")):
            return base
        if not base_module.startswith(TRUSTED_MODULES):
            return None  # a user class sits in between: it may override what the library calls
    return None


def _static(cls: type, attr: str, obj: Any) -> Any:
    """``obj.attr`` as the library class ``cls`` defines it (never the object's own)."""
    for base in _MRO_OF(cls):
        namespace = _DICT_OF(base)
        if attr in namespace:
            descriptor = namespace[attr]
            getter = getattr(type(descriptor), "__get__", None)
            return getter(descriptor, obj, cls) if getter is not None else descriptor
    raise AttributeError(attr)


def _safe_label(value: Any) -> str:
    """A column name or series name; only builtin scalar and string labels are spelt out."""
    kind = type(value)
    if kind is str:
        return value if len(value) <= MAX_VALUE else value[: MAX_VALUE - 1] + "…"
    if _among(kind, _SCALARS) and not (kind is int and value.bit_length() > 64):
        return repr(value)
    if kind is tuple and len(value) <= 4:
        return "(" + ", ".join(repr(_safe_label(v)) if type(v) is str else _safe_label(v) for v in value) + ")"
    return f"<{_type_name(kind)}>"


def _dtype_text(dtype: Any) -> str:
    module = _MODULE_OF(type(dtype))
    if type(module) is str and module.startswith(("numpy", "pandas")):
        return str(dtype)  # the library's own spelling: int64, category, datetime64[ns]
    return f"<{_type_name(type(dtype))}>"


def _shape_text(shape: Any) -> str:
    if type(shape) is tuple and all(type(n) is int for n in shape):
        return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"
    return "?"


def _frame(obj: Any, cls: type) -> str:
    rows, ncols = _static(cls, "shape", obj)
    columns = _static(cls, "columns", obj)
    dtypes = _static(cls, "dtypes", obj)
    shown = min(ncols, MAX_COLUMNS)
    names = list(columns[:shown])
    kinds = list(dtypes.iloc[:shown])
    parts = [f"{_safe_label(n)} {_dtype_text(k)}" for n, k in zip(names, kinds)]
    more = f", … {ncols - shown} more" if ncols > shown else ""
    return f"{rows} rows × {ncols} columns; columns: {', '.join(parts)}{more}"


def _array(obj: Any, cls: type) -> str:
    return f"shape {_shape_text(_static(cls, 'shape', obj))}, dtype {_dtype_text(_static(cls, 'dtype', obj))}"


def _series(obj: Any, cls: type) -> str:
    text = f"length {_static(cls, 'shape', obj)[0]}, dtype {_dtype_text(_static(cls, 'dtype', obj))}"
    name = _static(cls, "name", obj)
    return text if name is None else f"{text}, name {_safe_label(name)}"


#: (module, class name, describe) for the array and frame types whose shape is shown.
KNOWN_TYPES = (
    ("pandas", "DataFrame", _frame),
    ("pandas", "Series", _series),
    ("pandas", "Index", _array),
    ("numpy", "ndarray", _array),
)


def describe(name: str, obj: Any) -> str:
    """One line about ``obj``: its type and what can be known without running its code."""
    cls = type(obj)
    label = _type_name(cls)
    if _among(cls, _SCALARS):
        if cls is int and obj.bit_length() > 64:
            return f"{label} ({obj.bit_length()} bits)"
        return f"{label} = {_value(name, repr(obj))}"
    mro = _MRO_OF(cls)
    for module, known, fn in KNOWN_TYPES:
        if module not in _loaded_roots:
            continue
        base = _known_base(cls, module, known)
        if base is not None:
            try:
                return f"{label}, {fn(obj, base)}"
            except Exception:  # an odd object of a known type: the type alone will do
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


#: Top-level packages of KNOWN_TYPES already imported (nothing here imports them).
_loaded_roots: set[str] = set()


def _skip(name: str, obj: Any, hidden: Mapping[str, Any]) -> bool:
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


def kernel_variables(namespace: Mapping[str, Any], *, hidden: Mapping[str, Any] | None = None,
                     max_names: int = MAX_NAMES, max_chars: int = MAX_CHARS) -> list[str]:
    """One line per user variable of ``namespace`` (``name: description``), newest
    ``max_names`` names at most and about ``max_chars`` characters in all; the last line
    says how many were left out."""
    import sys

    _loaded_roots.clear()
    _loaded_roots.update(root for root in ("numpy", "pandas") if root in sys.modules)
    names = [(k, v) for k, v in list(namespace.items())
             if type(k) is str and not _skip(k, v, hidden or {})]
    left_out = max(0, len(names) - max_names)
    lines: list[str] = []
    size = 0
    for name, obj in names[left_out:]:
        try:
            line = f"{name}: {describe(name, obj)}"
        except Exception:  # never let one odd object cost the listing
            line = f"{name}: {_type_name(type(obj))}"
        if size + len(line) > max_chars:
            left_out += len(names) - left_out - len(lines)
            break
        lines.append(line)
        size += len(line) + 1
    if left_out:
        lines.append(f"({left_out} more names not listed)")
    return lines


def variables_reminder(shell: Any) -> str:
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
