"""Recorded transcripts: the model's responses of a session, saved as JSON to replay offline.

Format ``jupyter-agent-transcript/1``::

    {
      "format": "jupyter-agent-transcript/1",
      "model": "claude-sonnet-4-5",            # model id that produced it
      "description": "optional, for people",
      "prompt": "optional: the prompt that started the session",
      "files": {"notes.txt": "value = 1\\n"},  # optional: files the session expects in its cwd
      "scratch": true,                          # optional: write "files" into a new temporary
                                                # folder for each replayed run instead
      "answers": "fix",                         # optional: it answers Fix with agent ("fix") or
                                                # Explain ("explain") clicks itself
      "cell_source": "...",                     # optional, with "answers": the error cell's code it
                                                # was recorded on (another cell gets no answer)
      "responses": [                            # one per API request, in order
        {"content": [ ...content blocks exactly as the API sent them... ],
         "stop_reason": "tool_use",             # optional; derived from the blocks if absent
         "usage": {"input_tokens": 812, "output_tokens": 64}}   # optional
      ]
    }

Only the responses are replayed; the requests are not stored (the replay answers turn
by turn, whatever the request). Each run of the loop replays from the first response.
``tool_use`` ids are kept (with a per-run suffix from a conversation's second run on) so
a replayed history pairs up as the recorded one did. Plain dicts only: no ``anthropic``
import here.

Placeholders, filled per run by the replay (:mod:`jupyter_agent.replay.runs`), let a
recording refer to what only the run knows: ``{{scratch}}`` (the run's scratch folder,
with ``"scratch": true``), ``{{notebook}}`` and ``{{agent_cell}}`` (the notebook and the
``%%agent`` cell the request names, as the model reads them), ``{{inserted_cell}}`` (the
id the run's latest ``NotebookEdit`` insert reported), ``{{error_cell}}`` (the cell a Fix
with agent / Explain click is about). A Fix with agent / Explain click replays the packaged
``fix_error`` / ``explain_error`` transcript whatever the replay, unless the replay ``"answers"``
it. A response's optional
``"tool_results": {"<tool_use id>": "error"}`` says a call before it failed when recorded.

``AnthropicModel(record_to=path)`` records through :class:`TranscriptRecorder`;
:mod:`jupyter_agent.replay` plays a transcript back.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path
from collections.abc import Iterable
from typing import Any

__all__ = ["TRANSCRIPT_FORMAT", "load_transcript", "record_transcript",
           "TranscriptRecorder"]


TRANSCRIPT_FORMAT = "jupyter-agent-transcript/1"


def write_expected_files(files: dict[str, str], directory: str | os.PathLike[str]) -> list[str]:
    """Write a transcript's ``files`` that are missing under ``directory``; never
    overwrites (a user's file of that name is theirs). Returns the relative names written."""
    written = []
    for rel, content in files.items():
        path = Path(directory) / rel
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
            written.append(rel)
    return written


def load_transcript(source: str | os.PathLike[str] | dict[str, Any]) -> dict[str, Any]:
    """Read and check a transcript (a path or an already-parsed dict)."""
    data = source if isinstance(source, dict) else json.loads(Path(source).read_text(encoding="utf-8"))
    where = "transcript" if isinstance(source, dict) else str(source)
    if data.get("format") != TRANSCRIPT_FORMAT:
        raise ValueError(f"{where}: not a {TRANSCRIPT_FORMAT} transcript (format={data.get('format')!r})")
    responses = data.get("responses")
    if not isinstance(responses, list):
        raise ValueError(f"{where}: 'responses' must be a list")
    for i, r in enumerate(responses):
        if not isinstance(r, dict) or not isinstance(r.get("content"), list):
            raise ValueError(f"{where}: responses[{i}] needs a 'content' list of blocks")
        for b in r["content"]:
            if not isinstance(b, dict) or "type" not in b:
                raise ValueError(f"{where}: responses[{i}] has a block without 'type': {b!r}")
    return data


def _entry(item: Any) -> dict[str, Any]:
    """A response entry from an AssistantMessage-like object or a dict."""
    if isinstance(item, dict):
        msg = item.get("message", item)
        usage = item.get("usage")
        stop = item.get("stop_reason")
    else:
        msg, stop = item.message, item.stop_reason
        u = item.usage
        usage = {k: getattr(u, k) for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                                            "cache_read_input_tokens") if getattr(u, k, 0)}
    entry: dict[str, Any] = {"content": list(msg["content"])}
    if stop is not None:
        entry["stop_reason"] = stop
    if usage:
        entry["usage"] = dict(usage)
    return entry


def _write_atomic(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, path)


def record_transcript(path: str | os.PathLike[str], responses: Iterable[Any], *, model: str,
                      **meta: Any) -> dict[str, Any]:
    """Write a transcript from ``AssistantMessage``s (or ``{"content", "stop_reason",
    "usage"}`` dicts); ``meta`` adds ``description``, ``prompt``, ``files``. Returns it."""
    data = {"format": TRANSCRIPT_FORMAT, "model": model, **meta, "responses": [_entry(r) for r in responses]}
    _write_atomic(Path(path), data)
    return data


class TranscriptRecorder:
    """Appends each finished response to a transcript file (rewritten atomically each time),
    so a crashed session still leaves a valid file. ``AnthropicModel(record_to=path)`` uses it."""

    def __init__(self, path: str | os.PathLike[str], *, model: str | None = None, **meta: Any) -> None:
        self.path = Path(path)
        self.model = model
        self.meta = meta
        self.responses: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def add(self, item: Any, *, model: str | None = None) -> None:
        """Record one response (an ``AssistantMessage`` or a dict, see :func:`record_transcript`)."""
        with self._lock:
            self.responses.append(_entry(item))
            if self.model is None:
                self.model = model or getattr(item, "model", None)
            data = {"format": TRANSCRIPT_FORMAT, "model": self.model, **self.meta, "responses": self.responses}
            _write_atomic(self.path, data)
