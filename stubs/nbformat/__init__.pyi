# nbformat 5 ships types (py.typed), but its read/write functions and nbformat.v4's
# builders (v4/nbbase.pyi) have none. A stub for a module needs its packages to have stubs
# too, so this one says what nbformat/__init__.py holds, whole (its ``__all__``, the
# submodules it imports), with those functions typed as they behave; the names it takes
# from nbformat's typed modules are theirs.

from pathlib import Path
from types import ModuleType
from typing import IO

from . import reader as reader
from . import v1 as v1
from . import v2 as v2
from . import v3 as v3
from . import v4 as v4
from ._version import __version__ as __version__
from ._version import version_info as version_info
from .converter import convert as convert
from .notebooknode import NotebookNode as NotebookNode
from .notebooknode import from_dict as from_dict
from .sentinel import Sentinel as Sentinel
from .validator import ValidationError as ValidationError
from .validator import validate as validate

__all__ = [
    "NO_CONVERT",
    "NBFormatError",
    "NotebookNode",
    "Sentinel",
    "ValidationError",
    "__version__",
    "convert",
    "current_nbformat",
    "current_nbformat_minor",
    "from_dict",
    "read",
    "reads",
    "validate",
    "version_info",
    "versions",
    "write",
    "writes",
]

versions: dict[int, ModuleType]
current_nbformat: int
current_nbformat_minor: int

class NBFormatError(ValueError): ...

# (``version=NO_CONVERT``: the notebook's own version)
NO_CONVERT: Sentinel

# ``capture_validation_error``: a dict that gets the ValidationError under "ValidationError"
# (otherwise it is logged)
def reads(s: str | bytes, as_version: int | Sentinel, capture_validation_error: dict[str, object] | None = None,
          **kwargs: object) -> NotebookNode: ...
def writes(nb: NotebookNode, version: int | Sentinel = ..., capture_validation_error: dict[str, object] | None = None,
           **kwargs: object) -> str: ...
def read(fp: str | Path | IO[str] | IO[bytes], as_version: int | Sentinel,
         capture_validation_error: dict[str, object] | None = None, **kwargs: object) -> NotebookNode: ...
def write(nb: NotebookNode, fp: str | Path | IO[str], version: int | Sentinel = ...,
          capture_validation_error: dict[str, object] | None = None, **kwargs: object) -> None: ...
