"""Finding 8.1: one undecodable character must not break the conversation for good.

A lone surrogate cannot be encoded as UTF-8; a request holding one used to fail before
it left, and so did every later request of the conversation. Each source from the
finding runs through the real anthropic SDK against the fake Messages API: the run
completes, the next ``send()`` works, and the text arrives with U+FFFD in its place.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jupyter_agent import Conversation
from jupyter_agent.loop.messages import sendable
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use


async def _two_sends(workspace: Path, first_turn: list, mode: str = "acceptEdits") -> FakeMessagesAPI:
    """Run the scripted tool calls, then a second ``send()``; both must complete."""
    script = [response(call) for call in first_turn] + [response(text("done")), response(text("again"))]
    with FakeMessagesAPI(script) as api:
        conv = Conversation(model=api.model(), permission_mode=mode, cwd=workspace)
        first = await conv.send("go").wait()
        assert first.reason == "completed", first
        second = await conv.send("and again").wait()
        assert second.reason == "completed", second
    assert len(api.requests) == len(first_turn) + 2
    return api


def _sent_text(api: FakeMessagesAPI) -> str:
    return json.dumps(api.requests[-1].body["messages"], ensure_ascii=False)


async def test_edit_of_a_latin1_file(workspace):
    path = workspace / "old.txt"
    path.write_bytes("caf\xe9 = 1\n".encode("latin-1"))
    calls = [tool_use("Read", {"file_path": str(path)}),
             tool_use("Edit", {"file_path": str(path), "old_string": "1", "new_string": "2"})]
    api = await _two_sends(workspace, calls)
    assert path.read_bytes() == "caf\xe9 = 2\n".encode("latin-1")  # the file itself stays Latin-1
    assert "caf\ufffd = 2" in _sent_text(api)


@pytest.mark.parametrize("tool", ["Glob", "Grep"])
async def test_search_in_a_folder_with_a_non_utf8_file_name(workspace, tool):
    (workspace / "data").mkdir()
    with open(bytes(workspace / "data") + b"/caf\xe9.txt", "wb") as fh:
        fh.write(b"needle\n")
    call = tool_use(tool, {"pattern": "**/*.txt"} if tool == "Glob" else {"pattern": "needle"})
    api = await _two_sends(workspace, [call], mode="default")
    assert "caf\ufffd.txt" in _sent_text(api)


async def test_notebook_output_with_half_an_emoji(workspace):
    path = workspace / "half.ipynb"
    # What a kernel may store: the JSON escape of a lone high surrogate.
    path.write_text('{"cells": [{"cell_type": "code", "execution_count": 1, "id": "c1", "metadata": {}, '
                    '"outputs": [{"name": "stdout", "output_type": "stream", "text": "half \\ud83d emoji\\n"}], '
                    '"source": "print(1)"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    api = await _two_sends(workspace, [tool_use("Read", {"file_path": str(path)})], mode="default")
    assert "half \ufffd emoji" in _sent_text(api)


async def test_path_argument_with_a_lone_surrogate(workspace):
    api = await _two_sends(workspace, [tool_use("Read", {"file_path": str(workspace / "a\ud800.txt")})])
    sent = _sent_text(api)
    assert "a\ufffd.txt" in sent and "unpaired surrogate" in sent


def test_sendable_keeps_clean_objects_and_joins_pairs():
    clean = [{"role": "user", "content": [{"type": "text", "text": "caf\xe9 😀"}]}]
    assert sendable(clean) is clean
    assert sendable({"t": "x\ud83d\ude00y\udce9"}) == {"t": "x😀y\ufffd"}
