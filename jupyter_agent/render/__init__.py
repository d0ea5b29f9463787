"""How untrusted text reaches a screen: one module per medium.

Everything that came from the model, a tool, a file, a notebook or an error (answer text,
thinking, tool names, inputs, results, diffs, file names, notices, error messages) is
data, never markup or control. Before it is shown it passes through one of these:

- :mod:`.html`: text for an HTML widget, escaped (and :func:`.html.sanitize_html` for the
  rare place that wants rich HTML from untrusted text: a whitelist, no script);
- :mod:`.markdown`: text for a ``text/markdown`` output, a transcript or a saved notebook:
  the model's formatting renders, any HTML in it is inert text, links go only to http(s);
- :mod:`.terminal`: text for a terminal, control characters and escape sequences inert;
- :mod:`.invisible`: bidi controls and zero-width characters shown as ``⟦U+202E⟧``.

Every function here redacts secrets first (:func:`jupyter_agent.redact.redact`): escaping
changes how a secret is spelled, and a secret spelled differently is no longer found.
Only the callers' own markup (their ``<details>``, styles, classes) is written around what
these return. Nothing here imports a widget stack.
"""

from .html import html_text, inline_html, pre_html, sanitize_html
from .invisible import INVISIBLE_WARNING, has_invisible, mark_invisible
from .markdown import (
    markdown_code,
    markdown_fence,
    markdown_from_model,
    markdown_literal,
)
from .terminal import terminal_text

__all__ = [
    "INVISIBLE_WARNING", "has_invisible", "html_text", "inline_html", "mark_invisible", "markdown_code",
    "markdown_fence", "markdown_from_model", "markdown_literal", "pre_html", "sanitize_html", "terminal_text",
]
