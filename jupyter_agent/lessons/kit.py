"""Small helpers the lesson notebooks share: a scratch folder, the model (offline or
live), and a pairing check for the assert cells.

Offline (the default) the model is the real ``anthropic`` SDK talking to
:class:`~jupyter_agent.testing.FakeMessagesAPI` over real HTTP, answering with the
responses the lesson scripts. Live (``LIVE = True`` and ``ANTHROPIC_API_KEY`` set) it
is Claude: the lesson then shows what a real model does, and its checks are the ones
that hold for any model.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any


class Lesson:
    """One notebook's setup: ``lesson.dir`` (a scratch folder, never the repository),
    ``lesson.model(script)``, ``lesson.api`` (the fake API offline, for its recorded requests)."""

    def __init__(self, name: str, *, live: bool = False) -> None:
        if live and not os.environ.get("ANTHROPIC_API_KEY"):
            raise RuntimeError("LIVE = True needs an API key: set ANTHROPIC_API_KEY in the environment "
                               "the kernel started from, or set LIVE = False to run offline.")
        self.name = name
        self.live = live
        self.dir = Path(tempfile.mkdtemp(prefix=f"lesson-{name}-")).resolve()
        self.api: Any = None
        self._apis: list[Any] = []

    def __repr__(self) -> str:
        return f"<Lesson {self.name}: {'live' if self.live else 'offline'}, files in {self.dir}>"

    def write(self, relative: str, text: str) -> Path:
        """Create a file in the scratch folder; returns its absolute path."""
        path = self.dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def model(self, script: Any = (), *, api_window: int | None = None, **options: Any) -> Any:
        """The model for one run: scripted responses offline, Claude live.

        ``options`` go to :class:`~jupyter_agent.model.AnthropicModel` (``max_retries``,
        ``fallback_model``, ...). ``api_window``: the context window the fake API enforces
        (offline only), answering ``prompt is too long`` past it as the real API does.
        """
        from ..model import AnthropicModel

        if self.live:
            model = AnthropicModel(**options)
        else:
            model = self.fake_api(script, api_window=api_window).model(**options)
        model._sdk()  # load the SDK now (~2 s), or a timeline would count its import as model time
        return model

    def fake_api(self, script: Any = (), *, api_window: int | None = None) -> Any:
        """A started :class:`~jupyter_agent.testing.FakeMessagesAPI` answering ``script``
        (offline), or ``None`` live: for the article's minimal loop over a bare SDK client."""
        if self.live:
            return None
        from ..replay.server import FakeMessagesAPI

        self.api = FakeMessagesAPI(list(script), strict=False, context_window=api_window).start()
        self._apis.append(self.api)
        return self.api

    @property
    def model_id(self) -> str:
        """The model id a bare client should ask for."""
        from ..model.anthropic_model import DEFAULT_MODEL

        return os.environ.get("JUPYTER_AGENT_MODEL") or DEFAULT_MODEL

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The request bodies the fake API received for the last model (offline only)."""
        return [r.body for r in self.api.messages_requests] if self.api is not None else []

    def close(self) -> None:
        for api in self._apis:
            api.close()


def pairing_problems(messages: Any) -> list[str]:
    """What is wrong with the pairing in a history (empty when every ``tool_use`` has
    exactly one ``tool_result`` with its id in the next message, and no result points at nothing)."""
    problems = []
    messages = list(messages)
    for i, message in enumerate(messages):
        content = message.get("content")
        if message.get("role") != "assistant" or not isinstance(content, (list, tuple)):
            continue
        ids = [b["id"] for b in content if b.get("type") == "tool_use"]
        if not ids:
            continue
        nxt = messages[i + 1].get("content") if i + 1 < len(messages) else None
        results = [b.get("tool_use_id") for b in nxt or () if isinstance(b, dict) and b.get("type") == "tool_result"]
        for tool_use_id in ids:
            if results.count(tool_use_id) != 1:
                problems.append(f"{tool_use_id} has {results.count(tool_use_id)} tool_result(s)")
        problems += [f"tool_result {r} answers no tool_use" for r in results if r not in ids]
    return problems
