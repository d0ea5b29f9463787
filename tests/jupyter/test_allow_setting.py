"""AgentConfig.allow: allow rules as traitlets config (what an unattended run needs, since
running cells asks in every mode unless a rule allows it)."""

import pytest
from traitlets import TraitError

from jupyter_agent.jupyter.kernel.agent_config import AgentConfig
from jupyter_agent.jupyter.kernel.agent_session import AgentSession


class _Shell:
    """What AgentSession reads of IPython here: nothing but a namespace."""
    user_ns: dict = {}


def test_allow_rules_reach_the_conversation_and_a_bad_rule_says_how_to_write_one(tmp_path):
    session = AgentSession(_Shell())
    session.config.cwd = str(tmp_path)
    session.config.allow = ["NotebookRun"]
    conv = session.conversation
    assert [(r.tool, r.pattern) for r in conv.permissions.allow] == [("NotebookRun", None)]
    session.config.allow = ["NotebookRun", "Edit(src/**)"]  # later: added to the running conversation
    assert ("Edit", "src/**") in [(r.tool, r.pattern) for r in conv.permissions.session_allow]
    with pytest.raises(TraitError, match=r"write Tool or Tool\(glob\)"):
        AgentConfig().allow = ["Edit("]
