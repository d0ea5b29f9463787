"""The tables of ``Bash`` rules against real bash: every entry, run for real.

For each command of ``jupyter_agent.tools.shell_commands``, every option it lists is run
under real bash in a throwaway folder (``HOME`` inside it, with a ``.bashrc`` canary; code
that runs leaves a marker file) and the permission policy decides the same command under
the rule "Always allow" offers for an ordinary use of it, in default mode. The one thing
that must never happen: the rule allows a command that real bash shows writing a file or
running code. Options listed as writing or running must also ask, and the attacks written
out below must really do what they say under bash (so the check can fail).

Changes inside ``.git`` are not counted: git keeps its index fresh as it reads.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from jupyter_agent.loop.permission_result import PermissionAllow, PermissionAsk
from jupyter_agent.loop.tool import ToolContext
from jupyter_agent.permissions import Permissions
from jupyter_agent.tools.bash import Bash, BashInput
from jupyter_agent.tools.shell_commands import COMMANDS, FIND_READS, FIND_RUNS, FIND_WRITES, Spec
from jupyter_agent.tools.shell_parse import parse_command_line, suggested_rule
from tests.programs import system_program

# the machine's own bash and git, by their paths (tests/test_programs.py)
BASH = system_program("bash") or "/bin/bash"
GIT = system_program("git") or "/usr/bin/git"

#: The ordinary use of each judged command whose "Always allow" rule the probes run under.
ORDINARY = {"git": "git status", "find": "find . -name data.txt", "sed": "sed -n 1p data.txt",
            "awk": "awk '{print $1}' data.txt", "dd": "dd if=data.txt", "tee": "tee", "env": "env",
            "timeout": "timeout", "nice": "nice", "nohup": "nohup", "stdbuf": "stdbuf", "tree": "tree .",
            "[": "[ data.txt ]"}  # (bash refuses `[` without its `]`, and so does the parser)
#: How an option is tried: ``{opt}`` is the option (with its argument).
TEMPLATES = {"sed": "sed {opt} -e p data.txt", "awk": "awk {opt} '{{print}}' data.txt", "tee": "tee {opt}",
             "tree": "tree {opt} .", "git": "git {opt} status", "find": "find . {opt}", "dd": "dd {opt}",
             "env": "env {opt}", "timeout": "timeout {opt}", "nice": "nice {opt}", "nohup": "nohup {opt}",
             "stdbuf": "stdbuf {opt}"}

#: Attacks: each must ask under the command's offered rule, and bash must show it writing or
#: running (``{home}`` is the throwaway home). Covers every write and run entry of the tables.
ATTACKS = [
    "sort -o {home}/.bashrc payload.txt",
    "sort --output={home}/.bashrc payload.txt",
    "sort --outp {home}/.bashrc payload.txt",
    "sort -ro{home}/.bashrc payload.txt",
    "sort --output --reverse payload.txt",  # a file named --reverse, in the working folder
    "sort -S 1 --compress-program=./run.sh -T . big.txt",
    "git diff --no-index --output={home}/.bashrc /dev/null payload.txt",
    "git diff --no-index --output {home}/.bashrc /dev/null payload.txt",
    "git log --output={home}/.bashrc",
    "git log --outp={home}/.bashrc",
    "git show --output={home}/.bashrc",
    "git -c core.fsmonitor=./run.sh status",
    "git -c diff.external=./run.sh diff --ext-diff HEAD~1",
    "git --config-env=core.fsmonitor=RUN status",
    "git grep -O./run.sh hello",
    "sed -n '1e touch PWNED' payload.txt",
    "sed -n '1w {home}/.bashrc' payload.txt",
    "sed -n 's/hello/touch PWNED/e' payload.txt",
    "sed -n 's/x*/y/w {home}/.bashrc' payload.txt",
    "sed -e p -e '1e touch PWNED' payload.txt",
    "sed -i s/hello/bye/ payload.txt",
    "sed --in-place=.bak s/hello/bye/ payload.txt",
    "sed -f script.sed payload.txt",
    "awk 'BEGIN {system(\"touch PWNED\")}'",
    "awk 'BEGIN {print \"touch PWNED\" | \"sh\"}'",
    "awk '{print > \"{home}/.bashrc\"}' payload.txt",
    "awk -f prog.awk payload.txt",
    "awk -W exec prog.awk",
    "awk '/\"/ {system(\"touch PWNED\")}' quote.txt",  # a quote in a regex: where strings end is awk's to say
    "find . -name payload.txt -exec touch PWNED \\;",
    "find . -name payload.txt -execdir touch PWNED \\;",
    "find . -name payload.txt -ok touch PWNED \\;",
    "find . -name payload.txt -okdir touch PWNED \\;",
    "find payload.txt -delete",
    "find . -name payload.txt -fprint {home}/.bashrc",
    "find . -name payload.txt -fprintf {home}/.bashrc %p",
    "find . -name payload.txt -fls {home}/.bashrc",
    "find . -name payload.txt -fprint0 {home}/.bashrc",
    "tee {home}/.bashrc",
    "dd if=payload.txt of={home}/.bashrc",
    "uniq payload.txt {home}/.bashrc",
    "env touch PWNED",
    "env FOO=1 touch PWNED",
    "env -S 'touch PWNED'",
    "timeout 5 touch PWNED",
    "nice touch PWNED",
    "nice -n 1 touch PWNED",
    "nohup touch PWNED",
    "stdbuf -o0 touch PWNED",
    "xargs touch < names.txt",
    "bash -c 'touch PWNED'",
    "sh -c 'touch PWNED'",
    "eval touch PWNED",
    "command touch PWNED",
    "printf -v PATH . ; sort data.txt",  # `./sort` is what runs then
    "test -v 'a[$(touch PWNED)]'",  # the subscript of the name is evaluated
    "[ -v 'a[$(touch PWNED)]' ]",
]
#: Commands whose attacks need a tool this machine may lack, or a spelling this version
#: refuses, or input nobody gives (they must still ask).
MAY_NOT_RUN = {"tree", "rg"}
NO_EFFECT = {"git log --outp={home}/.bashrc", "find . -name payload.txt -ok touch PWNED \\;",
             "find . -name payload.txt -okdir touch PWNED \\;"}


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A working folder (a git repository with two commits) and a home beside it."""
    root = Path(os.path.realpath(tmp_path_factory.mktemp("differential")))
    work, home = root / "work", root / "home"
    work.mkdir()
    home.mkdir()
    (home / ".bashrc").write_text("# the canary\n")
    (work / "data.txt").write_text("b 2\na 1\n")
    (work / "payload.txt").write_text("hello\n")
    (work / "quote.txt").write_text('say "hi"\n')
    (work / "big.txt").write_text("".join(f"{i}\n" for i in range(1_000)))
    (work / "names.txt").write_text("PWNED\n")
    (work / "script.sed").write_text("1e touch PWNED\n")
    (work / "prog.awk").write_text('BEGIN { system("touch PWNED") }\n')
    (work / "run.sh").write_text("#!/bin/sh\ntouch PWNED\ncat\n")
    (work / "run.sh").chmod(0o755)
    (work / "sort").write_text("#!/bin/sh\n: > PWNED\n")  # (no PATH needed)
    (work / "subscript.txt").write_text("a[$(>PWNED)]\n")  # a name whose subscript runs a command
    (work / "prompt.txt").write_text("$(>PWNED)\n")
    (work / "sort").chmod(0o755)
    env = _env(home)
    for argv in ([GIT, "init", "-q"], [GIT, "add", "data.txt", "payload.txt"], [GIT, "commit", "-qm", "one"]):
        subprocess.run(argv, cwd=work, env=env, check=True)
    (work / "data.txt").write_text("c 3\nb 2\na 1\n")
    subprocess.run([GIT, "commit", "-qam", "two"], cwd=work, env=env, check=True)
    shutil.copytree(root, root.parent / f"{root.name}-pristine", symlinks=True)
    return work, home


