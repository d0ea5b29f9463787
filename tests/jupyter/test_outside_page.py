"""The server's ask for the page of a notebook (``op: page``, ``mcp_server/kernel_link.py``,
``_page_back`` after ``restart_kernel``), to a real kernel: while the kernel knows no page,
each ask that finds none greets the pages again (a bridge ``comm_open`` on IOPub), since a
page's connection to a fresh kernel's IOPub may come back only after the greeting that
``%load_ext`` sent (docs/mcp-server.md, "Kernels on a gateway")."""

from __future__ import annotations

import uuid

import pytest
import pytest_asyncio

from jupyter_agent.jupyter.bridge.comm_protocol import BRIDGE_TARGET
from jupyter_agent.mcp_server.kernel_link import call_data
from jupyter_agent.mcp_server.protocol import TARGET, Caller

from .frontend import Frontend, isolated_env

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def kernel(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("page")
    frontend = await Frontend(tmp, isolated_env(tmp)).start()
    loaded = await frontend.execute("%load_ext jupyter_agent")
    assert loaded["reply"]["status"] == "ok", loaded
    yield frontend
    await frontend.stop()


def greetings(frontend: Frontend) -> int:
    return sum(1 for m in frontend.messages
               if m["msg_type"] == "comm_open" and m["content"].get("target_name") == BRIDGE_TARGET)


async def ask_for_page(frontend: Frontend) -> dict:
    """The server's call, as ``KernelComms.call`` sends it; the kernel's answer."""
    comm_id = uuid.uuid4().hex
    data = call_data("page", "nb.ipynb", {}, Caller("a client"))
    frontend.kc.shell_channel.send(frontend.kc.session.msg(
        "comm_open", {"comm_id": comm_id, "target_name": TARGET, "data": data}))
    answer = await frontend.until(lambda: next((m for m in frontend.messages if m["msg_type"] == "comm_msg"
                                                and m["content"]["comm_id"] == comm_id), None), 30, "the answer")
    return dict(answer["content"]["data"])


async def test_each_ask_for_a_page_the_kernel_does_not_know_greets_the_pages_again(kernel):
    assert greetings(kernel) == 1  # %load_ext's
    for n in (2, 3):
        answer = await ask_for_page(kernel)
        assert not answer["ok"] and "No JupyterLab page" in str(answer), answer
        assert greetings(kernel) == n
