"""Edit a notebook's JSON text in place, so everything not edited stays byte-identical.

Re-serialising a whole notebook changes things nobody asked to change: indent, ``\\u``
escapes, key order, float spelling, the trailing newline (Claude Code rewrites a whole
file saved with indent 2 into indent 1: docs/design.md, "Notebook files"). Instead we find where each cell sits
in the text and splice: the edited cell is re-serialised in the file's own style
(detected indent, separators, ``ensure_ascii``, key order) and every other byte is kept.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from json.decoder import scanstring  # type: ignore[attr-defined]  # public, but not in typeshed's stub
from typing import Any

from .document import NotebookError

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_NON_ASCII_ESCAPE = re.compile(r"\\u(?:00[89a-fA-F]|0[1-9a-fA-F][0-9a-fA-F]|[1-9a-fA-F][0-9a-fA-F]{2})[0-9a-fA-F]")


@dataclass(frozen=True)
class JsonStyle:
    """How a file was written, so new text can be written the same way."""

    indent: str | None = " "  # None: everything on one line
    item_separator: str = ","
    key_separator: str = ": "
    ensure_ascii: bool = False
    sort_keys: bool = True
    trailing_newline: bool = True
    bom: bool = False
    newline: str = "\n"  # "\r\n" for a notebook saved with Windows line endings

    def dumps(self, value: Any, depth: int = 0) -> str:
        """``value`` as it would appear nested ``depth`` levels deep in the file."""
        text = json.dumps(value, indent=self.indent, ensure_ascii=self.ensure_ascii, sort_keys=self.sort_keys,
                          separators=(self.item_separator, self.key_separator))
        if self.indent is not None:  # JSON strings hold no raw newline, so this only touches layout
            text = text.replace("\n", self.newline + self.indent * depth)
        return text

    def dumps_document(self, value: Any) -> str:
        text = self.dumps(value)
        return ("\ufeff" if self.bom else "") + text + (self.newline if self.trailing_newline else "")


@dataclass
class NotebookText:
    """A notebook's text with the position of every cell in it."""

    text: str
    data: dict[str, Any]
    style: JsonStyle
    cells_span: tuple[int, int] | None  # the "cells" array, from "[" to just past "]"
    cell_spans: list[tuple[int, int]]
    member_spans: dict[str, tuple[int, int]] = field(default_factory=dict)  # top-level values


    @property
    def cells(self) -> list[dict[str, Any]]:
        cells = self.data.get("cells")
        return cells if isinstance(cells, list) else []

    # -- splicing: each returns the new whole text ---------------------------------------

    def replace(self, index: int, cell: dict[str, Any]) -> str:
        start, end = self.cell_spans[index]
        return self.text[:start] + self.style.dumps(cell, 2) + self.text[end:]

    def insert(self, index: int, cell: dict[str, Any]) -> str:
        assert self.cells_span is not None
        new = self.style.dumps(cell, 2)
        spans, text = self.cell_spans, self.text
        if not spans:
            open_, close = self.cells_span
            if self.style.indent is None:
                body = "[" + new + "]"
            else:
                nl = self.style.newline
                body = "[" + nl + self.style.indent * 2 + new + nl + self.style.indent + "]"
            return text[:open_] + body + text[close:]
        gap = self._gap()
        if index < len(spans):
            start = spans[index][0]
            return text[:start] + new + gap + text[start:]
        end = spans[-1][1]
        return text[:end] + gap + new + text[end:]

    def delete(self, index: int) -> str:
        spans, text = self.cell_spans, self.text
        if len(spans) == 1:
            assert self.cells_span is not None  # a cell was found, so the array was
            open_, close = self.cells_span
            return text[:open_] + "[]" + text[close:]
        if index < len(spans) - 1:
            return text[: spans[index][0]] + text[spans[index + 1][0]:]
        return text[: spans[index - 1][1]] + text[spans[index][1]:]

    def with_ids(self, ids: list[str | None]) -> str:
        """The text upgraded to nbformat 4.5 in place: cell ``i`` gets ``ids[i]`` (None: keep its id),
        ``nbformat_minor`` becomes 5, and every other byte stays as it was.

        An ``id`` member goes where the cell's keys say (its sorted place, else after the
        first member), written with the cell's own separators and indent.

        Not nbformat's: nbformat can add the ids (``upgrade``) only by writing the whole
        file again, in its own indent and key order; this keeps the user's diff to the ids.
        """
        edits: list[tuple[int, int, str]] = []
        for (start, _end), new_id in zip(self.cell_spans, ids):
            if new_id is not None:
                edits.append(self._id_edit(start, new_id))
        minor = self.member_spans.get("nbformat_minor")
        if minor is not None:
            edits.append((minor[0], minor[1], "5"))
        text = self.text
        for start, end, new in sorted(edits, reverse=True):
            text = text[:start] + new + text[end:]
        return text

    def _id_edit(self, start: int, new_id: str) -> tuple[int, int, str]:
        members, _close = scan_object(self.text, start)
        value = self.style.dumps(new_id)
        for key, _key_start, value_start, value_end in members:
            if key == "id":  # an invalid or duplicate id: replace its value only
                return value_start, value_end, value
        opening = self.text[start + 1: members[0][1]] if members else ""
        gap = "," + opening if "\n" in opening else self.style.item_separator
        member = '"id"' + self.style.key_separator + value
        keys = [m[0] for m in members]
        if not members:
            return start + 1, start + 1, member
        if keys == sorted(keys):
            after = next((m for m in members if m[0] > "id"), None)
            if after is not None:
                return after[1], after[1], member + gap
            return members[-1][3], members[-1][3], gap + member
        return members[0][3], members[0][3], gap + member

    def _gap(self) -> str:
        """The text between two cells (e.g. ``",\\n  "``), taken from the file if it has one."""
        if len(self.cell_spans) >= 2:
            return self.text[self.cell_spans[0][1]: self.cell_spans[1][0]]
        if self.style.indent is None:
            return self.style.item_separator
        return "," + self.style.newline + self.style.indent * 2


