"""How a notebook looks to the model: Claude Code's ``<cell id="...">`` blocks, then outputs.

    <cell id="a1b2"><cell_type>markdown</cell_type># Title</cell id="a1b2">
    <cell id="c3d4">print(1)</cell id="c3d4">
    1

Code cells carry no ``cell_type`` tag (a ``<language>`` tag when not Python). Outputs
follow their cell: stream text, results as what they mean (``rich.meaning_text``: a
DataFrame as a compact text table, HTML as its text, a widget as its text), errors with
ANSI colour codes stripped, and png/jpeg/gif/webp images as image blocks. One cell's long
outputs keep their start and end, with a note; a whole read is bounded and pages by cells.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .document import SCRATCH_ID, Cell, KernelInfo, NotebookSnapshot, source_text
from .rich import meaning_text
from .tracebacks import TracebackSaver, compact_traceback

#: One cell's outputs longer than this (characters of text) are replaced by a hint.
MAX_CELL_OUTPUT_CHARS = 10_000
#: A Read of a notebook shows cells until about this many characters, then pages.
NOTEBOOK_PAGE_CHARS = 100_000
#: Images per Read (each costs the model ~1,500 tokens; the API caps images per request).
MAX_IMAGES_PER_READ = 20
#: The Messages API refuses images over 5 MB (base64 is 4/3 of the bytes).
MAX_IMAGE_BASE64_CHARS = 5 * 1024 * 1024
IMAGE_MIME_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def image_block(media_type: str, data: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


@dataclass
class _Part:
    text: str | None = None
    image: dict[str, Any] | None = None


def cell_tag(cell: Cell, language: str = "python", kernel: KernelInfo | None = None) -> str:
    """The opening of one cell's block, with its source: ``<cell id="ID" type="code"
    execution_count="3">SOURCE``. Attributes: ``type``; for a code cell ``language`` (when
    not Python), ``execution_count``, ``never_run="true"`` (no count, no outputs) and
    ``stale="true"`` (the kernel ran other source under that count: the outputs are older
    than the source)."""
    attributes = [f'id="{cell.id}"', f'type="{cell.cell_type}"']
    if cell.cell_type == "code":
        if language and language != "python":
            attributes.append(f'language="{language}"')
        if cell.execution_count is not None:
            attributes.append(f'execution_count="{cell.execution_count}"')
            ran = kernel.sources.get(cell.execution_count) if kernel and kernel.sources is not None else None
            if ran is not None and ran.rstrip() != cell.source.rstrip():
                attributes.append('stale="true"')
        elif not cell.outputs:
            attributes.append('never_run="true"')
    return f"<cell {' '.join(attributes)}>{cell.source}"


def notebook_tag(snapshot: NotebookSnapshot, kernel: KernelInfo | None) -> str:
    """The opening of a Read: the notebook, its cells, and its kernel (running or not, and
    the folder its code runs in)."""
    attributes = [f'path="{snapshot.path}"', f'cells="{len(snapshot.cells)}"']
    if kernel is not None:
        attributes.append(f'kernel="{"running" if kernel.running else "not running"}"')
        if kernel.working_folder:
            attributes.append(f'working_folder="{kernel.working_folder}"')
    return f"<notebook {' '.join(attributes)}>"


def _output_parts(output: Mapping[str, Any], save: TracebackSaver | None = None) -> list[_Part]:
    kind = output.get("output_type")
    if kind == "stream":
        return [_Part(text=strip_ansi(source_text(output.get("text"))))]
    if kind == "error":
        traceback = output.get("traceback") or []
        lines = [strip_ansi(str(line)) for line in traceback] if isinstance(traceback, list) else []
        return [_Part(text=compact_traceback(str(output.get("ename") or "Error"), str(output.get("evalue") or ""),
                                             lines, save))]
    if kind in ("execute_result", "display_data", "pyout"):
        data = output.get("data") or {}
        if not isinstance(data, Mapping):
            return []
        parts: list[_Part] = []
        meaning = meaning_text(data)  # a DataFrame as a text table, HTML as its text...
        if meaning is not None:
            parts.append(_Part(text=strip_ansi(meaning)))
        for mime in IMAGE_MIME_TYPES:
            if mime in data:
                payload = "".join(source_text(data[mime]).split())  # drop line breaks inside base64
                parts.append(_Part(image=image_block(mime, payload)))
                break
        if not parts and data:
            parts.append(_Part(text=f"[{', '.join(sorted(data))} output]"))
        return parts
    return []


def head_and_tail(text: str, limit: int) -> str:
    """``text`` within about ``limit`` characters: its start and its end (cut at line
    breaks where there are some), with a note of how much was cut between them."""
    if len(text) <= limit:
        return text
    head_end, tail_start = limit * 3 // 5, len(text) - (limit - limit * 3 // 5)
    head_break = text.rfind("\n", limit // 4, head_end)
    tail_break = text.find("\n", tail_start, tail_start + limit // 4)
    head_end = head_break + 1 if head_break > 0 else head_end
    tail_start = tail_break + 1 if tail_break >= 0 else tail_start
    cut = text[head_end:tail_start]
    lines = cut.count("\n")
    return (text[:head_end] + f"[... {len(cut):,} characters" + (f" ({lines:,} lines)" if lines else "")
            + " cut from the middle of this output ...]\n" + text[tail_start:])


def output_parts(outputs: Iterable[Mapping[str, Any]], cell_id: str, save: TracebackSaver | None = None, *,
                 wrap: bool = False) -> list[_Part]:
    """A cell's outputs as parts; when their text is too long, each long one keeps its
    start and its end (a traceback's last line, a log's summary), with a note. ``wrap``:
    each output between ``<output>`` and ``</output>`` (a Read of a notebook)."""
    groups = [_output_parts(o, save) for o in outputs]
    parts = [p for group in groups for p in group]
    size = sum(len(p.text) for p in parts if p.text)
    note: list[_Part] = []
    if size > MAX_CELL_OUTPUT_CHARS:
        for part in parts:
            if part.text:  # each output keeps its share of the room
                part.text = head_and_tail(part.text, max(MAX_CELL_OUTPUT_CHARS * len(part.text) // size, 400))
        note.append(_Part(text=f"[Outputs of cell {cell_id} had {size:,} characters of text; the middle was cut. "
                               "To see more, make the cell print less, or Grep the notebook file.]"))
    for part in parts:
        if part.image and len(part.image["source"]["data"]) > MAX_IMAGE_BASE64_CHARS:
            part.text, part.image = f"[{part.image['source']['media_type']} image too large to include]", None
    if wrap:
        parts = [p for group in groups if group for p in (_Part(text="<output>"), *group, _Part(text="</output>"))]
    return parts + note


def to_content(parts: list[_Part]) -> str | list[dict[str, Any]]:
    """Text only -> one string; with images -> text and image blocks in order."""
    blocks: list[dict[str, Any]] = []
    texts: list[str] = []
    for part in parts:
        if part.image is not None:
            if texts:
                blocks.append({"type": "text", "text": "\n".join(texts)})
                texts = []
            blocks.append(part.image)
        elif part.text is not None:
            texts.append(part.text.rstrip("\n"))
    if not blocks:
        return "\n".join(texts)
    if texts:
        blocks.append({"type": "text", "text": "\n".join(texts)})
    return blocks


@dataclass
class NotebookPage:
    content: str | list[dict[str, Any]]
    first: int
    last: int  # inclusive; first - 1 when nothing was shown
    total: int

    @property
    def partial(self) -> bool:
        return self.first > 0 or self.last < self.total - 1


def render_notebook(snapshot: NotebookSnapshot, *, offset: int = 0, limit: int | None = None,
                    page_chars: int = NOTEBOOK_PAGE_CHARS, max_images: int = MAX_IMAGES_PER_READ,
                    save: TracebackSaver | None = None, kernel: KernelInfo | None = None,
                    outputs: bool = True, images: bool = True) -> NotebookPage:
    """Cells ``offset``.. (at most ``limit``), cut at about ``page_chars`` characters, inside
    a ``<notebook>`` element; each cell a ``<cell>`` element (:func:`cell_tag`) holding its
    source then its ``<output>`` elements. ``outputs``/``images`` False leave them out."""
    cells, total = snapshot.cells, len(snapshot.cells)
    opening, closing = _Part(text=notebook_tag(snapshot, kernel)), _Part(text="</notebook>")
    if total == 0:
        return NotebookPage(to_content([opening, _Part(text="(This notebook has no cells.)"), closing]), 0, -1, 0)
    if offset >= total:
        return NotebookPage(f"(The notebook has {total} cells, cell-0 to cell-{total - 1}; "
                            f"offset {offset} is past the last one.)", offset, offset - 1, total)
    end = total if limit is None else min(total, offset + limit)
    parts: list[_Part] = [opening]
    used, shown_images, left_out, last = 0, 0, 0, offset - 1
    for cell in cells[offset:end]:
        shown = output_parts(cell.outputs, cell.id, save, wrap=True) if outputs else []
        if not images:
            left_out += sum(1 for p in shown if p.image is not None)
            shown = [p for p in shown if p.image is None]
        cell_parts = [_Part(text=cell_tag(cell, snapshot.language, kernel)), *shown]
        size = sum(len(p.text) for p in cell_parts if p.text)
        if used + size > page_chars and last >= offset:
            break
        if size > page_chars:  # a single enormous cell: show its start
            head = cell_parts[0].text or ""
            cell_parts = [_Part(text=head[:page_chars] + f"\n[... cell {cell.id} continues for "
                                f"{len(head) - page_chars:,} more characters]")]
            size = page_chars
        for part in cell_parts:
            if part.image is not None:
                shown_images += 1
                if shown_images > max_images:
                    part.text, part.image = (f"[image omitted: over {max_images} images in one read; "
                                             f"read fewer cells to see it]"), None
        if len(cell_parts) == 1:  # no outputs: the closing tag right after the source
            cell_parts[0].text = (cell_parts[0].text or "") + "</cell>"
        else:
            cell_parts.append(_Part(text="</cell>"))
        parts += cell_parts
        used += size
        last = cell.index
    if not outputs:
        parts.append(_Part(text="(Outputs left out: Read without outputs=false to see them.)"))
    elif left_out:
        parts.append(_Part(text=f"({left_out} image{'s' if left_out != 1 else ''} left out: Read without "
                                "images=false to see them.)"))
    if last < total - 1 or offset > 0:
        more = f" To see more, Read with offset={last + 1}." if last < total - 1 else ""
        parts.append(_Part(text=f"(Showing cells {offset}-{last} of {total}, i.e. cell-{offset} to "
                                f"cell-{last}.{more})"))
    parts.append(closing)
    return NotebookPage(to_content(parts), offset, last, total)


#: What a scratch run's result (``KernelRun``) starts with.
_SCRATCH_HEADINGS = {
    "ok": "Ran the code in the notebook's kernel (nothing was saved into the notebook).",
    "error": "Ran the code in the notebook's kernel; it raised an error:",
    "timeout": "The code timed out; the kernel was interrupted. Outputs so far:",
    "interrupted": "The code was interrupted by the user. Outputs so far:",
    "died": "The kernel died while running the code; it will restart on the next run. Outputs so far:",
}


def render_run(cell: Cell, outputs: Sequence[Mapping[str, Any]], execution_count: int | None,
               status: str, note: str = "", save: TracebackSaver | None = None) -> str | list[dict[str, Any]]:
    """What ``NotebookRun`` returns: a status line, then the outputs rendered as in ``Read``."""
    count = f" [{execution_count}]" if execution_count is not None else ""
    headings = _SCRATCH_HEADINGS if cell.id == SCRATCH_ID else {
        "ok": f"Ran cell {cell.id}{count}.",
        "error": f"Ran cell {cell.id}{count}; it raised an error:",
        "timeout": f"Cell {cell.id} timed out; the kernel was interrupted. Outputs so far:",
        "interrupted": f"Cell {cell.id} was interrupted by the user. Outputs so far:",
        "died": f"The kernel died while running cell {cell.id}; it will restart on the next run. Outputs so far:",
    }
    heading = headings.get(status, f"Cell {cell.id} finished ({status}).")
    parts = [_Part(text=heading)] + output_parts(outputs, cell.id, save)
    if len(parts) == 1:
        parts.append(_Part(text="(no output)"))
    if note:
        parts.append(_Part(text=note))
    return to_content(parts)
