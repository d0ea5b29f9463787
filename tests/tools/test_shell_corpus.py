"""The shell parse on the corpus of real commands (benchmarks/shell_parsers/corpus.sh):
nothing bash refuses is read as a command line the rules could allow, and what it reads
stays at least what was measured (docs/tools.md, "The parser, measured")."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from jupyter_agent.tools.shell_parse import parse_command_line
from tests.programs import system_program

BASH = system_program("bash") or "/bin/bash"  # by its path (tests/test_programs.py)

CORPUS = Path(__file__).resolve().parents[2] / "benchmarks" / "shell_parsers" / "corpus.sh"
#: Entries of the corpus the parse read when docs/tools.md was written (tree-sitter-bash).
MEASURED_READ = 231


def _entries() -> list[str]:
    blocks = [b.strip("\n") for b in re.split(r"^#---\n", CORPUS.read_text(), flags=re.M)]
    blocks[0] = "\n".join(line for line in blocks[0].splitlines() if not line.startswith("# "))
    return [b for b in blocks if b.strip()]


def test_the_parse_reads_no_line_bash_refuses_and_no_fewer_than_measured():
    entries = _entries()
    assert len(entries) == 241
    read = 0
    for command in entries:
        valid = subprocess.run([BASH, "-n", "-c", command], capture_output=True, check=False).returncode == 0
        parsed = parse_command_line(command)
        assert valid or parsed.unreadable, f"read a line bash refuses: {command!r}"
        read += not parsed.unreadable
    assert read >= MEASURED_READ
