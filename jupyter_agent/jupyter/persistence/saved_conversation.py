"""A kernel's conversation saved after each turn, and read back by ``%agent resume``.

One file per notebook (the kernel's working folder when no notebook is known), in the
Jupyter data folder: ``<jupyter data dir>/jupyter_agent/conversations/<hash of the path>.json``,
written atomically (``files/atomic.py``), readable by its owner only. It holds the
history (every string redacted with ``redact.py``, tool calls paired), the session rules
("Always allow"), the undo records of the runs (as far as they can be kept: see
:func:`_changes_json`) and the names the kernel held, so that after a kernel restart the
model can be told which variables are gone.

Reading it back treats it as data from anyone (docs/tools.md, "Resuming a conversation"):
every field is checked for its type, unknown blocks are dropped, the history is repaired
by the loop's pairing rule, rules are parsed, names must be identifiers. A file that is not
its reader's alone (:func:`not_yours_alone`: another owner, or others may write it) gives
no rules and no undo records, and ``%agent resume`` refuses it whole (``resume.py``). What
was dropped or repaired is listed in :attr:`SavedConversation.notes`; a file that cannot
be read at all raises :class:`SavedConversationError`, which says what to do.
"""

from __future__ import annotations

import base64
import hashlib
import json
import keyword
import logging
import os
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ...errors import JupyterAgentError
from ...changes import CellRecord, CellState, FileRecord, NotebookRecord, RunChanges, UndoReport, UndoState
from ...files.atomic import atomic_write
from ...loop.messages import ensure_tool_result_pairing
from ...loop.state import TerminalReason
from ...loop.usage import Usage
from ...loop.wire import Message
from ...redact import redact

log = logging.getLogger(__name__)

FORMAT = "jupyter-agent-conversation"
VERSION = 1
#: A saved file larger than this is refused when read (and not written: the old one stays).
MAX_FILE_BYTES = 64 * 1024 * 1024
#: The bytes of files and cells all runs' undo records keep in the file together (newest run first).
MAX_UNDO_BYTES = 16 * 1024 * 1024
#: Names of the kernel kept (and told to the model) at most.
MAX_NAMES = 300
_TOOL_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


class SavedConversationError(JupyterAgentError, ValueError):
    """The saved file cannot be used at all (not JSON, another format, too large)."""


@dataclass
class SavedRun:
    """One run of the saved conversation: its prompt, how it ended, what it changed."""

    prompt: str
    reason: str = TerminalReason.COMPLETED.value
    turns: int = 0
    changes: RunChanges | None = None
    #: changes the file did not keep (they held a secret, or were over the size bound)
    unsaved: int = 0
    #: what the run spent (``%agent runs`` shows it after a resume, not 0), and whether it was
    #: an offline replay (nothing paid: no cost shown)
    usage: Usage | None = None
    offline: bool = False


@dataclass
class SavedConversation:
    """What ``%agent resume`` gets back from a file."""

    key: str
    messages: list[Message] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)
    runs: list[SavedRun] = field(default_factory=list)
    #: top-level names of the kernel at the last save (and those the runs' cells changed)
    variables: list[str] = field(default_factory=list)
    #: the kernel process the conversation was saved from (``resume.KERNEL_EPOCH``)
    kernel_epoch: str = ""
    saved_at: float = 0.0
    #: what was dropped or repaired while reading the file, for the user
    notes: list[str] = field(default_factory=list)
    #: messages of the conversation the resume set aside (not in the file)
    replaced: int = 0
    #: why the file is not its reader's alone ("" when it is): see :func:`not_yours_alone`
    foreign: str = ""


# -- where --------------------------------------------------------------------------------------

def conversation_key(notebook_path: str | None, cwd: str | Path) -> str:
    """What a saved conversation is filed under: the notebook, else the working folder."""
    return f"notebook:{notebook_path}" if notebook_path else f"folder:{Path(cwd).resolve()}"


