"""A workspace folder, a context on it, and a way to call a tool as the loop does.

``call_tool`` goes through the loop's real per-call pipeline (schema validation,
``validate_input``, the permission policy, ``call``), so a test sees exactly the
``tool_result`` block the model would get.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.loop.tool_execution import ToolRunEnv, execute_tool_call
from jupyter_agent.permissions import Permissions
from jupyter_agent.loop.tool import ToolContext
from jupyter_agent.tools import default_tools

TOOLS = {t.name: t for t in default_tools()}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The working folder (resolved: /tmp may be a symlink on some systems)."""
    root = tmp_path / "work"
    root.mkdir()
    return Path(os.path.realpath(root))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the workspace, outside the allowed roots."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("top secret\n")
    return Path(os.path.realpath(folder))


def make_ctx(workspace: Path, mode: str = "default", **rules: Any) -> ToolContext:
    return ToolContext(cwd=workspace, permissions=Permissions(mode=mode, cwd=workspace, **rules))


@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    """acceptEdits: edits inside the workspace run without a person (most tool tests)."""
    return make_ctx(workspace, "acceptEdits")


async def call_tool(ctx: ToolContext, name: str, input: Any, can_use_tool: Any = None,
                    tool_use_id: str = "toolu_test") -> dict[str, Any]:
    """Run one call through the loop's pipeline; return the ``tool_result`` block."""
    env = ToolRunEnv(tools_by_name=dict(TOOLS), context=ctx, can_use_tool=can_use_tool)
    block = {"type": "tool_use", "id": tool_use_id, "name": name, "input": input}
    return await execute_tool_call(block, env)


def text_of(result: dict[str, Any]) -> str:
    content = result["content"]
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content if b.get("type") == "text")


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (not following symlinks) with its bytes: to prove nothing changed."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in files + dirs:
            path = Path(folder) / name
            if path.is_symlink():
                out[str(path)] = b"->" + os.readlink(path).encode()
            elif path.is_file():
                out[str(path)] = path.read_bytes()
    return out
