"""The Bash sandbox as a notebook user turns it on (``%config AgentConfig.bash_sandbox``):
a command the model runs needs no click, cannot leave a git folder behind, and the run's
transcript says what the sandbox blocked, escaped like any tool output. A real kernel, real
bubblewrap, the real SDK against the fake Messages API."""

from __future__ import annotations

import pytest
import pytest_asyncio

from jupyter_agent.testing import response, text, tool_use

from ..tools.test_bash import needs_bwrap
from .test_kernel_magic import display_id_of, transcript

pytestmark = [pytest.mark.asyncio(loop_scope="module"), needs_bwrap]


@pytest_asyncio.fixture(loop_scope="module")
async def kernel(kernel, module_tmp):
    assert (await kernel.execute("%load_ext jupyter_agent"))["reply"]["status"] == "ok"
    await kernel.execute("%agent stop")
    for line in ("%config AgentConfig.bash_sandbox = True", f"%config AgentConfig.cwd = {str(module_tmp)!r}",
                 "%agent new --permission-mode default --max-turns 0"):
        assert (await kernel.execute(line))["reply"]["status"] == "ok", line
    yield kernel
    await kernel.execute("%config AgentConfig.bash_sandbox = False")
    await kernel.execute("%config AgentConfig.cwd = ''")


async def test_a_sandboxed_command_runs_without_a_click_and_cannot_plant_a_hook(kernel, script, module_tmp):
    folder = module_tmp / "sandboxed"
    (folder / "<b>repo</b>").mkdir(parents=True)
    (folder / "plant.sh").write_text("cd sandboxed && git init -q '<b>repo</b>/inner' && echo 'touch PWNED' > "
                                     "'<b>repo</b>/inner/.git/hooks/post-checkout'; echo planted\n")
    script(response(tool_use("Bash", {"command": "bash sandboxed/plant.sh", "description": "set up"})),
           response(text("Set up.")))
    result = await kernel.execute("%%agent\nSet up the repository")
    said = await transcript(kernel, display_id_of(result), timeout=30)
    assert not (folder / "<b>repo</b>" / "inner" / ".git").exists()
    assert (folder / "<b>repo</b>" / "inner" / ".git.sandbox-blocked" / "hooks" / "post-checkout").exists()
    assert "The sandbox blocked what the command made" in said and "inner/.git: renamed to" in said
    note = said.index("sandboxed/<b>repo</b>/inner/.git: renamed to")
    assert said[:note].count("```") % 2 == 1  # inside the output's code block: text, not markup
