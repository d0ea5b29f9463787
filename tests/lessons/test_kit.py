"""The lessons' helpers: live needs a key (and says so), the pairing check finds what is wrong."""

from __future__ import annotations

import pytest

from jupyter_agent.lessons import Lesson, pairing_problems


def test_live_without_a_key_says_what_to_do(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(RuntimeError, match="ANTHROPIC_API_KEY.*LIVE = False"):
        Lesson("x", live=True)


def test_offline_lesson_writes_only_in_its_scratch_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    lesson = Lesson("x")
    path = lesson.write("a/b.txt", "hi")
    assert path.read_text() == "hi" and lesson.dir in path.parents and tmp_path in lesson.dir.parents


def test_pairing_problems():
    use = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]}
    ok = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}
    assert pairing_problems([{"role": "user", "content": "hi"}, use, ok]) == []
    assert pairing_problems([use]) == ["t1 has 0 tool_result(s)"]
    stray = {"role": "user", "content": [*ok["content"], {"type": "tool_result", "tool_use_id": "t9", "content": ""}]}
    assert pairing_problems([use, stray]) == ["tool_result t9 answers no tool_use"]
    twice = {"role": "user", "content": [*ok["content"], *ok["content"]]}
    assert pairing_problems([use, twice]) == ["t1 has 2 tool_result(s)"]
