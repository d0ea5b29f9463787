"""The shell parse on tree-sitter-bash (issue 39): what it reads, the same structure the
rules consumed from bashlex, and every place the walk refuses (so the line asks) because
tree-sitter's tree and bash part ways or bash evaluates what no rule can vouch for."""

from __future__ import annotations

import pytest

from jupyter_agent.tools.shell_parse import _parser, parse_command_line
from jupyter_agent.tools.shell_tree import Walker
from jupyter_agent.tools.shell_words import scan

READ = [  # (command line, its simple commands, the files it writes)
    ("FOO=1 git st\"at\"us > out 2>&1", [("FOO=1", "git", "status")], ["out"]),
    ("echo hello-$((40+2)) && echo second", [("echo", "hello-$((40+2))"), ("echo", "second")], []),
    ("cat <<'EOF'\nline $HOME\nEOF", [("cat",)], []),
    ("cat <<EOF\n$(date) ${USER}\nEOF", [("cat",), ("date",)], []),  # a substitution in a here-document
    ("cat <<EOF > notes.txt\nWritten on $(date)\nEOF", [("cat",), ("date",)], ["notes.txt"]),
    ("cat <<-EOF\n\tx\n\tEOF\nls", [("cat",), ("ls",)], []),
    ("cat <<EOF -n\nx\nEOF", [("cat", "-n")], []),  # words after the here-document are the command's
    ("cat <<EOF | sort\nb\nEOF", [("cat",), ("sort",)], []),
    ("echo hi > out status", [("echo", "hi", "status")], ["out"]),  # bash gives `status` to echo
    ("sort > /dev/null -o sorted.txt data.txt", [("sort", "-o", "sorted.txt", "data.txt")], ["sorted.txt"]),
    ("if [[ -d .git ]]; then echo repo; fi", [("echo", "repo")], []),
    ("[[ $(git status --short) == '' ]] && echo clean", [("git", "status", "--short"), ("echo", "clean")], []),
    ("[ -f x ] || touch x", [("[", "-f", "x", "]"), ("touch", "x")], []),
    ("case \"$1\" in a|$(id -u)) ls ;; *) echo no ;; esac", [("id", "-u"), ("ls",), ("echo", "no")], []),
    ("echo $'tab\\there' $'\\x41'", [("echo", "tab\there", "A")], []),
    ("arr=(one $(id) three); echo \"${arr[1]}\"", [("id",), ("arr=(one $(id) three)",), ("echo", "${arr[1]}")], []),
    ("export PYTHONPATH=src && python -m app", [("export", "PYTHONPATH=src"), ("python", "-m", "app")], []),
    ("x=1", [("x=1",)], []),
    ("time -p python bench.py | tail -1", [("python", "bench.py"), ("tail", "-1")], []),
    ("echo | time tr a b", [("echo",), ("time", "tr", "a", "b")], []),  # after `|`, the program time
    ("python - <<'EOF'\nprint(1)\nEOF", [("python", "-")], []),  # tree-sitter drops the `-`: put back
    ("cat - - <<X >out\nx\nX", [("cat", "-", "-")], ["out"]),
    ("f() { ls; } > out; f", [("ls",), ("f",)], ["out"]),
    ("echo `ls` <(sort x) $(< f)", [("ls",), ("sort", "x"), ("echo", "`ls`", "<(sort x)", "$(< f)")], []),
    ("select opt in a b; do echo $opt; break; done", [("echo", "$opt"), ("break",)], []),
    ("for f in $(ls); do wc -l \"$f\"; done", [("ls",), ("wc", "-l", "$f")], []),
    ("printf \"%-10s\\n\" x; psql -c \"\\dt\"", [("printf", "%-10s\\n", "x"), ("psql", "-c", "\\dt")], []),
    ("! grep -q x f && (( 1 + 2 ))", [("grep", "-q", "x", "f")], []),
    ("echo ${x:-$(id)} ${x:1:2} ${a[@]} ${x@Q}", [("id",), ("echo", "${x:-$(id)}", "${x:1:2}", "${a[@]}",
                                                          "${x@Q}")], []),
]


