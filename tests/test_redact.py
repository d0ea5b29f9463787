"""redact(): secrets from the environment, found again only when the environment changes."""

import os

from jupyter_agent import redact as redact_module
from jupyter_agent.redact import redact


def test_a_secret_set_or_removed_later_is_seen_at_once(monkeypatch):
    token = "tok-" + "q7" * 10
    assert redact(f"value {token}") == f"value {token}"
    monkeypatch.setenv("SERVICE_TOKEN", token)
    assert redact(f"value {token}") == "value [redacted SERVICE_TOKEN]"
    monkeypatch.setenv("SERVICE_TOKEN", "other-" + "z" * 10)  # changed value: the old one is plain text again
    assert redact(f"value {token}") == f"value {token}"
    monkeypatch.delenv("SERVICE_TOKEN")
    assert redact("other-" + "z" * 10) == "other-" + "z" * 10


def test_an_unchanged_environment_is_not_sorted_again(monkeypatch):
    """redact() runs twice per frame while a run streams: it must not rebuild and sort the
    whole environment every time (it did)."""
    monkeypatch.setenv("SERVICE_TOKEN", "tok-" + "q7" * 10)
    redact("warm the cache")
    calls = []
    real_sorted = sorted
    monkeypatch.setattr(redact_module, "sorted", lambda *a, **k: calls.append(a) or real_sorted(*a, **k),
                        raising=False)
    monkeypatch.setattr(os.environ.__class__, "items",
                        lambda self: calls.append("items") or dict.items(dict(self)), raising=True)
    for _ in range(100):
        assert redact("tok-" + "q7" * 10) == "[redacted SERVICE_TOKEN]"
    assert calls == []
