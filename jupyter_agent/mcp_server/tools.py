"""The tools jupyter-agent's MCP server offers outside agents, and the server built on them.

Each tool names the notebook it works on (``notebook_path``, as ``list_notebooks`` gives
it: relative to the Jupyter server's root) and cells by their stable id. What a call does
happens in the notebook's own kernel (``jupyter/outside/outside_hub.py``): through the page that shows
the notebook, with the user's approval for every change and run. This module knows only
the shapes: the schemas, the annotations, the checks made before anything is sent (too
large, binary data), and how a kernel's answer becomes an MCP result. The transport and
the way to the kernel are the caller's (:class:`NotebookBackend`): ``http.py`` for the
Jupyter server extension, ``stdio.py`` for ``jupyter agent mcp``.
"""

from __future__ import annotations

import base64
import itertools
import logging
import re
from typing import Any, Protocol

from ..errors import JupyterAgentError
from ..redact import redact
from .protocol import Caller
from .runs import DEFAULT_WAIT_S, MAX_WAIT_S

log = logging.getLogger(__name__)

SERVER_NAME = "jupyter-agent"
#: The most characters a cell's new source may have (NotebookEdit's own limit is larger:
#: an outside agent's whole-file paste into one cell is refused before the user is asked).
MAX_SOURCE_CHARS = 200_000
#: Control characters other than tab, newline and carriage return: binary data, not a cell's text.
_BINARY = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")
#: Cells a read returns by default, and at most.
DEFAULT_LIMIT, MAX_LIMIT = 20, 500
#: Characters of one cell's source or outputs a read returns by default (head and tail beyond it).
DEFAULT_MAX_CHARS = 4_000
#: Characters of one output's text read_output returns by default.
DEFAULT_OUTPUT_CHARS = 20_000


class OutsideError(JupyterAgentError):
    """A call that cannot be made: said to the client as an MCP tool error, nothing changed."""


class NotebookBackend(Protocol):
    """Where the calls go: the notebooks open in a Jupyter server, and their kernels."""

    async def notebooks(self) -> list[dict[str, Any]]:
        """The notebooks open in the server: ``{"path", "kernel_id", "kernel_state"}`` each."""

    async def call(self, path: str, op: str, args: dict[str, Any], client: Caller,
                   progress: Any = None) -> dict[str, Any]:
        """Run ``op`` in the kernel of notebook ``path``: ``{"ok", "content": [blocks], "error"}``.
        ``progress(text)``, if given, is called with what a long call reports as it goes.
        Raises :class:`OutsideError` when the notebook or its kernel cannot be reached."""

    async def active(self, client: Caller) -> dict[str, Any]:
        """The notebook the user works in (current in its JupyterLab page) and its active cell."""

    async def create(self, path: str, open_from: str | None, client: Caller) -> dict[str, Any]:
        """A new notebook at ``path``, asked for in the page of ``open_from``, then opened there."""

    async def run_status(self, run_id: str) -> dict[str, Any]:
        """A long run's state, outputs so far and result once ended (``runs.py``)."""

    async def interrupt(self, path: str, run_id: str | None, client: Caller) -> dict[str, Any]:
        """Interrupt the kernel while a cell ``client`` ran executes; that run's state after."""

    async def restart(self, path: str, client: Caller) -> dict[str, Any]:
        """Restart the notebook's kernel once the user allows it (the kernel asks)."""


_PATH = {"type": "string", "description": (
    "The notebook's path as list_notebooks gives it (relative to the Jupyter server's root), e.g. "
    "'analysis/sales.ipynb'. The notebook must be open in a JupyterLab page with jupyter-agent loaded "
    "(%load_ext jupyter_agent).")}
_CELL_ID = {"type": "string", "description": "The cell's id, as read_cells shows it (stable while the cell exists)."}
_SOURCE = {"type": "string", "description": f"The cell's new source (at most {MAX_SOURCE_CHARS:,} characters)."}
_TYPE = {"type": "string", "enum": ["code", "markdown", "raw"], "description": (
    "code, markdown, or raw (text the notebook keeps as it is: never run, never rendered).")}