def saved_path(key: str) -> Path:
    """The file of ``key`` in the Jupyter data folder (``$JUPYTER_DATA_DIR`` moves it)."""
    from jupyter_core.paths import jupyter_data_dir

    name = hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
    return Path(jupyter_data_dir()) / "jupyter_agent" / "conversations" / f"{name}.json"


# -- writing --------------------------------------------------------------------------------------

def _redacted(value: Any) -> Any:
    """``value`` with every string redacted (an image's base64 data is left as it is)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list | tuple):
        return [_redacted(v) for v in value]
    if isinstance(value, dict):
        if value.get("type") == "base64" and isinstance(value.get("data"), str):
            return {k: (v if k == "data" else _redacted(v)) for k, v in value.items()}
        return {str(k): _redacted(v) for k, v in value.items()}
    return value


def encode(saved: SavedConversation) -> bytes:
    """The file's bytes (run off the event loop: it redacts and encodes everything)."""
    messages, _ = ensure_tool_result_pairing(list(saved.messages))
    budget = [MAX_UNDO_BYTES]
    runs: list[dict[str, Any]] = []
    for run in reversed(saved.runs):  # the newest runs keep their undo data first
        entry: dict[str, Any] = {"prompt": redact(run.prompt), "reason": run.reason, "turns": run.turns}
        if run.usage is not None:
            entry["usage"] = {name: getattr(run.usage, name) for name in USAGE_FIELDS}
        if run.offline:
            entry["offline"] = True
        if run.changes is not None:
            entry["changes"], entry["unsaved"] = _changes_json(run.changes, budget)
        runs.append(entry)
    document = {
        "format": FORMAT, "version": VERSION, "key": saved.key, "saved_at": saved.saved_at or time.time(),
        "kernel_epoch": saved.kernel_epoch, "messages": _redacted(messages),
        "rules": [redact(r) for r in saved.rules], "runs": runs[::-1],
        "variables": [n for n in saved.variables if _is_name(n)][:MAX_NAMES],
    }
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def write(path: Path, data: bytes) -> None:
    """Write the file atomically, readable by its owner only (its folder too). A symbolic
    link in its place is not followed: nothing is written through it."""
    if len(data) > MAX_FILE_BYTES:
        raise SavedConversationError(f"the conversation is {len(data):,} bytes, over {MAX_FILE_BYTES:,}: not saved")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.is_symlink():
        raise SavedConversationError(f"{path} is a symbolic link: the conversation was not saved through it")
    atomic_write(path, data, 0o600)


def _keeps_secret(text: str) -> bool:
    return redact(text) != text


def _changes_json(changes: RunChanges, budget: list[int]) -> tuple[dict[str, Any], int]:
    """A run's undo record as JSON, and how many of its changes it could not keep.

    A file's earlier bytes are kept while ``budget`` lasts and when they hold no secret;
    otherwise the file is kept by hash only (the undo then says it cannot put it back). A
    cell whose earlier source holds a secret is left out (putting back a redacted source
    would be wrong); its outputs are redacted."""
    unsaved = 0
    files = []
    for record in list(changes.files.values()):
        data = record.data
        if data is not None:
            if len(data) > budget[0] or _keeps_secret(data.decode("utf-8", errors="replace")):
                data, unsaved = None, unsaved + 1
            else:
                budget[0] -= len(data)
        files.append({"path": record.path, "existed": record.existed, "mode": record.mode,
                      "data": base64.b64encode(data).decode("ascii") if data is not None else None,
                      "before_hash": record.before_hash, "after_hash": record.after_hash})
    notebooks = []
    for notebook in list(changes.notebooks.values()):
        cells = []
        for cell in list(notebook.cells.values()):
            before = cell.before
            if before is not None and (_keeps_secret(before.source) or len(before.source) > budget[0]):
                unsaved += 1
                continue
            if before is not None:
                budget[0] -= len(before.source)
            cells.append({"cell_id": cell.cell_id, "after_source": _redacted(cell.after_source),
                          "after_type": cell.after_type, "moved_after": cell.moved_after,
                          "before": None if before is None else {
                              "id": before.id, "cell_type": before.cell_type, "source": before.source,
                              "outputs": _redacted(list(before.outputs)), "execution_count": before.execution_count,
                              "metadata": _redacted(before.metadata), "index": before.index,
                              "after_id": before.after_id}})
        notebooks.append({"path": notebook.path, "live": notebook.live, "cells": cells})
    return {"files": files, "notebooks": notebooks, "variables": [n for n in changes.variables if _is_name(n)],
            # (an undo that failed is not: the resumed run may be undone again)
            "undone": changes.undo_state is UndoState.DONE}, unsaved