def _env(home: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(home), "LC_ALL": "C", "RUN": "./run.sh",
            "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1"}


def _snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    files = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in [*names, *dirs]:
            path = Path(folder, name)
            st = path.lstat()
            small = path.is_file() and not path.is_symlink() and st.st_size < 65_536
            files[str(path)] = (st.st_mtime_ns if path.is_file() else 0, st.st_size if path.is_file() else 0,
                                hashlib.sha256(path.read_bytes()).hexdigest() if small else "")
    return files


def run_for_real(command: str, work: Path, home: Path) -> list[str]:
    """Run ``command`` in bash as the tool would; what it changed (files written, created,
    deleted, the marker of code that ran), put back as it was."""
    root = work.parent
    pristine = root.parent / f"{root.name}-pristine"
    before = _snapshot(root)
    try:
        subprocess.run([BASH, "-c", command], cwd=work, env=_env(home), stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=60, check=False)
    finally:
        after = _snapshot(root)
        changed = sorted({p for p in before.keys() | after.keys() if before.get(p) != after.get(p)})
        if changed:  # put the place back as it was made, for the next probe
            shutil.rmtree(root)
            shutil.copytree(pristine, root, symlinks=True)
    return changed


def decide(command: str, rule: str, work: Path) -> bool:
    """Does the policy allow ``command`` under ``rule`` in default mode (no asking)?"""
    permissions = Permissions(cwd=work, allow=[rule])
    ctx = ToolContext(cwd=work, permissions=permissions)
    result = asyncio.run(permissions.check(Bash(), BashInput(command=command), ctx))
    assert isinstance(result, PermissionAllow | PermissionAsk), result
    return isinstance(result, PermissionAllow)


