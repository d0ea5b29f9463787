"""The kernel runs a cell itself (``jupyter/bridge/self_client.py``): an execute request to its own
shell socket, the outputs from its own IOPub subscription. A real kernel; the test plays
the notebook page (``frontend.py``) and sees the run as any other client sees it."""

from __future__ import annotations

import ast
import asyncio

import pytest
import pytest_asyncio

from .frontend import Frontend, isolated_env

pytestmark = pytest.mark.asyncio(loop_scope="module")

START = """
import asyncio
from jupyter_agent.jupyter.bridge.self_client import SelfConnection
run_here = SelfConnection(get_ipython()).runner()
runs = {}
def start(name, code, timeout=30.0, msg_id=None):
    runs[name] = asyncio.ensure_future(run_here(code, msg_id or name, "cell-" + name, timeout=timeout, abort=None))
"""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def kernel(module_tmp):
    frontend = await Frontend(module_tmp, isolated_env(module_tmp)).start()
    result = await frontend.execute(START)
    assert result["reply"]["status"] == "ok", result
    yield frontend
    await frontend.stop()


async def finished(kernel: Frontend, name: str) -> dict:
    """The run's Execution once its task is done, as a dict (read by a cell of the test's)."""
    for _ in range(300):
        if await kernel.value(f"runs[{name!r}].done()") == "True":
            return ast.literal_eval(await kernel.value(f"vars(runs[{name!r}].result())"))
        await asyncio.sleep(0.1)
    raise AssertionError(f"run {name} did not finish")


async def test_the_kernel_runs_a_cell_itself_and_collects_what_a_frontend_would_show(kernel):
    code = ("import sys\nfrom IPython.display import display, clear_output\nprint('gone')\n"
            "clear_output(wait=True)\nprint('a')\nprint('b')\n"
            "h = display({'text/plain': 'first'}, raw=True, display_id=True)\n"
            "h.update({'text/plain': 'second'}, raw=True)\nprint('err', file=sys.stderr)\nsecret = 6\nsecret * 7")
    await kernel.execute(f"start('shown', {code!r}, msg_id='m-shown')")
    execution = await finished(kernel, "shown")
    assert execution["status"] == "ok", execution
    outputs = execution["outputs"]
    assert [o["output_type"] for o in outputs] == ["stream", "display_data", "stream", "execute_result"]
    assert outputs[0]["text"] == "a\nb\n" and outputs[1]["data"] == {"text/plain": "second"}
    assert outputs[2] == {"name": "stderr", "output_type": "stream", "text": "err\n"}
    assert outputs[3]["data"]["text/plain"] == "42"
    # an ordinary execute request of this kernel: counted, in the history, seen by every
    # client (the page shows it from these messages), its outputs under the request's id
    assert isinstance(execution["execution_count"], int)
    seen = [m for m in kernel.messages if m["parent_header"].get("msg_id") == "m-shown"]
    kinds = [m["msg_type"] for m in seen]
    assert kinds[0] == "status" and "execute_input" in kinds and kinds[-1] == "status", kinds
    assert seen[0]["parent_header"]["msg_type"] == "execute_request"
    assert await kernel.value("secret") == "6"  # ran in the user's namespace


async def test_an_error_and_the_time_limit(kernel):
    await kernel.execute("start('raises', '1/0')")
    execution = await finished(kernel, "raises")
    assert execution["status"] == "error" and execution["outputs"][-1]["ename"] == "ZeroDivisionError"
    # the time limit: the cell holds the kernel's loop, and is interrupted all the same
    await kernel.execute("start('sleeps', 'import time\\nprint(1, flush=True)\\ntime.sleep(60)', timeout=1.0)")
    execution = await finished(kernel, "sleeps")
    assert execution["status"] == "timeout", execution
    assert execution["outputs"][0]["text"] == "1\n"
    assert execution["outputs"][-1]["ename"] == "KeyboardInterrupt"
    assert await kernel.value("6 * 7") == "42"  # the kernel takes the next cell
