"""The words of tree-sitter-bash's tree, for the walk of :mod:`.shell_tree`: a word's value
after quote removal and whether bash expands it when it runs; the expansions and arithmetic
in it, refused where a name or a value could run hidden code; the checks on the source text
around a node (two words tree-sitter split where bash sees one)."""

from __future__ import annotations

import re
from typing import Any

from .shell_words import META, Unreadable, ansi_c, expands, unescape, unescape_double

#: Expansions: a word holding one is known only when it runs.
_EXPANSIONS = {"simple_expansion", "expansion", "command_substitution", "process_substitution",
               "arithmetic_expansion", "brace_expression", "translated_string"}
#: What an expansion's operand (``${x:-word}``, ``${x/a/b}``) may be.
_EXPANSION_WORDS = {"word", "string", "raw_string", "ansi_c_string", "concatenation", "expansion", "number",
                    "simple_expansion", "command_substitution", "process_substitution"}
#: Tokens of arithmetic that are plain operators.
_ARITHMETIC_NODES = {"binary_expression", "unary_expression", "ternary_expression", "postfix_expression",
                     "parenthesized_expression", "number"}
#: ``${x@Q}`` and the like only quote or change case; ``@P`` expands the value as a prompt
#: (which runs command substitutions in it).
_SAFE_TRANSFORMS = set("QEAKakUuL")


