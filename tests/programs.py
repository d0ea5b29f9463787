"""Programs the project installed, for the tests (and benchmarks) that start them.

They come from this environment's scripts directory (the venv's ``bin/``, next to
``sys.executable``), never from the machine's ``PATH``: on a fresh machine nothing has
activated the venv, and a ``jupyter`` found on ``PATH`` may be another installation's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

#: where pip put this environment's console scripts (``jupyter``, ``jupyter-agent``, ``rg``)
SCRIPTS = Path(sysconfig.get_path("scripts") or Path(sys.executable).parent)


def installed(name: str) -> str:
    """The absolute path of the console script ``name`` that this environment installed."""
    path = SCRIPTS / name
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(f"{name} is not installed in {SCRIPTS}: run `./dev test`, which "
                                "installs the project with its test extras into .venv")
    return str(path)


def path_without_scripts(path: str | None = None) -> str:
    """``PATH`` (default: this process's) without this environment's scripts directory,
    as on a fresh machine where nothing activated the venv."""
    ours = {os.path.realpath(SCRIPTS), os.path.realpath(Path(sys.executable).parent)}
    entries = (os.environ.get("PATH", "") if path is None else path).split(os.pathsep)
    return os.pathsep.join(e for e in entries if e and os.path.realpath(e) not in ours)


#: where the machine's own programs (git, node: Debian packages, never the venv's) live
SYSTEM_DIRS = ("/usr/local/bin", "/usr/bin", "/bin")


def system_program(name: str) -> str | None:
    """The absolute path of the machine's own program ``name`` (``git``, ``node``), looked
    for in the system's program folders only, or None when it is not installed."""
    for folder in SYSTEM_DIRS:
        path = os.path.join(folder, name)
        if os.access(path, os.X_OK):
            return path
    return None


def stop_process(proc: subprocess.Popen, grace_s: float = 15) -> None:
    """End a server a test started: SIGTERM, then SIGKILL if it has not exited in ``grace_s``."""
    proc.terminate()
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(grace_s)