@pytest.mark.parametrize(("line", "commands", "writes"), READ)
def test_the_parse_reads_what_bash_runs(line, commands, writes):
    parsed = parse_command_line(line)
    assert parsed.unreadable == "", parsed.unreadable
    assert [tuple(c) for c in parsed.commands] == commands
    assert list(parsed.writes) == writes


REFUSED = [  # (command line, what the refusal says)
    ("echo $'\\\\'\ntouch PWNED\necho '", "$'...' quoting"),  # tree-sitter's token runs past bash's quote
    ("cat <<EOF\n`touch PWNED`\nEOF", "inside a here-document"),  # left as text by tree-sitter
    ("cat <<EOF\nx\n EOF\ntouch PWNED\nEOF", "here-document whose end"),  # tree-sitter ends at ` EOF`
    ("cat <<EOF\nx\nEOF \nls\nEOF", "here-document whose end"),
    ("echo a\\\nb", "reads as several"),  # one word `ab` to bash
    ("echo a`id`b", "reads as several"),  # tree-sitter: two words
    ("[ a > b ]", "shell operator"),  # bash writes the file b
    ("x=5; echo $((x + 1))", "arithmetic"),
    ("echo $(($(cat n.txt)))", "arithmetic"),
    ("(( count++ ))", "arithmetic"),
    ("for ((i = 0; i < 3; i++)); do echo $i; done", "arithmetic"),
    ("[[ $x -eq 1 ]]", "arithmetic"),
    ("[[ -v $x ]]", "subscript"),
    ("echo ${a[i]}", "subscript"),
    ("echo ${!x}", "${!name}"),
    ("echo ${x@P}", "prompt"),
    ("coproc touch PWNED", "keyword"),
    ("time { touch PWNED; }", "keyword"),
    ("echo > $(touch PWNED)", "only known when it runs"),
    ("echo hi <> f", "cannot read it"),
    ("cat <<EOF; ls\nbody\nEOF", "cannot read it"),
    ("echo $'\\cA'", "escape"),
    ("echo x\r", "carriage return"),
]


@pytest.mark.parametrize(("line", "why"), REFUSED)
def test_what_the_walk_cannot_vouch_for_asks(line, why):
    parsed = parse_command_line(line)
    assert why in parsed.unreadable and parsed.commands == ()


@pytest.mark.parametrize(("line", "why"), [
    ("test -v 'a[$(touch PWNED)]'", "evaluates a name's subscript"),
    ("[ -f \"$(cat name.txt)\" ]", "evaluates a name's subscript"),  # the output may be -v
    ("let x=1", "runs other code"),
    ("trap 'touch PWNED' EXIT", "runs other code"),
    ("alias ls='touch PWNED'", "runs other code"),
    ("export PATH=.:$PATH", "sets variables the rest of the line runs with"),
    ("read 'a[$(touch PWNED)]'", "evaluates a name's subscript"),
])
def test_builtins_that_run_code_later_or_in_a_subscript_need_an_exact_rule(line, why):
    parsed = parse_command_line(line)
    assert parsed.unreadable == "" and any(why in j.exact_only for j in parsed.judged), parsed


def test_text_no_token_holds_is_found_and_must_be_placed():
    """tree-sitter drops the `-` of ``python - <<'EOF'`` without an error node: the scan
    finds that text, and only the walk's one known case (a lone ``-`` between a command and
    its here-document) places it; anything else left over asks."""
    source = b"python - <<'EOF'\nprint(1)\nEOF"
    root = _parser().parse(source).root_node
    _, skipped = scan(root, source)
    assert skipped == {(7, 8)}
    walker = Walker(source, root)
    walker.skipped = set(skipped)
    walker.statement(root)
    assert walker.skipped == set() and [c.words for c in walker.commands] == [["python", "-"]]
    walker = Walker(source, root)
    walker.skipped = {*skipped, (0, 6)}  # text the walk has no case for stays, and the line asks
    walker.statement(root)
    assert walker.skipped == {(0, 6)}