class WordReader:
    """The word half of :class:`~.shell_tree.Walker`: what a word of the tree holds. The
    commands inside a word (a substitution's statements, ``$(< file)``) are the walker's."""

    source: bytes
    root: Any

    def statement(self, node: Any) -> None:
        """Walk a statement inside a word (a command substitution's): the walker does."""
        raise NotImplementedError

    def redirect(self, node: Any, command: Any, *, words_taken: bool = False) -> None:
        """Walk a redirection inside a word (``$(< file)``): the walker does."""
        raise NotImplementedError

    @staticmethod
    def plain_heredoc_text(text: bytes, where: str = "a here-document") -> None:
        """Text tree-sitter did not parse must hold nothing bash would run."""
        if any(marker in text for marker in (b"`", b"$(", b"${", b"$[")):
            raise Unreadable(f"a command inside {where} the parser did not read")

    # -- words ----------------------------------------------------------------------------

    def word(self, node: Any) -> tuple[str, bool]:
        """A word's value after quote removal (expansions as written) and whether bash
        expands it when it runs; the commands inside it are commands of the line."""
        kind = node.type
        raw = self.text(node)
        if kind == "test_operator":
            return raw, False
        if kind == "extglob_pattern":
            self.plain_heredoc_text(raw.encode(errors="surrogateescape"), "a pattern")
        if kind in ("word", "number", "extglob_pattern"):
            if kind == "number" and node.named_children:
                for child in node.named_children:
                    self.word(child)
                return raw, True
            return unescape(raw), expands(raw)
        if kind == "raw_string":
            return raw[1:-1], False
        if kind == "ansi_c_string":
            return ansi_c(raw[2:-1]), False
        if kind == "string":
            return self.string(node), any(c.type in _EXPANSIONS for c in node.named_children)
        if kind == "concatenation":
            parts: list[str] = []
            dynamic = expands(raw)
            last = node.start_byte
            for child in node.children:
                gap = self.source[last:child.start_byte].replace(b"\\\n", b"")
                if gap:
                    raise Unreadable("a word the parser reads as several")
                last = child.end_byte
                if child.is_named:
                    value, child_dynamic = self.word(child)
                    parts.append(value)
                    dynamic |= child_dynamic
                else:  # `$` or an empty ``
                    parts.append(self.text(child))
                    dynamic = True
            return "".join(parts), dynamic
        if kind == "translated_string":  # $"..." (bash may translate it)
            (inner,) = node.named_children
            return self.string(inner), True
        if kind in ("command_substitution", "process_substitution"):
            for child in node.named_children:
                if child.type == "file_redirect":  # $(< file)
                    self.redirect(child, None)
                else:
                    self.statement(child)
            return raw, True
        if kind == "simple_expansion":
            return raw, True
        if kind == "expansion":
            self.expansion(node)
            return raw, True
        if kind == "arithmetic_expansion":
            for child in node.named_children:
                self.arithmetic(child)
            return raw, True
        if kind == "brace_expression":
            return raw, True
        raise Unreadable(f"the rules cannot judge a {kind.replace('_', ' ')} in a word")

    def string(self, node: Any) -> str:
        """A double-quoted string's value: its text with ``\\$ \\` \\" \\\\`` and
        line continuations unescaped, expansions kept as written (and walked)."""
        out: list[str] = []
        last = node.start_byte + 1
        for child in node.named_children:
            if child.type == "string_content":
                continue
            self.word(child)
            out.append(unescape_double(self.source[last:child.start_byte].decode()))
            out.append(self.text(child))
            last = child.end_byte
        out.append(unescape_double(self.source[last:node.end_byte - 1].decode()))
        return "".join(out)

    def expansion(self, node: Any) -> None:
        """``${...}``: what it holds runs (substitutions) or is arithmetic (``${x:1:2}``,
        ``${a[i]}``); ``${!x}`` and ``${x@P}`` evaluate a value bash cannot vouch for."""
        operators = [c for i, c in enumerate(node.children) if node.field_name_for_child(i) == "operator"]
        texts = [self.text(c) for c in operators]
        if "!" in texts and not any(t in ("@", "*") for t in texts):
            raise Unreadable("${!name} evaluates a name only known when it runs")
        if "@" in texts and not all(t in _SAFE_TRANSFORMS for t in texts[texts.index("@") + 1:]):
            raise Unreadable("${name@P} expands a value as a prompt, which can run commands")
        arithmetic = ":" in texts  # ${x:offset:length}
        for child in node.named_children:
            kind = child.type
            if kind == "subscript":
                self.subscript(child)
            elif kind in ("variable_name", "special_variable_name"):
                continue
            elif kind == "regex":
                self.plain_heredoc_text(self.source[child.start_byte:child.end_byte], "a pattern")
            elif kind == "arithmetic_expansion" or (not arithmetic and kind in _EXPANSION_WORDS):
                self.word(child)
            elif kind == "array" and not arithmetic:
                for element in child.named_children:
                    self.word(element)
            elif arithmetic:
                self.arithmetic(child)
            else:
                raise Unreadable(f"the rules cannot judge a {kind.replace('_', ' ')} in ${{...}}")

    def subscript(self, node: Any) -> None:
        index = node.child_by_field_name("index")
        if index is None:
            raise Unreadable("a subscript the parser did not read")
        text = self.text(index)
        if text in ("@", "*") or re.fullmatch(r"[0-9]+", text):
            return
        raise Unreadable("an array subscript is arithmetic, in which a name can run code")

    def arithmetic(self, node: Any) -> None:
        """Plain numbers and operators only: bash evaluates a name's value as arithmetic,
        and ``a[$(cmd)]`` there runs ``cmd`` (so does a substitution's output)."""
        if node.type not in _ARITHMETIC_NODES:
            raise Unreadable("arithmetic with names or substitutions, which can run code hidden in a value")
        if node.type == "number" and not re.fullmatch(r"-?(0x)?[0-9A-Fa-f]+(#[0-9A-Za-z@_]+)?", self.text(node)):
            raise Unreadable("a number only known when it runs")
        for child in node.named_children:
            self.arithmetic(child)

    # -- source ---------------------------------------------------------------------------

    def text(self, node: Any) -> str:
        return self.source[node.start_byte:node.end_byte].decode(errors="surrogateescape")

    def check_separated(self, node: Any) -> None:
        """bash sees the node as a word of its own: blank or an operator on each side (not
        a line continuation, which joins two words into one), or the backtick that opens
        or closes the substitution it is in."""
        src = self.source
        i = node.start_byte
        while src[i - 2:i] == b"\\\n":
            i -= 2
        j = node.end_byte
        while src[j:j + 2] == b"\\\n":
            j += 2
        for at in ((i - 1,) if i > 0 else ()) + ((j,) if j < len(src) else ()):
            c = src[at:at + 1]
            if c in META:
                continue
            token = self.root.descendant_for_byte_range(at, at + 1)
            outer = token.parent if token is not None else None
            if (c == b"`" and token is not None and token.type in ("`", "$`") and outer is not None
                    and outer.start_byte <= node.start_byte and node.end_byte <= outer.end_byte):
                continue
            raise Unreadable("a word the parser reads as several")

    @staticmethod
    def expect(node: Any, kind: str) -> None:
        if node.type != kind:
            raise Unreadable(f"the rules cannot judge a {node.type.replace('_', ' ')} here")
