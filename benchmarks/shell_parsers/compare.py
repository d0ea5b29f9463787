"""Compare the shell parsers the Bash rules could use, on a corpus of real commands, and time them.

    .venv/bin/python benchmarks/shell_parsers/compare.py [--repeat N]

For each entry of ``corpus.sh`` (blocks separated by ``#---`` lines): whether bash itself
accepts it (``bash -n``, the truth), whether tree-sitter-bash parses it without an error
node, and whether the project's parse (``parse_command_line``: tree-sitter-bash and the
walk over its tree, which refuses what it cannot vouch for) reads it. "Wrong" counts
entries a parser accepts that bash rejects. bashlex, which the rules used before, is no
longer a dependency: with it installed (``pip install bashlex``) it gets a row too, and the
lines both read with different command names are listed. Then the time per line of each,
over the corpus, the best of ``--repeat`` passes.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jupyter_agent.tools.shell_parse import _parser, parse_command_line

CORPUS = Path(__file__).with_name("corpus.sh")


def entries() -> list[str]:
    text = CORPUS.read_text()
    blocks = [b.strip("\n") for b in re.split(r"^#---\n", text, flags=re.M)]
    blocks[0] = "\n".join(line for line in blocks[0].splitlines() if not line.startswith("# "))
    return [b for b in blocks if b.strip()]


def _bashlex() -> Any:
    try:
        import bashlex  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None
    return bashlex


def bashlex_names(bashlex: Any, command: str) -> list[str] | None:
    """The command names bashlex reads (None when it refuses the line)."""
    try:
        trees = bashlex.parse(command)
    except Exception:
        return None
    names: list[str] = []

    class Visitor(bashlex.ast.nodevisitor):  # type: ignore[misc]
        def visitcommand(self, node: Any, parts: Any) -> None:
            words = [p.word for p in parts if p.kind == "word"]
            if words:
                names.append(words[0])

    for tree in trees:
        Visitor().visit(tree)
    return names


def per_line_us(parse: Callable[[str], object], lines: list[str], repeat: int) -> tuple[float, float]:
    """The median and the longest time of one line, in microseconds (best of ``repeat`` passes)."""
    best: list[float] | None = None
    for _ in range(repeat):
        times = []
        for line in lines:
            start = time.perf_counter()
            parse(line)
            times.append((time.perf_counter() - start) * 1e6)
        if best is None or sum(times) < sum(best):
            best = times
    assert best is not None
    return statistics.median(best), max(best)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--repeat", type=int, default=5)
    args = options.parse_args()
    bashlex = _bashlex()
    parser = _parser()
    rows = {"bash -n": [0, 0, 0], "tree-sitter-bash (no error node)": [0, 0, 0], "the project's parse": [0, 0, 0]}
    if bashlex is not None:
        rows["bashlex"] = [0, 0, 0]
    differs: list[str] = []
    refused: list[str] = []
    lines = entries()
    for command in lines:
        valid = subprocess.run(["/bin/bash", "-n", "-c", command], capture_output=True).returncode == 0
        parsed = parse_command_line(command)
        tree_ok = not parser.parse(command.encode()).root_node.has_error
        accepted = {"bash -n": valid, "tree-sitter-bash (no error node)": tree_ok,
                    "the project's parse": not parsed.unreadable}
        theirs = bashlex_names(bashlex, command) if bashlex is not None else None
        if bashlex is not None:
            accepted["bashlex"] = theirs is not None
        for name, ok in accepted.items():
            rows[name][0 if ok else 1] += 1
            rows[name][2] += ok and not valid
        if theirs is not None and not parsed.unreadable:
            ours = [next((w for w in words if not re.match(r"[A-Za-z_]\w*\+?=", w)), words[0])
                    for words in parsed.commands]
            if sorted(set(ours)) != sorted(set(theirs)):
                differs.append(f"{command!r}: the project's parse {sorted(set(ours))}, bashlex {sorted(set(theirs))}")
        if valid and parsed.unreadable:
            refused.append(f"{command!r}: {parsed.unreadable}")
    print(f"{len(lines)} entries\n")
    print("| parser | parsed | refused | wrong (accepted, bash refuses) |\n|---|---|---|---|")
    for name, (ok, no, wrong) in rows.items():
        print(f"| {name} | {ok} | {no} | {wrong} |")
    if bashlex is not None:
        print(f"\nread by both the project's parse and bashlex, with different command names: {len(differs)}")
        print("\n".join(differs))
    print(f"\nvalid, refused by the project's parse: {len(refused)}")
    print("\n".join(refused))
    print(f"\ntime per line over the corpus (best of {args.repeat} passes): median, longest")
    timings = {"the project's parse (tree-sitter-bash + walk + tables)": parse_command_line,
               "tree-sitter-bash alone": lambda line: parser.parse(line.encode())}
    if bashlex is not None:
        timings["bashlex alone"] = lambda line: bashlex_names(bashlex, line)
    long_line = " && ".join(f"grep -n 'x{i}' f{i}.txt | sort -u" for i in range(300))  # ~9,000 characters
    for name, parse in timings.items():
        median, longest = per_line_us(parse, lines, args.repeat)
        one_long = per_line_us(parse, [long_line], 3)[0]
        print(f"| {name} | {median:.0f} µs | {longest:.0f} µs | "
              f"{len(long_line):,}-character line: {one_long / 1000:.1f} ms |")


if __name__ == "__main__":
    main()
