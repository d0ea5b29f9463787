"""A shell command line read the way bash reads it, for the ``Bash`` permission rules.

A rule such as ``Bash(git status)`` must never allow ``git status; touch PWNED``, so a
command line is never judged by its text: :func:`parse_command_line` parses it with
`tree-sitter-bash <https://pypi.org/project/tree-sitter-bash/>`_ and returns every simple
command it holds, wherever it sits: after ``;``, ``&&``, ``||``, ``&`` or a newline, in a
pipeline, a subshell ``( )``, a group ``{ }``, an ``if``/``for``/``while``/``case``, a
function body, a command substitution ``$( )`` or backticks (also inside a here-document,
``[[ ]]`` or ``${...}``), a process substitution ``<( )``. Each is its words as bash will
see them after quote removal (``"a b"`` is one word ``a b``, ``$'\x41'`` is ``A``),
assignments in front included (``FOO=1 git status`` is not ``git status``); ``[ ... ]``,
``export``, ``local`` and a bare ``x=1`` are commands too. Redirections that write files
(``>``, ``>>``, ``>|``, ``&>``...) are listed apart, with their target.

The walk over the tree (:mod:`.shell_tree`) refuses what it does not know: whatever the
parser cannot read (an error node), reads otherwise than bash may, or what bash evaluates
in a way no rule can vouch for (arithmetic with names, ``[[ -v ]]``, ``${!x}``, a
redirection to a path only known when it runs) makes the line *unreadable*: no rule can
allow it, so it asks.
"""

from __future__ import annotations

import functools
import logging
import shlex
from dataclasses import dataclass
from typing import Any

from ..loop.tool import CommandParts
from .shell_effects import Judgement, judge
from .shell_tree import Walker
from .shell_words import Unreadable, scan

log = logging.getLogger(__name__)

#: Longer command lines are not parsed: they ask.
MAX_PARSED_CHARS = 20_000
#: Targets that are not files anybody keeps.
_HARMLESS_TARGETS = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty")
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


@functools.cache
def _parser() -> Any:
    """tree-sitter's parser for bash (one per process: building it loads the grammar)."""
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def parse_command_line(command: str) -> ParsedLine:
    """Every simple command and every written file of ``command``, or why it cannot be read."""
    if "\x00" in command:
        return ParsedLine(unreadable="the command holds a NUL character")
    if not command.strip():
        return ParsedLine(unreadable="the command is empty")
    if len(command) > MAX_PARSED_CHARS:
        return ParsedLine(unreadable=f"it is longer than the {MAX_PARSED_CHARS:,} characters the rules judge")
    if "\r" in command:  # bash keeps a carriage return in the word; tree-sitter reads it as a blank
        return ParsedLine(unreadable="the command holds a carriage return")
    try:
        source = command.encode("utf-8")
    except UnicodeEncodeError:
        return ParsedLine(unreadable="the command is not valid text")
    try:
        parser = _parser()
    except ImportError:
        return ParsedLine(unreadable="tree-sitter-bash, the shell parser, is not installed")
    root = parser.parse(source).root_node
    if root.has_error:
        return ParsedLine(unreadable="the shell parser cannot read it (a syntax error, or a form it does not know)")
    walker = Walker(source, root)
    try:
        # every command node anywhere in the tree must have been judged (a construct whose
        # commands sit where the walker does not look must ask, not pass unseen)
        expected, walker.skipped = scan(root, source)
        walker.statement(root)
        if walker.visited != expected:
            raise Unreadable("the command holds a construct the rules cannot judge")
        if walker.skipped:  # (text of the line no token of the tree holds, and the walk did not place)
            raise Unreadable("the parser skipped part of it")
    except Unreadable as exc:
        return ParsedLine(unreadable=str(exc))
    except RecursionError:
        return ParsedLine(unreadable="it is nested deeper than the rules judge")
    commands = [c for c in walker.commands if c.words]
    if not commands:
        return ParsedLine(unreadable="no command was found in it")
    words_of = tuple(tuple(c.words) for c in commands)
    judged = tuple(judge(words, frozenset(c.dynamic)) for words, c in zip(words_of, commands))
    writes = [*(w for w in walker.writes if w not in _HARMLESS_TARGETS),
              *(path for j in judged for path in j.writes if path not in _HARMLESS_TARGETS)]
    if (any(words[0] in _CHANGES_FOLDER for words in words_of)
            and any(not path.startswith(("/", "~")) for path in writes)):
        return ParsedLine(unreadable="it changes folder, then writes to a path relative to where it went")
    return ParsedLine(words_of, tuple(writes), "", judged)


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