def offered_rule(name: str) -> str:
    """The rule "Always allow" offers for the ordinary use of a command (a prefix)."""
    parsed = parse_command_line(ORDINARY.get(name, f"{name} data.txt"))
    (words,) = parsed.commands
    rule = suggested_rule(words, parsed.judged[0].exact_only)
    return f"Bash({rule})"


def _option_probes(name: str, spec: Spec, template: str) -> list[tuple[str, str]]:
    """(command, kind) for every option of a table: read-only ones as they are used."""
    probes = []
    for text, kind in ((spec.flags, "flag"), (spec.args, "arg"), (spec.writes, "writes"), (spec.runs, "runs")):
        for option in text.split():
            if kind == "arg" or (kind in ("writes", "runs") and option.endswith("=")):
                value = "{home}/.bashrc" if kind == "writes" else ("./run.sh" if kind == "runs" else "1")
                option = f"{option}{value}" if option.endswith("=") else f"{option} {value}"
            probes.append((template.format(opt=option), kind))
    return probes


JUDGED = sorted(n for n, s in COMMANDS.items() if not (s.any_option or s.always_runs or s.sets_variables))


@pytest.mark.parametrize("name", JUDGED)
def test_no_option_of_the_tables_is_allowed_while_bash_shows_it_writing(place, name):
    """Every option of the command's table, tried for real: allowed means nothing changed."""
    work, home = place
    spec = COMMANDS[name]
    rule = offered_rule(name)
    assert rule.endswith(":*)"), rule  # the ordinary use is offered a prefix: the tables guard it
    if name == "git":
        rule = "Bash(git:*)"  # wider than anything offered (global options come before the subcommand)
    probes = _option_probes(name, spec, TEMPLATES.get(name, f"{name} {{opt}} data.txt"))
    for sub, sub_spec in spec.subcommands.items():
        probes += _option_probes(name, sub_spec, f"git {sub} {{opt}}")
    if name == "find":
        probes += [(f"find . {shlex.quote(p)} {' '.join(['1'] * n)}", "flag") for p, n in FIND_READS.items()]
        probes += [(f"find . {p} {' '.join(['{home}/.bashrc'] * n)}", "writes") for p, n in FIND_WRITES.items()]
        probes += [(f"find . {p} touch PWNED \\;", "runs") for p in FIND_RUNS]
    if name == "dd":
        probes += [("dd if=data.txt bs=1 count=2 skip=1 status=none", "flag"),
                   ("dd if=data.txt ibs=2 obs=3 conv=ucase iflag=fullblock", "flag")]
    for template, kind in probes:
        command = template.replace("{home}", str(home))
        allowed = decide(command, rule, work)
        changed = run_for_real(command, work, home)
        assert not (allowed and changed), f"{rule} allowed {command!r}, which changed {changed}"
        if kind in ("writes", "runs"):
            assert not allowed, f"{rule} allowed {command!r}"
        else:  # the read-only options run unasked: the table is what decides
            assert allowed, f"{rule} asked for {command!r}, an option the table lists as reading"


