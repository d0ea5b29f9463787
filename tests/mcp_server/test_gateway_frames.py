"""The gateway's websocket frames as ``mcp_server/gateway.py`` reads them: JSON text, or
jupyter_server's binary framing when a message carries buffers."""

from __future__ import annotations

import json

from jupyter_server.services.kernels.connection.base import serialize_binary_message

from jupyter_agent.mcp_server.gateway import _decode


def test_text_and_binary_frames_give_the_same_message():
    msg = {"channel": "iopub", "header": {"msg_type": "status", "session": "s1", "msg_id": "m1"},
           "parent_header": {}, "metadata": {}, "content": {"execution_state": "idle"}}
    assert _decode(json.dumps(msg)) == msg
    framed = _decode(serialize_binary_message({**msg, "buffers": [b"\x00\x01", b"more"]}))
    assert framed["header"]["session"] == "s1" and framed["content"] == {"execution_state": "idle"}
    assert framed["channel"] == "iopub" and framed["buffers"] == [b"\x00\x01", b"more"]
