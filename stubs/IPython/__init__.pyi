# IPython ships types (py.typed), but a few functions of IPython.core.display_functions have
# none; a stub for that module needs its packages to have stubs too, so this one and
# core/__init__.pyi say exactly what IPython 9's own IPython/__init__.py says (its names,
# its lazy ``__getattr__`` with IPython's own return type): nothing here types more or less
# than IPython does.

from typing import Any

from .core import release as release
from .core.interactiveshell import InteractiveShell as InteractiveShell
from .utils.frame import extract_module_locals as extract_module_locals
from .utils.sysinfo import sys_info as sys_info

__all__ = ["start_ipython", "embed", "embed_kernel"]  # noqa: F822 - embed comes through __getattr__, as at runtime

__author__: str
__license__: str
__version__: str
version_info: tuple[int | str, ...]
__patched_cves__: set[str]

# (``embed`` and ``get_ipython`` are imported lazily, through this)
def __getattr__(name: str) -> Any: ...
def __dir__() -> list[str]: ...
def embed_kernel(module=None, local_ns=None, **kwargs): ...  # (untyped in IPython too)
def start_ipython(argv: list[str] | None = None, **kwargs: Any) -> Any: ...
