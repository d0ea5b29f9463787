"""``ReplayModel``: a recorded transcript played back through the real SDK, offline.

It runs a private :class:`~jupyter_agent.testing.FakeMessagesAPI` loaded with the
transcript's responses and an :class:`~jupyter_agent.model.AnthropicModel` pointed at it
with a dummy key, so lessons and demos exercise exactly the code a live session does
(HTTP, SSE, accumulation, validation of the history the loop sends). Responses are
played turn by turn, whatever the request says. Record one with
``AnthropicModel(record_to=path)`` or :func:`record_transcript`; the format is in
:mod:`jupyter_agent.model.transcript`.
"""

from __future__ import annotations

import contextlib
import os
import weakref
from pathlib import Path
from typing import Any, AsyncIterator

from ..loop.model_protocol import ModelError, ModelEvent, ModelRequest
from ..model import AnthropicModel
from .server import FAKE_API_KEY, FakeMessagesAPI, RecordedRequest
from ..model.transcript import load_transcript, record_transcript, write_expected_files
from .packaged import DEMO_TRANSCRIPT, TRANSCRIPTS_DIR, resolve_transcript
from .script import ScriptedResponse

__all__ = ["ReplayModel", "DEMO_TRANSCRIPT", "TRANSCRIPTS_DIR", "record_transcript", "resolve_transcript",
           "transcript_script"]


def transcript_script(transcript: dict[str, Any], *, delay_s: float = 0.0) -> list[ScriptedResponse]:
    """The transcript's responses as a :class:`FakeMessagesAPI` script."""
    return [ScriptedResponse(blocks=tuple(dict(b) for b in r["content"]), stop_reason=r.get("stop_reason"),
                             usage=r.get("usage"), delay_s=delay_s, model=r.get("model"))
            for r in transcript["responses"]]



class ReplayModel:
    """Plays a transcript (a path or a parsed dict) as a :class:`Model`.

    ``name`` is the recorded model id. ``delay_s`` slows the stream (seconds between
    events) so a lesson can watch text arrive. When the transcript runs out, ``stream``
    raises ``ModelError(kind="replay_exhausted")``. ``files`` / ``prompt`` come from the
    transcript; :meth:`prepare_files` writes the files it expects into a directory.
    The server starts on first use and stops on :meth:`close` (or when collected).
    """

    #: What the run's usage meter charges for a response cut short (the real model's prices).
    price = AnthropicModel.price

    def __init__(self, transcript: str | os.PathLike[str] | dict[str, Any], *, delay_s: float = 0.0) -> None:
        if not isinstance(transcript, dict):
            transcript = resolve_transcript(transcript)
        self.source = transcript if isinstance(transcript, dict) else str(transcript)
        self.transcript = load_transcript(transcript)
        self.name: str = self.transcript.get("model") or "replay"
        self.delay_s = delay_s
        self.played = 0
        self._api: FakeMessagesAPI | None = None
        self._model: AnthropicModel | None = None

    def __repr__(self) -> str:
        where = "<dict>" if isinstance(self.source, dict) else self.source
        return f"ReplayModel({where!r}, {self.played}/{len(self.responses)} played)"

    @property
    def responses(self) -> list[dict[str, Any]]:
        return self.transcript["responses"]

    @property
    def prompt(self) -> str | None:
        return self.transcript.get("prompt")

    @property
    def files(self) -> dict[str, str]:
        return dict(self.transcript.get("files") or {})

    @property
    def requests(self) -> list[RecordedRequest]:
        """What the loop sent, as the replay server recorded it."""
        return list(self._api.requests) if self._api else []

    def prepare_files(self, directory: str | os.PathLike[str]) -> list[Path]:
        """Write the transcript's ``files`` missing under ``directory`` (never overwrites);
        returns the paths written."""
        return [Path(directory) / rel for rel in write_expected_files(self.files, directory)]

    def _start(self) -> AnthropicModel:
        if self._model is None:
            api = FakeMessagesAPI(transcript_script(self.transcript, delay_s=self.delay_s),
                                  strict=False, default_model=self.name).start()
            self._api = api
            weakref.finalize(self, api.close)
            self._model = AnthropicModel(self.name, api_key=FAKE_API_KEY, base_url=api.base_url,
                                         max_retries=0, stall_timeout_s=30)
        return self._model

    def mismatch(self, request: ModelRequest) -> str | None:
        """Why the replay no longer matches what happens here, or None.

        A recorded answer is only true if the tool calls before it went as they did when
        it was recorded: each succeeded, unless the transcript's response says
        ``"tool_results": {"<tool_use id>": "error"}``. A result that differs (the
        packaged demo in a folder whose ``notes.txt`` was already edited: its Edit fails)
        means the next recorded answer would tell the user something false.
        """
        if self.played == 0 or not request.messages:
            return None
        previous = self.responses[self.played - 1]
        expected = previous.get("tool_results") or {}
        calls = {b.get("id"): b.get("name", "tool") for b in previous.get("content") or []
                 if isinstance(b, dict) and b.get("type") == "tool_use"}
        last = request.messages[-1]
        content = last.get("content") if last.get("role") == "user" else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            tool_id = block.get("tool_use_id")
            if tool_id not in calls:
                continue
            got = "error" if block.get("is_error") else "ok"
            if got != expected.get(tool_id, "ok"):
                detail = block.get("content")
                if isinstance(detail, list):
                    detail = " ".join(str(b.get("text", "")) for b in detail if isinstance(b, dict))
                first = str(detail or "").strip().splitlines()[0][:200] if str(detail or "").strip() else ""
                happened = f"failed here ({first})" if got == "error" else "succeeded here"
                recorded = "succeeded" if got == "error" else "failed"
                return (f"The replay stopped: it no longer matches this folder. In the recording, "
                        f"{calls[tool_id]} {recorded}; it {happened}. Playing on would show recorded "
                        f"answers that are not true here.")
        return None

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Replay the next recorded response for ``request`` (a ``replay_mismatch``
        :class:`ModelError` if the tool results no longer match the recording)."""
        problem = self.mismatch(request)
        if problem:
            raise ModelError(problem, kind="replay_mismatch")
        if self.played >= len(self.responses):
            where = f" {self.source}" if isinstance(self.source, str) else ""
            raise ModelError(f"The replay transcript{where} has no more responses (it recorded "
                             f"{len(self.responses)}). Set ANTHROPIC_API_KEY and run live to go further.",
                             kind="replay_exhausted")
        model = self._start()
        self.played += 1
        # aclosing: a Stop (aclose) here must close the HTTP response now, not at GC time.
        async with contextlib.aclosing(model.stream(request)) as events:
            async for event in events:
                yield event

    async def aclose(self) -> None:
        """Close the HTTP connections (the replay server keeps its place in the transcript)."""
        if self._model is not None:
            await self._model.aclose()

    def close(self) -> None:
        """Stop the replay server."""
        if self._api is not None:
            self._api.close()
