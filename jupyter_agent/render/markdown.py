"""Untrusted text for a Markdown surface: cell outputs, transcripts, ``chat()``, saved notebooks.

JupyterLab trusts the outputs of the current session and renders HTML inside their
Markdown unsanitized, and a saved notebook is signed, so markup that gets into one of our
Markdown outputs runs as script there, live and every time the notebook is opened. The
kernel cannot mark its own outputs untrusted: the escaping is ours.

- :func:`markdown_from_model` keeps the model's formatting (emphasis, lists, headings,
  tables, code, http(s) links) and makes everything else inert: every ``<`` and ``&`` of
  the text becomes an entity, so no HTML tag, HTML block, autolink or character reference
  of the model's exists; inline code is rewritten as our own ``<code>`` with its text
  escaped (no code span of theirs is left for a renderer to read differently); a fenced
  block stays a fence (its text is literal) only where every CommonMark renderer must see
  one, at the start of a line; an indented fence becomes our own ``<pre><code>``; images
  become links; link targets other than http(s), mailto and relative ones are replaced.
  Where it is unsure, it escapes: the worst case is an ``&lt;`` shown in code, never a tag.
- :func:`markdown_literal` shows any text exactly as it is (a file name, a notice, an error
  message, a prompt): every punctuation character escaped.
- :func:`markdown_code` is inline code, :func:`markdown_fence` a fenced block no line of
  the text can close.

Every function redacts secrets first and marks invisible characters.
"""

from __future__ import annotations

import html
import re

from ..redact import redact
from .invisible import mark_invisible

_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
#: What is escaped inside our own ``<code>``: HTML's characters and Markdown's inline ones.
_CODE_SPECIAL = frozenset("&<>\"'`*_[]()!\\|~$")
#: A fence opener with its indentation: ``` or ~~~ (3 or more), then the info string.
_FENCE = re.compile(r"^([ \t]*)(`{3,}|~{3,})(.*)$")
#: Link targets kept as they are: absolute http(s) and mailto, and relative ones.
_SAFE_SCHEMES = ("http", "https", "mailto")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
#: Schemes that run or embed something, anywhere in the text (a second net, for a link
#: target the line scan did not see as one): their colon becomes ``%3A``.
_DANGEROUS = re.compile(r"(?i)\b(javascript|vbscript|livescript|data|file|blob)"
                        r"(\\?:|&amp;(?:#0*58|#x0*3a|colon);?)(?=\S)")
#: The characters :func:`_escape_line` acts on (everything else is copied as it is).
_LINE_SPECIAL = re.compile(r"[\\`<&!]")
#: Where a link target starts: ``](`` (inline link) or ``]:`` (reference definition).
_DEST_START = re.compile(r"\](\(|:)")


def _prepare(text: str) -> str:
    """Redacted, line endings as ``\\n``, NUL as U+FFFD (as CommonMark reads it), invisible
    characters marked."""
    text = redact(str(text)).replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "\ufffd")
    return mark_invisible(text)


def _entities(text: str) -> str:
    """Every character that means something to HTML or inline Markdown as a numeric entity."""
    return "".join(f"&#{ord(c)};" if c in _CODE_SPECIAL else c for c in text)


#: Characters :func:`markdown_literal` escapes anywhere (``&`` and ``<`` as entities, the
#: rest with a backslash); at the start of a line also what starts a block there.
_LITERAL_SPECIAL = frozenset("\\`*_[]{}<>#|~!&$")
_LINE_START = re.compile(r"^([ \t]*)([-+=]|\d{1,9}[.)])", re.MULTILINE)
#: Inline code whose text means nothing to Markdown or HTML: kept as a backtick span.
_PLAIN_CODE = re.compile(r"[\w .,:;/@+=%#?^{}-]+")