@pytest.mark.parametrize("name", sorted(n for n, s in COMMANDS.items() if s.any_option))
def test_commands_that_only_read_are_allowed_and_only_read(place, name):
    work, home = place
    rule = offered_rule(name)
    command = ORDINARY.get(name, f"{name} data.txt")
    assert decide(command, rule, work) and run_for_real(command, work, home) == []


@pytest.mark.parametrize("attack", ATTACKS)
def test_each_attack_asks_and_really_writes_or_runs(place, attack):
    work, home = place
    command = attack.replace("{home}", str(home))
    name = command.split()[0]
    rule = offered_rule(name) if name in COMMANDS and not COMMANDS[name].always_runs else f"Bash({name}:*)"
    if name == "git":
        rule = "Bash(git:*)"  # wider than anything offered: the tables still hold
    assert not decide(command, rule, work), f"{rule} allowed {command!r}"
    changed = run_for_real(command, work, home)
    if name not in MAY_NOT_RUN and attack not in NO_EFFECT:
        assert changed, f"{command!r} changed nothing under bash: the probe proves nothing"


#: Entries with no attack of their own (each still asks: the option test checks every one):
#: long spellings of an attacked short option, gawk's options (this machine's awk may be
#: mawk), env's signal settings, and git's that need a repository set up for them.
WITHOUT_ATTACK = {
    "sort --temporary-directory", "sed --file", "awk --file", "awk -i", "awk --include", "awk -l", "awk --load",
    "awk -E", "awk --exec", "awk -e", "awk --source", "awk -o", "awk --pretty-print", "awk -p", "awk --profile",
    "awk -d", "awk --dump-variables", "awk -D", "awk --debug", "git --exec-path", "git -p", "git --paginate",
    "git --super-prefix", "git --attr-source", "git --textconv", "git --open-files-in-pager", "env --split-string",
    "env --block-signal", "env --default-signal", "env --ignore-signal"}


def test_every_write_and_run_entry_has_an_attack():
    """Each option the tables say writes or runs is used by an attack above (as a word of a
    command of its own name), or is listed in WITHOUT_ATTACK."""
    def attacked(name: str, option: str) -> bool:
        return any(a.split()[0] == name and any(w.startswith(option) for w in a.split()[1:]) for a in ATTACKS)

    missing = {f"{name} {option.rstrip('=')}" for name, spec in COMMANDS.items() if name not in MAY_NOT_RUN
               for s in (spec, *spec.subcommands.values()) for option in (s.writes + " " + s.runs).split()
               if not attacked(name, option.rstrip("="))}
    missing |= {f"find {p}" for p in (*FIND_RUNS, *FIND_WRITES) if not attacked("find", p)}
    assert missing - WITHOUT_ATTACK == set()
    assert WITHOUT_ATTACK <= missing  # nothing listed there that has an attack after all


