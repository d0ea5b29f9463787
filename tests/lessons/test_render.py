"""The lessons' HTML (the stepper widget and its saved copy) shows a run's text as inert,
redacted text: markup in the model's text, tool inputs and results stays text, and a
secret is redacted before a long value is cut (a cut secret is no longer recognized)."""

from __future__ import annotations

import re

from jupyter_agent.lessons import render
from tests.jupyter import payloads

KEY = "ghp_R3dT3amS3cr3tV4lu3AAAAAAAAAAAAAAAAAAAA"  # a token in the environment (MY_SERVICE_TOKEN)


def test_untrusted_text_is_inert_and_redacted_before_the_cut(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", KEY)
    attack = payloads.plain("X")
    # the key straddles where each block's text is cut (the first half of its limit)
    message = {"role": "assistant", "content": [
        {"type": "text", "text": "a" * 290 + KEY + "b" * 700},
        {"type": "thinking", "thinking": "c" * 90 + KEY + attack + "d" * 300},
        {"type": "tool_use", "id": "toolu_1", "name": payloads.IMG,
         "input": {"file_path": payloads.FILE_NAME, "content": attack}},
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "e" * 140 + KEY + attack + "f" * 400},
    ]}
    shown = render.message_html(message, new=True) + render.message_html({"role": "user", "content": attack}, False)
    assert "ghp_R3d" not in shown and "V4lu3" not in shown
    assert "[redacted" in shown
    tags = set(re.findall(r"<\s*([a-zA-Z]+)", shown))
    assert tags <= {"div", "b", "span", "code", "i"}, tags  # only the renderer's own tags
    assert "__pwned" in shown and "&lt;img src=x onerror=" in shown  # shown, as text
