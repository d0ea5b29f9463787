"""Quoting as bash reads it, and the checks of a whole tree-sitter-bash tree, for
:mod:`.shell_tree`'s walk: a word's value after quote removal (``\\x``, ``"..."``,
``$'...'``), whether bash expands it into other words, and :func:`scan`, which counts the
tree's commands a plain way and refuses text no token holds.
"""

from __future__ import annotations

import re
from typing import Any

#: Containers whose named children are statements (walked as they are).
STATEMENTS = {"program", "list", "pipeline", "subshell", "do_group", "if_statement", "elif_clause",
              "else_clause", "while_statement", "negated_command", "compound_statement"}
#: ``$'...'`` escapes of one character.
_ANSI_SIMPLE = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
                "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
#: Bytes that end a word to bash.
META = frozenset(bytes([c]) for c in b" \t\n;&|()<>")


class Unreadable(Exception):
    """The line holds something the rules cannot judge (the message says what)."""


def unescape(raw: str) -> str:
    """An unquoted word's value: ``\\x`` is ``x``, a line continuation is nothing."""
    return re.sub(r"\\(\n|.)", lambda m: "" if m.group(1) == "\n" else m.group(1), raw, flags=re.S)


def unescape_double(raw: str) -> str:
    """Text between double quotes: ``\\$ \\` \\" \\\\`` are the character, a line
    continuation is nothing, any other backslash stays."""
    return re.sub(r"\\([$`\"\\\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), raw)


def ansi_c(raw: str) -> str:
    """``$'...'``'s value, for the escapes whose meaning is plain; any other asks."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "'":  # tree-sitter's token can run past the quote bash ends the word at
            raise Unreadable("$'...' quoting whose end the parser and bash may see in different places")
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = raw[i + 1:i + 2]
        if nxt in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[nxt])
            i += 2
        elif m := re.match(r"x([0-9A-Fa-f]{1,2})", raw[i + 1:]):
            out.append(chr(int(m.group(1), 16)))
            i += 1 + len(m.group(0))
        elif m := re.match(r"[0-7]{1,3}", raw[i + 1:]):
            out.append(chr(int(m.group(0), 8) & 0xFF))
            i += 1 + len(m.group(0))
        else:
            raise Unreadable(f"the rules cannot read the escape \\{nxt} in $'...'")
    value = "".join(out)
    if "\x00" in value:  # bash ends the word at a NUL
        raise Unreadable("a NUL character in $'...'")
    return value


def expands(raw: str) -> bool:
    """Does a word's source text hold, outside quotes, what bash expands into other words
    (a glob ``*?[``, a brace ``{a,b}``)? (Variables and substitutions are nodes of the tree.)"""
    quote = ""
    escaped = False
    for c in raw:
        if escaped:
            escaped = False
        elif c == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "*?[{":
            return True
    return False


#: Node types that are commands (each must have been judged by the walk).
COMMAND_NODES = {"command", "declaration_command", "unset_command", "test_command", "c_style_for_statement",
                 "variable_assignments"}
_HOLDSSTATEMENTS = STATEMENTS | {"redirected_statement", "case_item", "command_substitution",
                                   "process_substitution", "heredoc_redirect", "function_definition"}


def scan(root: Any, source: bytes) -> tuple[int, set[tuple[int, int]]]:
    """The command nodes anywhere in a tree (found by a plain walk, not the walker's way:
    statement-level assignments and ``(( ))`` included), and the runs of text no token of
    the tree holds (the walk must account for each, or the line asks); ``Unreadable`` for a
    comment where bash sees none (``#`` starts one only at the start of a word)."""
    count = 0
    covered = bytearray(len(source))
    stack = [(root, root)]
    while stack:
        node, parent = stack.pop()
        kind = node.type
        if not node.child_count or kind in ("string", "heredoc_body"):  # (read from the source text)
            covered[node.start_byte:node.end_byte] = b"\x01" * (node.end_byte - node.start_byte)
        if kind in COMMAND_NODES:
            count += 1
        elif kind == "variable_assignment" and parent.type in _HOLDSSTATEMENTS:
            count += 1
        elif kind == "compound_statement" and node.child_count and node.children[0].type == "((":
            count += 1
        elif kind == "comment" and node.start_byte and source[node.start_byte - 1:node.start_byte] not in META:
            raise Unreadable("a # the parser reads as a comment where bash does not")
        stack.extend((child, node) for child in node.children)
    # text no token holds must be blanks (tree-sitter can skip a word without an error node:
    # the `-` of `python - <<'EOF'`)
    text = source.replace(b"\\\n", b"  ")
    skipped = {(m.start(), m.end()) for m in re.finditer(rb"[^ \t\n]+", bytes(
        c if not seen else 32 for c, seen in zip(text, covered)))}
    return count, skipped


__all__ = ["COMMAND_NODES", "STATEMENTS", "META", "Unreadable", "ansi_c", "expands", "scan", "unescape",
           "unescape_double"]
