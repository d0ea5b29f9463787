"""Small tools with known behaviour, and a way to run the loop against the fake API."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from jupyter_agent.loop.permission_result import PermissionAllow, PermissionAsk
from jupyter_agent.loop.tool import Tool, ToolCheckPolicy, ToolError, ToolInput, ToolOutput


class Timeline:
    """Records when each call started and ended, to check what overlapped."""

    def __init__(self) -> None:
        self.spans: dict[str, tuple[float, float]] = {}

    def overlapped(self, a: str, b: str) -> bool:
        (s1, e1), (s2, e2) = self.spans[a], self.spans[b]
        return s1 < e2 and s2 < e1


class EchoInput(ToolInput):
    text: str


class Echo(Tool):
    """Read-only and concurrency-safe: answers its input."""

    name = "Echo"
    description = "Echo the text back."
    Input = EchoInput

    def is_read_only(self, input: Any) -> bool:
        return True

    def is_concurrency_safe(self, input: Any) -> bool:
        return True

    async def call(self, input: EchoInput, context, prepared) -> ToolOutput:
        return ToolOutput(content=f"echo: {input.text}")


class SleepInput(ToolInput):
    seconds: float
    label: str = ""


class Sleep(Tool):
    """Safe; sleeps, recording its span on a shared timeline."""

    name = "Sleep"
    description = "Sleep a while."
    Input = SleepInput
    timeline: Timeline | None = None

    def is_read_only(self, input: Any) -> bool:
        return True

    def is_concurrency_safe(self, input: Any) -> bool:
        return True

    async def call(self, input: SleepInput, context, prepared) -> ToolOutput:
        start = time.perf_counter()
        try:
            await asyncio.sleep(input.seconds)
        finally:
            if self.timeline is not None:
                self.timeline.spans[input.label or context.tool_use_id] = (start, time.perf_counter())
        return ToolOutput(content=f"slept {input.seconds}")


class Change(Sleep):
    """Not safe (a write): asks permission, runs alone."""

    name = "Change"
    description = "Change something (needs approval)."

    def is_read_only(self, input: Any) -> bool:
        return False

    def is_concurrency_safe(self, input: Any) -> bool:
        return False

    async def check_permissions(self, input: Any, context, prepared) -> Any:
        return PermissionAsk(message=f"change {input.label}", suggested_rules=("Change",))


class Boom(Tool):
    name = "Boom"
    description = "Always fails."
    Input = EchoInput

    def is_read_only(self, input: Any) -> bool:
        return True

    async def validate_input(self, input: EchoInput, context) -> str | None:
        if input.text == "in validation":  # a bug (or a file swapped under it) while checking input
            raise FileNotFoundError(2, "No such file or directory", "sub")
        return None

    async def call(self, input: EchoInput, context, prepared) -> ToolOutput:
        if input.text == "expected":
            raise ToolError("the thing you asked for does not exist")
        raise RuntimeError("kaboom " + "x" * 50_000)


class Quiet(Tool):
    name = "Quiet"
    description = "Returns nothing."
    Input = EchoInput

    def is_read_only(self, input: Any) -> bool:
        return True

    async def call(self, input: EchoInput, context, prepared) -> ToolOutput:
        return ToolOutput(content="")


class Huge(Tool):
    name = "Huge"
    description = "Returns a lot."
    Input = EchoInput
    max_result_size_chars = 1000

    def is_read_only(self, input: Any) -> bool:
        return True

    async def call(self, input: EchoInput, context, prepared) -> ToolOutput:
        return ToolOutput(content="line\n" * 5000)


class Hang(Sleep):
    name = "Hang"
    description = "Hangs past its timeout."
    timeout_s = 0.2


@pytest.fixture
def timeline() -> Timeline:
    return Timeline()


@pytest.fixture
def tools(timeline: Timeline) -> list[Tool]:
    sleep, change, hang = Sleep(), Change(), Hang()
    for tool in (sleep, change, hang):
        tool.timeline = timeline
    return [Echo(), sleep, change, Boom(), Quiet(), Huge(), hang]


@pytest.fixture
def allow_all():
    """A can_use_tool that allows everything and remembers what it was asked."""
    asked: list[tuple[str, dict]] = []

    def can_use_tool(name: str, input: dict, ask: PermissionAsk) -> PermissionAllow:
        asked.append((name, input))
        return PermissionAllow()

    can_use_tool.asked = asked
    return can_use_tool


_MODELS: list[Any] = []


@pytest.fixture(autouse=True)
async def close_models():
    """Close each test's HTTP clients on the test's own event loop."""
    yield
    while _MODELS:
        await _MODELS.pop().aclose()


def model_for(api: Any, **options: Any):
    from jupyter_agent.model import AnthropicModel

    options.setdefault("retry_base_delay_s", 0.001)
    options.setdefault("retry_max_delay_s", 0.01)
    model = AnthropicModel("claude-test", api_key="test-key", base_url=api.base_url, **options)
    _MODELS.append(model)
    return model


def run_query(api: Any, prompt: Any, tools: list[Tool], **kwargs: Any):
    """``query()`` against the fake API, with the tools' own permission checks."""
    from jupyter_agent import query

    model_options = kwargs.pop("model_options", {})
    kwargs.setdefault("permissions", ToolCheckPolicy())
    return query(prompt, model=model_for(api, **model_options), tools=tools, **kwargs)
