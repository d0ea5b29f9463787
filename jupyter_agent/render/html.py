"""Untrusted text for an HTML surface (``ipywidgets.HTML``, the lessons' widgets).

``ipywidgets.HTML`` puts its value into the page as is: no sanitizer stands between a
string and the DOM. So every untrusted string is escaped here (:func:`html_text`), with
secrets redacted first and invisible characters marked. The widgets write their own
markup (boxes, ``<details>``, colours) around what this returns.

For the rare place that wants rich HTML *from* untrusted text, :func:`sanitize_html` keeps a
whitelist of harmless tags and attributes and escapes everything else: no script, no
``<style>``, no event-handler attribute, no ``style`` attribute, links to http(s) only.
"""

from __future__ import annotations

import html
import logging
import re
from html.parser import HTMLParser

from ..redact import redact
from .invisible import mark_invisible

log = logging.getLogger(__name__)


def html_text(text: object, *, mark: bool = True) -> str:
    """Untrusted ``text`` as HTML text: redacted, invisible characters marked (unless
    ``mark=False``), escaped (quotes too, so it may also stand in an attribute)."""
    value = redact(str(text))
    return html.escape(mark_invisible(value) if mark else value)


def inline_html(text: object) -> str:
    """Like :func:`html_text`, on one line: a line break shows as ``⏎`` (a tool name or a
    file name that holds one must not start a new line of a card)."""
    return html_text(str(text).replace("\r\n", "\n").replace("\n", "⏎").replace("\r", "⏎"))


def pre_html(text: str, style: str = "", css_class: str = "") -> str:
    """Untrusted ``text`` in a ``<pre>``: all of it, escaped (see :func:`html_text`)."""
    attrs = (f' class="{html.escape(css_class)}"' if css_class else "") + (f' style="{style}"' if style else "")
    return f"<pre{attrs}>{html_text(text)}</pre>"


#: Tags :func:`sanitize_html` keeps, and the attributes each may carry.
ALLOWED_TAGS: dict[str, frozenset[str]] = {
    **{tag: frozenset() for tag in (
        "b", "strong", "i", "em", "u", "s", "del", "code", "pre", "kbd", "samp", "sub", "sup", "br", "hr",
        "p", "div", "span", "blockquote", "ul", "ol", "li", "dl", "dt", "dd", "h1", "h2", "h3", "h4", "h5",
        "h6", "table", "thead", "tbody", "tr", "th", "td", "details", "summary")},
    "a": frozenset({"href", "title"}),
    "abbr": frozenset({"title"}),
}
_VOID = frozenset({"br", "hr"})
_SAFE_URL = re.compile(r"^(https?://|mailto:)", re.IGNORECASE)


def safe_url(url: str) -> bool:
    """An absolute http(s) or mailto URL (a link target :func:`sanitize_html` keeps)."""
    return bool(_SAFE_URL.match(url.strip()))


class _Sanitizer(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.open: list[str] = []
        self.skip = 0  # inside <script>/<style>: their text is dropped

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self.skip += 1
            return
        allowed = ALLOWED_TAGS.get(tag)
        if allowed is None:
            return  # the tag goes, its text stays (as text)
        kept = []
        for name, value in attrs:
            if name not in allowed or value is None:
                continue
            if name == "href" and not safe_url(value):
                continue
            kept.append(f' {name}="{html.escape(value)}"')
        self.out.append(f"<{tag}{''.join(kept)}>")
        if tag not in _VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID and self.open and self.open[-1] == tag:
            self.open.pop()
            self.out.append(f"</{tag}>")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self.skip = max(0, self.skip - 1)
            return
        if tag in self.open:  # close what is open down to it: the output stays well nested
            while self.open:
                top = self.open.pop()
                self.out.append(f"</{top}>")
                if top == tag:
                    break

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.out.append(html.escape(data, quote=False))


def sanitize_html(markup: str) -> str:
    """Untrusted ``markup`` reduced to :data:`ALLOWED_TAGS` (redacted first; comments,
    scripts, styles, unknown tags and attributes dropped, their text kept as text)."""
    parser = _Sanitizer()
    try:
        parser.feed(redact(markup))
        parser.close()
    except Exception:  # HTMLParser is lenient; if it ever gives up, show the text instead
        log.debug("sanitize_html: the parser gave up; showing the markup as text", exc_info=True)
        return html_text(markup)
    return "".join(parser.out) + "".join(f"</{tag}>" for tag in reversed(parser.open))
