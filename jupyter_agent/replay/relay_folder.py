"""The relay's folder: each request written out as the model would read it, each answer read back.

Layout of a relay folder (one per run):

- ``request-0001.json``: the request body exactly as it arrived (what the real API would get);
- ``request-0001.md``: the same for a reader: the system prompt and the tools in full the first
  time (and again only if they change), then only the messages that are new since the previous
  request; images in tool results are saved beside it (``image-0001-1.png``) and named in the text;
- ``answer-0001.json``: the answer, ``{"content": [blocks]}`` (or the bare list) with ``text`` and
  ``tool_use`` blocks (a tool_use without an ``id`` gets one); the relay streams it back;
- ``DONE``: written by whoever ran the client when its run ended, so :func:`next_request` says so
  instead of waiting.

Only plain files: a person, another process or a lesson's widgets answer through the same folder.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .script import new_id

__all__ = ["RelayFolder", "PendingRequest", "render_request", "parse_answer", "AnswerError", "without_cache_marks"]

log = logging.getLogger(__name__)

#: How often a waiting ``next`` in another process looks at the folder again.
POLL_S = 0.2


class AnswerError(ValueError):
    """An answer the relay cannot send: the message says what to change."""


@dataclass(frozen=True)
class PendingRequest:
    """A request waiting for its answer: its number and its readable text."""

    number: int
    text: str


def _system_text(body: dict[str, Any]) -> str:
    system = body.get("system")
    if isinstance(system, str):
        return system
    return "\n".join(str(b.get("text", "")) for b in system or [] if isinstance(b, dict))


def without_cache_marks(x: Any) -> Any:
    """``x`` without ``cache_control`` (its place moves from request to request) and with a
    one-text-block content list spelled as its string, so that a history resent unchanged
    compares equal."""
    if isinstance(x, dict):
        content = x.get("content")
        if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict) \
                and content[0].get("type") == "text":
            x = {**x, "content": content[0].get("text", "")}
        return {k: without_cache_marks(v) for k, v in x.items() if k != "cache_control"}
    if isinstance(x, list):
        return [without_cache_marks(v) for v in x]
    return x


class _Images:
    """Saves the images of one request as files beside its text."""

    def __init__(self, folder: Path | None, number: int) -> None:
        self.folder, self.number, self.count = folder, number, 0

    def save(self, source: dict[str, Any]) -> str:
        media = str(source.get("media_type") or "image/png")
        if source.get("type") != "base64" or self.folder is None:
            return f"[image {media}]"
        self.count += 1
        name = f"image-{self.number:04d}-{self.count}.{media.rsplit('/', 1)[-1] or 'png'}"
        try:
            (self.folder / name).write_bytes(base64.b64decode(str(source.get("data", ""))))
        except (binascii.Error, ValueError) as e:
            return f"[image {media} that could not be decoded: {e}]"
        return f"[image {media}, saved as {name}: open it to see it]"


def _block(b: Any, images: _Images) -> str:
    """One content block as the model reads it."""
    if isinstance(b, str):
        return b
    if not isinstance(b, dict):
        return json.dumps(b, ensure_ascii=False)
    kind = b.get("type")
    if kind == "text":
        return str(b.get("text", ""))
    if kind == "tool_use":
        return (f"[tool_use {b.get('name')} id={b.get('id')}]\n"
                + json.dumps(b.get("input"), indent=1, ensure_ascii=False))
    if kind == "tool_result":
        inner = b.get("content")
        parts = [inner] if isinstance(inner, str) else [_block(x, images) for x in inner or []]
        error = " is_error" if b.get("is_error") else ""
        return f"[tool_result for {b.get('tool_use_id')}{error}]\n" + "\n".join(parts)
    if kind == "image":
        return images.save(b.get("source") or {})
    if kind in ("thinking", "redacted_thinking"):
        return "[your earlier thinking]"
    return json.dumps(b, ensure_ascii=False)


def render_request(body: dict[str, Any], previous: dict[str, Any] | None, number: int,
                   image_folder: Path | None = None) -> str:
    """``body`` as the model would read it, showing only what is new since ``previous``."""
    out = [f"# request {number}",
           f"model={body.get('model')} max_tokens={body.get('max_tokens')} "
           f"tool_choice={json.dumps(body.get('tool_choice'))} thinking={json.dumps(body.get('thinking'))}"]
    system = _system_text(body)
    if previous is None or system != _system_text(previous):
        out += ["", "## system prompt" + (" (changed)" if previous is not None else ""), system]
    tools = body.get("tools") or []
    if previous is None or without_cache_marks(tools) != without_cache_marks(previous.get("tools") or []):
        out += ["", f"## tools ({len(tools)})" + (" (changed)" if previous is not None else "")]
        for t in tools:
            out.append(f"### {t.get('name')}\n{t.get('description', '')}\n"
                       f"input_schema: {json.dumps(t.get('input_schema'), ensure_ascii=False)}")
    messages = body.get("messages") or []
    start = 0
    if previous is None:
        out += ["", "## messages"]
    else:
        before = without_cache_marks(previous.get("messages") or [])
        if without_cache_marks(messages[:len(before)]) == before:
            start = len(before)
            out += ["", f"## messages from [{start}] (the earlier ones are unchanged; your last answer is "
                        f"[{start}] if it is there)" if start < len(messages) else "## no new messages"]
        else:
            out += ["", "## messages (the history was rewritten, e.g. compacted: all of it)"]
    images = _Images(image_folder, number)
    for i, m in enumerate(messages[start:], start):
        content = m.get("content")
        blocks = [content] if isinstance(content, str) else content or []
        out.append(f"\n--- [{i}] {m.get('role')} ---")
        out.extend(_block(b, images) for b in blocks)
    return "\n".join(out) + "\n"


def parse_answer(data: Any) -> dict[str, Any]:
    """An answer (``{"content": [...]}``, optionally with ``stop_reason``, or the bare list)
    checked and completed: ids on tool_use blocks, the stop reason inferred. Raises
    :class:`AnswerError` saying what to fix."""
    if isinstance(data, list):
        data = {"content": data}
    if not isinstance(data, dict) or not isinstance(data.get("content"), list) or not data["content"]:
        raise AnswerError('an answer is {"content": [blocks]} with at least one block, e.g. '
                          '[{"type": "text", "text": "Done."}]')
    blocks = []
    for i, b in enumerate(data["content"]):
        kind = b.get("type") if isinstance(b, dict) else None
        if kind == "text":
            if not isinstance(b.get("text"), str) or not b["text"]:
                raise AnswerError(f"block {i}: a text block needs a non-empty string 'text'")
            blocks.append({"type": "text", "text": b["text"]})
        elif kind == "tool_use":
            if not isinstance(b.get("name"), str) or not isinstance(b.get("input", {}), dict):
                raise AnswerError(f"block {i}: a tool_use block needs 'name' (a string) and 'input' (an object)")
            blocks.append({"type": "tool_use", "id": str(b.get("id") or new_id()), "name": b["name"],
                           "input": dict(b.get("input") or {})})
        else:
            raise AnswerError(f"block {i}: only 'text' and 'tool_use' blocks can be answered, not {kind!r}")
    stop = data.get("stop_reason") or ("tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn")
    if stop not in ("end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "pause_turn"):
        raise AnswerError(f"stop_reason {stop!r} is not one the API sends")
    return {"content": blocks, "stop_reason": stop}


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


class RelayFolder:
    """One relay folder (see the module docstring); safe to use from several processes."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        # the requests carry whatever the tools read (files, outputs): the owner's eyes only
        self.path.mkdir(mode=0o700, parents=True, exist_ok=True)

    def request_json(self, n: int) -> Path:
        return self.path / f"request-{n:04d}.json"

    def request_text(self, n: int) -> Path:
        return self.path / f"request-{n:04d}.md"

    def answer_path(self, n: int) -> Path:
        return self.path / f"answer-{n:04d}.json"

    @property
    def done_path(self) -> Path:
        return self.path / "DONE"

    def numbers(self) -> list[int]:
        """The numbers of the requests written so far, in order."""
        return sorted(int(p.stem.split("-")[1]) for p in self.path.glob("request-*.md"))

    def write_request(self, n: int, raw: bytes, body: dict[str, Any], previous: dict[str, Any] | None) -> None:
        """Write request ``n`` (the raw body and its readable text, the text last: it is what
        marks the request as there)."""
        self.request_json(n).write_bytes(raw)
        _write_atomic(self.request_text(n), render_request(body, previous, n, self.path))

    def pending(self) -> list[int]:
        """Requests without an answer, oldest first."""
        return [n for n in self.numbers() if not self.answer_path(n).exists()]

    def next_request(self, timeout_s: float) -> PendingRequest | None:
        """The oldest unanswered request, waiting up to ``timeout_s`` for one; None if none
        came or the run has ended (:attr:`done`)."""
        end = time.monotonic() + timeout_s
        while True:
            pending = self.pending()
            if pending:
                n = pending[0]
                return PendingRequest(n, self.request_text(n).read_text(encoding="utf-8"))
            if self.done is not None or time.monotonic() >= end:
                return None
            time.sleep(POLL_S)

    def answer(self, n: int, data: Any) -> dict[str, Any]:
        """Answer request ``n`` with ``data`` (see :func:`parse_answer`); returns the answer as sent."""
        if n not in self.numbers():
            raise AnswerError(f"there is no request {n} in {self.path} (requests: {self.numbers() or 'none yet'})")
        if self.answer_path(n).exists():
            raise AnswerError(f"request {n} has an answer already")
        answer = parse_answer(data)
        _write_atomic(self.answer_path(n), json.dumps(answer, ensure_ascii=False, indent=1))
        return answer

    def read_answer(self, n: int) -> dict[str, Any] | None:
        """Request ``n``'s answer, or None while there is none. An answer file that cannot be
        used is renamed ``answer-N.rejected.json`` and None returned, so the answerer can try again."""
        path = self.answer_path(n)
        if not path.exists():
            return None
        try:
            return parse_answer(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, AnswerError) as e:
            log.warning("answer %s cannot be sent (%s); renamed, waiting for another", n, e)
            path.replace(path.with_name(f"answer-{n:04d}.rejected.json"))
            (self.path / f"answer-{n:04d}.rejected.txt").write_text(f"{e}\n", encoding="utf-8")
            return None

    def finish(self, note: str = "") -> None:
        """Mark the run as ended (``note``: how)."""
        _write_atomic(self.done_path, note or "the run has ended")

    @property
    def done(self) -> str | None:
        """The note of an ended run, or None while it goes on."""
        try:
            return self.done_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def bodies(self) -> list[dict[str, Any]]:
        """Every request body, in order."""
        return [json.loads(self.request_json(n).read_bytes()) for n in self.numbers()]

    def request_bytes(self) -> list[int]:
        """The size in bytes of each request as sent."""
        return [self.request_json(n).stat().st_size for n in self.numbers()]