def parse(text: str) -> NotebookText:
    """Parse notebook JSON, recording where the top-level ``cells`` and each cell sit."""
    bom = text.startswith("\ufeff")
    if bom:
        text = text[1:]
    try:
        data, cells_span, cell_spans, seps, members = _scan(text)
    except (ValueError, IndexError, NotebookError) as exc:
        try:  # json.loads words its errors well (line and column)
            json.loads(text)
        except ValueError as json_exc:
            raise NotebookError(f"Notebook is not valid JSON: {json_exc}") from None
        raise NotebookError(f"Notebook is not valid JSON: {exc}") from None
    style = detect_style(text, data, bom, seps)
    return NotebookText(text=text, data=data, style=style, cells_span=cells_span, cell_spans=cell_spans,
                        member_spans=members)


def _skip(text: str, i: int) -> int:
    match = _WS.match(text, i)  # matches everywhere (it may match nothing)
    return match.end() if match else i


def _expect(text: str, i: int, ch: str) -> None:
    if text[i: i + 1] != ch:
        raise NotebookError(f"expected {ch!r} at character {i}")


def scan_object(text: str, start: int) -> tuple[list[tuple[str, int, int, int]], int]:
    """The members of the JSON object at ``text[start]`` (a ``{``), as
    ``(key, key_start, value_start, value_end)``, and the index of its ``}``."""
    _expect(text, start, "{")
    i = _skip(text, start + 1)
    members = []
    while text[i] != "}":
        _expect(text, i, '"')
        key, after_key = scanstring(text, i + 1)
        colon = _skip(text, after_key)
        _expect(text, colon, ":")
        value_start = _skip(text, colon + 1)
        _value, value_end = _DECODER.raw_decode(text, value_start)
        members.append((key, i, value_start, value_end))
        i = _skip(text, value_end)
        if text[i] == ",":
            i = _skip(text, i + 1)
        elif text[i] != "}":
            raise NotebookError(f"expected ',' or '}}' at character {i}")
    return members, i


