"""A shell command line read the way bash reads it, for the ``Bash`` permission rules.

A rule such as ``Bash(git status)`` must never allow ``git status; touch PWNED``, so a
command line is never judged by its text: :func:`parse_command_line` parses it with
`bashlex <https://pypi.org/project/bashlex/>`_ (a port of bash's own grammar) and returns
every simple command it holds, wherever it sits: after ``;``, ``&&``, ``||``, ``&`` or a
newline, in a pipeline, a subshell ``( )``, a group ``{ }``, an ``if``/``for``/``while``,
a function body, a command substitution ``$( )`` or backticks, a process substitution
``<( )``. Each is its words as bash will see them after quote removal (``"a b"`` is one
word ``a b``), assignments in front included (``FOO=1 git status`` is not ``git status``).
Redirections that write files (``>``, ``>>``, ``>|``, ``&>``, ``<>``...) are listed apart,
with their target. Whatever the parser cannot read, or reads without certainty (``case``,
``[[ ]]``, arithmetic, ``$'...'``, a command substitution inside ``${...}`` or in a
here-document, a redirection to a path only known when it runs), makes the line
*unreadable*: no rule can allow it, so it asks.
"""

from __future__ import annotations

import logging
import re
import shlex
from dataclasses import dataclass
from typing import Any

from ..loop.tool import CommandParts
from .shell_effects import Judgement, judge

log = logging.getLogger(__name__)

#: Longer command lines are not parsed (the parser's time grows with the length): they ask.
MAX_PARSED_CHARS = 20_000
#: Redirections that open a file for writing (``>&`` only when its target is a word, not an fd).
_WRITES = (">", ">>", ">|", "&>", "&>>", ">&", "<>")
#: Targets that are not files anybody keeps.
_HARMLESS_TARGETS = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty")
#: Text that starts a command inside something the parser keeps as plain text.
_HIDDEN_COMMAND = ("$(", "`", "<(", ">(")
#: Node kinds whose children are walked for commands (anything else makes the line unreadable).
_CONTAINERS = {"list", "pipeline", "compound", "if", "for", "while", "until", "function"}
_LEAVES = {"operator", "pipe", "reservedword"}
#: Commands after which a relative path names a file in another folder.
_CHANGES_FOLDER = frozenset({"cd", "pushd", "popd"})


@dataclass(frozen=True)
class ParsedLine:
    """A command line as :func:`parse_command_line` read it: its simple commands (each its
    words), the files its redirections and its commands' own options write (as written,
    ``~`` not expanded), ``unreadable``: why no rule can judge it ("" when it was read),
    and each command as the tables of :mod:`.shell_commands` judge it."""

    commands: tuple[tuple[str, ...], ...] = ()
    writes: tuple[str, ...] = ()
    unreadable: str = ""
    judged: tuple[Judgement, ...] = ()

    def parts(self) -> CommandParts:
        """The part the permission policy decides on (the loop's own type)."""
        return CommandParts(self.commands, self.unreadable, tuple(j.exact_only for j in self.judged))


class _Unreadable(Exception):
    """The line holds something the rules cannot judge."""


def parse_command_line(command: str) -> ParsedLine:
    """Every simple command and every written file of ``command``, or why it cannot be read."""
    if "\x00" in command:
        return ParsedLine(unreadable="the command holds a NUL character")
    if not command.strip():
        return ParsedLine(unreadable="the command is empty")
    if len(command) > MAX_PARSED_CHARS:
        return ParsedLine(unreadable=f"it is longer than the {MAX_PARSED_CHARS:,} characters the rules judge")
    if marker := _dollar_quote(command):  # bashlex misreads ANSI-C and locale quoting
        return ParsedLine(unreadable=f"the parser cannot read {marker}...' quoting")
    command = _for_bashlex(command)
    try:
        import bashlex
        import bashlex.errors

        trees = bashlex.parse(command)
    except ImportError:
        return ParsedLine(unreadable="bashlex, the shell parser, is not installed")
    except (bashlex.errors.ParsingError, NotImplementedError) as exc:
        return ParsedLine(unreadable=f"the shell parser cannot read it ({exc})")
    except Exception as exc:  # the parser's own failure on odd input: nothing can be judged
        log.debug("bashlex failed on a command line", exc_info=True)
        return ParsedLine(unreadable=f"the shell parser failed ({type(exc).__name__})")
    walker = _Walker(command)
    try:
        for tree in trees:
            walker.node(tree)
    except _Unreadable as exc:
        return ParsedLine(unreadable=str(exc))
    # every command node anywhere in the trees must have been judged (a construct whose
    # commands sit where the walker does not look must ask, not pass unseen)
    seen: set[int] = set()
    if walker.visited != sum(_count_commands(tree, seen) for tree in trees):
        return ParsedLine(unreadable="the command holds a construct the rules cannot judge")
    if not walker.commands:
        return ParsedLine(unreadable="no command was found in it")
    judged = tuple(judge(words, dynamic) for words, dynamic in zip(walker.commands, walker.dynamic))
    writes = [*walker.writes, *(path for j in judged for path in j.writes if path not in _HARMLESS_TARGETS)]
    if (any(words[0] in _CHANGES_FOLDER for words in walker.commands)
            and any(not path.startswith(("/", "~")) for path in writes)):
        return ParsedLine(unreadable="it changes folder, then writes to a path relative to where it went")
    return ParsedLine(tuple(walker.commands), tuple(writes), "", judged)