_RUN_ID = {"type": "string", "description": "The run_id run_cell gave."}

#: The annotations of the tools that only read (the same for every one of them).
_READ_ONLY = {"read_only_hint": True, "destructive_hint": False, "idempotent_hint": True, "open_world_hint": False}
#: name -> (description, input schema, annotations)
TOOLS: dict[str, tuple[str, dict[str, Any], dict[str, bool]]] = {
    "list_notebooks": (
        "List the notebooks open in this Jupyter server (one line each: path, kernel state). Use a path "
        "from here as notebook_path in the other tools.",
        {"type": "object", "properties": {}, "additionalProperties": False},
        _READ_ONLY),
    "active_notebook": (
        "The notebook the user is working in (the current one in their JupyterLab page) and its active cell "
        "(id, index, type, source) and selected cells: for requests such as 'fix this cell'. Read-only; it "
        "is not a read for the stale check (call read_cells before an edit).",
        {"type": "object", "properties": {}, "additionalProperties": False},
        _READ_ONLY),
    "create_notebook": (
        "Create a new notebook at notebook_path (relative to the Jupyter server's root; it must not exist) and "
        "open it in the user's JupyterLab page, with jupyter-agent loaded in its kernel so the other tools work "
        "on it at once. The user approves the new file (as a Write) in the page of open_from (default: the "
        "notebook they are working in); undo deletes it again.",
        {"type": "object", "required": ["notebook_path"], "additionalProperties": False,
         "properties": {"notebook_path": {"type": "string", "description": "The new notebook's path, e.g. "
                                          "'analysis/new.ipynb'."},
                        "open_from": {**_PATH, "description": "An open notebook whose page asks the user and opens "
                                      "the new one (default: the notebook the user is working in)."}}},
        {"read_only_hint": False, "destructive_hint": False, "idempotent_hint": False, "open_world_hint": False}),
    "read_cells": (
        "Read cells of an open notebook as the user sees them (unsaved edits included): each cell's id, "
        "type and source, and its outputs by reference (index, kind, size, the start of the text; "
        "read_output returns one whole). Paginated: start at cell index `start`, at most `limit` cells. "
        "Long sources keep their head and tail. Read before you edit: an edit or run fails if the "
        "notebook changed since your last read.",
        {"type": "object", "required": ["notebook_path"], "additionalProperties": False, "properties": {
            "notebook_path": _PATH,
            "start": {"type": "integer", "minimum": 0, "default": 0, "description": "0-based index of the first cell."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
            "max_chars": {"type": "integer", "minimum": 200, "maximum": 100_000, "default": DEFAULT_MAX_CHARS,
                          "description": "Characters of each cell's source kept."}}},
        _READ_ONLY),
    "read_output": (
        "Read one output of a cell, as read_cells lists it (the cell's id, the output's index): text as its "
        "head and tail within max_chars (what was left out is said), images (PNG, JPEG) as images, HTML, "
        "Markdown, LaTeX and JSON as their text.",
        {"type": "object", "required": ["notebook_path", "cell_id", "output_index"], "additionalProperties": False,
         "properties": {
            "notebook_path": _PATH, "cell_id": _CELL_ID,
            "output_index": {"type": "integer", "minimum": 0, "description": "The output's 0-based index in its "
                             "cell, as read_cells lists it ([0], [1], ...)."},
            "max_chars": {"type": "integer", "minimum": 200, "maximum": 100_000, "default": DEFAULT_OUTPUT_CHARS,
                          "description": "Characters of the output's text kept (head and tail)."}}},
        _READ_ONLY),
    "list_variables": (
        "List the variables in the notebook's kernel: name, type, and for arrays and data frames their "
        "shape, columns and dtypes; values only for short scalars. No code of the user's objects runs "
        "(types are found by identity, never by calling repr or properties).",
        {"type": "object", "required": ["notebook_path"], "additionalProperties": False,
         "properties": {"notebook_path": _PATH}},
        _READ_ONLY),
    "insert_cell": (
        "Insert a new cell into the open notebook, after the cell `after_cell_id` (first when omitted). The "
        "user approves it in JupyterLab; the page shows it at once and one Undo takes it back.",
        {"type": "object", "required": ["notebook_path", "cell_type", "source"], "additionalProperties": False,
         "properties": {"notebook_path": _PATH, "cell_type": _TYPE, "source": _SOURCE,
                        "after_cell_id": {"type": "string", "description": "Insert after this cell (an id)."}}},
        {"read_only_hint": False, "destructive_hint": False, "idempotent_hint": False, "open_world_hint": False}),
    "replace_cell": (
        "Replace a cell's source (a code cell loses its outputs). The user approves it; refused if the "
        "notebook changed since your last read_cells.",
        {"type": "object", "required": ["notebook_path", "cell_id", "source"], "additionalProperties": False,
         "properties": {"notebook_path": _PATH, "cell_id": _CELL_ID, "source": _SOURCE, "cell_type": _TYPE}},
        {"read_only_hint": False, "destructive_hint": True, "idempotent_hint": True, "open_world_hint": False}),
    "delete_cell": (
        "Delete a cell. The user approves it; refused if the notebook changed since your last read_cells.",
        {"type": "object", "required": ["notebook_path", "cell_id"], "additionalProperties": False,
         "properties": {"notebook_path": _PATH, "cell_id": _CELL_ID}},
        {"read_only_hint": False, "destructive_hint": True, "idempotent_hint": True, "open_world_hint": False}),
    "move_cell": (
        "Move a cell to just after after_cell_id, or just before before_cell_id (exactly one of them; the "
        "top: before the first cell; the end: after the last). The cell is moved as it is: its id, source "
        "and outputs stay. Where it goes is named by a cell, not an index, so you need not count cells and a "
        "cell another client or the user inserts meanwhile does not shift it. The user approves it, shown "
        "what moves where; refused if the notebook changed since your last read_cells; one Undo puts it back.",
        {"type": "object", "required": ["notebook_path", "cell_id"], "additionalProperties": False,
         "properties": {"notebook_path": _PATH, "cell_id": {**_CELL_ID, "description": "The cell to move (its id)."},
                        "after_cell_id": {**_CELL_ID, "description": "Move it to just after this cell (an id)."},
                        "before_cell_id": {**_CELL_ID, "description": "Move it to just before this cell (an id)."}}},
        {"read_only_hint": False, "destructive_hint": False, "idempotent_hint": True, "open_world_hint": False}),
    "run_cell": (
        "Run a code cell in the notebook's kernel (the user's, with its variables), as Shift+Enter in the "
        "page, and return its outputs. The user approves each run. A cell still running after wait_seconds "
        "goes on: the answer says so and gives a run_id for run_status and interrupt.",
        {"type": "object", "required": ["notebook_path", "cell_id"], "additionalProperties": False,
         "properties": {"notebook_path": _PATH, "cell_id": _CELL_ID,
                        "wait_seconds": {"type": "integer", "minimum": 0, "maximum": MAX_WAIT_S,
                                         "default": DEFAULT_WAIT_S, "description": (
                                             "Seconds to wait for the cell to end (approval included) before "
                                             "answering 'still running' with a run_id.")}}},
        {"read_only_hint": False, "destructive_hint": True, "idempotent_hint": False, "open_world_hint": True}),
    "run_cells": (
        "Run the code cells from start_cell_id to end_cell_id (default: the first and the last: all of them) in "
        "order, as Shift+Enter on each, stopping at the first that fails (an error, a timeout, an interrupt). "
        "The user approves the whole range once, shown every cell's code. The answer says which cells ran, "
        "where it stopped and why, and which did not run, with each run cell's outputs. A run still going "
        "after wait_seconds answers with a run_id for run_status and interrupt.",
        {"type": "object", "required": ["notebook_path"], "additionalProperties": False,
         "properties": {"notebook_path": _PATH,
                        "start_cell_id": {**_CELL_ID, "description": "The range's first cell (default: the first)."},
                        "end_cell_id": {**_CELL_ID, "description": "The range's last cell (default: the last)."},
                        "wait_seconds": {"type": "integer", "minimum": 0, "maximum": MAX_WAIT_S,
                                         "default": DEFAULT_WAIT_S, "description": (
                                             "Seconds to wait for the cells to end (approval included) before "
                                             "answering 'still running' with a run_id.")}}},
        {"read_only_hint": False, "destructive_hint": True, "idempotent_hint": False, "open_world_hint": True}),
    "execute_code": (
        "Run scratch code in the notebook's kernel (the user's, with its variables) and return its outputs, "
        "without adding a cell: nothing is saved to the notebook. For checks such as 'is df unchanged' or "
        "'what does f(3) give'. The user approves it as a cell run. Interrupted after timeout_seconds; a run "
        "still waiting or running after that plus the approval's time answers with a run_id for run_status "
        "and interrupt. Variables it sets stay in the kernel.",
        {"type": "object", "required": ["notebook_path", "code"], "additionalProperties": False,
         "properties": {"notebook_path": _PATH,
                        "code": {"type": "string", "description": (
                            f"The code to run (at most {MAX_SOURCE_CHARS:,} characters).")},
                        "timeout_seconds": {"type": "integer", "minimum": 1, "maximum": MAX_WAIT_S, "default": 60,
                                            "description": "Seconds the code may run before the kernel is "
                                                           "interrupted."}}},
        {"read_only_hint": False, "destructive_hint": True, "idempotent_hint": False, "open_world_hint": True}),
    "run_status": (
        "Where a long run_cell run is (by the run_id run_cell gave): waiting, running (with elapsed time and "
        "its outputs so far) or ended (with its result).",
        {"type": "object", "required": ["run_id"], "additionalProperties": False,
         "properties": {"run_id": _RUN_ID}},
        _READ_ONLY),
    "interrupt": (
        "Interrupt the kernel (as JupyterLab's Stop button) while a cell you ran with run_cell executes: it "
        "ends with KeyboardInterrupt and the kernel stays usable, variables kept. Only your own runs: a cell "
        "the user or another agent started is the user's to stop.",
        {"type": "object", "required": ["notebook_path"], "additionalProperties": False,
         "properties": {"notebook_path": _PATH, "run_id": {**_RUN_ID, "description": (
             "The run to interrupt (default: your run executing in this notebook's kernel).")}}},
        {"read_only_hint": False, "destructive_hint": True, "idempotent_hint": False, "open_world_hint": False}),
    "restart_kernel": (
        "Restart the notebook's kernel: every variable, import and open resource in it is lost (the user's "
        "too). The user approves it in JupyterLab, shown what is lost; the page follows, as when the user "
        "restarts. jupyter-agent is loaded in the fresh kernel again, so your next call works; run the cells "
        "you need again.",
        {"type": "object", "required": ["notebook_path"], "additionalProperties": False,
         "properties": {"notebook_path": _PATH}},
        {"read_only_hint": False, "destructive_hint": True, "idempotent_hint": False, "open_world_hint": False}),
}

#: Each tool's title: what a client shows a person (the name is the model's).
TITLES = {
    "list_notebooks": "List open notebooks", "active_notebook": "The user's active notebook and cell",
    "create_notebook": "Create and open a notebook", "read_cells": "Read notebook cells",
    "read_output": "Read a cell's output", "list_variables": "List kernel variables",
    "insert_cell": "Insert a cell", "replace_cell": "Replace a cell's source",
    "delete_cell": "Delete a cell", "move_cell": "Move a cell", "run_cell": "Run a cell",
    "run_cells": "Run a range of cells",
    "execute_code": "Run scratch code in the kernel",
    "run_status": "Status of a long run",
    "interrupt": "Interrupt your running cell", "restart_kernel": "Restart the kernel",
}

#: The tools that run in the notebook's kernel (the others, list_notebooks, run_status, interrupt
#: and restart_kernel, are the server's: ``NotebookBackend``'s methods).
KERNEL_OPS = {"read_cells": "read", "read_output": "output",
              "list_variables": "variables", "insert_cell": "insert", "replace_cell": "replace",
              "delete_cell": "delete", "move_cell": "move", "run_cell": "run",
              "run_cells": "run_range", "execute_code": "exec"}


def check_arguments(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments, checked before anything reaches a kernel (raises OutsideError)."""
    if name not in TOOLS:
        raise OutsideError(f"No tool named {name!r}. The tools: {', '.join(TOOLS)}.")
    schema = TOOLS[name][1]
    props: dict[str, Any] = schema["properties"]
    unknown = sorted(set(args) - set(props))
    if unknown:
        hint = " It names the place by a cell, never an index: read_cells shows the ids." if name == "move_cell" else ""
        raise OutsideError(f"{name} takes no argument {', '.join(map(repr, unknown))}; it takes "
                           f"{', '.join(props)}.{hint}")
    missing = [k for k in schema.get("required", ()) if k not in args]
    if missing:
        raise OutsideError(f"{name} needs {', '.join(missing)}.")
    if name == "move_cell" and ("after_cell_id" in args) == ("before_cell_id" in args):
        raise OutsideError("move_cell needs exactly one of after_cell_id (the cell goes just after it) and "
                           "before_cell_id (just before it); for the top, before_cell_id of the first cell. "
                           "Nothing was changed.")
    for key, value in args.items():
        kind = props[key].get("type")
        if kind == "string" and not isinstance(value, str):
            raise OutsideError(f"{key} must be a string.")
        if kind == "integer" and (not isinstance(value, int) or isinstance(value, bool)):
            raise OutsideError(f"{key} must be an integer.")
        if kind == "integer" and not props[key].get("minimum", value) <= value <= props[key].get("maximum", value):
            raise OutsideError(f"{key} must be between {props[key]['minimum']} and {props[key].get('maximum', '…')}.")
        if "enum" in props[key] and value not in props[key]["enum"]:
            raise OutsideError(f"{key} must be one of {', '.join(props[key]['enum'])}.")
    for field in ("source", "code"):
        source = args.get(field)
        if not isinstance(source, str):
            continue
        if len(source) > MAX_SOURCE_CHARS:
            raise OutsideError(f"{field} is {len(source):,} characters; the limit is {MAX_SOURCE_CHARS:,}. Nothing "
                               "was changed. Split it into several cells, or have the cell read the data from a file.")
        if _BINARY.search(source):
            raise OutsideError(f"{field} holds binary data (control characters or broken UTF-16): a cell's source "
                               "is text. Nothing was changed.")
    for key in ("notebook_path", "open_from", "cell_id", "after_cell_id", "before_cell_id", "start_cell_id",
                "end_cell_id", "run_id"):
        value = args.get(key)
        if isinstance(value, str) and (not value.strip() or _BINARY.search(value) or len(value) > 4096):
            raise OutsideError(f"{key} {redact(value[:80])!r} is not a valid {key.replace('_', ' ')}.")
    return args


def notebooks_text(notebooks: list[dict[str, Any]]) -> str:
    """list_notebooks' answer."""
    if not notebooks:
        return ("No notebook is open in this Jupyter server. Open one in JupyterLab and run "
                "%load_ext jupyter_agent in it.")
    lines = [f"{n['path']}  (kernel {n.get('kernel_state') or 'unknown'})" for n in notebooks]
    return redact("Open notebooks (notebook_path, kernel state):\n" + "\n".join(lines))


def result_of(reply: dict[str, Any]) -> Any:
    """A kernel's answer as an MCP ``CallToolResult``: its blocks (text redacted, images as
    image content); ``ok`` false is a tool error."""
    from mcp_types import CallToolResult, ImageContent, TextContent

    content: list[Any] = []
    for block in reply.get("content") or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "image":
            data, mime = str(block.get("data") or ""), str(block.get("mime_type") or "image/png")
            try:
                base64.b64decode(data, validate=True)
            except ValueError:
                log.debug("a kernel's image block is not base64; left out")
                continue
            content.append(ImageContent(type="image", data=data, mime_type=mime))
        else:
            content.append(TextContent(type="text", text=redact(str(block.get("text") or ""))))
    if not content:
        content.append(TextContent(type="text", text=redact(str(reply.get("error") or "(no output)"))))
    return CallToolResult(content=content, is_error=not reply.get("ok"))


def error_result(text: str) -> Any:
    from mcp_types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=redact(text))], is_error=True)


