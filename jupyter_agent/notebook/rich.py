"""Rich outputs as what they mean to the model, not as their markup.

A display's MIME bundle may hold several forms of one value. The model gets the one that
says the most in the fewest tokens:

* a pandas DataFrame (its ``text/html`` is a ``<table class="dataframe">``) becomes a
  compact text table: the shape, the columns (with their types when the bundle says them:
  pandas' ``application/vnd.dataresource+json`` table schema), and the first rows. Its
  ``text/plain`` repr wraps wide frames into blocks and hides columns; its HTML has them
  all, and the shape;
* another HTML table becomes such a table only when there is no ``text/plain``;
* HTML without a table, and nothing else, becomes its visible text;
* an ipywidget is its ``text/plain`` (``IntSlider(value=3)``), or says it has no text.

HTML is parsed with the standard library's ``html.parser``: nothing is fetched, run or
rendered, and ``<script>``/``<style>`` contents are skipped. Everything here is text for
the model; the notebook keeps its outputs as they were.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

log = logging.getLogger(__name__)

#: Rows of a table shown to the model (the first ones), and the width of one cell.
MAX_TABLE_ROWS = 20
MAX_CELL_CHARS = 40
#: Columns named in the columns line, at most.
MAX_COLUMNS_LISTED = 60
#: Characters of an HTML output's visible text, at most.
MAX_HTML_TEXT_CHARS = 5_000
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
TABLE_SCHEMA_MIME = "application/vnd.dataresource+json"

_SHAPE = re.compile(r"([\d,]+)\s+rows\s*[×x]\s*([\d,]+)\s+columns")
_SKIPPED = {"script", "style", "template", "head", "title"}
_BLOCKS = {"p", "div", "br", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "pre", "section"}


@dataclass
class _Cell:
    text: str = ""
    header: bool = False
    colspan: int = 1
    rowspan: int = 1


@dataclass
class _Table:
    classes: list[str] = field(default_factory=list)
    head: list[list[_Cell]] = field(default_factory=list)
    body: list[list[_Cell]] = field(default_factory=list)


class _Reader(HTMLParser):
    """The tables of an HTML fragment (cells as text), and its visible text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[_Table] = []
        self.text: list[str] = []
        self._open: list[_Table] = []
        self._section = "body"
        self._row: list[_Cell] | None = None
        self._cell: _Cell | None = None
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag in _SKIPPED:
            self._skip += 1
        elif tag == "table":
            self._open.append(_Table(classes=values.get("class", "").split()))
            self._section = "body"
        elif tag == "thead":
            self._section = "head"
        elif tag in ("tbody", "tfoot"):
            self._section = "body"
        elif tag == "tr" and self._open:
            self._row = []
            table = self._open[-1]
            (table.head if self._section == "head" else table.body).append(self._row)
        elif tag in ("td", "th") and self._row is not None:
            self._cell = _Cell(header=tag == "th", colspan=_span(values.get("colspan")),
                               rowspan=_span(values.get("rowspan")))
            self._row.append(self._cell)
        if tag in _BLOCKS:
            self.text.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            self._skip = max(0, self._skip - 1)
        elif tag == "table" and self._open:
            self.tables.append(self._open.pop())
            self._row = self._cell = None
        elif tag == "thead":
            self._section = "body"
        elif tag == "tr":
            self._row = self._cell = None
        elif tag in ("td", "th"):
            self._cell = None
            self.text.append("\t")
        if tag in _BLOCKS:
            self.text.append("\n")

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        if self._cell is not None:
            self._cell.text += data
        self.text.append(data)


def _span(value: str | None) -> int:
    try:
        return max(1, min(int(value or 1), 1000))
    except ValueError:
        return 1


def _read(html: str) -> _Reader:
    reader = _Reader()
    try:
        reader.feed(html)
        reader.close()
    except Exception:  # html.parser is lenient; anything it still refuses leaves what was read
        log.debug("an HTML output could not be read to its end", exc_info=True)
    return reader


def _grid(rows: list[list[_Cell]]) -> list[list[str]]:
    """Rows with colspan and rowspan spread out: every row as long as it reads."""
    grid: list[list[str]] = []
    pending: dict[tuple[int, int], str] = {}  # (row, column) -> text carried down by a rowspan
    for r, row in enumerate(rows):
        out: list[str] = []
        cells = iter(row)
        c = 0
        while True:
            if (r, c) in pending:
                out.append(pending.pop((r, c)))
                c += 1
                continue
            cell = next(cells, None)
            if cell is None:
                break
            text = " ".join(cell.text.split())
            for k in range(cell.colspan):
                out.append(text)
                for down in range(1, cell.rowspan):
                    pending[(r + down, c + k)] = text
            c += cell.colspan
        grid.append(out)
    return grid


def _index_width(table: _Table) -> int:
    """How many leading columns are the index (``<th>`` cells that start each body row)."""
    if not table.body:
        return 0
    first = table.body[0]
    width = 0
    for cell in first:
        if not cell.header:
            break
        width += cell.colspan
    return width


def _cut(text: str, width: int = MAX_CELL_CHARS) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _number(text: str) -> int | None:
    try:
        return int(text.replace(",", ""))
    except ValueError:
        return None


