"""ToolContext.services: the typed slot where a tool keeps what its conversation shares.

The loop carries it without knowing what is inside: a tool asks for a part by its class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jupyter_agent.loop.services import Services
from jupyter_agent.loop.tool import Tool, ToolContext, ToolInput, ToolOutput
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use

from .conftest import model_for


@dataclass
class Tally:
    """A tool's own state for the conversation (the loop has never heard of it)."""

    calls: int = 0


@dataclass
class Setting:
    value: str = "default"


class CountInput(ToolInput):
    pass


class Count(Tool):
    """Says how often it has been called in this conversation."""

    name = "Count"
    description = "Count the calls."
    Input = CountInput

    def is_read_only(self, input: Any) -> bool:
        return True

    async def call(self, input: CountInput, context: ToolContext, prepared: Any) -> ToolOutput:
        tally = context.services.get(Tally)
        tally.calls += 1
        return ToolOutput(content=f"call {tally.calls}")


def test_a_part_is_made_on_first_use_and_kept():
    services = Services()
    tally = services.get(Tally)
    assert tally == Tally()
    tally.calls = 3
    assert services.get(Tally) is tally
    assert services.get(Setting) == Setting()  # each class its own part


def test_parts_given_beforehand_are_the_ones_used():
    given = Tally(calls=10)
    services = Services(given, Setting("mine"))
    assert services.get(Tally) is given and services.get(Setting).value == "mine"
    services.put(Tally(calls=1))
    assert services.get(Tally).calls == 1


def test_every_call_of_a_context_shares_its_services(tmp_path):
    context = ToolContext(cwd=tmp_path)
    context.for_call("toolu_1", lambda data: None).services.get(Tally).calls = 5
    assert context.services.get(Tally).calls == 5
    assert ToolContext(cwd=tmp_path).services.get(Tally).calls == 0  # another conversation's own


def result_texts(api: FakeMessagesAPI, n: int) -> list[str]:
    return [b["content"] for b in api.requests[n].body["messages"][-1]["content"] if b["type"] == "tool_result"]


async def test_a_tools_part_lasts_the_whole_conversation():
    from jupyter_agent import Conversation
    from jupyter_agent.loop.tool import ToolCheckPolicy

    script = [response(tool_use("Count", {}), tool_use("Count", {})), response(text("twice")),
              response(tool_use("Count", {})), response(text("once more"))]
    with FakeMessagesAPI(script) as api:
        conversation = Conversation(model=model_for(api), tools=[Count()])
        conversation._permissions = ToolCheckPolicy()
        await conversation.send("count twice").wait()
        await conversation.send("count again").wait()
        assert result_texts(api, 1) == ["call 1", "call 2"]
        assert result_texts(api, 3) == ["call 3"]
    assert conversation.context.services.get(Tally).calls == 3
