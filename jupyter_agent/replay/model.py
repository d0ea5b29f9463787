"""``ReplayModel``: a recorded transcript played back through the real SDK, offline.

It runs a private :class:`~jupyter_agent.testing.FakeMessagesAPI` loaded with the
transcript's responses and an :class:`~jupyter_agent.model.AnthropicModel` pointed at it
with a dummy key, so lessons and demos exercise exactly the code a live session does
(HTTP, SSE, accumulation, validation of the history the loop sends). Responses are
played turn by turn, whatever the request says, from the start for each run of the loop,
filled in for that run (scratch folder, notebook, cells: ``runs.py``); a person's Deny
ends the run with a short closing answer. Record one with
``AnthropicModel(record_to=path)`` or :func:`record_transcript`; the format is in
:mod:`jupyter_agent.model.transcript`.
"""

from __future__ import annotations

import contextlib
import os
import weakref
from pathlib import Path
from collections.abc import AsyncGenerator
from typing import Any

from ..loop.events import OFFLINE_REPLAY, Notice
from ..loop.model_protocol import ModelError, ModelEvent, ModelRequest
from ..loop.wire import ToolResultBlock, blocks_of, is_tool_result
from ..model import AnthropicModel
from .server import FAKE_API_KEY, FakeMessagesAPI, RecordedRequest
from ..model.transcript import load_transcript, record_transcript, write_expected_files
from ..prompts import error_help_in_request
from .packaged import DEMO_TRANSCRIPT, ERROR_HELP_TRANSCRIPTS, TRANSCRIPTS_DIR, resolve_transcript
from .runs import ReplayRun, closing_answer, denied_by_user, denied_unattended, run_prompt, starts_run
from .script import ScriptedResponse, text as text_block

__all__ = ["ReplayModel", "DEMO_TRANSCRIPT", "TRANSCRIPTS_DIR", "record_transcript", "resolve_transcript",
           "transcript_script"]


def transcript_script(transcript: dict[str, Any], *, delay_s: float = 0.0) -> list[ScriptedResponse]:
    """The transcript's responses as a :class:`FakeMessagesAPI` script."""
    return [ScriptedResponse(blocks=tuple(dict(b) for b in r["content"]), stop_reason=r.get("stop_reason"),
                             usage=r.get("usage"), delay_s=delay_s, model=r.get("model"))
            for r in transcript["responses"]]



_NEEDS = {
    "notebook": "the notebook it works in",
    "agent_cell": "the id of its %%agent cell",
    "inserted_cell": "the cell its NotebookEdit inserted",
    "error_cell": "the cell a Fix with agent or Explain click is about",
    "scratch": 'a scratch folder (the transcript lacks "scratch": true)',
}
#: Said by every offline run: how to have one's own prompt answered.
OWN_PROMPTS = "Set ANTHROPIC_API_KEY to have your own prompts answered."
_NEEDS_HINT = ("Run it from an %%agent cell of a notebook open in JupyterLab or Notebook 7 with the "
               "jupyter-agent extension, so the request names the notebook and the cell.")


def other_cell_answer(recorded: str) -> str:
    """The replay's answer to a Fix with agent / Explain click on a cell it has no recording of."""
    return ("(Offline replay) The recorded answer to this button is for the demo's error cell, whose code "
            f"is `{recorded.strip()}`; this cell's code is different, so the replay proposes nothing and "
            "changes nothing. Set ANTHROPIC_API_KEY to ask Claude about this error.")


def no_cost(model: str, usage: Any) -> float:
    """An offline replay's price: its recorded tokens were spent when it was recorded, not now."""
    return 0.0


