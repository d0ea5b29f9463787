"""What one simple command does, read from the tables of :mod:`.shell_commands`.

:func:`judge` reads a command's words the way the command itself reads them (GNU
``getopt``: options anywhere before ``--``, short options bundled, a long option by any
unambiguous abbreviation) and says which files it writes and whether it does anything a
prefix rule cannot vouch for: runs other code, writes where no path can be checked,
takes an option the table does not know, or holds a word only known when it runs
(``$x``, ``*.txt``, ``{a,b}``). The tables are the knowledge; this is only their reader.
"""

from __future__ import annotations

import enum
import functools
import re
from dataclasses import dataclass

from .shell_commands import COMMANDS, FIND_READS, FIND_RUNS, FIND_WRITES, Operands, Script, Spec


class Kind(enum.Enum):
    """What an option of a command's table does."""

    FLAG = "flag"
    ARG = "arg"
    WRITES = "writes"
    RUNS = "runs"


@dataclass(frozen=True)
class Judgement:
    """One simple command as its table reads it.

    ``known``: the command is in the tables (else rules judge it by their words alone);
    ``lead``: how many leading words name it (``git diff`` is 2), 0 when a rule offered for
    it must be the exact command; ``writes``: files it writes, as written; ``exact_only``:
    why only a rule naming the whole command may allow it ("" when a prefix rule may).
    """

    known: bool = False
    lead: int = 0
    writes: tuple[str, ...] = ()
    exact_only: str = ""


_DD_KEYS = frozenset("if bs ibs obs cbs count skip seek iseek oseek conv iflag oflag status".split())


def judge(words: tuple[str, ...], dynamic: frozenset[int] = frozenset()) -> Judgement:
    """Judge one simple command (its words after quote removal; ``dynamic``: the positions
    of words that bash expands when it runs)."""
    if not words:
        return Judgement()
    spec = COMMANDS.get(words[0])
    if spec is None:
        return Judgement()
    if spec.sets_variables:
        return Judgement(True, 1, (), f"{words[0]} sets variables the rest of the line runs with, or evaluates "
                                      "a name's subscript")
    if spec.always_runs:
        return Judgement(True, 1, (), f"{words[0]} runs other code")
    if spec.any_option:
        runs = spec.runs.split()
        if runs and any(w in runs or "$(" in w or "`" in w for w in words[1:]):  # (a substitution may print one)
            why = f"{words[0]} {' '.join(runs)} evaluates a name's subscript, which can run code"
            return Judgement(True, 1, (), why)
        return Judgement(True, 1)
    reader = _Reader(words, dynamic)
    try:
        if spec.subcommands:
            return reader.with_subcommand(spec)
        reader.read(spec, 1)
    except _Refused as exc:
        return Judgement(True, 1, tuple(reader.writes), str(exc))
    return Judgement(True, 1, tuple(reader.writes))


class _Refused(Exception):
    """Only a rule naming the whole command can allow it (the message says why)."""


@functools.cache
def _kinds(spec: Spec) -> dict[str, Kind]:
    """The table's options by name, the most dangerous kind winning when one is listed twice."""
    kinds: dict[str, Kind] = {}
    for text, kind in ((spec.flags, Kind.FLAG), (spec.args, Kind.ARG), (spec.writes, Kind.WRITES),
                       (spec.runs, Kind.RUNS)):
        for name in text.split():
            kinds[name] = kind
    return kinds