def client_name(ctx: Any) -> str:
    """Who asks: the client's name (and version) from its ``initialize``, as it says it."""
    params = getattr(getattr(ctx, "session", None), "client_params", None)
    info = getattr(params, "client_info", None)
    name = str(getattr(info, "name", "") or "").strip()
    version = str(getattr(info, "version", "") or "").strip()
    if not name:
        return "an MCP client"
    return f"{name} {version}".strip()[:200]


def caller_of(ctx: Any) -> Caller:
    """The caller of a request: its client's name and its MCP session (the HTTP request's
    ``Mcp-Session-Id``; none over stdio or on the sessionless protocol)."""
    headers = getattr(getattr(ctx, "request", None), "headers", None)
    session = str(headers.get("mcp-session-id") or "") if headers is not None else ""
    return Caller(client_name(ctx), session[:200])


def progress_sender(ctx: Any) -> Any:
    """``progress(text)`` sending MCP progress notifications for this request, when its
    client asked for them (a ``progressToken`` in its ``_meta``); else None."""
    meta = getattr(ctx, "meta", None)
    token = meta.get("progress_token") if isinstance(meta, dict) else None
    session = getattr(ctx, "session", None)
    if token is None or session is None:
        return None
    count = itertools.count(1)
    request_id = getattr(ctx, "request_id", None)

    async def send(text: str) -> None:
        try:
            await session.send_progress_notification(token, next(count), message=redact(text),
                                                     related_request_id=request_id)
        except Exception:  # the client went away: the call's answer will not reach it either
            log.debug("could not send a progress notification", exc_info=True)

    return send