#: ``$((...))`` of numbers and operators only (a name may hold text that bash evaluates as
#: code: ``x='a[$(cmd)]'; echo $((x))`` runs cmd).
_PLAIN_ARITHMETIC = re.compile(r"\$\(\(([0-9\s+\-*/%()<>=!&|^~?:,]*)\)\)")
#: A here-document with a quoted delimiter (``<<'EOF'``), which bashlex does not unquote.
_QUOTED_HEREDOC = re.compile(r"<<(-?)(\s*)(['\"])([A-Za-z_][A-Za-z0-9_]*)\3")


def _for_bashlex(command: str) -> str:
    """The line with what bash reads but bashlex does not rewritten to what bashlex reads
    the same way or more strictly, every position kept (the walker reads the source by
    position): plain arithmetic ``$((40+2))`` becomes a parameter ``${______}`` (a word
    known only when it runs); ``<<'EOF'`` becomes ``<<EOF``, whose body is then judged as
    if bash expanded it."""
    command = _PLAIN_ARITHMETIC.sub(lambda m: "${" + "_" * (len(m.group(0)) - 3) + "}", command)
    return _QUOTED_HEREDOC.sub(lambda m: f"<<{m.group(1)}{m.group(2)}{m.group(4)}  ", command)


class _Walker:
    """Collects the simple commands and written files of parsed trees, refusing what it
    does not know."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.commands: list[tuple[str, ...]] = []
        self.dynamic: list[frozenset[int]] = []  # per command: the words bash expands when it runs
        self.writes: list[str] = []
        self.visited = 0  # command nodes judged

    def node(self, node: Any) -> None:
        kind = node.kind
        if kind == "command":
            self.command(node)
        elif kind in _CONTAINERS:
            for child in [*getattr(node, "parts", []), *getattr(node, "list", []), *getattr(node, "redirects", [])]:
                self.node(child)
        elif kind == "redirect":  # on a compound command: `{ ls; } > out`
            self.redirect(node)
        elif kind == "word":
            self.word(node)
        elif kind not in _LEAVES:
            raise _Unreadable(f"the rules cannot judge a {kind} in a command")

    def command(self, node: Any) -> None:
        self.visited += 1
        words: list[str] = []
        dynamic: set[int] = set()
        for part in node.parts:
            if part.kind in ("word", "assignment"):
                self.word(part)
                if (any(p.kind != "tilde" for p in getattr(part, "parts", []))
                        or _expands(self.source[part.pos[0]:part.pos[1]])):
                    dynamic.add(len(words))
                words.append(part.word)
            elif part.kind == "redirect":
                self.redirect(part)
            else:
                self.node(part)
        if words:
            self.commands.append(tuple(words))
            self.dynamic.append(frozenset(dynamic))

    def word(self, node: Any) -> None:
        """Commands inside a word (``$( )``, backticks, ``<( )``) are commands of the line."""
        for part in getattr(node, "parts", []):
            if part.kind in ("commandsubstitution", "processsubstitution"):
                self.node(part.command)
            elif part.kind == "parameter":
                if any(m in (part.value or "") for m in _HIDDEN_COMMAND):
                    raise _Unreadable("a command inside ${...} cannot be judged")
            elif part.kind != "tilde":
                self.node(part)

    def redirect(self, node: Any) -> None:
        heredoc = getattr(node, "heredoc", None)
        if heredoc is not None and any(m in (heredoc.value or "") for m in _HIDDEN_COMMAND):
            raise _Unreadable("a command inside a here-document cannot be judged")
        target = node.output
        if not hasattr(target, "kind"):  # a file descriptor: `2>&1`, `>&2`
            return
        self.word(target)
        if node.type not in _WRITES:
            return
        if any(p.kind != "tilde" for p in getattr(target, "parts", [])):
            raise _Unreadable(f"it writes to {target.word!r}, a path only known when it runs")
        if target.word not in _HARMLESS_TARGETS:
            self.writes.append(target.word)


def _expands(raw: str) -> bool:
    """Does a word's source text hold, outside quotes, what bash expands into other words
    (a glob ``*?[``, a brace ``{a,b}``)? (Variables and substitutions are parts of the parse.)"""
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


def _dollar_quote(command: str) -> str:
    """``$'`` or ``$"`` where bash reads it as ANSI-C or locale quoting (not inside single
    quotes, where ``grep '\\.py$'`` is plain text), or ""."""
    quote = ""
    escaped = False
    for i, c in enumerate(command):
        if escaped:
            escaped = False
        elif c == "\\" and quote != "'":
            escaped = True
        elif quote == "'":
            quote = "" if c == "'" else quote
        elif c == "$" and command[i + 1:i + 2] in ("'", '"'):
            return c + command[i + 1]
        elif c in "'\"":
            quote = "" if quote == c else (c if not quote else quote)
    return ""


def _count_commands(node: Any, seen: set[int] | None = None) -> int:
    """Command nodes in a parsed tree, found through every attribute (not the walker's way;
    a node two attributes share counts once)."""
    seen = set() if seen is None else seen
    if id(node) in seen:
        return 0
    seen.add(id(node))
    count = 1 if getattr(node, "kind", None) == "command" else 0
    for value in vars(node).values():
        for child in value if isinstance(value, list) else [value]:
            if hasattr(child, "kind"):
                count += _count_commands(child, seen)
    return count


def rule_words(pattern: str) -> tuple[tuple[str, ...], bool]:
    """A ``Bash`` rule's pattern as words, and whether it is a prefix (``git diff:*``).
    ``ValueError`` when it holds no words."""
    prefix = pattern.endswith(":*")
    text = pattern[:-2] if prefix else pattern
    try:
        words = tuple(shlex.split(text))
    except ValueError:  # unbalanced quotes: plain words (such a rule matches what bash reads the same)
        words = tuple(text.split())
    if not words:
        raise ValueError("a Bash rule names a command: Bash(git status) or Bash(git diff:*)")
    return words, prefix


def rule_covers(pattern: str, words: tuple[str, ...]) -> bool:
    """Does the rule pattern name one simple command (its words)? Exact, or a prefix of
    whole words: ``git diff:*`` names ``git diff`` and ``git diff HEAD``, never ``git diffx``.
    (Deny and ask rules name; an allow rule must also :func:`rule_allows`.)"""
    try:
        wanted, prefix = rule_words(pattern)
    except ValueError:
        return False
    return words[: len(wanted)] == wanted if prefix else words == wanted


def rule_allows(pattern: str, words: tuple[str, ...], exact_only: str = "") -> bool:
    """Does an allow rule cover one simple command? It must name it (:func:`rule_covers`),
    and a prefix rule only covers a command that does nothing beyond reading and the files
    it names (``exact_only``, from :func:`~.shell_effects.judge`: why only a rule naming
    every word may allow it). ``Bash(sort:*)`` covers ``sort data.txt``, not
    ``sort --compress-program=sh data.txt``."""
    if not rule_covers(pattern, words):
        return False
    wanted, prefix = rule_words(pattern)
    return not exact_only or not prefix or len(wanted) == len(words)


def suggested_rule(words: tuple[str, ...], exact_only: str = "") -> str:
    """The rule "Always allow" offers for a command, no wider than the command needs: the
    words that name a command of the tables as a prefix (``git diff HEAD`` gives
    ``git diff:*``, ``sort data.txt`` gives ``sort:*``: the tables keep such a rule from
    covering the forms that write or run code); for any other command, or one that only a
    rule naming it whole may allow (``exact_only``, as :class:`ParsedLine` judged it), the
    exact command (``python train.py``)."""
    judged = judge(words)
    if judged.known and judged.lead and not judged.exact_only and not exact_only:
        return " ".join(shlex.quote(w) for w in words[:judged.lead]) + ":*"
    return " ".join(shlex.quote(w) for w in words)


def prefix_is_judged(pattern: str) -> bool:
    """Is a prefix rule's command one the tables judge, so that the rule covers only its
    forms that read (``sort:*``, ``git diff:*``), not every command that starts so?"""
    try:
        words, prefix = rule_words(pattern)
    except ValueError:
        return False
    judged = judge(words)
    return prefix and judged.known and bool(judged.lead) and len(words) >= judged.lead


__all__ = ["ParsedLine", "parse_command_line", "prefix_is_judged", "rule_allows", "rule_covers", "rule_words",
           "suggested_rule"]
