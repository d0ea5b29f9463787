# Types for IPython.core.display_functions (IPython 9), whose functions IPython leaves
# unannotated: ``display`` and ``update_display`` are what jupyter_agent calls. The whole
# module is here (its ``__all__``), as the runtime has it.

from collections.abc import Iterable, Mapping
from typing import Literal, overload

__all__ = ["display", "clear_output", "publish_display_data", "update_display", "DisplayHandle"]

def publish_display_data(data: Mapping[str, object], metadata: Mapping[str, object] | None = None, *,
                         transient: dict[str, object] | None = None, **kwargs: object) -> None: ...

# ``display_id`` (an id, or True for a new one) returns the handle of that display, or None
# when no InteractiveShell runs (the objects are printed instead)
@overload
def display(*objs: object, include: Iterable[str] | None = None, exclude: Iterable[str] | None = None,
            metadata: Mapping[str, object] | None = None, transient: dict[str, object] | None = None,
            display_id: None | Literal[False] = None, raw: bool = False, clear: bool = False,
            **kwargs: object) -> None: ...
@overload
def display(*objs: object, include: Iterable[str] | None = None, exclude: Iterable[str] | None = None,
            metadata: Mapping[str, object] | None = None, transient: dict[str, object] | None = None,
            display_id: str | Literal[True], raw: bool = False, clear: bool = False,
            **kwargs: object) -> DisplayHandle | None: ...
def update_display(obj: object, *, display_id: str, **kwargs: object) -> None: ...

class DisplayHandle:
    display_id: str
    def __init__(self, display_id: str | None = None) -> None: ...
    def display(self, obj: object, **kwargs: object) -> None: ...
    def update(self, obj: object, **kwargs: object) -> None: ...

def clear_output(wait: bool = False) -> None: ...
