"""Compare the shell parsers the Bash rules could use, on a corpus of real commands.

    .venv/bin/python benchmarks/shell_parsers/compare.py

For each entry of ``corpus.sh`` (blocks separated by ``#---`` lines): whether bash itself
accepts it (``bash -n``, the truth), whether bashlex parses it, whether the project's
parse (``parse_command_line``: bashlex plus the rewrites it makes and the constructs it
refuses) reads it, and whether tree-sitter-bash parses it without an error node. "Wrong"
counts entries a parser accepts that bash rejects; "differs" counts entries both the
project's parse and tree-sitter read but with different command names. tree-sitter is not
a dependency of the project: ``pip install tree-sitter tree-sitter-bash`` to run this.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import bashlex
from tree_sitter import Language, Node, Parser
import tree_sitter_bash

from jupyter_agent.tools.shell_parse import parse_command_line

CORPUS = Path(__file__).with_name("corpus.sh")


def entries() -> list[str]:
    text = CORPUS.read_text()
    blocks = [b.strip("\n") for b in re.split(r"^#---\n", text, flags=re.M)]
    blocks[0] = "\n".join(line for line in blocks[0].splitlines() if not line.startswith("# "))
    return [b for b in blocks if b.strip()]


def names_tree_sitter(node: Node) -> list[str]:
    found = []
    if node.type == "command_name" and node.text is not None:
        found.append(node.text.decode())
    for child in node.children:
        found += names_tree_sitter(child)
    return found


def main() -> None:
    parser = Parser(Language(tree_sitter_bash.language()))
    rows = {"bash -n": [0, 0, 0], "bashlex": [0, 0, 0], "project parse": [0, 0, 0], "tree-sitter-bash": [0, 0, 0]}
    differs: list[str] = []
    refused_only_by_project: list[str] = []
    entries_ = entries()
    for command in entries_:
        valid = subprocess.run(["bash", "-n", "-c", command], capture_output=True).returncode == 0
        try:
            bashlex.parse(command)
            by_bashlex = True
        except Exception:
            by_bashlex = False
        parsed = parse_command_line(command)
        by_project = not parsed.unreadable
        tree = parser.parse(command.encode())
        by_tree_sitter = not tree.root_node.has_error
        for name, accepted in (("bash -n", valid), ("bashlex", by_bashlex), ("project parse", by_project),
                               ("tree-sitter-bash", by_tree_sitter)):
            rows[name][0 if accepted else 1] += 1
            rows[name][2] += accepted and not valid
        if by_project and by_tree_sitter:
            ours = sorted({w[0] for w in parsed.commands if not re.match(r"[A-Za-z_]\w*=", w[0])})
            theirs = sorted(set(names_tree_sitter(tree.root_node)))
            if ours != [n.strip("'\"") for n in theirs]:
                differs.append(f"{command!r}: project {ours}, tree-sitter {theirs}")
        if valid and by_tree_sitter and not by_project:
            refused_only_by_project.append(f"{command!r}: {parsed.unreadable}")
    print(f"{len(entries_)} entries\n")
    print("| parser | parsed | refused | wrong (accepted, bash refuses) |\n|---|---|---|---|")
    for name, (ok, refused, wrong) in rows.items():
        print(f"| {name} | {ok} | {refused} | {wrong} |")
    print(f"\nread by both, with different command names: {len(differs)}")
    print("\n".join(differs))
    print(f"\nvalid, read by tree-sitter, refused by the project: {len(refused_only_by_project)}")
    print("\n".join(refused_only_by_project))


if __name__ == "__main__":
    main()
