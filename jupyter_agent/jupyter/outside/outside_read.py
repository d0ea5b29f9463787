"""What an outside agent reads of the page's notebook: cells with their outputs by reference,
and one output whole within a bound (``read_cells`` and ``read_output``, ``outside_hub.py``).

``read_cells`` lists each output of a cell on one line: its reference (the cell's id and
the output's index), its kind, its size and the start of its text, never the output
itself, so a read of many cells never floods the client with a log or an image.
``read_output`` returns one output: text as head and tail with what was left out said,
images (png, jpeg, gif, webp) as image blocks, markup (HTML, Markdown, LaTeX, SVG, JSON)
as its text. Secrets are redacted before anything is cut (a cut must not leave half a key
that no longer looks like one); ``outside_hub.py`` redacts every text of a reply once more.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Mapping
from typing import Any

from ...notebook.document import source_text
from ...notebook.render import IMAGE_MIME_TYPES, MAX_IMAGE_BASE64_CHARS, head_and_tail, strip_ansi
from ...notebook.rich import meaning_text
from ...redact import redact

log = logging.getLogger(__name__)

#: Characters of an output's text read_cells shows (its start), and lines at most.
OUTPUT_HEAD_CHARS, OUTPUT_HEAD_LINES = 240, 4
#: Characters of one output read_output returns by default.
OUTPUT_CHARS = 20_000
#: Text-like MIME types read_output returns as their text (the markup is not rendered).
TEXT_MIME_TYPES = ("text/plain", "text/markdown", "text/html", "text/latex", "image/svg+xml", "application/json",
                   "application/javascript")
#: read_cells' note on how to read an output whole.
HOW_TO_READ = ("(Outputs are listed by reference: [index] kind, size, and their start. read_output with the "
               "cell's id and the output's index returns one whole: text as head and tail, images as images.)")


class NoSuchOutput(Exception):
    """The reference names no output of the notebook as the page shows it now."""


def cells_content(snapshot: Any, start: int, limit: int, chars: int) -> list[dict[str, Any]]:
    """Cells ``start``..``start + limit`` of ``snapshot`` as one text block: each cell's id,
    type, execution count and source (head and tail beyond ``chars``), then its outputs by
    reference (:func:`output_line`)."""
    cells, total = snapshot.cells, len(snapshot.cells)
    end = min(total, start + limit)
    head = (f"Notebook {snapshot.path.name}: {total} cells; showing {start}-{end - 1}."
            if start < total else f"Notebook {snapshot.path.name}: {total} cells; start {start} is past the last.")
    texts = [head]
    listed = False
    for cell in cells[start:end]:
        count = f" execution_count={cell.execution_count}" if cell.cell_type == "code" else ""
        texts.append(f'<cell id="{cell.id}" index={cell.index} type={cell.cell_type}{count}>\n'
                     f"{_cut(cell.source, chars)}\n</cell>")
        if cell.outputs:
            listed = True
            texts.append(f'<outputs cell="{cell.id}" count={len(cell.outputs)}>')
            texts.extend(output_line(i, o) for i, o in enumerate(cell.outputs))
            texts.append("</outputs>")
    if end < total:
        texts.append(f"(More cells: read_cells with start={end}.)")
    if listed:
        texts.append(HOW_TO_READ)
    return [{"type": "text", "text": "\n".join(texts)}]


def output_line(index: int, output: Mapping[str, Any]) -> str:
    """One output as read_cells lists it: ``[index] kind, size: start of its text``."""
    kind, size, text = _summary(output)
    start = _start(text)
    return f"[{index}] {kind}, {size}" + (f": {start}" if start else "")


def output_content(snapshot: Any, cell_id: str, index: int, chars: int) -> list[dict[str, Any]]:
    """Output ``index`` of cell ``cell_id`` as reply blocks, its text within about ``chars``
    characters (raises :class:`NoSuchOutput` for a reference to nothing)."""
    cell = next((c for c in snapshot.cells if c.id == cell_id), None)
    if cell is None:
        raise NoSuchOutput(f"No cell {cell_id!r} in {snapshot.path.name} (as the page shows it now): use an id "
                           "read_cells shows. Nothing was read.")
    count = len(cell.outputs)
    if not 0 <= index < count:
        has = f"outputs 0 to {count - 1}" if count > 1 else ("one output, 0" if count == 1 else "no outputs")
        raise NoSuchOutput(f"Cell {cell_id} has {has}; there is no output {index}. Call read_cells to see them.")
    output = cell.outputs[index]
    kind, size, _ = _summary(output)
    heading = f"Output {index} of cell {cell_id} ({index + 1} of {count}): {kind}, {size}."
    blocks: list[dict[str, Any]] = []
    sections: list[tuple[str, str]] = []  # (label, text)
    otype = output.get("output_type")
    if otype == "stream":
        sections.append(("", strip_ansi(source_text(output.get("text")))))
    elif otype == "error":
        sections.append(("", _error_text(output)))
    elif otype in ("execute_result", "display_data"):
        data = output.get("data")
        for mime, value in (data.items() if isinstance(data, Mapping) else ()):
            if mime in IMAGE_MIME_TYPES:
                blocks.extend(_image(mime, value))
            elif mime in TEXT_MIME_TYPES or mime.startswith("text/") or mime.endswith("+json"):
                text = source_text(value) if isinstance(value, str | list) else json.dumps(value, indent=1)
                sections.append((f"{mime} (as text)", strip_ansi(text)))
            else:
                sections.append((mime, f"[{_size(mime, value)} of {mime}: not text, not an image; left out]"))
    else:
        sections.append(("", f"[an output of type {otype!r}: nothing to show]"))
    total = sum(len(t) for _, t in sections) or 1
    texts = [heading]
    for label, text in sections:
        room = max(chars * len(text) // total, 400)  # each part its share of the room
        text = redact(text)  # (one output: all of it, before it is cut)
        cut = head_and_tail(text, room) if len(text) > room else text
        texts.append((f"--- {label} ---\n" if label else "") + cut)
    return [{"type": "text", "text": "\n".join(texts)}, *blocks]


def _summary(output: Mapping[str, Any]) -> tuple[str, str, str]:
    """An output's kind, size and text (what its start is taken from)."""
    otype = str(output.get("output_type") or "unknown")
    if otype == "stream":
        text = strip_ansi(source_text(output.get("text")))
        return f"stream {output.get('name') or 'stdout'}", f"{len(text):,} characters", text
    if otype == "error":
        text = _error_text(output)
        return f"error {output.get('ename') or 'Error'}", f"{len(text):,} characters", text.split("\n", 1)[0]
    data = output.get("data")
    if otype in ("execute_result", "display_data") and isinstance(data, Mapping):
        sizes = ", ".join(f"{mime} {_size(mime, value)}" for mime, value in data.items())
        text = meaning_text(data) or ""
        if not text and any(m in data for m in IMAGE_MIME_TYPES):
            text = "(an image: read_output returns it)"
        return otype, sizes or "empty", strip_ansi(text)
    return otype, "", ""