def markdown_literal(text: object) -> str:
    """``text`` shown exactly as it is, in Markdown: ``&`` and ``<`` as entities, the other
    characters that make Markdown backslash-escaped (and what would start a list or a
    heading at the start of a line), so nothing in it is markup."""
    out = []
    prepared = _prepare(str(text))
    for i, c in enumerate(prepared):
        if c == "&":
            out.append("&amp;")
        elif c == "<":
            out.append("&lt;")
        elif c == "_" and 0 < i < len(prepared) - 1 and prepared[i - 1].isalnum() and prepared[i + 1].isalnum():
            out.append(c)  # inside a word (ANTHROPIC_API_KEY) it starts no emphasis
        elif c in _LITERAL_SPECIAL:
            out.append("\\" + c)
        else:
            out.append(c)
    return _LINE_START.sub(lambda m: m.group(1) + m.group(2)[:-1] + "\\" + m.group(2)[-1], "".join(out))


def markdown_code(text: object) -> str:
    """``text`` as inline code, on one line: a backtick span when nothing in it means
    anything to Markdown or HTML, else our ``<code>`` with its text escaped."""
    flat = _prepare(str(text)).replace("\n", "⏎")
    return _code(flat)


def _code(text: str) -> str:
    if _PLAIN_CODE.fullmatch(text) and not text.startswith(" ") and not text.endswith(" "):
        return f"`{text}`"
    return f"<code>{_entities(text)}</code>"


def markdown_fence(text: object, lang: str = "") -> str:
    """``text`` in a fenced code block that no line of it can close (the fence is longer
    than any run of backticks inside); its text is literal."""
    body = _prepare(str(text))
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{_info(lang)}\n{body}\n{ticks}"


def _info(info: str) -> str:
    """A fence's info string reduced to a language name."""
    word = info.strip().split(" ", 1)[0] if info.strip() else ""
    return re.sub(r"[^A-Za-z0-9_+#.\-]", "", word)[:40]


def _is_closer(line: str, char: str) -> bool:
    """Could ``line`` close a fence of ``char``? Generous on purpose: a line a renderer
    might take as the end is the end here too (what follows is then escaped)."""
    return line.lstrip(" \t").startswith(char * 3)


def _is_exact_closer(line: str, fence: str) -> bool:
    stripped = line.lstrip(" ")
    return (len(line) - len(stripped) <= 3 and stripped.rstrip(" \t").strip(fence[0]) == ""
            and len(stripped.rstrip(" \t")) >= len(fence))


def markdown_from_model(text: object) -> str:
    """The model's Markdown, safe to render with HTML enabled (see the module docstring)."""
    lines = _prepare(str(text)).split("\n")
    out: list[str] = []
    pending_dest = False  # the previous line ended where a link target starts
    i = 0
    while i < len(lines):
        line = lines[i]
        opener = _FENCE.match(line)
        if opener and (opener.group(2)[0] == "~" or "`" not in opener.group(3)):
            indent, fence, info = opener.groups()
            body: list[str] = []
            j = i + 1
            while j < len(lines) and not _is_closer(lines[j], fence[0]):
                body.append(lines[j])
                j += 1
            exact = j < len(lines) and _is_exact_closer(lines[j], fence)
            if not indent:
                # At the start of a line, after anything this function writes, a fence is a
                # fence for every CommonMark renderer: its lines stay literal.
                out += [fence + _info(info), *body, fence]
            else:
                out += _pre_block(indent, body)
            i = j + 1 if exact else j  # a line that only might close is read again as a line
            pending_dest = False
            continue
        escaped, pending_dest = _escape_line(line, pending_dest)
        out.append(escaped)
        i += 1
    return "\n".join(out)


def _pre_block(indent: str, body: list[str]) -> list[str]:
    """An indented fence (in a list item, say) as our own ``<pre><code>``: whether a
    renderer sees a fence there depends on the container around it, so the text is
    escaped instead of being left to that guess (the worst case is our tags shown as text)."""
    pad = " " * len(indent.expandtabs(4))
    lines = [_entities(line[len(pad):] if line.startswith(pad) else line.lstrip(" ")) for line in body] or [""]
    return [f"{pad}<pre><code>{lines[0]}", *(pad + line if line else "" for line in lines[1:]),
            f"{pad}</code></pre>"]


