"""Text for a terminal: control characters and escape sequences shown, never obeyed.

A model's answer, a Write's content or a cell's code may hold ``ESC[2J`` (clear the screen),
``\\r`` (go back and overwrite the line), OSC sequences (set the title, write to the
clipboard) or C1 controls (``\\x9b`` is a one-byte CSI on some terminals). Printed raw, they
can draw a fake approval card over the real one. :func:`terminal_text` shows each C0
control as its Control Pictures sign (ESC as ``␛``, so ``\\x1b[2J`` prints as ``␛[2J``),
DEL as ``␡``, C1 controls as ``⟦U+009B⟧``, and invisible characters marked; newline and
tab are kept.
"""

from __future__ import annotations

import re

from ..redact import redact
from .invisible import mark_invisible

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _picture(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ … ␟ (ESC is ␛)
    if code == 0x7F:
        return "␡"
    return f"⟦U+{code:04X}⟧"


def inert(text: str) -> str:
    """``text`` with its control characters (but ``\\n`` and ``\\t``) shown as signs and
    invisible characters marked; no redaction (see :func:`terminal_text`)."""
    return mark_invisible(_CONTROL.sub(_picture, text))


def terminal_text(text: str) -> str:
    """Untrusted ``text`` as it may be written to a terminal: redacted, then made inert."""
    return inert(redact(text))
