"""Curly quotes in ``Edit``: find straight-quoted text in a file that has curly quotes.

Claude writes straight quotes (``'`` and ``"``) even when it copies text that has
typographic ones (‘ ’ “ ”). As Claude Code's Edit does, when ``old_string`` is not
in the file as written, it is looked for again with every quote made straight on
both sides; if found that way, ``new_string`` gets the file's curly quotes where it
has straight ones (Claude Code's ``preserveQuoteStyle``), so the edit does not turn
the file's typography into straight quotes.

Every mapping is one character to one character, so a position in the normalised
text is the same position in the file.
"""

from __future__ import annotations

import unicodedata

__all__ = ["normalize_quotes", "find_actual_string", "preserve_quote_style"]

LEFT_SINGLE, RIGHT_SINGLE = "\u2018", "\u2019"  # ‘ ’
LEFT_DOUBLE, RIGHT_DOUBLE = "\u201c", "\u201d"  # “ ”
#: Typographic quotes and the straight quote each stands for (‚ ‛ „ ‟ too).
_STRAIGHT = str.maketrans({LEFT_SINGLE: "'", RIGHT_SINGLE: "'", "\u201a": "'", "\u201b": "'",
                           LEFT_DOUBLE: '"', RIGHT_DOUBLE: '"', "\u201e": '"', "\u201f": '"'})
_SINGLES = frozenset("\u2018\u2019\u201a\u201b")
_DOUBLES = frozenset("\u201c\u201d\u201e\u201f")
#: After these (or at the start) a quote opens; elsewhere it closes.
_OPENING_AFTER = frozenset(" \t\n\r([{\u2014\u2013")


def normalize_quotes(text: str) -> str:
    """``text`` with every typographic quote replaced by its straight form."""
    return text.translate(_STRAIGHT)


def find_actual_string(text: str, search: str) -> str | None:
    """The text in ``text`` that ``search`` means: ``search`` itself if present, else
    the span that matches it once quotes are straightened on both sides, else None."""
    if search in text:
        return search
    at = normalize_quotes(text).find(normalize_quotes(search))
    if at < 0 or not search:
        return None
    return text[at:at + len(search)]


def preserve_quote_style(old: str, actual_old: str, new: str) -> str:
    """``new`` with curly quotes where the file's text (``actual_old``) had them.

    Only when the match needed straightening: then each straight double quote in
    ``new`` becomes “ or ” and each single quote ‘ or ’ (by whether it opens or closes;
    an apostrophe between letters, as in "don't", is ’), for each kind the file used.
    """
    if old == actual_old:
        return new
    doubles = any(c in _DOUBLES for c in actual_old)
    singles = any(c in _SINGLES for c in actual_old)
    if not (doubles or singles):
        return new
    out = []
    for i, ch in enumerate(new):
        prev = new[i - 1] if i else ""
        opening = i == 0 or prev in _OPENING_AFTER
        if ch == '"' and doubles:
            out.append(LEFT_DOUBLE if opening else RIGHT_DOUBLE)
        elif ch == "'" and singles:
            following = new[i + 1] if i + 1 < len(new) else ""
            if _is_letter(prev) and _is_letter(following):
                out.append(RIGHT_SINGLE)  # an apostrophe: don’t, it’s
            else:
                out.append(LEFT_SINGLE if opening else RIGHT_SINGLE)
        else:
            out.append(ch)
    return "".join(out)


def _is_letter(ch: str) -> bool:
    return bool(ch) and unicodedata.category(ch).startswith("L")
