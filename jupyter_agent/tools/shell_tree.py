"""The walk over tree-sitter-bash's tree that :mod:`.shell_parse` reads a command line with.

tree-sitter-bash is not bash's own grammar: it keeps some things bash runs as other node
types (``[ ... ]`` is a ``test_command``, ``export x=1`` a ``declaration_command``), swallows
a word after a redirection's target into the redirection (``echo hi > out status``: bash
passes ``status`` to ``echo``), and leaves a backtick inside a here-document as plain text.
The walk turns the tree back into what bash runs: every simple command with its words after
quote removal, the files its redirections write, and the words bash expands when it runs.

Its rule is to refuse: a node type it has no case for, an ``ERROR`` or ``MISSING`` node, two
words tree-sitter split where bash sees one, a here-document that does not end where bash
ends it, a name in arithmetic (bash evaluates a name's text as arithmetic, and
``a[$(cmd)]`` there runs ``cmd``), ``[[ -v ]]``, ``${!x}``, ``${x@P}``: each makes the whole
line :class:`Unreadable`, so it asks.

What a word holds (its value, its expansions and arithmetic) is read by the walker's base,
:class:`~.shell_tree_words.WordReader`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .shell_tree_words import WordReader
from .shell_words import META, STATEMENTS, Unreadable

#: Redirection operators that open a file for writing (``>&`` only when its target is a word).
WRITES = (">", ">>", ">|", "&>", "&>>", ">&")
#: ``[[ ]]`` operators whose operands bash evaluates as arithmetic, or as a name with a subscript.
_ARITHMETIC_TESTS = {"-eq", "-ne", "-lt", "-le", "-gt", "-ge"}
_NAME_TESTS = {"-v", "-R"}
#: Words tree-sitter reads as a command name that bash reads as a reserved word it does not know.
_RESERVED = {"{", "}", "!", "[[", "]]", "coproc", "time", "function", "in", "do", "done", "then", "fi", "esac",
             "elif", "else", "if", "case", "for", "while", "until", "select"}


@dataclass
class Command:
    """One simple command as bash runs it: its words (after quote removal, expansions as
    written) and the positions of the words bash expands when it runs."""

    words: list[str] = field(default_factory=list)
    dynamic: set[int] = field(default_factory=set)
    at: list[int] = field(default_factory=list)  # each word's byte offset, to keep source order


class Walker(WordReader):
    """Collects the simple commands and written files of a tree-sitter-bash tree, refusing
    what it does not know."""

    def __init__(self, source: bytes, root: Any) -> None:
        self.source = source
        self.root = root
        self.commands: list[Command] = []
        self.writes: list[str] = []
        self.visited = 0  # command-like nodes judged (checked against a count of the whole tree)
        self.skipped: set[tuple[int, int]] = set()  # text no token holds, until the walk places it

    # -- statements -----------------------------------------------------------------------

    def statement(self, node: Any) -> None:
        """Walk one statement (a command, a list, a loop, ...): its commands, or Unreadable."""
        kind = node.type
        if kind in STATEMENTS:
            if kind == "compound_statement" and node.child_count and node.children[0].type == "((":
                self.visited += 1
                for child in node.named_children:  # `(( n + 1 ))`: runs nothing, evaluates arithmetic
                    self.arithmetic(child)
                return
            for child in node.named_children:
                self.statement(child)
        elif kind == "comment":
            return
        elif kind == "command":
            self.command(node)
        elif kind in ("declaration_command", "unset_command"):
            self.keyword_command(node)
        elif kind == "variable_assignment":
            self.visited += 1
            command = Command()
            self.assignment(node, command)
            self.commands.append(command)
        elif kind == "variable_assignments":
            self.visited += 1
            command = Command()
            for child in node.named_children:
                self.expect(child, "variable_assignment")
                self.assignment(child, command)
            self.commands.append(command)
        elif kind == "redirected_statement":
            self.redirected(node)
        elif kind == "test_command":
            self.test(node)
        elif kind in ("for_statement", "case_statement", "case_item"):
            self.words_then_statements(node)
        elif kind == "c_style_for_statement":
            self.visited += 1
            for i, child in enumerate(node.named_children):
                if node.field_name_for_named_child(i) == "body":
                    self.statement(child)
                else:
                    self.arithmetic(child)
        elif kind == "function_definition":
            for child in node.named_children:
                if child.type == "word":  # its name
                    continue
                if child.type == "file_redirect":  # applies each time it is called
                    self.redirect(child, None)
                else:
                    self.statement(child)
        else:
            raise Unreadable(f"the rules cannot judge a {kind.replace('_', ' ')} in a command")

    def words_then_statements(self, node: Any) -> None:
        """``for x in WORDS``, ``case WORD in``, ``PATTERN)``: the words are expanded (their
        substitutions run), then the statements."""
        for i, child in enumerate(node.named_children):
            name = node.field_name_for_named_child(i)
            if child.type == "variable_name":  # the loop's variable
                continue
            if name == "value":
                self.word(child)
            else:  # a case item, the loop's body, a comment
                self.statement(child)

    def command(self, node: Any, extra: list[Any] | None = None) -> Command:
        """A simple command (``extra``: its words tree-sitter put elsewhere, as nodes or the
        offset of a dropped ``-``)."""
        self.visited += 1
        command = Command()
        for i, child in enumerate(node.children):
            name = node.field_name_for_child(i)
            if child.type == "variable_assignment":
                self.assignment(child, command)
            elif name == "redirect":
                self.redirect(child, command)
            elif child.type == "command_name":
                (inner,) = child.named_children
                self.add_word(command, inner)
                if command.words[-1] in _RESERVED - {"time"} and inner.type == "word":
                    raise Unreadable(f"{command.words[-1]!r} is a shell keyword the parser reads as a command")
            elif name == "argument" and child.is_named:
                self.add_word(command, child)
            elif name == "argument":  # `==`, `=~`, a bare `$`: plain words to bash
                self.check_separated(child)
                command.words.append(child.type)
                command.at.append(child.start_byte)
            else:
                raise Unreadable(f"the rules cannot judge a {child.type} in a command")
        for child in extra or ():
            if isinstance(child, int):  # a `-` tree-sitter dropped (lone_dash)
                command.words.append("-")
                command.at.append(child)
                continue
            self.add_word(command, child)
        order = sorted(range(len(command.words)), key=lambda k: command.at[k])
        command.dynamic = {order.index(k) for k in command.dynamic}
        command.words = [command.words[k] for k in order]
        command.at = [command.at[k] for k in order]
        if self.starts_pipeline(node):
            self.without_time(command)
        self.commands.append(command)
        return command

    @staticmethod
    def starts_pipeline(node: Any) -> bool:
        """Is the command first in its pipeline (where bash reads ``time`` as its keyword;
        after a ``|`` it is the program ``time``)?"""
        while node.parent is not None and node.parent.type == "redirected_statement":
            node = node.parent
        parent = node.parent
        return parent is None or parent.type != "pipeline" or parent.named_children[0].start_byte == node.start_byte

    @staticmethod
    def without_time(command: Command) -> None:
        """``time [-p] CMD``: bash's keyword times the command (tree-sitter reads ``time``
        as a command name): the command is what follows."""
        drop = 0
        if command.words[:1] == ["time"] and 0 not in command.dynamic:
            drop = 2 if command.words[1:2] == ["-p"] and 1 not in command.dynamic else 1
        if not drop:
            return
        command.words = command.words[drop:]
        command.at = command.at[drop:]
        command.dynamic = {k - drop for k in command.dynamic if k >= drop}
        if command.words and command.words[0] in _RESERVED and 0 not in command.dynamic:
            raise Unreadable(f"{command.words[0]!r} after time is a shell keyword the parser reads as a word")

    def keyword_command(self, node: Any) -> None:
        """``export``, ``declare``, ``local``, ``readonly``, ``typeset``, ``unset``: commands."""
        self.visited += 1
        command = Command()
        for child in node.children:
            if child.type == "comment":
                continue
            if child.type == "variable_assignment":
                self.assignment(child, command)
            elif child.type == "variable_name" or not child.is_named:
                self.check_separated(child)
                command.words.append(self.text(child))
                command.at.append(child.start_byte)
            else:
                self.add_word(command, child)
        self.commands.append(command)

    def redirected(self, node: Any) -> None:
        """A statement with redirections. tree-sitter puts into a redirection what bash
        gives the command: words after a target (``> out status``), after a here-document's
        start (``<<EOF -n``), and the rest of a pipeline or list (``<<EOF | sh``)."""
        body = node.child_by_field_name("body")
        redirects = [c for i, c in enumerate(node.children) if c.is_named and node.field_name_for_child(i) != "body"]
        extra: list[Any] = []
        for redirect in redirects:
            if redirect.type == "file_redirect":
                targets = redirect.children_by_field_name("destination")
                extra += targets[1:]
            elif redirect.type == "heredoc_redirect":
                extra += redirect.children_by_field_name("argument")
                extra += self.lone_dash(body, redirect)
        if extra and (body is None or body.type != "command"):
            raise Unreadable("words follow a redirection of a statement that is not a simple command")
        command = self.command(body, extra) if body is not None and body.type == "command" else None
        if body is not None and command is None:
            self.statement(body)
        for redirect in redirects:
            self.redirect(redirect, command, words_taken=True)

    def lone_dash(self, body: Any, redirect: Any) -> list[int]:
        """tree-sitter drops a word ``-`` written just before a here-document
        (``python - <<'EOF'``, where bash gives it to python): the offset of such a ``-``,
        between the command and its here-document with only blanks around it."""
        if body is None or body.type != "command":
            return []
        for start, end in sorted(self.skipped):
            if (self.source[start:end] == b"-" and body.end_byte < start and end < redirect.start_byte
                    and not self.source[body.end_byte:start].strip(b" \t")
                    and not self.source[end:redirect.start_byte].strip(b" \t")):
                self.skipped.discard((start, end))
                return [start]
        return []

    # -- redirections ---------------------------------------------------------------------

    def redirect(self, node: Any, command: Command | None, *, words_taken: bool = False) -> None:
        kind = node.type
        if kind == "herestring_redirect":
            for child in node.named_children:
                if child.type != "file_descriptor":
                    self.word(child)
            return
        if kind == "heredoc_redirect":
            self.heredoc(node, command)
            return
        if kind != "file_redirect":
            raise Unreadable(f"the rules cannot judge a {kind.replace('_', ' ')}")
        operator = next((c.type for c in node.children if not c.is_named), "")
        targets = node.children_by_field_name("destination")
        if not targets:
            if operator not in ("<&-", ">&-"):
                raise Unreadable("a redirection without a target")
            return
        if len(targets) > 1 and not words_taken:
            raise Unreadable("words after a redirection's target the parser gives to the redirection")
        target = targets[0]
        value, dynamic = self.word(target)
        if operator in (">&", "<&", "<&-", ">&-") and (target.type == "number" or value == "-"):
            return  # a file descriptor: `2>&1`, `>&2`
        if operator not in WRITES:
            return
        if dynamic:
            raise Unreadable(f"it writes to {value!r}, a path only known when it runs")
        self.writes.append(value)

    def heredoc(self, node: Any, command: Command | None) -> None:
        start = end = body = None
        operator = ""
        for i, child in enumerate(node.children):
            name = node.field_name_for_child(i)
            if child.type in ("<<", "<<-"):
                operator = child.type
            elif child.type == "heredoc_start":
                start = child
            elif child.type == "heredoc_body":
                body = child
            elif child.type == "heredoc_end":
                end = child
            elif name == "argument" or child.type in ("file_descriptor", "comment") or not child.is_named:
                continue  # (arguments were given to the command; the rest is punctuation)
            elif name == "redirect":
                self.redirect(child, command)
            elif name == "right" or child.type == "pipeline":
                for statement in ([child] if name == "right" else child.named_children):
                    self.statement(statement)
            else:
                raise Unreadable(f"the rules cannot judge a {child.type} in a here-document")
        if start is None or end is None or body is None:
            raise Unreadable("a here-document the parser did not read whole")
        raw = self.text(start)
        if any(c in raw for c in "$`"):
            raise Unreadable("a here-document delimiter with an expansion")
        delimiter = re.sub(r"""\\(.)|['"]""", lambda m: m.group(1) or "", raw)
        self.check_heredoc_extent(node, operator, delimiter, body, end)
        if any(c in raw for c in "'\"\\"):
            return  # quoted: the body is text, nothing in it runs
        last = body.start_byte
        for child in body.named_children:
            if child.type == "heredoc_content":
                continue
            if child.type not in ("expansion", "simple_expansion", "command_substitution"):
                raise Unreadable(f"the rules cannot judge a {child.type} in a here-document")
            self.plain_heredoc_text(self.source[last:child.start_byte])
            self.word(child)
            last = child.end_byte
        self.plain_heredoc_text(self.source[last:body.end_byte])

    def check_heredoc_extent(self, node: Any, operator: str, delimiter: str, body: Any, end: Any) -> None:
        """The body starts after the newline that ends the command's line and ends where
        bash ends it: no line before the end line is the delimiter, and the end line is
        (for ``<<-``, after leading tabs)."""
        src = self.source
        before = [c.end_byte for c in node.children if c.end_byte <= body.start_byte and c.type != "heredoc_body"]
        line_end = src.find(b"\n", max(before))
        rest = src[max(before):line_end] if line_end >= 0 else b"?"
        if b"#" in rest and rest[:1] in META:  # a comment ends the line
            rest = rest[:rest.index(b"#")]
        if line_end < 0 or rest.strip() or src[line_end + 1:body.start_byte].strip(b" \t\n"):
            raise Unreadable("a here-document that does not start on the line after its command")
        last_start = src.rfind(b"\n", 0, end.start_byte) + 1
        last_end = src.find(b"\n", end.start_byte)
        last_end = len(src) if last_end < 0 else last_end
        lines = src[line_end + 1:last_end].decode(errors="replace").split("\n")
        strip = (lambda s: s.lstrip("\t")) if operator == "<<-" else (lambda s: s)
        if (last_start <= line_end or strip(lines[-1]) != delimiter
                or any(strip(line) == delimiter for line in lines[:-1])):
            raise Unreadable("a here-document whose end the parser and bash may see in different places")

    # -- words ----------------------------------------------------------------------------

    def add_word(self, command: Command, node: Any) -> None:
        value, dynamic = self.word(node)
        self.check_separated(node)
        if dynamic:
            command.dynamic.add(len(command.words))
        command.words.append(value)
        command.at.append(node.start_byte)

    def assignment(self, node: Any, command: Command) -> None:
        """``NAME=value`` (or ``NAME[i]+=value``, ``NAME=(a b)``): one word of its command."""
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is None:
            raise Unreadable("an assignment without a name")
        dynamic = False
        if name.type == "subscript":
            self.subscript(name)
        operator = next((c.type for c in node.children if not c.is_named), "=")
        text = self.text(name) + operator
        if value is not None and value.type == "array":
            for element in value.named_children:
                self.word(element)
            text += self.text(value)
            dynamic = True
        elif value is not None:
            value_text, dynamic = self.word(value)
            text += value_text
        self.check_separated(node)
        if dynamic or name.type == "subscript":
            command.dynamic.add(len(command.words))
        command.words.append(text)
        command.at.append(node.start_byte)

    def test(self, node: Any) -> None:
        """``[ ... ]`` is the command ``[`` with its words; ``[[ ... ]]`` runs nothing but its
        substitutions, and arithmetic or a name's subscript for some operators."""
        self.visited += 1
        opening = node.children[0].type
        leaves: list[Any] = []
        self.test_leaves(node, leaves, top=True)
        if opening == "[":  # the command `[`, its words, `]`
            command = Command(["["], set(), [node.start_byte])
            for leaf in leaves:
                if leaf.is_named:
                    self.add_word(command, leaf)
                else:
                    if any(c in leaf.type for c in "<>()|&;"):
                        raise Unreadable(f"{leaf.type!r} inside [ ] is a shell operator to bash, not a word")
                    command.words.append(leaf.type)
                    command.at.append(leaf.start_byte)
                    self.check_separated(leaf)
            command.words.append("]")
            command.at.append(node.end_byte - 1)
            self.commands.append(command)
            return
        texts = [self.text(leaf) for leaf in leaves]
        for i, (leaf, text) in enumerate(zip(leaves, texts)):
            if text in _NAME_TESTS:
                raise Unreadable(f"[[ {text} ]] evaluates a name's subscript, which can run code")
            if text in _ARITHMETIC_TESTS:
                for operand in (leaves[i - 1] if i else None, leaves[i + 1] if i + 1 < len(leaves) else None):
                    if operand is None or not re.fullmatch(r"-?[0-9]+", self.text(operand)):
                        raise Unreadable(f"[[ {text} ]] evaluates its operands as arithmetic, in which a name "
                                         "can run code")
            if leaf.type in ("regex", "extglob_pattern"):  # bash expands these too
                self.plain_heredoc_text(self.source[leaf.start_byte:leaf.end_byte], "a pattern")
            elif leaf.is_named and leaf.type != "test_operator":
                self.word(leaf)

    def test_leaves(self, node: Any, out: list[Any], top: bool = False) -> None:
        for child in node.children:
            if top and child.type in ("[", "]", "[[", "]]"):
                continue
            if child.type in ("binary_expression", "unary_expression", "parenthesized_expression",
                              "ternary_expression", "postfix_expression"):
                self.test_leaves(child, out)
            elif child.type == "redirected_statement":
                raise Unreadable("a redirection inside [ ]")
            else:
                out.append(child)


__all__ = ["Command", "WRITES", "Walker"]