#: Where tree-sitter's tree and bash part ways, or bash evaluates a value as code (issue 39):
#: each must ask under the rules given, and bash must show it writing or running.
PARSER_ATTACKS = [
    ("echo $'\\\\'\ntouch PWNED\necho '", ["Bash(echo:*)"]),  # tree-sitter: one echo
    ("cat <<EOF\n`touch PWNED`\nEOF", ["Bash(cat:*)"]),  # tree-sitter: text of the here-document
    ("sort > /dev/null -o {home}/.bashrc payload.txt", ["Bash(sort:*)"]),  # tree-sitter: -o ... is a target
    ("[ a > b ]", ["Bash([:*)"]),  # bash writes the file b
    ("[[ $(cat subscript.txt) -eq 1 ]] && echo one", ["Bash(cat:*)", "Bash(echo:*)"]),
    ("[[ -v $(cat subscript.txt) ]] && echo set", ["Bash(cat:*)", "Bash(echo:*)"]),
    ("echo $(( $(cat subscript.txt) ))", ["Bash(cat:*)", "Bash(echo:*)"]),
    ("(( $(cat subscript.txt) ))", ["Bash(cat:*)"]),
    ("echo ${a[$(cat subscript.txt)]}", ["Bash(cat:*)", "Bash(echo:*)"]),
    ("for x in $(cat subscript.txt); do echo ${!x}; done", ["Bash(cat:*)", "Bash(echo:*)"]),
    ("for x in $(cat prompt.txt); do echo ${x@P}; done", ["Bash(cat:*)", "Bash(echo:*)"]),
    ("let x=$(cat subscript.txt)", ["Bash(cat:*)", "Bash(let:*)"]),
    ("[ -v $(cat subscript.txt) ]", ["Bash(cat:*)", "Bash([:*)"]),
    ("coproc touch PWNED", ["Bash(coproc:*)"]),
    ("trap 'touch PWNED' EXIT", ["Bash(trap:*)"]),
    ("shopt -s expand_aliases\nalias ls='touch PWNED'\nls", ["Bash(shopt:*)", "Bash(alias:*)", "Bash(ls:*)"]),
    ("f() { touch PWNED; }; f", ["Bash(f:*)"]),
    ("case x in $(touch PWNED)) ;; esac", ["Bash(echo:*)"]),
    ("export PATH=.:$PATH; sort data.txt", ["Bash(export:*)", "Bash(sort:*)"]),  # ./sort runs
    ("read 'a[$(touch PWNED)]' < data.txt", ["Bash(read:*)"]),
]


def decide_under(command: str, rules: list[str], work: Path) -> bool:
    permissions = Permissions(cwd=work, allow=rules)
    ctx = ToolContext(cwd=work, permissions=permissions)
    result = asyncio.run(permissions.check(Bash(), BashInput(command=command), ctx))
    return isinstance(result, PermissionAllow)


@pytest.mark.parametrize(("attack", "rules"), PARSER_ATTACKS)
def test_each_parser_attack_asks_and_really_writes_or_runs(place, attack, rules):
    work, home = place
    command = attack.replace("{home}", str(home))
    assert not decide_under(command, rules, work), f"{rules} allowed {command!r}"
    assert run_for_real(command, work, home), f"{command!r} changed nothing under bash: the probe proves nothing"


#: Corpus lines that run until stopped (each still goes through the decision above it).
NEVER_ENDS = {"while true; do sleep 1; done"}


def test_no_corpus_line_the_offered_prefix_rules_allow_writes_or_runs(place):
    """Every line of the corpus of real commands (benchmarks/shell_parsers/corpus.sh, the
    lines the bashlex parse refused included) under the prefix rules "Always allow" offers
    for its commands (the ones the tables vouch for as reading): when they allow it, real
    bash changes nothing."""
    from tests.tools.test_shell_corpus import _entries

    work, home = place
    allowed = 0
    for line in _entries():
        parsed = parse_command_line(line)
        if parsed.unreadable or line in NEVER_ENDS:
            continue
        rules = [f"Bash({rule})" for words, judged in zip(parsed.commands, parsed.judged)
                 if (rule := suggested_rule(words, judged.exact_only)).endswith(":*")]
        if not decide_under(line, rules, work):
            continue
        allowed += 1
        changed = run_for_real(line, work, home)
        assert not changed, f"{rules} allowed {line!r}, which changed {changed}"
    assert allowed >= 80  # the check ran on many lines (93 when written)


