"""A user's type checker sees the package's real types (``py.typed``, and the lazy exports of
``jupyter_agent/__init__.py`` imported for type checkers), not ``Any``: mypy, through its API,
on a small file that uses the public names as a user would."""

from __future__ import annotations

import re
from pathlib import Path

from mypy import api

import jupyter_agent

ROOT = Path(__file__).resolve().parents[1]
#: Defined in ``__init__.py`` itself (no lazy export to check).
OWN = {"chat", "load_ipython_extension", "unload_ipython_extension"}

USER_FILE = """
import jupyter_agent
from jupyter_agent import Conversation, TransitionReason, query

async def use() -> None:
    run = query("hi")
    reveal_type(run)
    reveal_type(await run.wait())
    async for event in run:
        reveal_type(event)
    reveal_type(Conversation().send("again"))
    reveal_type(TransitionReason.NEXT_TURN)
{exports}
"""


def revealed(tmp_path: Path, source: str) -> tuple[list[str], str]:
    """The types mypy reveals in ``source``, in order, and its whole report."""
    (tmp_path / "user.py").write_text(source)
    # Only the package is analysed (what it imports from elsewhere counts as Any): a few seconds.
    (tmp_path / "mypy.ini").write_text(
        f"[mypy]\npython_version = 3.11\nmypy_path = {ROOT}\nfollow_imports = skip\n"
        "[mypy-jupyter_agent.*]\nfollow_imports = silent\n")
    report, errors, _ = api.run([str(tmp_path / "user.py"), "--config-file", str(tmp_path / "mypy.ini"),
                                 "--cache-dir", str(tmp_path / "cache"), "--no-error-summary"])
    return re.findall(r'Revealed type is "(.*)"', report), report + errors


def test_a_user_s_type_checker_sees_each_export_as_its_real_type(tmp_path):
    names = sorted(set(jupyter_agent.__all__) - OWN)
    exports = "\n".join(f"reveal_type(jupyter_agent.{name})" for name in names)
    types, report = revealed(tmp_path, USER_FILE.format(exports=exports))
    assert ": error:" not in report, report
    run, terminal, event, sent, reason, *exported = types
    assert run == "jupyter_agent.loop.run.QueryRun"
    assert terminal == "jupyter_agent.loop.state.Terminal"
    assert event.startswith("jupyter_agent.loop.events.RequestStart | ")  # the LoopEvent union
    assert event.endswith(" | jupyter_agent.loop.state.Terminal")
    assert sent == "jupyter_agent.loop.run.QueryRun"
    assert "TransitionReason" in reason
    assert len(exported) == len(names)
    untyped = [name for name, found in zip(names, exported) if found == "Any"]
    assert not untyped, f"seen as Any by a type checker: {untyped}"
    query_type = exported[names.index("query")]
    assert query_type.startswith("def (prompt: ") and query_type.endswith("-> jupyter_agent.loop.run.QueryRun")


KEYWORDS_FILE = """
from jupyter_agent import AgentOptions, Conversation, compact, query

async def use() -> None:
    query("hi", max_turns=2, permission_mode="plan", allow=("Read",), checkpoints=True)
    Conversation("claude-sonnet-4-5", cwd="/tmp", max_budget_usd=0.5)
    compact([], "keep the plan", max_tokens=1000)
    AgentOptions().replace(context_window=50_000)
    query("hi", max_turn=2)  # the wrong keyword: line 9
    Conversation(max_turns="3")  # a keyword of the wrong type: line 10
    AgentOptions().replace(modle="x")  # line 11
    Conversation().send("go", max_turns=1, max_budget_usd=0.1, system_prompt="Be brief.")
    Conversation().send("go", max_budget="0.1")  # line 13
"""


def test_a_user_s_type_checker_knows_the_option_keywords(tmp_path):
    # query() and Conversation take **kwargs typed by AgentOptions' fields (Unpack of a TypedDict):
    # a misspelt keyword or a value of the wrong type is the user's checker's error, the right ones pass
    _, report = revealed(tmp_path, KEYWORDS_FILE)
    errors = re.findall(r"user\.py:(\d+): error: (.*)", report)
    assert [line for line, _ in errors] == ["9", "10", "11", "13"], report
    assert 'Unexpected keyword argument "max_turn" for "query"' in errors[0][1]
    assert '"max_turns"' in errors[1][1] and '"int | None"' in errors[1][1]
    assert 'Unexpected keyword argument "modle"' in errors[2][1]
    assert 'Unexpected keyword argument "max_budget" for "send"' in errors[3][1]