def _escape_line(line: str, pending_dest: bool) -> tuple[str, bool]:
    """One line outside fences: ``(escaped line, does it end where a link target starts)``."""
    parts: list[str] = []  # text pieces and our own <code> pieces, in order
    text: list[str] = []
    i, n = 0, len(line)
    while i < n:
        special = _LINE_SPECIAL.search(line, i)
        if special is None:
            text.append(line[i:])
            break
        if special.start() > i:  # plain text up to the next character that matters
            text.append(line[i:special.start()])
            i = special.start()
        c = line[i]
        if c == "\\" and i + 1 < n and line[i + 1] in _PUNCTUATION:
            nxt = line[i + 1]
            text.append(_entities(nxt) if nxt in "<&`" else "\\" + nxt)
            i += 2
            continue
        if c == "`":
            run = len(line[i:]) - len(line[i:].lstrip("`"))
            close = _closing_run(line, i + run, run)
            if close is None:
                text.append("&#96;" * run)  # no code span of theirs is left to read
                i += run
                continue
            content = line[i + run:close]
            if content.startswith(" ") and content.endswith(" ") and content.strip(" "):
                content = content[1:-1]
            parts.append(_neutralise("".join(text)))
            text = []
            parts.append(_code(content))
            i = close + run
            continue
        if c == "<":
            text.append("&lt;")
        elif c == "&":
            text.append("&amp;")
        elif c == "!" and i + 1 < n and line[i + 1] == "[":
            text.append("\\!")  # an image would load its URL: show it as a link
        else:
            text.append(c)
        i += 1
    last = "".join(text)
    if pending_dest and not parts:
        last = _neutralise_first_token(last)
    parts.append(_neutralise(last))
    return "".join(parts), bool(re.search(r"\][(:]\s*$", last))


def _closing_run(line: str, start: int, run: int) -> int | None:
    """Where the backtick run of exactly ``run`` that closes a code span begins, or None."""
    i = start
    while True:
        i = line.find("`", i)
        if i < 0:
            return None
        j = i
        while j < len(line) and line[j] == "`":
            j += 1
        if j - i == run:
            return i
        i = j


def _safe_target(dest: str) -> bool:
    """A link target that goes nowhere but a web page: http(s), mailto or relative."""
    # decoded as often as it takes: some renderers decode a target's entities twice
    unescaped, before = dest, None
    while unescaped != before:
        before, unescaped = unescaped, html.unescape(re.sub(r"\\(.)", r"\1", unescaped))
    unescaped = re.sub(r"[\x00-\x20]", "", unescaped)  # browsers drop these from a URL's scheme
    scheme = _SCHEME.match(unescaped)
    return scheme is None or scheme.group(1).lower() in _SAFE_SCHEMES


def _neutralise_first_token(text: str) -> str:
    match = re.match(r"(\s*)(\S+)", text)
    if match and not _safe_target(match.group(2)):
        return match.group(1) + "#blocked-link" + text[match.end():]
    return text


def _neutralise(text: str) -> str:
    """Link targets other than http(s), mailto and relative ones replaced; dangerous
    schemes broken wherever they stand."""
    out, pos = [], 0
    for match in _DEST_START.finditer(text):
        if match.start() < pos:
            continue
        start = match.end()
        ws = len(text[start:]) - len(text[start:].lstrip())
        end = start + ws
        depth = 0
        while end < len(text) and not text[end].isspace():
            if text[end] == "(":
                depth += 1
            elif text[end] == ")":
                if depth == 0:
                    break
                depth -= 1
            end += 1
        dest = text[start + ws:end]
        out.append(text[pos:start + ws])
        out.append(dest if _safe_target(dest) else "#blocked-link")
        pos = end
    out.append(text[pos:])
    return _DANGEROUS.sub(lambda m: f"{m.group(1)}%3A", "".join(out))


__all__ = ["markdown_code", "markdown_fence", "markdown_from_model", "markdown_literal"]