# -- reading ------------------------------------------------------------------------------------

def not_yours_alone(st: os.stat_result) -> str:
    """Why a file someone else could have written is not its reader's alone ("" when it
    is: owned by this user, writable by no one else). Rules, undo records and history are
    taken only from such a file."""
    if st.st_uid != os.getuid():
        return f"it belongs to another user (uid {st.st_uid})"
    if st.st_mode & 0o022:
        return f"others may write it (mode {stat.S_IMODE(st.st_mode):o})"
    return ""


def load(path: Path, *, trust_rules: bool | None = None) -> SavedConversation:
    """Read and check a saved conversation. ``trust_rules`` None: the rules and the undo
    records are taken only when the file is its reader's alone (:func:`not_yours_alone`;
    :attr:`SavedConversation.foreign` says why it is not)."""
    try:
        st = path.stat()
        if st.st_size > MAX_FILE_BYTES:
            raise SavedConversationError(f"{path} is {st.st_size:,} bytes, more than a saved conversation can be "
                                         f"({MAX_FILE_BYTES:,}). Delete it, or start with `%agent new`.")
        raw = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        if isinstance(exc, SavedConversationError):
            raise
        raise SavedConversationError(f"The saved conversation {path} cannot be read ({type(exc).__name__}: {exc}). "
                                     "Delete the file, or start with `%agent new`.") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise SavedConversationError(f"{path} is not a saved jupyter-agent conversation. Delete it, or start "
                                     "with `%agent new`.")
    if raw.get("version") != VERSION:
        raise SavedConversationError(f"{path} was saved in format version {raw.get('version')!r}; this jupyter-agent "
                                     f"reads version {VERSION}. Start with `%agent new`.")
    foreign = not_yours_alone(st)
    if trust_rules is None:
        trust_rules = not foreign
    notes: list[str] = []
    saved = SavedConversation(key=_text(raw.get("key")), kernel_epoch=_text(raw.get("kernel_epoch")),
                              saved_at=float(raw["saved_at"]) if isinstance(raw.get("saved_at"), int | float) else 0.0,
                              notes=notes, foreign=foreign)
    saved.messages = check_messages(raw.get("messages"), notes)
    saved.rules = _check_rules(raw.get("rules"), notes, trusted=trust_rules)
    saved.runs = _check_runs(raw.get("runs"), notes, trusted=trust_rules)
    saved.variables = _names(raw.get("variables"))
    return saved


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and value.isidentifier() and not keyword.iskeyword(value) and len(value) <= 100


def _names(value: Any) -> list[str]:
    return [n for n in value if _is_name(n)][:MAX_NAMES] if isinstance(value, list) else []


def check_messages(value: Any, notes: list[str]) -> list[Message]:
    """The history as the API takes it: known blocks with fields of the right types, every
    ``tool_use`` answered (``loop/messages.py``), starting with a user message."""
    if not isinstance(value, list):
        notes.append("the history was not a list: it was left out")
        return []
    messages: list[Message] = []
    dropped = [0]
    for item in value:
        message = _check_message(item, dropped)
        if message is not None:
            messages.append(message)
    if dropped[0]:
        notes.append(f"left out {dropped[0]} message(s) or block(s) of an unknown shape")
    while messages and messages[0]["role"] != "user":
        messages.pop(0)
        notes.append("left out an assistant message at the start of the history")
    repaired, repairs = ensure_tool_result_pairing(messages)
    notes.extend(repairs)
    return repaired


