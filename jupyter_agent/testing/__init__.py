"""Test machinery: a fake Anthropic Messages API, scripted responses, replay.

The fake API and replay are product code (the offline demo replays through them) and
live in :mod:`jupyter_agent.replay`; this package gathers what tests use. Everything
talks real HTTP, so the code under test runs through the real ``anthropic`` SDK. Importing
this package does not import ``anthropic`` (a kernel that only needs the fake server stays
light); :class:`ReplayModel` loads it on first use.
"""

from __future__ import annotations

from typing import Any

from ..replay.script import (
    HttpError,
    Pause,
    ScriptedResponse,
    cut_stream,
    http_error,
    new_id,
    overloaded,
    pause,
    prompt_too_long,
    rate_limited,
    raw_block,
    response,
    stall,
    stream_error,
    text,
    thinking,
    tool_use,
)
from ..model.transcript import TRANSCRIPT_FORMAT, TranscriptRecorder, load_transcript, record_transcript
from ..replay.server import FAKE_API_KEY, FakeMessagesAPI, RecordedRequest

__all__ = [
    "FakeMessagesAPI", "RecordedRequest", "FAKE_API_KEY",
    "ScriptedResponse", "HttpError", "Pause",
    "text", "thinking", "tool_use", "raw_block", "pause", "response", "new_id",
    "http_error", "overloaded", "rate_limited", "prompt_too_long",
    "stream_error", "cut_stream", "stall",
    "ReplayModel", "DEMO_TRANSCRIPT", "TRANSCRIPT_FORMAT", "TranscriptRecorder",
    "load_transcript", "record_transcript",
]


def __getattr__(name: str) -> Any:
    # ReplayModel pulls in the model layer and with it `anthropic` (~1 s to import).
    if name in ("ReplayModel", "DEMO_TRANSCRIPT"):
        from ..replay import model

        return getattr(model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
