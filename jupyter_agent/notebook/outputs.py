"""A cell's outputs as they are kept: streams coalesced, progress bars settled, sizes capped, secrets out.

* :func:`coalesce_streams` is nbclient's ``coalesce_streams`` (what ``jupyter execute``
  and nbconvert run when asked): every ``stdout`` chunk of a cell joins the first
  ``stdout`` output (likewise ``stderr``), ``\\r`` and ``\\b`` are applied as a terminal
  would, and a ``stderr`` output that comes just before a ``stdout`` one is moved after
  it. nbclient is a test dependency only, so this is its algorithm, not an import.
  One difference: nbclient's backspace step does nothing (its loop compares a length
  with itself before the first pass, and its pattern ``r"[^\\n]\\b"`` means a word
  boundary, not a backspace); here a backspace really erases the character before it,
  as JupyterLab's output renderer does (its ``fixBackspace``, which nbclient ported),
  until none is left to erase.
* :class:`StreamText` keeps a growing stream bounded while the cell runs: a progress
  bar's thousands of ``\\r`` updates never pile up, and past :data:`MAX_OUTPUT_CHARS`
  only the start and the end are kept, with a note of what was cut, as Jupyter's own
  output limits do.
* :func:`finish_outputs` redacts known secrets, then applies all of that, before the
  outputs are saved into the notebook or shown to the model.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

#: One output's text beyond this many characters is cut in the middle (start and end kept).
MAX_OUTPUT_CHARS = 500_000
#: A single rich value (an image, HTML...) larger than this is dropped, with a note.
MAX_DATA_CHARS = 10_000_000
#: A cell that makes more outputs than this keeps the first ones, with a note.
MAX_OUTPUTS = 500

_BACKSPACE = re.compile("[^\n]\x08")  # nbclient's _RGX_BACKSPACE, fixed (see the module docstring)
_TEXT_MIME = re.compile(r"^(text/|application/(json|javascript|.*\+json|.*\+xml)$|image/svg\+xml$)")


def apply_control_characters(text: str) -> str:
    """``text`` as Jupyter shows it: ``\\b`` erases the character before it, and a ``\\r``
    not followed by a newline erases its line up to there (a progress bar's update)."""
    if "\b" in text:
        while True:
            shorter = _BACKSPACE.sub("", text)
            if shorter == text:
                break
            text = shorter
    if "\r" in text:
        text = "\n".join(_settle_line(line) if "\r" in line else line for line in text.split("\n"))
    return text


def _settle_line(line: str) -> str:
    """nbclient's ``.*\\r(?=[^\\n])`` on one line, without the regex: that pattern
    backtracks over a long line with no update in it (seconds for a 100 kB line)."""
    last = line.rfind("\r", 0, len(line) - 1)  # the last \r with something after it
    return line[last + 1:] if last >= 0 else line


def cut_note(count: int, limit: int = MAX_OUTPUT_CHARS) -> str:
    return (f"\n[... {count:,} characters cut here: an output keeps at most {limit:,} characters "
            "(its start and its end) ...]\n")


class StreamText:
    """One stream output's text while the cell runs: appended to, settled, bounded.

    Control characters only act within a line, so each append settles just the last
    line. When the text outgrows twice the limit, its middle goes: the first half of
    the limit stays, and the last half, after ``redact`` has run over the whole text
    (so a secret that straddles the cut is replaced, never half kept).
    """

    def __init__(self, text: str = "", *, limit: int = MAX_OUTPUT_CHARS,
                 redact: Callable[[str], str] | None = None):
        self.limit = limit
        self.redact = redact
        self.text = ""
        self.cut_at: int | None = None  # where the cut is, once there is one
        self.cut = 0  # characters cut so far
        self.append(text)

    def append(self, chunk: str) -> None:
        old = self.text
        text = old + chunk
        if "\r" in chunk or "\b" in chunk or old.endswith("\r"):
            line = max(old.rfind("\n") + 1, self.cut_at or 0)
            text = text[:line] + apply_control_characters(text[line:])
        self.text = text
        if len(text) > 2 * self.limit:
            self._cut()

    def _cut(self) -> None:
        text = self.redact(self.text) if self.redact is not None else self.text
        head = self.cut_at if self.cut_at is not None else self.limit // 2
        keep_tail = self.limit - head
        self.cut += len(text) - head - keep_tail
        self.text = text[:head] + text[len(text) - keep_tail:]
        self.cut_at = head

    def value(self) -> str:
        """The text (at most the limit), with a note where its middle was cut."""
        if len(self.text) > self.limit:
            self._cut()
        if not self.cut:
            return self.text
        return self.text[: self.cut_at] + cut_note(self.cut, self.limit) + self.text[self.cut_at:]


def coalesce_streams(outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """nbclient's ``coalesce_streams`` (see the module docstring); returns new dicts."""
    merged: list[dict[str, Any]] = []
    streams: dict[str, dict[str, Any]] = {}
    for output in outputs:
        if output.get("output_type") == "stream":
            name = str(output.get("name"))
            text = _text(output.get("text"))
            if name in streams:
                streams[name]["text"] += text
                continue
            output = {**output, "text": text}
            streams[name] = output
        merged.append(output)
    for output in streams.values():
        output["text"] = apply_control_characters(output["text"])
    # stdout and stderr arrive on one channel in no fixed order: keep stdout first
    for i, output in enumerate(merged):
        if (output.get("output_type") == "stream" and output.get("name") == "stderr" and i + 1 < len(merged)
                and merged[i + 1].get("output_type") == "stream" and merged[i + 1].get("name") == "stdout"):
            merged.insert(i, merged.pop(i + 1))
    return merged


def cap_outputs(outputs: list[dict[str, Any]], *, limit: int = MAX_OUTPUT_CHARS,
                max_data: int = MAX_DATA_CHARS, max_outputs: int = MAX_OUTPUTS) -> list[dict[str, Any]]:
    """Every output within its size: long text cut in the middle, huge rich values dropped."""
    capped = [_cap(o, limit, max_data) for o in outputs[:max_outputs]]
    if len(outputs) > max_outputs:
        capped.append({"output_type": "stream", "name": "stderr",
                       "text": f"[... {len(outputs) - max_outputs:,} more outputs were not kept: a cell keeps "
                               f"at most {max_outputs:,} outputs ...]\n"})
    return capped


def _cap(output: dict[str, Any], limit: int, max_data: int) -> dict[str, Any]:
    kind = output.get("output_type")
    if kind == "stream":
        return {**output, "text": _cut_text(_text(output.get("text")), limit)}
    if kind == "error":
        traceback = output.get("traceback")
        if isinstance(traceback, list) and sum(len(str(line)) for line in traceback) > limit:
            joined = _cut_text("\n".join(str(line) for line in traceback), limit)
            return {**output, "evalue": _cut_text(str(output.get("evalue", "")), limit), "traceback": [joined]}
        return output
    data = output.get("data")
    if not isinstance(data, dict):
        return output
    kept: dict[str, Any] = {}
    dropped = []
    for mime, value in data.items():
        size = len(_text(value)) if isinstance(value, (str, list)) else 0
        if _TEXT_MIME.match(mime) and isinstance(value, (str, list)):
            kept[mime] = _cut_text(_text(value), limit) if size > limit else value
        elif size > max_data:
            dropped.append(f"{mime} ({size:,} characters)")
        else:
            kept[mime] = value
    if dropped:
        note = f"[{', '.join(dropped)} not kept: rich outputs over {max_data:,} characters are dropped]"
        kept["text/plain"] = (_text(kept["text/plain"]) + "\n" if "text/plain" in kept else "") + note
    return {**output, "data": kept}


def _cut_text(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit // 2
    return text[:head] + cut_note(len(text) - limit, limit) + text[len(text) - (limit - head):]


def redact_outputs(outputs: list[dict[str, Any]], redact: Callable[[str], str]) -> list[dict[str, Any]]:
    """Outputs with every text field passed through ``redact`` (base64 images are left alone)."""
    out = []
    for output in outputs:
        output = dict(output)
        if "text" in output:
            output["text"] = redact(_text(output["text"]))
        for key in ("evalue", "ename"):
            if isinstance(output.get(key), str):
                output[key] = redact(output[key])
        if isinstance(output.get("traceback"), list):
            output["traceback"] = [redact(str(line)) for line in output["traceback"]]
        if isinstance(output.get("data"), dict):
            output["data"] = {mime: redact(_text(value)) if _TEXT_MIME.match(mime) and isinstance(value, (str, list))
                              else value for mime, value in output["data"].items()}
        out.append(output)
    return out


def finish_outputs(outputs: list[dict[str, Any]], redact: Callable[[str], str]) -> list[dict[str, Any]]:
    """What is kept of a cell's outputs: redacted, coalesced, settled, capped (in that order,
    so no cut can keep part of a secret)."""
    return cap_outputs(coalesce_streams(redact_outputs(outputs, redact)))


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return value if isinstance(value, str) else str(value)


__all__ = ["MAX_OUTPUT_CHARS", "StreamText", "apply_control_characters", "cap_outputs", "coalesce_streams",
           "cut_note", "finish_outputs", "redact_outputs"]