def _check_message(item: Any, dropped: list[int]) -> Message | None:
    """The message with its well-formed blocks (``dropped`` counts what was left out)."""
    if not isinstance(item, dict) or item.get("role") not in ("user", "assistant"):
        dropped[0] += 1
        return None
    content = item.get("content")
    if isinstance(content, str):
        return {"role": item["role"], "content": content} if content else None
    if not isinstance(content, list):
        dropped[0] += 1
        return None
    blocks = [b for b in (_check_block(block, item["role"]) for block in content) if b is not None]
    dropped[0] += len(content) - len(blocks)
    # Each block was checked against the API's shapes above: the message is one of the API's.
    return cast(Message, {"role": item["role"], "content": blocks}) if blocks else None


def _check_block(block: Any, role: str) -> dict[str, Any] | None:
    """A content block with only the fields the API knows, each of its type; else None."""
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return {"type": "text", "text": block["text"]}
    if kind == "image" and role == "user":
        return _check_image(block)
    if role == "assistant" and kind == "tool_use":
        if (isinstance(block.get("id"), str) and _TOOL_ID.match(block["id"]) and isinstance(block.get("name"), str)
                and _TOOL_NAME.match(block["name"]) and isinstance(block.get("input"), dict)):
            return {"type": "tool_use", "id": block["id"], "name": block["name"], "input": block["input"]}
        return None
    if role == "assistant" and kind == "thinking":
        if isinstance(block.get("thinking"), str) and isinstance(block.get("signature"), str):
            return {"type": "thinking", "thinking": block["thinking"], "signature": block["signature"]}
        return None
    if role == "assistant" and kind == "redacted_thinking" and isinstance(block.get("data"), str):
        return {"type": "redacted_thinking", "data": block["data"]}
    if role == "user" and kind == "tool_result" and isinstance(block.get("tool_use_id"), str):
        content = block.get("content", "")
        if isinstance(content, list):
            inner = [_check_block(b, "user") for b in content]
            if any(b is None or b["type"] not in ("text", "image") for b in inner):
                return None
            content = inner
        elif not isinstance(content, str):
            return None
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": block["tool_use_id"], "content": content}
        if block.get("is_error") is True:
            result["is_error"] = True
        return result
    return None


def _check_image(block: dict[str, Any]) -> dict[str, Any] | None:
    source = block.get("source")
    if (isinstance(source, dict) and source.get("type") == "base64" and isinstance(source.get("data"), str)
            and source.get("media_type") in ("image/png", "image/jpeg", "image/gif", "image/webp")):
        return {"type": "image", "source": {"type": "base64", "media_type": source["media_type"],
                                            "data": source["data"]}}
    return None


def _check_rules(value: Any, notes: list[str], *, trusted: bool) -> list[str]:
    from ...permissions import Rule

    if not isinstance(value, list) or not value:
        return []
    if not trusted:
        notes.append(f"the {len(value)} session rule(s) were not taken back: the file is not yours alone "
                     "(another user could have written them)")
        return []
    rules = []
    for text in value:
        try:
            if not isinstance(text, str):
                raise ValueError(text)
            rules.append(str(Rule.parse(text)))
        except ValueError:
            notes.append(f"left out a session rule that is not a rule: {str(text)[:80]!r}")
    return rules


#: The figures of a run's usage the file keeps.
USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
                "cost_usd")


def _usage_of(value: Any) -> Usage | None:
    """A run's usage from the file: non-negative numbers only, else None (shown as unknown)."""
    if not isinstance(value, dict):
        return None
    figures = {name: value.get(name, 0) for name in USAGE_FIELDS}
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in figures.values()):
        return None
    usage = Usage(cost_usd=float(figures.pop("cost_usd")))
    for name, v in figures.items():
        setattr(usage, name, int(v))
    return usage