def _error_text(output: Mapping[str, Any]) -> str:
    traceback = output.get("traceback")
    body = "\n".join(strip_ansi(str(line)) for line in traceback) if isinstance(traceback, list) else ""
    return f"{output.get('ename', 'Error')}: {output.get('evalue', '')}" + ("\n" + body if body else "")


def _size(mime: str, value: Any) -> str:
    """A MIME bundle entry's size: bytes of an image (its base64 decoded), else characters."""
    if mime in IMAGE_MIME_TYPES:
        return f"{len(''.join(source_text(value).split())) * 3 // 4:,} bytes"
    text = source_text(value) if isinstance(value, str | list) else json.dumps(value)
    return f"{len(text):,} characters"


def _start(text: str) -> str:
    """The start of an output's text, on one line: its first lines, at most
    :data:`OUTPUT_HEAD_CHARS` characters, and how much more there is."""
    text = text.strip("\n")
    # (redacted in a window past the start, not whole: a log of megabytes is listed at every read)
    window = redact(text[:OUTPUT_HEAD_CHARS + 512])
    start = "\n".join(window.split("\n")[:OUTPUT_HEAD_LINES])[:OUTPUT_HEAD_CHARS]
    more = len(window) - len(start) + max(0, len(text) - OUTPUT_HEAD_CHARS - 512)
    shown = start.replace("\n", " \u23ce ")  # one line per output: the breaks as a visible mark
    return shown + (f" \u2026 [{more:,} more characters]" if more > 0 else "")


def _cut(text: str, limit: int) -> str:
    """``text`` as head and tail within about ``limit`` characters, redacted before it is cut."""
    return head_and_tail(redact(text), limit) if len(text) > limit else text


def _image(mime: str, value: Any) -> list[dict[str, Any]]:
    """An image of a MIME bundle as an image block, or a note why not."""
    data = "".join(source_text(value).split())  # (base64 may carry line breaks)
    if len(data) > MAX_IMAGE_BASE64_CHARS:
        return [{"type": "text", "text": f"[{mime} image of {len(data) * 3 // 4:,} bytes: too large to return]"}]
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        log.debug("an output's %s is not base64", mime)
        return [{"type": "text", "text": f"[{mime} image that is not valid base64: left out]"}]
    return [{"type": "image", "data": data, "mime_type": mime}]
