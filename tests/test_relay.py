"""The relay (jupyter_agent/replay/relay.py): a Messages API answered through a folder, seen
through the real anthropic SDK over real HTTP, from this process and from its command line."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import threading

import anthropic
import httpx2
import pytest

from jupyter_agent.replay.relay import RelayAPI
from jupyter_agent.replay.relay_folder import AnswerError, RelayFolder, parse_answer

TOOLS = [{"name": "Read", "description": "Read a file.",
          "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}}]
# a 1x1 PNG
PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082")).decode()


def sdk(base_url: str) -> anthropic.Anthropic:
    http = anthropic.DefaultHttpxClient(limits=httpx2.Limits(max_keepalive_connections=0))
    return anthropic.Anthropic(base_url=base_url, api_key="sk-relay", max_retries=0, http_client=http)


def in_thread(fn):
    """Run ``fn`` in a thread; returns (thread, box) where box[0] is its result or exception."""
    box: list = []

    def run():
        try:
            box.append(fn())
        except Exception as e:  # noqa: BLE001 - handed to the test
            box.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, box


def test_a_streamed_conversation_is_answered_by_hand_through_the_folder(tmp_path):
    with RelayAPI(tmp_path / "relay", ping_s=0.05) as relay:
        client = sdk(relay.base_url)
        first = [{"role": "user", "content": "What is in notes.txt?"}]

        def ask(messages):
            with client.messages.stream(model="claude-sonnet-5-5", max_tokens=1024, system="You are terse.",
                                        tools=TOOLS, messages=messages) as stream:
                return stream.get_final_message()

        t, box = in_thread(lambda: ask(first))
        request = relay.wait_request(timeout_s=30)
        assert request is not None and request.number == 1
        assert "## system prompt\nYou are terse." in request.text
        assert "### Read\nRead a file." in request.text and "What is in notes.txt?" in request.text
        relay.answer(1, {"content": [{"type": "text", "text": "Let me look."},
                                     {"type": "tool_use", "name": "Read", "input": {"file_path": "/w/notes.txt"}}]})
        t.join(30)
        message = box[0]
        assert not isinstance(message, Exception), message
        assert message.stop_reason == "tool_use"
        assert [b.type for b in message.content] == ["text", "tool_use"]
        call = message.content[1]
        assert call.name == "Read" and call.input == {"file_path": "/w/notes.txt"} and call.id.startswith("toolu_")

        second = first + [{"role": "assistant", "content": [b.model_dump() for b in message.content]},
                          {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": [
                              {"type": "text", "text": "hello from the file"},
                              {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                           "data": PNG}}]}]}]
        t, box = in_thread(lambda: ask(second))
        request = relay.wait_request(timeout_s=30)
        assert request is not None and request.number == 2
        # only what is new: no system prompt or tools again, the history from message [1]
        assert "## system prompt" not in request.text and "## tools" not in request.text
        assert "What is in notes.txt?" not in request.text
        assert f"[tool_result for {call.id}]\nhello from the file" in request.text
        assert "saved as image-0002-1.png" in request.text
        assert (tmp_path / "relay" / "image-0002-1.png").read_bytes() == base64.b64decode(PNG)
        relay.answer(2, [{"type": "text", "text": "It says hello."}])
        t.join(30)
        assert box[0].stop_reason == "end_turn" and box[0].content[0].text == "It says hello."
        assert json.loads(relay.folder.request_json(2).read_bytes())["messages"] == second
        relay.finish("client finished")
        assert relay.wait_request(timeout_s=30) is None
    assert (tmp_path / "relay").stat().st_mode & 0o777 == 0o700  # what the tools read stays the owner's


def test_a_request_the_real_api_would_reject_gets_its_400_and_is_not_written(tmp_path):
    with RelayAPI(tmp_path) as relay:
        orphan = [{"role": "user", "content": "hi"},
                  {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read",
                                                     "input": {}}]},
                  {"role": "user", "content": "go on"}]
        with pytest.raises(anthropic.BadRequestError, match="tool_use` ids were found without"):
            sdk(relay.base_url).messages.create(model="m", max_tokens=10, messages=orphan)
        assert relay.count == 0 and relay.folder.numbers() == []


def test_answers_that_cannot_be_sent_say_what_to_change():
    with pytest.raises(AnswerError, match="at least one block"):
        parse_answer({"content": []})
    with pytest.raises(AnswerError, match="only 'text' and 'tool_use'"):
        parse_answer([{"type": "image", "source": {}}])
    with pytest.raises(AnswerError, match="'name' .* and 'input'"):
        parse_answer([{"type": "tool_use", "name": "Read", "input": "x"}])
    sent = parse_answer([{"type": "tool_use", "name": "Read", "input": {}}])
    assert sent["stop_reason"] == "tool_use" and sent["content"][0]["id"].startswith("toolu_")


def test_the_command_line_serves_prints_the_next_request_and_answers_it(tmp_path):
    folder = tmp_path / "relay"
    relay_cli = [sys.executable, "-m", "jupyter_agent.replay.relay"]
    server = subprocess.Popen([*relay_cli, "serve", "--dir", str(folder)], stdout=subprocess.PIPE, text=True)
    try:
        base_url = server.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:")
        # a non-streaming request, with an escape sequence in it that must not reach the terminal raw
        t, box = in_thread(lambda: sdk(base_url).messages.create(
            model="claude-sonnet-5-5", max_tokens=100, messages=[{"role": "user", "content": "hi \x1b[2J there"}]))
        shown = subprocess.run([*relay_cli, "next", "--dir", str(folder), "--timeout", "60"],
                               capture_output=True, text=True, timeout=90)
        assert shown.returncode == 0, shown.stderr
        assert "# request 1" in shown.stdout and "hi " in shown.stdout and "\x1b" not in shown.stdout
        assert f"answer --dir {folder} 1 FILE" in shown.stdout
        bad = subprocess.run([*relay_cli, "answer", "--dir", str(folder), "1", "-"], input='{"content": "hi"}',
                             capture_output=True, text=True, timeout=60)
        assert bad.returncode == 1 and "at least one block" in bad.stderr
        good = subprocess.run([*relay_cli, "answer", "--dir", str(folder), "1", "-"],
                              input='[{"type": "text", "text": "Hello."}]', capture_output=True, text=True, timeout=60)
        assert good.returncode == 0, good.stderr
        t.join(60)
        assert box[0].content[0].text == "Hello." and box[0].stop_reason == "end_turn"
        subprocess.run([*relay_cli, "done", "--dir", str(folder), "finished"], check=True, timeout=60)
        ended = subprocess.run([*relay_cli, "next", "--dir", str(folder), "--timeout", "60"],
                               capture_output=True, text=True, timeout=90)
        assert ended.returncode == 3 and "THE RUN HAS ENDED: finished" in ended.stdout
        assert RelayFolder(folder).pending() == []
    finally:
        server.terminate()
        server.wait(30)


def test_pings_keep_the_agents_stall_timer_quiet_while_an_answer_takes_long(tmp_path):
    """The product's model, with a stall timer of 0.5 s, waits through 20 pings (1 s at 0.05 s
    each) for an answer and gets it, instead of failing as stalled."""
    import asyncio

    from jupyter_agent.loop.model_protocol import ModelRequest
    from jupyter_agent.model import AnthropicModel

    with RelayAPI(tmp_path, ping_s=0.05) as relay:
        model = AnthropicModel("claude-sonnet-5-5", api_key="sk-relay", base_url=relay.base_url, max_retries=0,
                               stall_timeout_s=0.5)

        async def ask():
            request = ModelRequest(messages=[{"role": "user", "content": "hi"}],
                                   system=[{"type": "text", "text": "s"}], tools=[])
            return [event async for event in model.stream(request)]

        t, box = in_thread(lambda: asyncio.run(ask()))
        assert relay.wait_request(timeout_s=30) is not None
        assert relay.wait_pings(20, timeout_s=60)  # 1 s of waiting: twice the stall timer
        relay.answer(1, [{"type": "text", "text": "Late, but here."}])
        t.join(60)
    events = box[0]
    assert not isinstance(events, Exception), events
    assert "Late, but here." in repr(events[-1])
