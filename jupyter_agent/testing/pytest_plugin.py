"""pytest fixtures for the fake Messages API.

Use from a test module (``from jupyter_agent.testing.pytest_plugin import fake_api``) or
for a whole suite with ``pytest_plugins = ["jupyter_agent.testing.pytest_plugin"]`` in a
conftest. Servers are closed at teardown, and a strict server that saw something wrong
(unused responses, a request past the script, a 400 rejection) fails the test there.

- ``fake_api``: a started, empty, strict :class:`FakeMessagesAPI`; ``fake_api.add(...)``.
- ``fake_api_factory``: ``make(script=None, **kwargs)`` for several or customised servers.
- ``fake_api_env``: ``fake_api`` plus ``ANTHROPIC_BASE_URL``/``ANTHROPIC_API_KEY`` set to
  it (and ``JUPYTER_AGENT_REPLAY`` unset), so code that builds its own default model
  talks to the fake.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ..replay.server import FakeMessagesAPI


@pytest.fixture
def fake_api_factory() -> Iterator[Callable[..., FakeMessagesAPI]]:
    made: list[FakeMessagesAPI] = []

    def make(script: list[Any] | None = None, **kwargs: Any) -> FakeMessagesAPI:
        api = FakeMessagesAPI(script, **kwargs).start()
        made.append(api)
        return api

    yield make
    problems: list[str] = []
    for api in made:
        api.close()
        if api.strict:
            problems += api.unmet()
    if problems:
        pytest.fail("FakeMessagesAPI:\n  " + "\n  ".join(problems), pytrace=False)


@pytest.fixture
def fake_api(fake_api_factory: Callable[..., FakeMessagesAPI]) -> FakeMessagesAPI:
    return fake_api_factory()


@pytest.fixture
def fake_api_env(fake_api: FakeMessagesAPI, monkeypatch: pytest.MonkeyPatch) -> FakeMessagesAPI:
    for key, value in fake_api.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("JUPYTER_AGENT_REPLAY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    return fake_api
