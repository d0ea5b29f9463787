"""Pairing repair and normalisation: the history the API accepts."""

from __future__ import annotations

from jupyter_agent.loop.messages import (
    ensure_tool_result_pairing, normalize_messages_for_api, prepend_user_context, sendable_messages,
)


def use(i):
    return {"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {}}


def result(i):
    return {"type": "tool_result", "tool_use_id": f"t{i}", "content": "ok"}


def test_orphan_tool_use_gets_an_error_result():
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [use(1), use(2)]},
               {"role": "user", "content": [result(1)]}]
    repaired, notes = ensure_tool_result_pairing(history)
    ids = [(b["tool_use_id"], b.get("is_error", False)) for b in repaired[-1]["content"]]
    assert ids == [("t1", False), ("t2", True)]
    assert notes and history[-1]["content"] == [result(1)]  # the input was not mutated


def test_trailing_tool_use_and_dangling_results():
    history = [{"role": "user", "content": [result(9), {"type": "text", "text": "hi"}]},
               {"role": "assistant", "content": [use(1)]}]
    repaired, notes = ensure_tool_result_pairing(history)
    assert repaired[0]["content"] == [{"type": "text", "text": "hi"}]
    assert repaired[-1]["content"][0]["tool_use_id"] == "t1" and repaired[-1]["content"][0]["is_error"]
    assert len(notes) == 2


def test_a_repair_is_made_and_reported_on_every_request_not_only_the_first():
    # The history is resent each turn and the checks remember messages by identity: a
    # remembered repair must still be applied and still be reported.
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [use(1), use(2)]},
               {"role": "user", "content": [result(1), result(7)]}]
    first, first_notes = ensure_tool_result_pairing(history)
    again, again_notes = ensure_tool_result_pairing([*history, {"role": "assistant", "content": "ok"}])
    assert again_notes == first_notes and len(first_notes) == 2
    assert again[2] == first[2] and [b["tool_use_id"] for b in again[2]["content"]] == ["t1", "t2"]
    # a message equal to a remembered one but not the same object is checked on its own
    fresh = [{**m} for m in history[:2]] + [{"role": "user", "content": [result(1), result(2)]}]
    assert ensure_tool_result_pairing(fresh) == (fresh, [])


def test_sendable_messages_cleans_each_message_including_on_later_turns():
    clean = {"role": "user", "content": "plain"}
    broken = {"role": "user", "content": [{"type": "text", "text": "half \ud83d"}]}
    for _ in range(2):
        out = sendable_messages([clean, broken])
        assert out[0] is clean and out[1]["content"][0]["text"] == "half \ufffd"
        assert broken["content"][0]["text"] == "half \ud83d"  # never mutated


def test_valid_history_is_returned_as_the_same_objects():
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [use(1)]},
               {"role": "user", "content": [result(1)]}]
    repaired, notes = ensure_tool_result_pairing(history)
    assert notes == [] and all(a is b for a, b in zip(repaired, history))


def test_normalize_merges_consecutive_user_messages_results_first():
    merged = normalize_messages_for_api([
        {"role": "assistant", "content": [use(1)]},
        {"role": "user", "content": [result(1)]},
        {"role": "user", "content": "next question"},
    ])
    assert len(merged) == 2
    assert [b["type"] for b in merged[1]["content"]] == ["tool_result", "text"]


def test_user_context_is_prepended_to_the_request_not_the_history():
    history = [{"role": "user", "content": "hi"}]
    out = prepend_user_context(history, {"workingDirectory": "/tmp/x"})
    assert "<system-reminder>" in out[0]["content"][0]["text"] and "/tmp/x" in out[0]["content"][0]["text"]
    assert out[0]["content"][1]["text"] == "hi" and history == [{"role": "user", "content": "hi"}]
