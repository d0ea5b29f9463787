"""Invisible and reordering characters, made visible.

Bidi controls (U+202A–U+202E, U+2066–U+2069, U+061C) reorder how text is drawn, so code can
read as a comment and run as a call ("Trojan Source"); zero-width characters (U+200B–U+200F,
U+2060, U+FEFF) hide inside names and strings. In code, diffs, file names and everything a
card shows they are replaced by a visible token with their code point, ``⟦U+202E⟧``, and
an approval card that shows one says why (:data:`INVISIBLE_WARNING`).
"""

from __future__ import annotations

import re

_INVISIBLE = re.compile("[\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]")

#: What a card says when what it shows holds such a character.
INVISIBLE_WARNING = ("This contains invisible or reordering characters (shown as ⟦U+…⟧): the text may "
                     "not read the way it runs or is written. Look at each marked place before you allow.")


def mark_invisible(text: str) -> str:
    """``text`` with every invisible or reordering character replaced by ``⟦U+XXXX⟧``."""
    return _INVISIBLE.sub(lambda m: f"⟦U+{ord(m.group()):04X}⟧", text)


def has_invisible(text: str) -> bool:
    """Does ``text`` hold an invisible or reordering character?"""
    return _INVISIBLE.search(text) is not None