class _Reader:
    def __init__(self, words: tuple[str, ...], dynamic: frozenset[int]) -> None:
        self.words = words
        self.dynamic = dynamic
        self.writes: list[str] = []
        self.values: list[tuple[str, str]] = []  # (option, its argument)

    def with_subcommand(self, spec: Spec) -> Judgement:
        """``git [global options] SUBCOMMAND ...``: the global options, then the subcommand's table."""
        operands = self.options(spec, 1, stop_at_operand=True)
        if not operands:
            return Judgement(True, 1)
        at = operands[0]
        sub = spec.subcommands.get(self.words[at])
        if sub is None:  # a subcommand the tables do not know: the rules' words decide
            return Judgement(False, 0, tuple(self.writes))
        self.read(sub, at + 1)
        if self.writes and any(option == "-C" for option, _ in self.values):
            raise _Refused("git -C moves where the files it writes are")
        return Judgement(True, 2 if at == 1 else 0, tuple(self.writes))

    def read(self, spec: Spec, start: int) -> None:
        if spec.script is Script.FIND:
            self.find(start)
            return
        stop = spec.operands is Operands.COMMAND  # `timeout 5 CMD -o x`: CMD's options are its own
        operands = self.options(spec, start, stop_at_operand=stop)
        if spec.script is Script.SED:
            scripts = [v for o, v in self.values if o in ("-e", "--expression")]
            if not scripts and operands:
                scripts, operands = [self.words[operands[0]]], operands[1:]
            for script in scripts:
                if why := sed_script_effect(script):
                    raise _Refused(why)
        elif spec.script is Script.AWK:
            if operands:
                if why := awk_program_effect(self.words[operands[0]]):
                    raise _Refused(why)
                operands = operands[1:]
        self.operands(spec, operands)

    def operands(self, spec: Spec, operands: list[int]) -> None:
        words = [self.words[i] for i in operands]
        if spec.operands is Operands.WRITE:
            for i in operands:
                self.write(i, self.words[i])
        elif spec.operands is Operands.NONE and words:
            raise _Refused(f"{self.words[0]} with {words[0]!r} may change something")
        elif spec.operands is Operands.COMMAND:
            rest = [w for w in words if not (spec.assignments and re.match(r"[A-Za-z_]\w*=", w))]
            if rest[spec.skip_operands:]:
                raise _Refused(f"{self.words[0]} runs {rest[spec.skip_operands]!r}, another command")
        elif spec.operands is Operands.DD:
            for i, word in zip(operands, words):
                key, eq, value = word.partition("=")
                if key == "of" and eq:
                    self.write(i, value)
                elif key not in _DD_KEYS or not eq:
                    raise _Refused(f"dd does not take {word!r} in the tables")
        if spec.written_operand is not None and len(operands) > spec.written_operand:
            at = operands[spec.written_operand]
            self.write(at, self.words[at])

    def write(self, at: int, path: str) -> None:
        if at in self.dynamic:
            raise _Refused(f"it writes to {path!r}, a path only known when it runs")
        self.writes.append(path)

    def options(self, spec: Spec, start: int, *, stop_at_operand: bool) -> list[int]:
        """Judge the options from ``start``; the positions of the operands."""
        kinds = _kinds(spec)
        operands: list[int] = []
        k = start
        words = self.words
        while k < len(words):
            word = words[k]
            if word == "--":
                operands += range(k + 1, len(words))
                break
            if k in self.dynamic:
                raise _Refused(f"{word!r} is only known when it runs (it may be an option)")
            if not word.startswith("-") or word == "-":
                operands.append(k)
                if stop_at_operand:
                    operands += range(k + 1, len(words))
                    break
            elif word.startswith("--"):
                k = self.long_option(kinds, word, k)
            elif spec.numbers and word[1:].isdigit():
                pass
            else:
                k = self.short_options(kinds, word, k)
            k += 1
        return operands

    def next_value(self, k: int) -> str | None:
        """The next word as an option's argument (never a word that reads as an option:
        that one is judged as an option, so no argument can hide one)."""
        if k + 1 < len(self.words) and not self.words[k + 1].startswith("-") and k + 1 not in self.dynamic:
            return self.words[k + 1]
        return None

    def long_option(self, kinds: dict[str, Kind], word: str, k: int) -> int:
        name, eq, value = word.partition("=")
        kind = kinds.get(name + "=") if eq else kinds.get(name, kinds.get(name + "="))
        if eq and kind is None and kinds.get(name) in (Kind.WRITES, Kind.RUNS):
            kind = kinds[name]
        if kind is None:  # an abbreviation (`--out=x` is `--output=x`) or unknown
            matches = {o.rstrip("="): kinds[o] for o in kinds if o.startswith("--") and o.rstrip("=").startswith(name)}
            if not matches:
                raise _Refused(f"{self.words[0]} has no option {name!r} in the tables")
            if set(matches.values()) & {Kind.WRITES, Kind.RUNS} or len(matches) > 1:
                raise _Refused(f"{name!r} may be short for an option that writes or runs code")
            name = next(iter(matches))  # the one option it abbreviates
            return self.long_option(kinds, name + eq + value, k)
        if kind is Kind.RUNS:
            raise _Refused(f"{name} runs other code or writes where no path can be checked")
        if kind is Kind.WRITES:
            if eq:
                self.write(k, value)
            elif (path := self.next_value(k)) is not None:
                self.write(k + 1, path)
                return k + 1
            else:  # `--output --reverse` writes a file named --reverse
                raise _Refused(f"{name} writes to a file not named here")
        elif kind is Kind.ARG and eq:
            self.values.append((name, value))
        elif kind is Kind.FLAG and eq:
            raise _Refused(f"{name} takes no value in the tables")
        return k

    def short_options(self, kinds: dict[str, Kind], word: str, k: int) -> int:
        for j in range(1, len(word)):
            option = "-" + word[j]
            kind = kinds.get(option)
            if kind is None:
                raise _Refused(f"{self.words[0]} has no option {option!r} in the tables")
            if kind is Kind.RUNS:
                raise _Refused(f"{option} runs other code or writes where no path can be checked")
            if kind is Kind.FLAG:
                continue
            rest = word[j + 1:]
            value = rest or self.next_value(k)
            if kind is Kind.WRITES and value is not None:
                self.write(k + (0 if rest else 1), value)
            elif kind is Kind.WRITES:
                raise _Refused(f"{option} writes to a file not named here")
            elif value is not None:
                self.values.append((option, value))
            return k + (0 if rest or value is None else 1)
        return k

    def find(self, start: int) -> None:
        """``find [-H -L -P] [paths...] [expression]``: every primary of the expression."""
        words = self.words
        k = start
        while k < len(words):
            word = words[k]
            if k in self.dynamic:
                raise _Refused(f"{word!r} is only known when it runs (it may be an option)")
            if word in FIND_RUNS:
                raise _Refused(f"find {word} runs a command or deletes files")
            if word in FIND_WRITES:
                count = FIND_WRITES[word]
                if k + 1 < len(words):
                    self.write(k + 1, words[k + 1])
                k += count
            elif word in FIND_READS:
                k += FIND_READS[word]
            elif word.startswith(("-", "(", "!", ")")) and not re.fullmatch(r"-O\d*", word):
                raise _Refused(f"find has no primary {word!r} in the tables")
            k += 1