def _scan(text: str) -> tuple[dict[str, Any], tuple[int, int] | None, list[tuple[int, int]],
                              tuple[str, str] | None, dict[str, tuple[int, int]]]:
    """Parse the top level by hand; also return the separators seen (``": "``, ``", "``)
    and where each top-level value sits."""
    i = _skip(text, 0)
    _expect(text, i, "{")
    i = _skip(text, i + 1)
    data: dict[str, Any] = {}
    cells_span, cell_spans = None, []
    members: dict[str, tuple[int, int]] = {}
    key_sep = item_sep = None
    while text[i] != "}":
        _expect(text, i, '"')
        key, i = scanstring(text, i + 1)
        key_end = i
        i = _skip(text, i)
        _expect(text, i, ":")
        i = _skip(text, i + 1)
        key_sep = key_sep if key_sep is not None else text[key_end:i]
        if key == "cells" and text[i] == "[":
            open_, spans, cells = i, [], []
            i = _skip(text, i + 1)
            while text[i] != "]":
                value, end = _DECODER.raw_decode(text, i)
                spans.append((i, end))
                cells.append(value)
                i = _skip(text, end)
                if text[i] == ",":
                    i = _skip(text, i + 1)
                elif text[i] != "]":
                    raise NotebookError(f"expected ',' or ']' at character {i}")
            i += 1
            data[key], cells_span, cell_spans = cells, (open_, i), spans
            members[key] = (open_, i)
        else:
            start = i
            data[key], i = _DECODER.raw_decode(text, i)
            members[key] = (start, i)
        i = _skip(text, i)
        if text[i] == ",":
            after = _skip(text, i + 1)
            item_sep = item_sep if item_sep is not None else text[i:after]
            i = after
        elif text[i] != "}":
            raise NotebookError(f"expected ',' or '}}' at character {i}")
    if text[i + 1:].strip():
        raise NotebookError("extra data after the notebook's closing brace")
    return data, cells_span, cell_spans, (key_sep or ": ", item_sep or ","), members


def detect_style(text: str, data: dict[str, Any], bom: bool = False,
                 seps: tuple[str, str] | None = None) -> JsonStyle:
    first = _skip(text, text.index("{") + 1)
    opening = text[text.index("{") + 1: first]
    newline = "\r\n" if "\r\n" in opening else "\n"
    indent: str | None = None
    if "\n" in opening:
        indent = opening[opening.rindex("\n") + 1:] or None  # newlines but no indent: compact
    if indent is not None and indent.strip(" \t"):
        indent = " "
    key_sep, item_sep = seps or (": ", ",")
    key_sep = ": " if key_sep.strip() == ":" and key_sep.endswith(" ") else ":"
    item_sep = ", " if indent is None and item_sep.startswith(", ") else ","
    ensure_ascii = writes_escapes(text)
    return JsonStyle(indent=indent, item_separator=item_sep, key_separator=key_sep,
                     ensure_ascii=ensure_ascii, sort_keys=_keys_sorted(data),
                     trailing_newline=text.endswith("\n"), bom=bom, newline=newline)


def writes_escapes(text: str) -> bool:
    """Does this file write non-ASCII text as ``\\u`` escapes? Decided by what it holds most
    of: raw non-ASCII characters, or escapes of them (a file edited by two programs can
    hold both). A file with neither writes raw UTF-8, as nbformat does."""
    if text.isascii():
        return bool(_NON_ASCII_ESCAPE.search(text))
    escapes = len(_NON_ASCII_ESCAPE.findall(text))
    return escapes > 0 and escapes > len(_NON_ASCII.findall(text))


def _keys_sorted(data: dict[str, Any]) -> bool:
    samples = [data]
    cells = data.get("cells")
    if isinstance(cells, list):
        samples += [c for c in cells[:20] if isinstance(c, dict)]
    return all(list(d) == sorted(d) for d in samples)


def split_source(text: str, like: Any) -> Any:
    """Store ``text`` as ``like`` was stored: a list of lines (nbformat) or one string."""
    if isinstance(like, str):
        return text
    return text.splitlines(keepends=True)
