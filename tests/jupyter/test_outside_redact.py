"""A real kernel redacts the outputs of an outside agent's cell runs before they leave it (issue
42, finding 1): what its IOPub publishes for an ``execute_request`` whose id is an outside
call's (``protocol.run_tag``) carries no secret the kernel knows, whichever way the cell
shows it (a flushed print, a subprocess's output, a display, a result, an exception), a key
the same cell just set included; the user's own cells are left as they were."""

from __future__ import annotations

import uuid

import pytest
import pytest_asyncio

from jupyter_agent.mcp_server.protocol import run_tag

from .frontend import Frontend, isolated_env

#: fake, 33 characters, in the kernel's environment only
SECRET = "FAKE-kernelonly-s3cret-0123456789"
LATER = "FAKE-set-by-the-same-cell-98765"
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def kernel(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("redact")
    frontend = await Frontend(tmp, isolated_env(tmp, KERNEL_ONLY_API_KEY=SECRET)).start()
    loaded = await frontend.execute("%load_ext jupyter_agent")
    assert loaded["reply"]["status"] == "ok", loaded
    yield frontend
    await frontend.stop()


async def outside_run(frontend: Frontend, code: str) -> list[dict]:
    """Run ``code`` as an outside call's cell run is sent (its request id tagged); its outputs."""
    msg = frontend.kc.session.msg("execute_request", {
        "code": code, "silent": False, "store_history": False, "user_expressions": {}, "allow_stdin": False,
        "stop_on_error": False})
    msg_id = msg["header"]["msg_id"] = run_tag(uuid.uuid4().hex) + uuid.uuid4().hex
    frontend.kc.shell_channel.send(msg)
    await frontend.until(lambda: any(m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "status"
                                     and m["content"]["execution_state"] == "idle" for m in frontend.messages),
                         60, "the cell to go idle")
    return frontend.outputs(msg_id)


async def test_an_outside_runs_outputs_leave_the_kernel_redacted(kernel):
    code = ("import os, subprocess, IPython.display as d\n"
            "print('connecting with', os.environ['KERNEL_ONLY_API_KEY'], flush=True)\n"
            "subprocess.run(['echo', 'child ' + os.environ['KERNEL_ONLY_API_KEY']])\n"
            "d.display(d.HTML('<b>' + os.environ['KERNEL_ONLY_API_KEY'] + '</b>'))\n"
            f"os.environ['SAME_CELL_TOKEN'] = '{LATER}'\n"
            "print('then', os.environ['SAME_CELL_TOKEN'], flush=True)\n"
            "os.environ['KERNEL_ONLY_API_KEY']")
    outputs = await outside_run(kernel, code)
    shown = repr(outputs)
    assert SECRET not in shown and LATER not in shown, shown
    texts = "".join(o.get("text", "") for o in outputs if o["msg_type"] == "stream")
    assert "connecting with [redacted KERNEL_ONLY_API_KEY]" in texts, texts
    assert "then [redacted SAME_CELL_TOKEN]" in texts, texts
    assert "[redacted KERNEL_ONLY_API_KEY]" in shown and "text/html" in shown
    failed = await outside_run(kernel, "raise ValueError('bad key ' + __import__('os').environ['KERNEL_ONLY_API_KEY'])")
    assert SECRET not in repr(failed) and any("[redacted KERNEL_ONLY_API_KEY]" in o.get("evalue", "")
                                              for o in failed if o["msg_type"] == "error"), failed


async def test_the_users_own_cells_are_left_as_they_were(kernel):
    result = await kernel.execute("print(__import__('os').environ['KERNEL_ONLY_API_KEY'])")
    assert SECRET in "".join(o.get("text", "") for o in result["outputs"]), result["outputs"]
