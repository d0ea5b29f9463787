"""A cell's traceback as the model needs it: the error first, the user's frames, the rest folded.

IPython's traceback of a library error is mostly the library: a pandas ``KeyError`` came back
as ~45 lines, four of them ``'Could not get source, probably due dynamically evaluated source
code.'`` (frames of compiled extensions), and two chained copies of the exception, when only
``Cell In[2], line 1`` and ``KeyError: 'Units'`` mattered. :func:`compact_traceback` gives:

* the error line first (``KeyError: 'units'``), and not again at the end;
* the frames of the last (outermost) exception, in order: the user's whole (a cell, ``Cell
  In[N]``, or a file outside the installed packages: their code is what the model can change),
  each library frame folded to one line (``fakepd/frame.py:10 in DataFrame.__getitem__``, its
  ``--->`` line's code when there is one);
* each chained exception before it as one line (its error and where it was raised), not a
  second copy of its frames;
* the "Could not get source" lines and the rulers dropped.

The whole text stays one Read away: the caller saves it (``save``) and the compact text ends
with the path. A traceback that is not IPython's (another kernel's) is left as it is.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: Saves the whole traceback text somewhere the model can Read; returns its path (None: not saved).
TracebackSaver = Callable[[str], "str | None"]

_NO_SOURCE = "Could not get source, probably due dynamically evaluated source code."
_HEADER = re.compile(r"^\S+\s{2,}Traceback \(most recent call last\)\s*$")
_RULER = re.compile(r"^-{20,}\s*$")
_CHAIN = re.compile(r"^\s*(The above exception was the direct cause of the following exception:|"
                    r"During handling of the above exception, another exception occurred:)\s*$")
_FRAME = re.compile(r"^(?:File (?P<file>.+?):(?P<line>\d+)(?:, in (?P<func>.+))?|(?P<cell>(?:Cell|Input) In ?\[.*))$")
_ARROW = re.compile(r"^-+> ?\d*\s?(?P<code>.*)$")
#: Folders of installed code: a frame there is a library's.
_LIBRARY = ("site-packages", "dist-packages", "<frozen ")


@dataclass
class _Frame:
    head: str
    lines: list[str]

    @property
    def is_user(self) -> bool:
        match = _FRAME.match(self.head)
        if match is None or match.group("cell"):
            return True
        path = match.group("file") or ""
        if any(part in path for part in _LIBRARY) or any(_NO_SOURCE in line for line in self.lines):
            return False
        prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix}
        return not any(path.startswith(p.rstrip("/") + "/lib") for p in prefixes if p)

    def folded(self) -> str:
        """One line: where (a short path), and the ``--->`` line's code when it has one."""
        match = _FRAME.match(self.head)
        where = self.head
        if match and match.group("file"):
            where = f"{_short(match.group('file'))}:{match.group('line')}"
            if match.group("func"):
                where += f" in {match.group('func')}"
        code = next((m.group("code").strip() for m in map(_ARROW.match, self.lines) if m), "")
        return f"  {where}" + (f": {code}" if code and _NO_SOURCE not in code else "")


def _short(path: str) -> str:
    """A library path from its package on (``…/site-packages/pandas/core/frame.py`` -> ``pandas/core/frame.py``)."""
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            return path.split(marker, 1)[1]
    parts = path.split("/")
    return "/".join(parts[-3:]) if len(parts) > 3 else path


@dataclass
class _Block:
    """One exception of the chain: its frames and its error line(s)."""

    frames: list[_Frame]
    error: list[str]


def _blocks(lines: Sequence[str]) -> list[_Block] | None:
    """The traceback's exceptions in order (the last is the one raised), or None when it is
    not in IPython's shape."""
    blocks: list[_Block] = []
    current: _Block | None = None
    for raw in lines:
        text = raw.rstrip("\n")
        first = text.split("\n", 1)[0]
        if _RULER.match(first) and "\n" not in text:
            continue
        if _CHAIN.match(text.strip("\n")):
            current = None
            continue
        if _HEADER.match(first):
            current = _Block([], [])
            blocks.append(current)
            continue
        if current is None:
            return None
        if _FRAME.match(first) and not current.error:
            current.frames.append(_Frame(first, text.split("\n")[1:]))
        else:
            current.error.append(text)
    return blocks if blocks and all(b.error for b in blocks) else None


def compact_traceback(ename: str, evalue: str, lines: Sequence[str], save: TracebackSaver | None = None) -> str:
    """The error, then the user's frames whole and the library's folded (see the module);
    ``lines`` are the output's ``traceback`` entries with colour codes removed."""
    error = f"{ename}: {evalue}" if evalue else ename
    whole = "\n".join(lines)
    blocks = _blocks(lines)
    if blocks is None:
        return error + ("\n" + whole if whole else "")
    out = [error]
    for earlier in blocks[:-1]:
        said = earlier.error[-1].strip()
        if said in (error.strip(), blocks[-1].error[-1].strip()):
            continue  # the same error raised again (pandas' get_loc): where it first rose is in the saved text
        where = earlier.frames[-1].folded().strip() if earlier.frames else ""
        out.append(f"(chained from {said}" + (f", raised at {where})" if where else ")"))
    out.append("Traceback (most recent call last; library frames folded to one line):")
    folded = 0
    for frame in blocks[-1].frames:
        if frame.is_user:
            body = [line for line in frame.lines if line.strip() and _NO_SOURCE not in line]
            out.append("\n".join([frame.head, *body]))
        else:
            folded += 1
            out.append(frame.folded())
    out += [line for line in blocks[-1].error[:-1] if line.strip()]
    if blocks[-1].error[-1].strip() != error.strip():  # (it is the first line already)
        out.append(blocks[-1].error[-1].strip())
    compact = "\n".join(out)
    if folded or len(blocks) > 1 or _NO_SOURCE in whole:
        path = save(whole) if save is not None else None
        out.append(f"[The full traceback ({whole.count(chr(10)) + 1} lines) is saved at {path}: Read it to see "
                   "every frame.]" if path else
                   "[Library frames were folded; the notebook's output keeps the whole traceback.]")
        compact = "\n".join(out)
    return compact