def _check_runs(value: Any, notes: list[str], *, trusted: bool) -> list[SavedRun]:
    runs: list[SavedRun] = []
    dropped = 0
    for item in value if isinstance(value, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("prompt"), str):
            notes.append("left out a run record of an unknown shape")
            continue
        reason = item.get("reason") if item.get("reason") in {r.value for r in TerminalReason} else "completed"
        turns = item["turns"] if isinstance(item.get("turns"), int) and item["turns"] >= 0 else 0
        run = SavedRun(item["prompt"], str(reason), turns,
                       unsaved=item["unsaved"] if isinstance(item.get("unsaved"), int) else 0,
                       usage=_usage_of(item.get("usage")), offline=item.get("offline") is True)
        if item.get("changes") is not None and not trusted:
            dropped += 1
        elif item.get("changes") is not None:
            try:
                run.changes = changes_from_json(item["changes"])
            except (KeyError, TypeError, ValueError) as exc:
                notes.append(f"the undo record of run {len(runs) + 1} was not readable ({exc}): it cannot be undone")
        runs.append(run)
    if dropped:
        notes.append(f"the undo records of {dropped} run(s) were not taken back: the file is not yours alone "
                     "(another user could have written them)")
    return runs


def _typed(value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool) and kind is int:
        raise TypeError(f"{what} has the wrong type")
    return value


def changes_from_json(value: Any) -> RunChanges:
    """A run's undo record from its JSON (TypeError / ValueError / KeyError when it is not one)."""
    _typed(value, dict, "the record")
    changes = RunChanges()
    changes.saved = True
    for item in _typed(value.get("files", []), list, "files"):
        data = item.get("data")
        record = FileRecord(
            path=_typed(item["path"], str, "a file's path"), existed=_typed(item["existed"], bool, "existed"),
            data=base64.b64decode(_typed(data, str, "data"), validate=True) if data is not None else None,
            # (permission bits only: a record never makes a file set-user-id)
            mode=_typed(item["mode"], int, "mode") & 0o777 if item.get("mode") is not None else None,
            before_hash=_typed(item["before_hash"], str, "a hash") if item.get("before_hash") is not None else None,
            after_hash=_typed(item.get("after_hash", ""), str, "a hash"))
        if not os.path.isabs(record.path):
            raise ValueError("a file's path is not absolute")
        changes.files[record.path] = record
    for item in _typed(value.get("notebooks", []), list, "notebooks"):
        notebook = NotebookRecord(_typed(item["path"], str, "a notebook's path"), live=item.get("live") is True)
        for cell in _typed(item.get("cells", []), list, "cells"):
            before = cell.get("before")
            state = None
            if before is not None:
                _typed(before, dict, "a cell")
                outputs = _typed(before.get("outputs", []), list, "outputs")
                count = before.get("execution_count")
                state = CellState(_typed(before["id"], str, "a cell id"), _typed(before["cell_type"], str, "a type"),
                                  _typed(before["source"], str, "a source"),
                                  tuple(_typed(o, dict, "an output") for o in outputs),
                                  _typed(count, int, "a count") if count is not None else None,
                                  dict(_typed(before.get("metadata", {}), dict, "metadata")),
                                  _typed(before.get("index", 0), int, "an index"),
                                  _typed(before.get("after_id", ""), str, "a cell id"))
            after = cell.get("after_source")
            cell_id = _typed(cell["cell_id"], str, "a cell id")
            moved = cell.get("moved_after")
            notebook.cells[cell_id] = CellRecord(cell_id, state, _typed(after, str, "a source") if after is not None
                                                 else None, cell.get("after_type") if isinstance(
                                                     cell.get("after_type"), str) else None,
                                                 _typed(moved, str, "a cell id") if moved is not None else None)
        changes.notebooks[notebook.path] = notebook
    changes.variables = _names(value.get("variables"))
    if value.get("undone") is True:  # undone before the save: a run is undone once
        changes.undo_report = UndoReport(())
        changes.undo_told = True
    return changes


__all__ = ["FORMAT", "MAX_FILE_BYTES", "SavedConversation", "SavedConversationError", "SavedRun", "VERSION",
           "changes_from_json", "check_messages", "conversation_key", "encode", "load", "not_yours_alone", "saved_path",
           "write"]
