"""One set of options (``AgentOptions``): each front makes one, ``query()`` and ``Conversation``
take it or its fields as keywords, and what it says reaches the run, through the real SDK
against the fake Messages API."""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path

import pytest

from jupyter_agent import AgentOptions, Conversation, TerminalReason, compact, query
from jupyter_agent.loop.events import Compaction, CompactionTrigger
from jupyter_agent.options import OPTION_NAMES
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use

from .loop.conftest import Echo


def test_options_are_frozen_and_a_wrong_name_lists_the_right_ones():
    options = AgentOptions(max_turns=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.max_turns = 4  # type: ignore[misc]
    changed = options.replace(permission_mode="plan")
    assert (options.permission_mode, changed.permission_mode, changed.max_turns) == ("default", "plan", 3)
    with pytest.raises(TypeError, match=r"max_turn: no such option\. The options are: .*max_turns"):
        options.replace(max_turn=2)
    with pytest.raises(TypeError, match="max_turn: no such option"):
        query("hi", max_turn=2)
    with pytest.raises(TypeError, match="max_turn: no such option"):
        Conversation(max_turn=2)


def test_the_keywords_a_type_checker_sees_are_the_options_with_their_types():
    # query(**kwargs) and Conversation(**kwargs) are typed by these TypedDicts (Unpack): an option
    # added to AgentOptions and not to them (or with another type) is a keyword users' checkers refuse
    from jupyter_agent.options import OptionKeywords, OptionKeywordsExceptModel, RunOptionKeywords

    def declared(keywords: type) -> dict[str, str]:  # the annotations' text (a ForwardRef each)
        return {name: getattr(t, "__forward_arg__", t) for name, t in keywords.__annotations__.items()}

    fields = {f.name: f.type for f in dataclasses.fields(AgentOptions)}
    assert declared(OptionKeywords) == fields
    assert declared(OptionKeywordsExceptModel) == {n: t for n, t in fields.items() if n != "model"}
    # Conversation.send names five itself (a run's own model, mode, callback, turns, checkpoints)
    sends_own = {"model", "permission_mode", "can_use_tool", "max_turns", "checkpoints"}
    assert sends_own <= set(inspect.signature(Conversation.send).parameters)
    assert declared(RunOptionKeywords) == {n: t for n, t in fields.items() if n not in sends_own}
    assert not OptionKeywords.__required_keys__  # every keyword may be left out


def test_every_keyword_of_the_public_contract_is_an_option():
    # the keywords of query() and Conversation that docs/python-api.md and the other pages' examples use
    contract = {"model", "tools", "max_turns", "permission_mode", "can_use_tool", "hooks", "cwd", "system_prompt",
                "permissions", "allow", "deny", "ask", "context_window", "mcp_servers", "max_budget_usd",
                "provider", "provider_settings", "replay", "bash_sandbox", "notebook_path", "checkpoints"}
    assert contract <= OPTION_NAMES


async def test_options_given_as_an_object_reach_the_run_and_keywords_change_them(tmp_path: Path):
    script = [response(tool_use("Echo", {"text": "a"}))]  # max_turns=1: no second request
    with FakeMessagesAPI(script) as api:
        options = AgentOptions(tools=[Echo()], cwd=tmp_path, max_turns=5, system_prompt="Be brief.")
        run = query("go", options=options, model=api.model(), max_turns=1)
        terminal = await run.wait()
        system = api.messages_requests[0].body["system"]
    assert terminal.reason == TerminalReason.MAX_TURNS  # the keyword's 1, not the object's 5
    assert len(api.messages_requests) == 1
    assert system[0]["text"].startswith("Be brief.")
    assert options.max_turns == 5  # the caller's object is as it was


async def test_a_conversation_keeps_its_options_and_a_run_s_own_change_them_for_that_run(tmp_path: Path):
    script = [response(tool_use("Echo", {"text": "a"})), response(text("Done.")),
              response(tool_use("Echo", {"text": "b"}))]  # the second run's one turn
    with FakeMessagesAPI(script) as api:
        conv = Conversation(options=AgentOptions(model=api.model(), tools=[Echo()], cwd=tmp_path, max_turns=1))
        assert conv.max_turns == 1 and conv.options.cwd == tmp_path
        first = await conv.send("one", max_turns=0).wait()  # 0: no limit, for this run alone
        conv.max_turns = 1  # a setting changed (as %config does): the options change
        second = await conv.send("two").wait()
        await conv.model.aclose()
    assert first.reason == TerminalReason.COMPLETED
    assert second.reason == TerminalReason.MAX_TURNS
    assert conv.options.max_turns == 1


def test_the_kernel_s_settings_make_one(tmp_path: Path):
    from jupyter_agent.jupyter.kernel.agent_config import AgentConfig

    config = AgentConfig(max_turns=4, allow=["Read"], cwd=str(tmp_path), context_window=50_000, max_budget_usd=0.0)
    options = config.options(notebook_path="n.ipynb")
    assert (options.max_turns, options.allow, options.cwd) == (4, ("Read",), str(tmp_path))
    assert options.context_window == 50_000
    assert options.max_budget_usd is None and options.model is None  # 0 and "": not set
    assert options.notebook_path == "n.ipynb"
    conv = Conversation(options=options)
    assert conv.max_turns == 4 and conv.context.cwd == tmp_path.resolve()
    assert conv.rules["allow"] == ("Read",)


async def test_compact_is_a_function_of_the_history(tmp_path: Path):
    history = [{"role": "user", "content": "Echo a, my-words-7."},
               {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
               {"role": "user", "content": "Thanks."},
               {"role": "assistant", "content": [{"type": "text", "text": "You are welcome."}]}]
    with FakeMessagesAPI([response(text("Summary: echoed a."))]) as api:
        run = compact(tuple(history), "keep the echo", model=api.model(), tools=[Echo()], cwd=tmp_path)
        events = [e async for e in run]
        asked = json.dumps(api.messages_requests[0].body["messages"][-1])
    assert run.terminal is not None and run.terminal.reason == TerminalReason.COMPLETED
    assert [e.trigger for e in events if isinstance(e, Compaction)] == [CompactionTrigger.MANUAL]
    assert "keep the echo" in asked
    kept = json.dumps(run.state.messages)
    assert "Summary: echoed a." in kept and "my-words-7" in kept
    with pytest.raises(TypeError, match="list of messages"):
        compact("not a history")  # type: ignore[arg-type]


def test_the_fronts_flags_are_options_or_say_what_the_front_does():
    """A flag of the magic or the CLI sets an option of the same name, unless it is about the
    front itself (which notebook, waiting, what to print): no option hides under another name."""
    import argparse

    from jupyter_agent.cli import build_parser
    from jupyter_agent.jupyter.magic.agent_magic import cell_parser, line_parser

    run = next(action.choices["run"] for action in build_parser()._actions
               if isinstance(action, argparse._SubParsersAction))
    fronts = {"help", "wait", "action", "words", "remove", "notebook", "prompt", "quiet", "mcp_config"}
    for parser in (cell_parser(), line_parser(), run):
        dests = {action.dest for action in parser._actions}
        assert dests - fronts <= OPTION_NAMES, (parser.prog, sorted(dests - fronts - OPTION_NAMES))
        assert {"model", "max_turns", "permission_mode", "cwd", "replay"} <= dests


def test_a_conversation_given_a_permission_policy_keeps_it_and_its_mode(tmp_path: Path):
    from jupyter_agent.permissions import Permissions

    policy = Permissions(mode="plan", allow=("Read",), cwd=tmp_path)
    conv = Conversation(permissions=policy, cwd=tmp_path)
    assert conv.permissions is policy and conv.permission_mode == "plan" and policy.mode == "plan"
    conv.permission_mode = "acceptEdits"  # (as %agent --permission-mode): the policy follows
    assert policy.mode == "acceptEdits" and conv.options.permission_mode == "acceptEdits"