def table_text(html: str, *, kind: str = "Table", types: Mapping[str, str] | None = None) -> str | None:
    """The first table of ``html`` as compact text (shape, columns, the first rows), or None
    when it holds no table with rows."""
    reader = _read(html)
    tables = [t for t in reader.tables if t.body or t.head]
    if not tables:
        return None
    table = next((t for t in tables if "dataframe" in t.classes), tables[0])
    if not table.head:  # no <thead>: the leading rows of <th> cells are the header
        while table.body and len(table.body) > 1 and all(c.header for c in table.body[0]):
            table.head.append(table.body.pop(0))
    head, body = _grid(table.head), _grid(table.body)
    index = _index_width(table)
    width = max((len(r) for r in head + body), default=0)
    # a header row that names only the index (pandas: an index with a name) labels the index
    index_names = [r for r in head if index and any(r[:index]) and not any(r[index:])]
    labels = [r for r in head if r not in index_names]
    columns = [" / ".join(x for x in (row[c] if c < len(row) else "" for row in labels) if x) for c in range(width)]
    if index_names:
        for c in range(index):
            columns[c] = index_names[-1][c] if c < len(index_names[-1]) else ""
    data_columns = [c for c in columns[index:]]
    shown_columns = [c for c in data_columns if c != "..."]
    rows = [r + [""] * (width - len(r)) for r in body]
    truncated_rows = any(r and all(x in ("...", "…") for x in r if x) for r in rows)
    footer = _SHAPE.search("".join(reader.text))
    n_rows = _number(footer.group(1)) if footer else None
    n_cols = _number(footer.group(2)) if footer else None
    if n_rows is None:
        n_rows = sum(1 for r in rows if not all(x in ("...", "…") for x in r if x))
    if n_cols is None:
        n_cols = len(shown_columns)
    at_least = "" if footer or not (truncated_rows or len(shown_columns) < len(data_columns)) else "at least "
    lines = [f"{kind}: {at_least}{n_rows:,} row{'s' if n_rows != 1 else ''} × {n_cols:,} "
             f"column{'s' if n_cols != 1 else ''}"]
    listed = [f"{name} ({types[name]})" if types and name in types else name or "(unnamed)"
              for name in shown_columns[:MAX_COLUMNS_LISTED]]
    more = f", … {n_cols - len(listed):,} more" if n_cols > len(listed) else ""
    lines.append(f"columns: {', '.join(listed)}{more}")
    shown = rows[:MAX_TABLE_ROWS]
    if len(rows) > len(shown) or truncated_rows:
        lines.append(f"first rows (of {n_rows:,}):" if not truncated_rows else f"rows shown (of {n_rows:,}):")
    cells = [[_cut(x) for x in columns]] + [[_cut(x) for x in r] for r in shown]
    sizes = [max(len(r[c]) for r in cells) for c in range(width)]
    for row in cells:
        lines.append("  ".join(x.rjust(sizes[c]) for c, x in enumerate(row)).rstrip())
    if len(rows) > len(shown):
        lines.append(f"[... {len(rows) - len(shown):,} more rows of this output not shown]")
    return "\n".join(lines)


def html_visible_text(html: str, limit: int = MAX_HTML_TEXT_CHARS) -> str:
    """The text a person would read in ``html`` (no markup, no script or style)."""
    raw = "".join(_read(html).text)
    lines = [" ".join(line.replace("\t", " ").split()) for line in raw.splitlines()]
    text = "\n".join(line for line in lines if line)
    if len(text) > limit:
        text = text[:limit] + f"\n[... {len(text) - limit:,} more characters of this HTML output not shown]"
    return text


def _schema_types(value: Any) -> dict[str, str] | None:
    """Column -> type from pandas' table schema (``display.html.table_schema``)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    fields = value.get("schema", {}).get("fields") if isinstance(value, dict) else None
    if not isinstance(fields, list):
        return None
    return {str(f.get("name")): str(f.get("extDtype") or f.get("type")) for f in fields
            if isinstance(f, dict) and f.get("name") is not None}


def _joined(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def meaning_text(data: Mapping[str, Any]) -> str | None:
    """The text that best says what a display's bundle means, or None when it has none
    (an image alone: the caller sends the image)."""
    html = _joined(data["text/html"]) if "text/html" in data else ""
    plain = _joined(data["text/plain"]) if "text/plain" in data else None
    if html and 'class="dataframe"' in html or html and plain is None and "<table" in html:
        is_frame = 'class="dataframe"' in html
        table = table_text(html, kind="DataFrame" if is_frame else "Table",
                           types=_schema_types(data.get(TABLE_SCHEMA_MIME)))
        if table is not None:
            return table
    if plain is not None:
        return plain
    for mime in ("text/markdown", "text/latex", "application/json"):
        if mime in data:
            return _joined(data[mime])
    if html:
        return html_visible_text(html) or "[an HTML output with no text]"
    if WIDGET_MIME in data:
        return "[an interactive widget with no text form]"
    return None


__all__ = ["html_visible_text", "meaning_text", "table_text"]
