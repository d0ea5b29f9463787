"""An administrator's jupyter_agent_policy.json: read from the admin's config folders only,
strictest wins, and a user's settings (AgentConfig, query() arguments) cannot loosen it.

The folders come from $JUPYTER_CONFIG_PATH here (the environment's and the system's are
shared by every test): adding folders there can only tighten, which test 1 checks too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from traitlets import TraitError
from traitlets.config import Config, Configurable

from jupyter_agent import TerminalReason, query
from jupyter_agent.conversation import Conversation
from jupyter_agent.jupyter.kernel.agent_config import AgentConfig
from jupyter_agent.jupyter.kernel.agent_session import AgentSession
from jupyter_agent.policy import POLICY_FILE, PolicyViolation, load_policy
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use


@pytest.fixture
def admin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``admin(name, **policy)`` writes a policy file into a folder on $JUPYTER_CONFIG_PATH."""
    folders: list[str] = []
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "user-jupyter"))

    def write(name: str, **policy: object) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        path = folder / POLICY_FILE
        path.write_text(json.dumps(policy))
        folders.append(str(folder))
        monkeypatch.setenv("JUPYTER_CONFIG_PATH", ":".join(folders))
        return path

    return write


def test_the_strictest_file_wins_and_the_users_own_config_folder_is_not_read(admin, tmp_path):
    loose = admin("site", permission_mode="acceptEdits", max_budget_usd=2, allowed_models=["claude-*"])
    strict = admin("group", permission_mode="default", max_budget_usd=0.5, allowed_models=["claude-sonnet-*"])
    user = tmp_path / "user-jupyter"
    user.mkdir()
    (user / POLICY_FILE).write_text(json.dumps({"permission_mode": "plan"}))  # the user's: never read

    policy = load_policy()
    assert (policy.permission_mode, policy.max_budget_usd) == ("default", 0.5)
    assert policy.sources["permission_mode"] == str(strict)
    assert policy.model_allowed("claude-sonnet-4-5") and not policy.model_allowed("claude-opus-4-1")
    assert str(loose) in policy.sources["allowed_models"]


def test_a_user_cannot_loosen_the_mode_model_or_spend_limit_through_query(admin, tmp_path):
    path = admin("site", permission_mode="default", max_budget_usd=0.25, allowed_models=["claude-sonnet-*"])
    with FakeMessagesAPI([]) as api:
        for mode in ("bypassPermissions", "acceptEdits"):
            with pytest.raises(PolicyViolation, match=rf"'{mode}' is not allowed.*{path}.*at most 'default'"):
                query("hi", model=api.model(), cwd=tmp_path, permission_mode=mode)
        with pytest.raises(PolicyViolation, match=rf"'claude-opus-4-1' is not allowed.*{path}"):
            query("hi", model=api.model("claude-opus-4-1"), cwd=tmp_path)
        with pytest.raises(PolicyViolation, match=rf"\$1 per run is above the administrator's \$0.25 \({path}\)"):
            query("hi", model=api.model(), cwd=tmp_path, max_budget_usd=1)
        run = query("hi", model=api.model(), cwd=tmp_path, permission_mode="plan", max_budget_usd=0.1)
        assert run.params.options.max_budget_usd == 0.1  # a lower limit of one's own is fine
        assert query("hi", model=api.model(), cwd=tmp_path).params.options.max_budget_usd == 0.25
        conversation = Conversation(api.model(), cwd=tmp_path)
        with pytest.raises(PolicyViolation):
            conversation.permission_mode = "bypassPermissions"
        with pytest.raises(PolicyViolation):  # one run's own mode (a cell's --permission-mode)
            conversation.send("hi", permission_mode="acceptEdits")


def test_agent_config_refuses_what_the_policy_does_not_allow_naming_the_file(admin):
    path = admin("site", permission_mode="plan", allowed_models=["claude-sonnet-*"], max_budget_usd=1)
    config = AgentConfig()
    assert config.permission_mode == "plan"  # the default nobody chose follows the admin
    with pytest.raises(TraitError, match=rf"'default' is not allowed.*{path}"):
        config.permission_mode = "default"
    with pytest.raises(TraitError, match=rf"'claude-opus-4-1' is not allowed.*{path}"):
        config.model = "claude-opus-4-1"
    with pytest.raises(TraitError, match=str(path)):
        config.max_budget_usd = 5.0
    config.model, config.max_budget_usd = "claude-sonnet-4-5", 0.5
    assert (config.model, config.max_budget_usd, config.permission_mode) == ("claude-sonnet-4-5", 0.5, "plan")


def test_a_refused_value_in_the_users_config_file_is_left_out_and_the_extension_still_loads(admin, capsys):
    path = admin("site", permission_mode="default")
    shell = Configurable(config=Config({"AgentConfig": {"permission_mode": "bypassPermissions", "max_turns": 7}}))
    session = AgentSession(shell)  # what %load_ext builds from IPython's config
    assert (session.config.permission_mode, session.config.max_turns) == ("default", 7)
    err = capsys.readouterr().err
    assert "AgentConfig.permission_mode from your configuration was left out" in err and str(path) in err


def test_a_broken_policy_file_stops_every_run_naming_it(admin, tmp_path):
    path = admin("site", permission_mode="bogus")
    with FakeMessagesAPI([]) as api, pytest.raises(PolicyViolation, match=rf"{path} has an invalid permission_mode"):
        query("hi", model=api.model(), cwd=tmp_path)
    path.write_text("{not json")
    with FakeMessagesAPI([]) as api, pytest.raises(PolicyViolation, match=rf"{path} cannot be read"):
        query("hi", model=api.model(), cwd=tmp_path)


async def test_a_run_that_reaches_the_spend_limit_ends_max_budget_with_every_tool_answered(admin, tmp_path):
    admin("site", max_budget_usd=0.001)
    (tmp_path / "notes.txt").write_text("hello\n")
    read = tool_use("Read", {"file_path": str(tmp_path / "notes.txt")})
    # 1000 input + 100 output tokens of a Sonnet: $0.0045, over the limit after one response
    costly = response(read, usage={"input_tokens": 1000, "output_tokens": 100})
    with FakeMessagesAPI([costly, response(text("never asked"))], strict=False) as api:
        run = query("read the notes", model=api.model(), cwd=tmp_path)
        terminal = await run.wait()
        assert len(api.requests) == 1  # the model was not asked again
    assert terminal.reason == TerminalReason.MAX_BUDGET and terminal.turn_count == 1
    assert "spend limit of $0.001" in terminal.message and run.usage.cost_usd > 0.001
    results = [b for b in run.state.messages[-1]["content"] if b.get("type") == "tool_result"]
    assert [b["tool_use_id"] for b in results] == [read["id"]] and "hello" in str(results[0]["content"])