def build_server(backend: NotebookBackend | None, *, forward: Any = None,
                 resources: dict[str, Any] | None = None) -> Any:
    """The MCP server (the SDK's low-level ``Server``) whose tools call ``backend``; or, with
    ``forward`` (``jupyter agent mcp``), each checked call goes to ``forward(name, arguments,
    client, progress)``, which returns its ``CallToolResult`` (``progress(text)``, or None:
    see :func:`progress_sender`). ``resources``: the resource handlers (``resources.py``)."""
    from mcp.server.lowlevel import Server
    from mcp_types import ListToolsResult, Tool, ToolAnnotations

    tools = [Tool(name=name, title=TITLES[name], description=desc, input_schema=schema,
                  annotations=ToolAnnotations.model_validate({**notes, "title": TITLES[name]}))
             for name, (desc, schema, notes) in TOOLS.items()]

    async def list_tools(ctx: Any, params: Any) -> Any:
        return ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        name, args = params.name, dict(params.arguments or {})
        try:
            check_arguments(name, args)
            client = caller_of(ctx)
            if forward is not None:
                return await forward(name, args, client, progress_sender(ctx))
            assert backend is not None
            if name == "list_notebooks":
                from mcp_types import CallToolResult, TextContent

                text = notebooks_text(await backend.notebooks())
                return CallToolResult(content=[TextContent(type="text", text=text)])
            if name == "create_notebook":
                return result_of(await backend.create(args["notebook_path"], args.get("open_from"), client))
            if name == "active_notebook":
                return result_of(await backend.active(client))
            if name == "run_status":
                return result_of(await backend.run_status(args["run_id"]))
            path = args.pop("notebook_path")
            if name == "interrupt":
                return result_of(await backend.interrupt(path, args.get("run_id"), client))
            if name == "restart_kernel":
                return result_of(await backend.restart(path, client))
            return result_of(await backend.call(path, KERNEL_OPS[name], args, client, progress=progress_sender(ctx)))
        except OutsideError as exc:
            return error_result(str(exc))

    return Server(SERVER_NAME, version=_version(), on_list_tools=list_tools, on_call_tool=call_tool,
                  **(resources or {}), instructions=(
                      "Tools over the notebooks open in the user's JupyterLab. Every edit and run waits for the "
                      "user's approval in the page; call read_cells (or read a notebook://PATH resource) before an "
                      "edit."))


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("jupyter-agent")
    except PackageNotFoundError:
        return "0"
