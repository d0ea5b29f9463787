"""Run one shell command as its own process group, streaming and bounding its output.

:func:`run_shell` starts the command in a new session (so its process group holds the
command and everything it starts), reads stdout and stderr together as a terminal shows
them, and:

* settles the text as a cell's output is settled (``\\r`` progress bars keep their last
  state, ``\\b`` erases: :class:`~jupyter_agent.notebook.outputs.StreamText`), keeping its
  head and tail (:data:`MODEL_OUTPUT_CHARS` in all) for the model;
* reports the latest screenful to ``on_output`` at most every :data:`REPORT_EVERY_S`;
* past the limit, writes the whole output (redacted) to a file in the private results
  folder, which the model can Read;
* ends every process the command started when the command exits (its background jobs
  go with it), when its time limit passes, or when the call is cancelled (Stop): SIGTERM,
  then SIGKILL after :data:`KILL_GRACE_S`. The command runs under a supervisor
  (:mod:`.shell_reaper`, a child subreaper) that also ends what left the process group or
  session (``setsid cmd &``, a double-forked daemon), so nothing outlives the call.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ..notebook.outputs import StreamText
from ..redact import redact, redact_partial

log = logging.getLogger(__name__)

#: Characters of output the model receives (the first and last halves).
MODEL_OUTPUT_CHARS = 30_000
#: Characters of the latest output a progress report carries (the card's live box).
REPORT_CHARS = 8_000
#: Seconds between progress reports while output arrives.
REPORT_EVERY_S = 0.1
#: Seconds between SIGTERM and SIGKILL when a command is ended.
KILL_GRACE_S = 0.4
#: Seconds the supervisor may take, after the grace, to end what is left below it.
_SUPERVISOR_S = 6.0
_REAPER = Path(__file__).with_name("shell_reaper.py")
_READ_SIZE = 1 << 16
#: Text held back from the spill file until a newline (a secret is redacted whole), at most.
_SPILL_HOLD_CHARS = 1 << 20


@dataclass
class ShellResult:
    """How a command ended: its settled, bounded ``output``; ``exit_code`` (None when it was
    ended: timeout or Stop; a negative number is the signal that killed it); ``spill``: the
    file with the whole output when it was cut."""

    output: str
    exit_code: int | None
    timed_out: bool = False
    spill: Path | None = None
    total_chars: int = 0


class _Spill:
    """The whole output, redacted line by line, in a private file (opened once it is needed)."""

    def __init__(self, folder: Callable[[], Path], name: str) -> None:
        self.folder, self.name = folder, name
        self.path: Path | None = None
        self._file: TextIO | None = None
        self._early: list[str] = []
        self._early_chars = 0
        self._held = ""

    def add(self, text: str, limit: int) -> None:
        if self.path is None:
            self._early.append(text)
            self._early_chars += len(text)
            if self._early_chars <= limit:
                return
            self._open()
            text, self._early = "".join(self._early), []
        self._held += text
        cut = self._held.rfind("\n") + 1
        if not cut and len(self._held) > _SPILL_HOLD_CHARS:
            cut = len(self._held)
        if cut:
            self._write(redact(self._held[:cut]))
            self._held = self._held[cut:]

    def _open(self) -> None:
        folder = self.folder()
        path = folder / self.name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        self._file = os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape")
        self.path = path

    def _write(self, text: str) -> None:
        if self._file is None:
            return
        try:
            self._file.write(text)
        except OSError:
            log.debug("the spill file could not be written; the model keeps the head and tail", exc_info=True)

    def close(self) -> None:
        if self._file is not None:
            self._write(redact(self._held))
            self._held = ""
            with contextlib.suppress(OSError):
                self._file.close()


async def run_shell(argv: list[str], *, cwd: Path, env: dict[str, str], timeout_s: float,
                    on_output: Callable[[str], None], spill_dir: Callable[[], Path], spill_name: str,
                    limit: int = MODEL_OUTPUT_CHARS) -> ShellResult:
    """Run ``argv`` in ``cwd`` with ``env`` (stdin empty); see the module docstring."""
    # under the supervisor that ends what left the group too (a `setsid` child, a daemon)
    supervised = [sys.executable, "-I", "-S", str(_REAPER), str(KILL_GRACE_S), *argv]
    process = await asyncio.create_subprocess_exec(
        *supervised, cwd=str(cwd), env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, start_new_session=True)
    text = StreamText(limit=limit, redact=redact)
    spill = _Spill(spill_dir, spill_name)
    total = 0
    last_report = 0.0
    # Output that came within REPORT_EVERY_S of the last report is shown once the interval
    # has passed, not at the next read: a command that prints and then waits (for a file,
    # for input from elsewhere) must have its latest output on the card while it waits.
    trailing: asyncio.TimerHandle | None = None

    def report(force: bool = False) -> None:
        nonlocal last_report, trailing
        now = time.monotonic()
        wait = REPORT_EVERY_S - (now - last_report)
        if not force and wait > 0:
            if trailing is None:
                trailing = asyncio.get_running_loop().call_later(wait, report_trailing)
            return
        if trailing is not None:
            trailing.cancel()
            trailing = None
        last_report = now
        tail = text.text[-REPORT_CHARS:]
        if len(text.text) > REPORT_CHARS:  # start at a line (or word) so no secret is cut in two
            start = max(tail.find("\n"), tail.find(" ")) + 1
            tail = "…" + tail[start:]
        on_output(redact_partial(tail, done=force))

    def report_trailing() -> None:
        nonlocal trailing
        trailing = None
        report()

    async def read() -> None:
        nonlocal total
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        assert process.stdout is not None
        while chunk := await process.stdout.read(_READ_SIZE):
            piece = decoder.decode(chunk)
            total += len(piece)
            text.append(piece)
            spill.add(piece, limit)
            report()
        rest = decoder.decode(b"", final=True)
        if rest:
            text.append(rest)
            spill.add(rest, limit)

    reader = asyncio.ensure_future(read())
    timed_out = False
    try:
        try:
            await asyncio.wait_for(process.wait(), timeout=timeout_s)
        except TimeoutError:
            timed_out = True
        await _end_group(process)
        # the group is gone, so the pipe closes: what it still held is read at once
        await asyncio.wait({reader}, timeout=1.0)
    finally:
        if not reader.done():  # cancelled (Stop), or a process outside the group holds the pipe
            await _end_group(process)
            reader.cancel()
            with contextlib.suppress(BaseException):
                await reader
            transport = getattr(process, "_transport", None)
            if transport is not None:
                transport.close()
        spill.close()
        if trailing is not None:  # stopped: nothing more is shown after the call ends
            trailing.cancel()
    report(force=True)
    return ShellResult(text.value(), None if timed_out else process.returncode, timed_out,
                       spill.path, total)


async def _end_group(process: asyncio.subprocess.Process) -> None:
    """End the command: SIGTERM to its process group (the supervisor among it ends every
    process below it, in the group or not, SIGKILL after :data:`KILL_GRACE_S`), then
    SIGKILL to whatever of the group is left once the supervisor is gone or late."""
    pgid = process.pid  # the session leader: its pid is the group's id
    if process.returncode is None:
        _signal_group(pgid, signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(process.wait()), timeout=KILL_GRACE_S + _SUPERVISOR_S)
    _signal_group(pgid, signal.SIGKILL)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(process.wait()), timeout=KILL_GRACE_S)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        log.debug("process group %s is already gone", pgid)


__all__ = ["MODEL_OUTPUT_CHARS", "ShellResult", "run_shell"]