#: Before the line: an external command bash cannot find (PATH leads nowhere) is traced and
#: then does nothing, successfully, so `&&` chains go on; every simple command is traced.
_TRACING = ('command_not_found_handle() { __not_run__=1; }\n'
            'exec {__trace}>"$TRACE"; BASH_XTRACEFD=$__trace; set -x\n')
#: What bash traces that is not a simple command of the line (keywords, the handler).
_NOT_SIMPLE = ("__not_run__=", "[[ ", "(( ", "for ((", "for ", "select ", "case ")
#: A parsed word whose value bash makes when it runs: it may become any number of words.
_DYNAMIC = ("$", "`", "<(", ">(", "*", "?", "[", "{", "~")


_RUNS_LATER = ("trap", "eval", "source", ".")


def traced_commands(line: str, folder: Path) -> list[tuple[str, ...]] | None:
    """The simple commands real bash runs for ``line`` (after expansion, as ``set -x``
    shows them), with no program found (PATH leads nowhere): None when it does not end
    within 5 s."""
    trace = folder / "trace"
    env = {"PATH": str(folder / "nowhere"), "HOME": str(folder), "TRACE": str(trace), "LC_ALL": "C"}
    try:
        subprocess.run([BASH, "-c", _TRACING + line], cwd=folder, env=env, stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=5, check=False)
    except subprocess.TimeoutExpired:
        return None
    entries: list[str] = []
    for text in trace.read_text(errors="replace").split("\n"):
        if text.startswith("+"):
            entries.append(text.lstrip("+")[1:])
        elif entries:  # a word that holds a newline goes on on the next line
            entries[-1] += "\n" + text
    return [tuple(shlex.split(e)) for e in entries if e and not e.startswith(_NOT_SIMPLE)]


def _found(ran: tuple[str, ...], parsed: tuple[tuple[str, ...], ...]) -> bool:
    """Is a command bash ran one the parse found? Assignments in front are traced apart;
    a word only known when it runs may become any words."""
    def bare(words: tuple[str, ...]) -> tuple[str, ...]:
        k = 0
        while k < len(words) and re.match(r"[A-Za-z_]\w*(\[[^]]*\])?\+?=", words[k]):
            k += 1
        return words[k:]

    if any(" ".join(ran) in words for words in parsed):  # an array assignment, `a=(x y)`, traced unquoted
        return True
    if ran and not bare(ran):  # assignments alone: in front of a command, or a command
        return all(any(w == r or any(m in w for m in _DYNAMIC) for c in parsed for w in c) for r in ran)
    for words in parsed:
        words = bare(words)
        if any(any(m in w for m in _DYNAMIC) for w in words):
            if words[:1] == ran[:1] or any(m in words[0] for m in _DYNAMIC):
                return True
        elif words == ran:
            return True
    return False


def test_every_command_bash_runs_is_one_the_parse_found(tmp_path):
    """A structural differential: every line the parse reads (the corpus and the lines of
    tests/tools/test_shell_tree.py) runs under real bash with no program to find and
    ``set -x`` on; each simple command bash runs (builtins too, inside substitutions,
    functions and here-documents) must be among the commands the parse gave the rules. The
    exceptions are commands that need an exact rule anyway: what ``trap`` runs later, what
    ``source`` and ``eval`` run."""
    from tests.tools.test_shell_corpus import _entries
    from tests.tools.test_shell_tree import READ

    checked = 0
    for k, line in enumerate([*_entries(), *(line for line, _, _ in READ)]):
        parsed = parse_command_line(line)
        if parsed.unreadable or line in NEVER_ENDS or any(c[0] in _RUNS_LATER for c in parsed.commands):
            continue
        folder = tmp_path / str(k)
        folder.mkdir()
        ran = traced_commands(line, folder)
        if ran is None:
            continue
        checked += 1
        for command in ran:
            assert _found(command, parsed.commands), f"bash ran {command} for {line!r}; the parse: {parsed.commands}"
    assert checked >= 220  # (255 when written)
