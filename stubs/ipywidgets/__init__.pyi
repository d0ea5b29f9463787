# Types for the part of ipywidgets 8.1 that jupyter_agent uses (ipywidgets ships none).
#
# Each class mirrors its runtime namesake in ipywidgets/widgets/ (widget.py, domwidget.py,
# widget_box.py, widget_button.py, widget_layout.py, widget_string.py, widget_output.py,
# widget_selection.py, widget_selectioncontainer.py): a traitlets trait is written as the
# value an instance holds (``Unicode(None, allow_none=True)`` is ``str | None``), and a
# constructor takes the traits as keyword arguments, as ``HasTraits.__init__`` does. Only what
# the package uses is here: a name missing is an error, so add it (checked against the installed
# ipywidgets) rather than loosen a type. tests/test_stubs.py compares these with the runtime.

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Generic, Self, TypeVar

from comm.base_comm import BaseComm
from traitlets import HasTraits

__version__: str

_T = TypeVar("_T")

class Widget(HasTraits):  # (through ipywidgets' LoggingHasTraits, which adds ``log``)
    log: logging.Logger
    # the comm to the front end: opened by __init__, None once closed
    comm: BaseComm | None
    keys: list[str]
    def __init__(self, **kwargs: object) -> None: ...
    @property
    def model_id(self) -> str: ...
    def open(self) -> None: ...
    def close(self) -> None: ...
    def send(self, content: dict[str, object], buffers: list[bytes] | None = None) -> None: ...
    def on_msg(self, callback: Callable[[Self, dict[str, object], list[bytes]], object],
               remove: bool = False) -> None: ...
    @contextmanager
    def hold_sync(self) -> Iterator[None]: ...

class Layout(Widget):
    # every trait of a Layout is a CSS property, ``str | None`` (None: not set)
    align_content: str | None
    align_items: str | None
    align_self: str | None
    border_top: str | None
    border_right: str | None
    border_bottom: str | None
    border_left: str | None
    bottom: str | None
    display: str | None
    flex: str | None
    flex_flow: str | None
    height: str | None
    justify_content: str | None
    justify_items: str | None
    left: str | None
    margin: str | None
    max_height: str | None
    max_width: str | None
    min_height: str | None
    min_width: str | None
    overflow: str | None
    order: str | None
    padding: str | None
    right: str | None
    top: str | None
    visibility: str | None
    width: str | None
    def __init__(self, **kwargs: str | None) -> None: ...

class DOMWidget(Widget):
    _dom_classes: tuple[str, ...]
    tabbable: bool | None
    tooltip: str | None
    layout: Layout
    def __init__(self, *, layout: Layout = ..., tooltip: str | None = ..., _dom_classes: Sequence[str] = ...,
                 **kwargs: object) -> None: ...
    def add_class(self, className: str) -> Self: ...
    def remove_class(self, className: str) -> Self: ...
    def focus(self) -> None: ...
    def blur(self) -> None: ...

class CoreWidget(Widget): ...

class Box(DOMWidget, CoreWidget):
    children: tuple[Widget, ...]
    box_style: str
    def __init__(self, children: Sequence[Widget] = (), *, layout: Layout = ..., box_style: str = ...,
                 _dom_classes: Sequence[str] = ...) -> None: ...

class VBox(Box): ...
class HBox(Box): ...

class Button(DOMWidget, CoreWidget):
    description: str
    disabled: bool
    icon: str
    button_style: str
    def __init__(self, *, description: str = ..., disabled: bool = ..., icon: str = ..., button_style: str = ...,
                 tooltip: str | None = ..., layout: Layout = ..., _dom_classes: Sequence[str] = ...) -> None: ...
    def on_click(self, callback: Callable[[Button], object], remove: bool = False) -> None: ...
    def click(self) -> None: ...

class _DescriptionWidget(DOMWidget, CoreWidget):  # (ipywidgets.widgets.widget_description.DescriptionWidget)
    description: str
    description_allow_html: bool

class ValueWidget(Widget): ...

class _String(_DescriptionWidget, ValueWidget, CoreWidget):
    value: str
    placeholder: str
    def __init__(self, value: str | None = None, *, description: str = ..., placeholder: str = ...,
                 tooltip: str | None = ..., layout: Layout = ..., _dom_classes: Sequence[str] = ...,
                 **kwargs: object) -> None: ...

class HTML(_String): ...

class Text(_String):
    disabled: bool
    continuous_update: bool

class Textarea(_String):
    rows: int | None
    disabled: bool
    continuous_update: bool

class _Selection(_DescriptionWidget, ValueWidget, CoreWidget, Generic[_T]):
    # ``options`` as given (a sequence of values, or of (label, value) pairs); ``value`` is one
    # of the values, None when nothing is selected
    options: Sequence[_T]
    value: _T | None
    label: str | None
    index: int | None
    disabled: bool
    def __init__(self, *, options: Sequence[_T] = ..., value: _T | None = ..., description: str = ...,
                 disabled: bool = ..., layout: Layout = ..., _dom_classes: Sequence[str] = ...) -> None: ...

class Dropdown(_Selection[_T]): ...

class _SelectionContainer(Box, CoreWidget):
    titles: tuple[str, ...]
    selected_index: int | None
    def __init__(self, children: Sequence[Widget] = (), *, titles: Sequence[str] = ...,
                 selected_index: int | None = ..., layout: Layout = ...,
                 _dom_classes: Sequence[str] = ...) -> None: ...
    def set_title(self, index: int, title: str | None) -> None: ...
    def get_title(self, index: int) -> str: ...

class Accordion(_SelectionContainer): ...

class Output(DOMWidget):
    # each output as nbformat JSON, as a notebook stores it
    outputs: tuple[dict[str, object], ...]
    msg_id: str
    def __init__(self, *, outputs: Sequence[dict[str, object]] = ..., layout: Layout = ...,
                 _dom_classes: Sequence[str] = ...) -> None: ...
    def clear_output(self, *pargs: object, **kwargs: object) -> None: ...
    def append_stdout(self, text: str) -> None: ...
    def append_stderr(self, text: str) -> None: ...
    def append_display_data(self, display_object: object) -> None: ...
    def __enter__(self) -> None: ...
    def __exit__(self, etype: type[BaseException] | None, evalue: BaseException | None,
                 tb: TracebackType | None) -> bool | None: ...
