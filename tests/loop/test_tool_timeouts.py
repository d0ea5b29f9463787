"""A tool's own TimeoutError and the call's time limit are told apart (a TimeoutError out of
a tool with no limit of ours was formatted with that missing limit and broke the call as a
loop bug, "Internal error: TypeError", seen on NotebookRun under load)."""

from __future__ import annotations

import asyncio
from typing import Any

from jupyter_agent.loop.permission_result import PermissionAllow
from jupyter_agent.loop.tool import Tool, ToolContext, ToolInput, ToolOutput
from jupyter_agent.loop.tool_execution import ToolRunEnv, run_tool_call


class WaitInput(ToolInput):
    seconds: float


class RaisesTimeout(Tool):
    name = "RaisesTimeout"
    description = "Raises a TimeoutError of its own."
    Input = WaitInput
    timeout_s = None  # no limit of ours, as NotebookRun (the cell's own limit applies)

    def is_read_only(self, input: Any) -> bool:
        return True

    async def call(self, input: WaitInput, context: ToolContext, prepared: Any) -> ToolOutput:
        raise TimeoutError("this kernel did not confirm the IOPub subscription")


class Slow(Tool):
    name = "Slow"
    description = "Sleeps past its limit."
    Input = WaitInput
    timeout_s = 0.05

    def is_read_only(self, input: Any) -> bool:
        return True

    async def call(self, input: WaitInput, context: ToolContext, prepared: Any) -> ToolOutput:
        await asyncio.sleep(input.seconds)
        return ToolOutput("woke")


async def _run(tool: Tool, tmp_path, seconds: float):
    env = ToolRunEnv(tools_by_name={tool.name: tool}, context=ToolContext(cwd=tmp_path),
                     can_use_tool=lambda *_: PermissionAllow())
    block = {"type": "tool_use", "id": "toolu_t", "name": tool.name, "input": {"seconds": seconds}}
    return await run_tool_call(block, env)


async def test_a_tools_own_timeout_is_its_error_not_a_loop_bug(tmp_path):
    result = await _run(RaisesTimeout(), tmp_path, 0)
    assert result.block["is_error"] is True
    assert result.block["content"] == ("RaisesTimeout failed: TimeoutError: this kernel did not confirm the "
                                       "IOPub subscription")


async def test_the_calls_time_limit_says_so(tmp_path):
    result = await _run(Slow(), tmp_path, 5)
    assert result.block["is_error"] is True
    assert result.block["content"] == "Slow timed out after 0.05 s and was cancelled."
    assert (await _run(Slow(), tmp_path, 0)).block["content"] == "woke"
