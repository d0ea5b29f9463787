"""A ``Bash`` command's supervisor: it ends every process the command started.

Run as ``python -I -S shell_reaper.py GRACE_S ARGV...`` (standard library only, so it
starts in milliseconds, outside the package). It makes itself a *child subreaper*
(Linux's ``PR_SET_CHILD_SUBREAPER``): a process the command started that outlives its
parent is re-parented to this supervisor, not to init, even one that left the process
group and session (``setsid sleep 1000 &``, a double-forked daemon). When the command
exits, or the supervisor is told to stop (SIGTERM, SIGINT, SIGHUP: Stop and the time
limit), it signals every process below it (SIGTERM first when told to stop, then after
``GRACE_S`` seconds SIGKILL) until none is left, and exits as the command did (its exit
code, or the signal that ended it).

Without ``/proc`` or ``prctl`` (not Linux) it only runs the command: the caller still
ends the process group.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
#: Seconds the supervisor keeps killing: a command that forks faster than it can be
#: killed is left after that (the caller then kills the process group).
KILL_FOR_S = 5.0


class _Told(Exception):
    """A signal told the supervisor to stop."""


def _on_signal(signum: int, frame: object) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # once is enough; the ending must not be interrupted
    raise _Told(signum)


def descendants(root: int) -> list[int]:
    """Every process below ``root`` (read from ``/proc``: parent links)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    stat = f.read()
            except OSError:  # it has just ended
                continue
            ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def _signal_all(sig: int) -> bool:
    """Send ``sig`` to every process below; whether there was any."""
    below = descendants(os.getpid())
    for pid in below:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    return bool(below)


def _reap() -> None:
    """Collect every child that has ended (its own or an orphan re-parented here)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def end_all(grace_s: float, told: bool) -> None:
    """End every process below: SIGTERM and ``grace_s`` to go when told to stop, then SIGKILL."""
    if told and _signal_all(signal.SIGTERM):
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            _reap()
            if not descendants(os.getpid()):
                return
            time.sleep(0.01)
    deadline = time.monotonic() + KILL_FOR_S
    while time.monotonic() < deadline:
        if not _signal_all(signal.SIGKILL):
            return
        _reap()
        time.sleep(0.005)


def main(args: list[str]) -> None:
    grace_s, argv = float(args[0]), args[1:]
    supervising = sys.platform.startswith("linux") and os.path.isdir("/proc")
    if supervising:
        libc = ctypes.CDLL(None, use_errno=True)
        supervising = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    if not supervising:
        os.execvp(argv[0], argv)
    status: int | None = None
    told: int | None = None
    try:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, _on_signal)
        pid = os.fork()
        if pid == 0:  # the command, with the signal handling a shell expects (Python ignores SIGPIPE)
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(sig, signal.SIG_DFL)
            try:
                os.execvp(argv[0], argv)
            finally:
                os._exit(127)
        while status is None:
            ended, wait_status = os.waitpid(-1, 0)  # the command, or an orphan re-parented here
            if ended == pid:
                status = wait_status
    except _Told as exc:
        told = int(exc.args[0])
    except ChildProcessError:
        status = 0
    end_all(grace_s, told is not None)
    code = os.waitstatus_to_exitcode(status) if status is not None else -(told or signal.SIGTERM)
    if code < 0:  # end as the command ended: by that signal
        if -code not in (signal.SIGKILL, signal.SIGSTOP):  # (these two have no handler to reset)
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    main(sys.argv[1:])
