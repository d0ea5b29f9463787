"""The side panel's requests about cells, in a real kernel, the test playing the panel
(``test_panel_comm.Panel``): a prompt carries the cell the user is on, and Fix with agent /
Explain on an error output start a run whose first request holds the cell, its traceback
(colour codes removed), the kernel's variables and the cells above; Explain in plan mode."""

from __future__ import annotations

import pytest
import pytest_asyncio

from jupyter_agent.testing import response, text

from .test_panel_comm import Panel

pytestmark = pytest.mark.asyncio(loop_scope="module")

ERROR = {"ename": "NameError", "evalue": "name 'vales' is not defined",
         "traceback": ["\x1b[0;31mNameError\x1b[0m                                 Traceback (most recent call last)",
                       "\x1b[0;31mNameError\x1b[0m: name 'vales' is not defined"]}
CELL = {"id": "err1", "cell_type": "code", "source": "mean = sum(values) / len(vales)", "index": 2}
ABOVE = [{"id": "vals", "cell_type": "code", "source": "values = [3, 5, 8]", "index": 1}]


@pytest_asyncio.fixture(loop_scope="module")
async def panel(kernel):
    await kernel.execute("%agent new")
    await kernel.execute("values = [3, 5, 8]")
    p = Panel(kernel).open()
    await kernel.until(lambda: any(d["type"] == "state" for d in p.received()), 10, "the panel's first state")
    yield p


def _said(request) -> str:
    """The text of the request's last user message (the run's prompt and its notes)."""
    content = request["messages"][-1]["content"]
    return "\n".join(b.get("text", "") for b in content) if isinstance(content, list) else content


async def _ended(kernel, panel, runs: int) -> dict:
    await kernel.until(lambda: len(panel.headers()) == runs and panel.headers()[-1]["ended"], 10, "the run's end")
    return panel.headers()[-1]


async def test_a_panel_prompt_says_which_cell_the_user_is_on(kernel, panel, script, api):
    script(response(text("It plots df.")))
    panel.send(op="send", prompt="What does this do?", context={
        "active": {"id": "plotcell", "cell_type": "code", "source": "df.plot()  # </cell>", "index": 3},
        "selection": "plot"})
    header = await _ended(kernel, panel, 1)
    assert header["reason"] == "completed"
    said = _said(api.requests[-1])
    assert 'The user is looking at cell "plotcell" (cell 4 of the notebook)' in said
    assert '<cell id="plotcell">df.plot()  # </cell></cell id="plotcell">' in said
    assert "<selection>plot</selection>" in said and said.rstrip().endswith("What does this do?")
    assert panel.items("prompt")[0]["text"] == "What does this do?"  # the panel shows what was typed


async def test_fix_with_agent_sends_the_cell_its_traceback_the_variables_and_the_cells_above(
        kernel, panel, script, api):
    script(response(text("Use len(values).")))
    panel.send(op="fix", cell=CELL, error=ERROR, above=ABOVE)
    header = await _ended(kernel, panel, 1)
    assert header["permission_mode"] == "default" and header["origin"] == "panel"
    said = _said(api.requests[-1])
    assert 'The user pressed "Fix with agent" on the error output of cell "err1"' in said
    assert '<cell id="err1">mean = sum(values) / len(vales)</cell id="err1">' in said
    assert "NameError: name 'vales' is not defined" in said and "\x1b" not in said and "[0;31m" not in said
    assert '<cell id="vals">values = [3, 5, 8]</cell id="vals">' in said
    assert "- values: list, length 3" in said  # the kernel's variables
    assert panel.items("prompt")[0]["text"].startswith('Fix the error raised by cell "err1"')


async def test_explain_runs_in_plan_mode(kernel, panel, script, api):
    script(response(text("`vales` is a typo of `values`.")))
    panel.send(op="explain", cell=CELL, error=ERROR, above=[])
    header = await _ended(kernel, panel, 1)
    assert header["permission_mode"] == "plan" and header["reason"] == "completed"
    assert 'pressed "Explain"' in _said(api.requests[-1])
    assert "plan mode" in str(api.requests[-1]["system"]).lower()
    assert panel.view()["session"]["permission_mode"] == "default"  # the session's mode is unchanged
    # a request without a readable cell starts nothing and says why
    panel.send(op="fix", cell={"id": 3}, error=ERROR)
    await kernel.until(lambda: panel.view()["errors"], 5, "the refusal")
    assert "could not be read" in panel.view()["errors"][-1] and len(panel.headers()) == 1
