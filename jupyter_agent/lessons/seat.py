"""The model's seat: a lesson in which the student is the model.

The real loop (:func:`jupyter_agent.query`) runs in the kernel against a
:class:`~jupyter_agent.replay.relay.RelayAPI`: every request it sends waits in the relay's folder
until the student answers it. :class:`ModelSeat` shows each request as the model reads it (what
is new since the last one) and sends the answer back: from a scripted answer file offline (the
lesson runs headless in CI), or from the student's own editing live (a text box prefilled with
the scripted answer and a Send button).

A cell never waits for a click: in a kernel a cell that awaits blocks the widget's messages too.
So a step is two cells, "see the request" (:meth:`ModelSeat.next_request`, which waits only for
the loop) and "answer it" (:meth:`ModelSeat.reply`, which returns at once).
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

from ..render import html_text, pre_html
from ..replay.relay import RELAY_API_KEY, RelayAPI
from ..replay.relay_folder import AnswerError, PendingRequest

__all__ = ["ModelSeat", "SeatRequest", "load_answers"]

log = logging.getLogger(__name__)

ANSWERS_DIR = Path(__file__).resolve().parent / "answers"


def load_answers(name: str, **values: str) -> list[Any]:
    """The scripted answers ``answers/NAME.json``, with ``{key}`` spelled as ``values[key]``."""
    text = (ANSWERS_DIR / f"{name}.json").read_text(encoding="utf-8")
    for key, value in values.items():
        text = text.replace("{" + key + "}", json.dumps(str(value))[1:-1])
    return list(json.loads(text))


class SeatRequest:
    """One request as the model receives it: ``number``, ``text`` (what is new, readable) and
    ``body`` (the JSON the API would get)."""

    def __init__(self, pending: PendingRequest, body: dict[str, Any]) -> None:
        self.number = pending.number
        self.text = pending.text
        self.body = body

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    def tool_results(self) -> list[dict[str, Any]]:
        """The tool_result blocks of the last (user) message: the loop's answer to your last calls."""
        last = self.messages[-1] if self.messages else {}
        content = last.get("content")
        return [b for b in content if b.get("type") == "tool_result"] if isinstance(content, list) else []

    def _repr_html_(self) -> str:
        # the system prompt and the tools fold away: they are long and the same every time
        parts = self.text.split("\n## ")
        head, sections = parts[0], parts[1:]
        html = [pre_html(head, style="margin:0;font-weight:bold")]
        for section in sections:
            title, _, rest = section.partition("\n")
            if title.startswith(("system prompt", "tools")):
                html.append(f"<details><summary>{html_text(title)}</summary>{pre_html(rest)}</details>")
            else:
                html.append(f"<div><b>{html_text(title)}</b></div>{pre_html(rest, style='white-space:pre-wrap')}")
        return "<div class='jp-agent-seat'>" + "".join(html) + "</div>"

    def __repr__(self) -> str:
        return self.text


class ModelSeat:
    """Where the student sits as the model (see the module docstring).

    ``folder``: where the relay keeps the requests and answers. ``live``: answers come from the
    student (a text box) rather than from the script.
    """

    def __init__(self, folder: str | Path, *, live: bool = False) -> None:
        self.folder = Path(folder)
        self.live = live
        self.relay = RelayAPI(self.folder).start()
        self.run: Any = None
        self.recording: Any = None
        self.sent: dict[int, dict[str, Any]] = {}
        self._task: asyncio.Task[Any] | None = None

    def model(self, model_id: str = "claude-sonnet-5-5") -> Any:
        """An :class:`~jupyter_agent.model.AnthropicModel` whose requests come to this seat."""
        from ..model import AnthropicModel

        model = AnthropicModel(model_id, api_key=RELAY_API_KEY, base_url=self.relay.base_url, max_retries=0,
                               stall_timeout_s=3600)
        model._sdk()  # load the SDK now (~2 s), or the timeline would count its import as your time
        return model

    def start(self, prompt: str, **options: Any) -> Any:
        """Start :func:`jupyter_agent.query` on ``prompt`` in the background (``options`` go to
        it); its first request is on its way to you. Returns the run."""
        from ..agent import query
        from .recording import Recording, record_run

        options.setdefault("model", self.model())
        self.run = query(prompt, **options)
        self.recording = Recording()
        self._task = asyncio.ensure_future(record_run(self.run, self.recording))
        return self.run

    async def next_request(self, timeout_s: float = 120.0) -> SeatRequest | None:
        """The next request from the loop, once it has sent it; None when the run has ended
        (your last answer had no tool_use)."""
        waiting = self.relay.folder.pending()
        if waiting:
            return self._request(waiting[0])
        wait = asyncio.ensure_future(asyncio.to_thread(self.relay.wait_request, timeout_s))
        done, _ = await asyncio.wait({wait, self._task} if self._task else {wait},
                                     return_when=asyncio.FIRST_COMPLETED)
        found = wait.result() if wait in done else None
        if found is not None:
            return self._request(found.number)
        self.relay.finish("the run has ended")  # wakes the waiting thread if the run ended first
        await wait
        return None

    def _request(self, n: int) -> SeatRequest:
        pending = PendingRequest(n, self.relay.folder.request_text(n).read_text(encoding="utf-8"))
        return SeatRequest(pending, json.loads(self.relay.folder.request_json(n).read_bytes()))

    def reply(self, request: SeatRequest | None, answer: Any) -> Any:
        """Answer ``request``: offline with ``answer`` at once; live, show a text box holding
        ``answer`` as JSON to edit, and send what it holds when Send is clicked."""
        if request is None:
            return "The run has ended: there is nothing to answer."
        if not self.live:
            self.sent[request.number] = self.relay.answer(request.number, answer)
            return self.sent[request.number]
        return self._editor(request, answer)

    def _editor(self, request: SeatRequest, suggestion: Any) -> Any:
        import ipywidgets as w

        box = w.Textarea(value=json.dumps(suggestion, indent=1, ensure_ascii=False),
                         layout=w.Layout(width="100%", height="14em"))
        send = w.Button(description=f"Send answer {request.number}", button_style="primary")
        status = w.HTML("Edit the answer (a list of text and tool_use blocks), then Send.")

        def on_send(_button: Any) -> None:
            try:
                self.sent[request.number] = self.relay.answer(request.number, json.loads(box.value))
            except (ValueError, AnswerError) as e:
                status.value = f"<span style='color:#b00'>Not sent: {html_text(e)}</span>"
                return
            send.disabled = box.disabled = True
            status.value = "Sent. Run the next cell to see what the loop does with it."

        send.on_click(on_send)
        return w.VBox([box, w.HBox([send, status])])

    async def finished(self, timeout_s: float = 120.0) -> Any:
        """The run's recording, once it has ended."""
        if self._task is not None:
            await asyncio.wait_for(asyncio.shield(self._task), timeout_s)
        return self.recording

    def close(self) -> None:
        self.relay.close()