# -- the languages of sed and awk -----------------------------------------------------------------

_SED_PLAIN = set("{}=dDgGhHnNpPxzF")
_SED_NUMBERED = set("qQlL")


def sed_script_effect(script: str) -> str:
    """Why a sed script does more than read and print ("" when it does not): its ``e``,
    ``w`` and ``W`` commands and ``s`` flags, or anything it holds that is not read here."""
    s, i, n = script, 0, len(script)

    def until(i: int, stops: str) -> int:
        while i < n and s[i] not in stops:
            i += 1
        return i

    def delimited(i: int, delim: str) -> int:  # from after an opening delimiter to after the closing one
        while i < n and s[i] != delim:
            if s[i] == "\\":
                i += 1
            elif s[i] == "\n":
                raise ValueError("a newline inside a delimited part")
            i += 1
        if i >= n:
            raise ValueError("an unclosed part")
        return i + 1

    try:
        while i < n:
            c = s[i]
            if c in " \t\n;":
                i += 1
                continue
            if c == "#":
                i = until(i, "\n")
                continue
            # up to two addresses: 12, $, /re/, \cREc, first~step, +N, 0
            for _ in range(2):
                if i < n and s[i] == "/":
                    i = delimited(i + 1, "/")
                    while i < n and s[i] in "IM":
                        i += 1
                elif i + 1 < n and s[i] == "\\":
                    i = delimited(i + 2, s[i + 1])
                    while i < n and s[i] in "IM":
                        i += 1
                else:
                    while i < n and (s[i].isdigit() or s[i] in "$~+"):
                        i += 1
                while i < n and s[i] in " \t":
                    i += 1
                if i < n and s[i] == ",":
                    i += 1
                    continue
                break
            while i < n and s[i] in " \t!":
                i += 1
            if i >= n:
                break
            c = s[i]
            i += 1
            if c in _SED_PLAIN:
                continue
            if c in _SED_NUMBERED:
                while i < n and (s[i].isdigit() or s[i] in " \t"):
                    i += 1
            elif c in "bTtv:":
                i = until(i, ";\n")
            elif c in "aicrR":  # text or a file read, to the end of the line
                while i < n and s[i] != "\n":
                    i += 2 if s[i] == "\\" else 1
            elif c in "wW":
                return f"the sed command {c} writes a file"
            elif c == "e":
                return "the sed command e runs a command"
            elif c in "sy":
                if i >= n or s[i] in "\n\\":
                    return f"a sed {c} command the rules cannot read"
                delim = s[i]
                i = delimited(delimited(i + 1, delim), delim)
                while c == "s" and i < n and (s[i] in "gpiImM" or s[i].isdigit() or s[i] in "ew"):
                    if s[i] == "e":
                        return "the sed flag e runs the result as a command"
                    if s[i] == "w":
                        return "the sed flag w writes a file"
                    i += 1
                if i < n and s[i] not in " \t\n;}#":
                    return f"a sed {c} command the rules cannot read"
            else:
                return f"the sed command {c!r} is not in the tables"
    except ValueError as exc:
        return f"the sed script cannot be read ({exc})"
    return ""


def awk_program_effect(program: str) -> str:
    """Why an awk program does more than read and print ("" when it does not): ``system()``,
    a pipe to or from a command, ``print > file``, gawk's ``@load``/``@include``. The text
    is read whole, strings included: where a string ends depends on regular expressions
    (``/"/``), which only awk itself reads for certain, so a ``|`` or ``>`` in a string
    asks too."""
    code = program
    if re.search(r"\bsystem\b", code):
        return "the awk program calls system()"
    if re.search(r"(?<!\|)\|(?!\|)", code):
        return "the awk program pipes to or from a command"
    if "@" in code:
        return "the awk program loads code (@load, @include)"
    for statement in re.split(r"[;{}\n]", code):
        if re.search(r"\bprintf?\b.*>", statement):
            return "the awk program prints into a file"
    return ""


__all__ = ["Judgement", "Kind", "awk_program_effect", "judge", "sed_script_effect"]
