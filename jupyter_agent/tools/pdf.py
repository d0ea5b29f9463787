"""``Read`` of a PDF: the file, or the pages asked for, as a ``document`` block.

As in Claude Code: ``Read`` takes an optional ``pages`` (``"3"``, ``"1-5"``, ``"10-"``,
or several joined by commas), used only for PDFs. The tool result is a line saying
what was read and the PDF itself as a ``document`` content block (base64,
``application/pdf``), which the model reads page by page, text and images alike. A
PDF of more than :data:`MAX_PAGES_WITHOUT_RANGE` pages must be read in parts of at
most :data:`MAX_PAGES_PER_READ` pages; the pages are cut out with ``pypdf`` into a
smaller PDF. A whole file is sent exactly as it is on disk.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

from ..loop.tool import FileReadRecord, ToolContext, ToolError, ToolOutput
from .fileio import content_hash

__all__ = ["is_pdf_path", "check_pages_use", "parse_pages", "read_pdf",
           "MAX_PAGES_PER_READ", "MAX_PAGES_WITHOUT_RANGE", "MAX_PDF_BYTES", "PAGES_DESCRIPTION"]

#: Pages one Read may return (Claude Code's limit).
MAX_PAGES_PER_READ = 20
#: A PDF longer than this must be read with ``pages`` (Claude Code's threshold).
MAX_PAGES_WITHOUT_RANGE = 10
#: Bytes of PDF one Read may send: base64 makes it 4/3 larger, and a request to the
#: Messages API may be at most 32 MB in all.
MAX_PDF_BYTES = 20 * 1024 * 1024

PAGES_DESCRIPTION = (f'Page range for PDF files (e.g., "1-5", "3", "10-20"). Only applicable to PDF files. '
                     f"Maximum {MAX_PAGES_PER_READ} pages per request.")
READ_USAGE_LINE = (f"- This tool can read PDF files (.pdf). For large PDFs (more than {MAX_PAGES_WITHOUT_RANGE} "
                   'pages), you MUST provide the pages parameter to read specific page ranges (e.g., pages: "1-5"). '
                   f"Reading a large PDF without the pages parameter will fail. Maximum {MAX_PAGES_PER_READ} pages "
                   "per request.")


def is_pdf_path(path: Path) -> bool:
    return path.suffix.lower() == ".pdf"


def check_pages_use(path: Path, pages: str | None) -> None:
    """``pages`` is for PDFs only: say so when it comes with another kind of file."""
    if pages is not None and not is_pdf_path(path):
        raise ToolError(f"`pages` applies to PDF files only, and {path.name} is not one. "
                        "For a text file or a notebook use offset and limit.")


def parse_pages(spec: str, total: int) -> list[int]:
    """0-based page indices for a 1-based ``spec`` such as ``"3"``, ``"1-5"``, ``"10-"``
    or ``"1-3,7"``, in the order given, each once. Raises ``ToolError`` saying what is wrong."""
    wanted: list[int] = []
    seen: set[int] = set()
    for part in spec.replace(" ", "").split(","):
        first, dash, last = part.partition("-")
        try:
            start = int(first)
            end = (int(last) if last else total) if dash else start
        except ValueError:
            raise ToolError(f'pages={spec!r} is not a page range. Use a page number ("3"), a range ("1-5"), '
                            'a range to the end ("10-"), or several joined by commas ("1-3,7").') from None
        if start < 1 or end < start:
            raise ToolError(f"pages={spec!r}: pages are numbered from 1, and a range goes from a lower page to a "
                            "higher one.")
        if start > total:
            raise ToolError(f"pages={spec!r}: this PDF has {total} page(s); page {start} is past the end.")
        for index in range(start - 1, min(end, total)):
            if index not in seen:
                seen.add(index)
                wanted.append(index)
    if len(wanted) > MAX_PAGES_PER_READ:
        raise ToolError(f"pages={spec!r} asks for {len(wanted)} pages; one Read returns at most "
                        f"{MAX_PAGES_PER_READ}. Read the PDF in smaller parts.")
    return wanted


def read_pdf(path: Path, size: int, mtime_ns: int, pages: str | None, context: ToolContext) -> ToolOutput:
    """The tool result for ``Read`` of the PDF at ``path`` (``size`` bytes on disk)."""
    data = path.read_bytes()
    if not data.startswith(b"%PDF-"):
        raise ToolError(f"{path.name} has a .pdf extension but is not a PDF file (it does not start with %PDF-).")
    reader = _open(data, path)
    total = len(reader.pages)
    if pages is None:
        if total > MAX_PAGES_WITHOUT_RANGE:
            raise ToolError(f"{path.name} has {total} pages, too many to read at once. Read it in parts with "
                            f'`pages` (at most {MAX_PAGES_PER_READ} per call), e.g. pages: "1-{MAX_PAGES_PER_READ}".')
        if size > MAX_PDF_BYTES:
            raise ToolError(f"{path.name} is {_mb(size)}, more than the {_mb(MAX_PDF_BYTES)} one Read can send. "
                            'Read fewer pages at a time with `pages` (e.g. pages: "1-3").')
        body, what = data, f"{total} page{'s' if total != 1 else ''}"
        context.read_file_state[str(path)] = FileReadRecord(str(path), mtime_ns, content_hash(data))
    else:
        wanted = parse_pages(pages, total)
        body = _extract(reader, wanted, path)
        if len(body) > MAX_PDF_BYTES:
            raise ToolError(f"Pages {pages} of {path.name} come to {_mb(len(body))}, more than the "
                            f"{_mb(MAX_PDF_BYTES)} one Read can send. Ask for fewer pages.")
        what = f"page{'s' if len(wanted) != 1 else ''} {_ranges(wanted)} of {total}"
    note = f"PDF file: {path.name}, {what} ({_kb(len(body))})"
    document = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                               "data": base64.b64encode(body).decode("ascii")}}
    return ToolOutput([{"type": "text", "text": note}, document])


def _open(data: bytes, path: Path) -> Any:
    import pypdf  # ~0.1 s to import: only when a PDF is read

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ToolError(f"{path.name} is password-protected; it cannot be read. Ask the user for a copy "
                            "without a password.")
        len(reader.pages)  # parses the page tree: a broken file fails here, not later
    except ToolError:
        raise
    except Exception as exc:  # pypdf raises many kinds for a damaged file
        raise ToolError(f"{path.name} could not be read as a PDF ({type(exc).__name__}: {exc}).") from None
    return reader


def _extract(reader: Any, wanted: list[int], path: Path) -> bytes:
    import pypdf

    writer = pypdf.PdfWriter()
    try:
        for index in wanted:
            writer.add_page(reader.pages[index])
        out = io.BytesIO()
        writer.write(out)
    except Exception as exc:
        raise ToolError(f"Could not cut those pages out of {path.name} ({type(exc).__name__}: {exc}). "
                        "Try reading the whole file, or other pages.") from None
    return out.getvalue()


def _ranges(indices: list[int]) -> str:
    """``[0, 1, 2, 6]`` -> ``"1-3, 7"`` (1-based)."""
    parts: list[str] = []
    start: int | None = None
    prev = -1
    for i in indices:
        if start is not None and i == prev + 1:
            prev = i
            continue
        if start is not None:
            parts.append(f"{start + 1}" if start == prev else f"{start + 1}-{prev + 1}")
        start = prev = i
    if start is not None:
        parts.append(f"{start + 1}" if start == prev else f"{start + 1}-{prev + 1}")
    return ", ".join(parts)


def _kb(n: int) -> str:
    return f"{n / 1024:,.1f} KB" if n < 1024 * 1024 else _mb(n)


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):,.1f} MB"