class ReplayModel:
    """Plays a transcript (a path or a parsed dict) as a :class:`Model`.

    ``name`` is the recorded model id. ``delay_s`` slows the stream (seconds between
    events) so a lesson can watch text arrive. When the transcript runs out, ``stream``
    raises ``ModelError(kind="replay_exhausted")``. ``files`` / ``prompt`` come from the
    transcript; :meth:`prepare_files` writes the files it expects into a directory.
    The server starts on first use and stops on :meth:`close` (or when collected).
    """

    #: What the run's usage meter charges for a response cut short: nothing, offline.
    price = staticmethod(no_cost)

    def __init__(self, transcript: str | os.PathLike[str] | dict[str, Any], *, delay_s: float = 0.0) -> None:
        if not isinstance(transcript, dict):
            transcript = resolve_transcript(transcript)
        self.source = transcript if isinstance(transcript, dict) else str(transcript)
        self.transcript = self.own = load_transcript(transcript)
        self.name: str = self.transcript.get("model") or "replay"
        self.playing = self.source  # what this run replays: the transcript, or one for a Fix click
        self.delay_s = delay_s
        self.played = 0
        self.runs = 0
        self.run: ReplayRun | None = None
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
            # empty: each request adds the one answer it gets (see _next_response)
            api = FakeMessagesAPI(strict=False, default_model=self.name).start()
            self._api = api
            weakref.finalize(self, api.close)
            self._model = AnthropicModel(self.name, api_key=FAKE_API_KEY, base_url=api.base_url,
                                         max_retries=0, stall_timeout_s=30)
            self._model.price = no_cost  # replayed responses cost nothing
        return self._model

    def mismatch(self, request: ModelRequest) -> str | None:
        """Why the replay no longer matches what happens here, or None.

        A recorded answer is only true if the tool calls before it went as they did when
        it was recorded: each succeeded, unless the transcript's response says
        ``"tool_results": {"<tool_use id>": "error"}``. A result that differs (a file the
        transcript expects was changed by hand) means the next recorded answer would tell
        the user something false. A Deny (a person's, or a headless run's refusal of a call
        that asks) is not a mismatch: :meth:`denied` handles it.
        """
        if self.played == 0 or not request.messages or self.run is None:
            return None
        previous = self.responses[self.played - 1]
        expected = previous.get("tool_results") or {}
        calls = {b.get("id"): b.get("name", "tool") for b in previous.get("content") or []
                 if isinstance(b, dict) and b.get("type") == "tool_use"}
        for block in self._results(request):
            tool_id = self.run.recorded_ids.get(str(block.get("tool_use_id")))
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
                        f"answers that are not true here. Run it again (the %%agent cell, or the command) to "
                        f"replay from the start.")
        return None

    def denied(self, request: ModelRequest) -> str | None:
        """The name of the call a person denied in the last tool results, or None."""
        found = self._denial(request)
        return found[0] if found else None

    def _denial(self, request: ModelRequest) -> tuple[str, bool] | None:
        """The denied call's name in the last tool results, and whether no one could answer
        its ask (a headless run) rather than a person denying it; None if none was denied."""
        if self.run is None:
            return None
        names = {b.get("id"): b.get("name", "tool") for m in request.messages[-2:-1] for b in m.get("content") or []
                 if isinstance(b, dict) and b.get("type") == "tool_use"}
        for block in self._results(request):
            if denied_by_user(block) or denied_unattended(block):
                return str(names.get(block.get("tool_use_id"), "the call")), not denied_by_user(block)
        return None

    @staticmethod
    def _results(request: ModelRequest) -> list[ToolResultBlock]:
        last = request.messages[-1] if request.messages else None
        if last is None or last["role"] != "user":
            return []
        return [b for b in blocks_of(last) if is_tool_result(b)]

    def _begin_run(self, request: ModelRequest) -> Notice:
        """Start the transcript over for a new run (a fresh scratch folder if it uses one)."""
        if self.run is not None:
            self.run.remove_scratch()
        self.runs += 1
        self.played = 0
        self._choose_transcript(request)
        self.run = ReplayRun.begin(self.runs, self.transcript, request.messages)
        unfit = self.run.unfillable(self.responses)
        instead = ""
        if unfit and self.playing != str(DEMO_TRANSCRIPT):
            # A prompt from where this recording cannot play (the side panel, a notebook the
            # request does not name): the packaged demo, which needs nothing but its own
            # scratch folder, plays instead, rather than an error that leaves nothing to do.
            instead = (f"{self._where()} plays only from an %%agent cell of a notebook open in JupyterLab "
                       f"(it needs {', '.join(_NEEDS.get(m, m) for m in unfit)}), so ")
            self.run.remove_scratch()
            self.transcript, self.playing = load_transcript(DEMO_TRANSCRIPT), str(DEMO_TRANSCRIPT)
            self.run = ReplayRun.begin(self.runs, self.transcript, request.messages)
        weakref.finalize(self, self.run.remove_scratch)  # a replay dropped without close()
        text = f"Offline replay — your prompt is not used; {instead}this replays {self._where()}"
        if self.transcript.get("description"):
            text += f" ({self.transcript['description']})"
        if self.run.scratch is not None:
            text += f". It works in a new scratch folder, {self.run.scratch}"
        return Notice(OFFLINE_REPLAY, text + f". {OWN_PROMPTS}")

    def _where(self) -> str:
        """The name of the recording this run plays."""
        return Path(self.playing).name if isinstance(self.playing, str) else "a recorded transcript"

    def _choose_transcript(self, request: ModelRequest) -> None:
        """What this run replays: a Fix with agent / Explain click gets the packaged
        transcript for it (unless this one ``"answers"`` it), and only for the cell it was
        recorded on (``"cell_source"``): for another cell it says so and proposes nothing."""
        self.transcript, self.playing = self.own, self.source
        asked = error_help_in_request(run_prompt(request.messages))
        if asked is None or self.own.get("answers") == asked.action:
            return
        path = ERROR_HELP_TRANSCRIPTS[asked.action]
        self.transcript, self.playing = load_transcript(path), str(path)
        recorded = self.transcript.get("cell_source")
        if isinstance(recorded, str) and asked.source.strip() != recorded.strip():
            self.transcript = {**self.transcript, "responses": [{
                "content": [{"type": "text", "text": other_cell_answer(recorded)}], "stop_reason": "end_turn"}]}

    def _next_response(self, request: ModelRequest) -> ScriptedResponse:
        """The response to serve now: the next recorded one, filled in for this run, or
        the closing answer after a Deny. Raises ModelError when the replay cannot go on."""
        assert self.run is not None
        # (a new run's first request may carry the last run's unanswered calls: not a Deny here)
        denial = self._denial(request) if self.played else None
        if denial is not None:
            self.played = len(self.responses)  # the recording ends with this answer
            tool, unattended = denial
            return ScriptedResponse(blocks=(text_block(closing_answer(tool, unattended=unattended)),),
                                    stop_reason="end_turn",
                                    delay_s=self.delay_s, model=self.name)
        problem = self.mismatch(request)
        if problem:
            raise ModelError(problem, kind="replay_mismatch")
        if self.played >= len(self.responses):
            where = f" {self.source}" if isinstance(self.source, str) else ""
            raise ModelError(f"The replay transcript{where} has no more responses (it recorded "
                             f"{len(self.responses)}). Set ANTHROPIC_API_KEY and run live to go further.",
                             kind="replay_exhausted")
        self.run.learn(request.messages)
        recorded = self.responses[self.played]
        missing = self.run.missing(recorded["content"])
        if missing:
            raise ModelError("This recorded run needs " + ", ".join(_NEEDS.get(m, m) for m in missing)
                             + ", which this run does not have. " + _NEEDS_HINT, kind="replay_mismatch")
        self.played += 1
        return ScriptedResponse(blocks=tuple(self.run.fill(recorded["content"])),
                                stop_reason=recorded.get("stop_reason"), usage=recorded.get("usage"),
                                delay_s=self.delay_s, model=recorded.get("model"))

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        """Replay the next recorded response for ``request``: from the start for a new
        run (with a :class:`Notice` saying so), a closing answer after a Deny, and a
        ``replay_mismatch`` :class:`ModelError` if the tool results no longer match."""
        if starts_run(request.messages):
            yield self._begin_run(request)
        answer = self._next_response(request)
        model = self._start()
        assert self._api is not None
        self._api.add(answer)
        # aclosing: a Stop (aclose) here must close the HTTP response now, not at GC time.
        async with contextlib.aclosing(model.stream(request)) as events:
            async for event in events:
                yield event

    async def aclose(self) -> None:
        """Close the HTTP connections (the replay server keeps its place in the transcript)."""
        if self._model is not None:
            await self._model.aclose()

    def close(self) -> None:
        """Stop the replay server and remove the last run's scratch folder."""
        if self._api is not None:
            self._api.close()
        if self.run is not None:
            self.run.remove_scratch()
