"""A kernel on another machine than the notebook server, as the kernel sees it: the "no API
key" message says how a gateway passes the key, once the kernel knows it is remote: from
the page (the notebook it shows is not the kernel's own file) or from the gateway's mark in
its environment. A real kernel; the page is this test's client, saying a bridge hello as
the labextension does (``labextension/src/bridge.ts``)."""

from __future__ import annotations

import uuid

import pytest

from jupyter_agent.jupyter.bridge.comm_protocol import BRIDGE_TARGET, BRIDGE_VERSION

pytestmark = pytest.mark.asyncio(loop_scope="module")

GATEWAY_HELP = "--GatewayClient.allowed_envs=ANTHROPIC_API_KEY"


def said(result: dict) -> str:
    return "".join(o.get("text", "") for o in result["outputs"])


async def test_the_no_key_message_says_how_a_gateway_passes_the_key_once_the_kernel_is_remote(kernel, module_tmp):
    await kernel.execute("import os; _key = os.environ.pop('ANTHROPIC_API_KEY')\n%agent new")
    comm_id = str(uuid.uuid4())
    try:
        local = said(await kernel.execute("%%agent\nhello"))
        assert "No Anthropic API key found" in local and GATEWAY_HELP not in local
        # The page shows a notebook of the server's root, which is not this kernel's folder.
        hello = {"v": BRIDGE_VERSION, "op": "hello", "from": kernel.kc.session.session,
                 "result": {"path": "live.ipynb", "server_root": str(module_tmp / "server-host" / "root")}}
        kernel.kc.shell_channel.send(kernel.kc.session.msg(
            "comm_open", {"comm_id": comm_id, "target_name": BRIDGE_TARGET, "data": hello}))
        remote = said(await kernel.execute("%%agent\nhello"))
        assert "No Anthropic API key found" in remote and GATEWAY_HELP in remote, remote
        assert "--JupyterWebsocketPersonality.env_whitelist=ANTHROPIC_API_KEY" in remote
        assert "--EnterpriseGatewayApp.client_envs=ANTHROPIC_API_KEY" in remote
        assert "docs/deploy.md" in remote
    finally:
        kernel.kc.shell_channel.send(kernel.kc.session.msg("comm_close", {"comm_id": comm_id, "data": {}}))
        await kernel.execute("os.environ['ANTHROPIC_API_KEY'] = _key")


async def test_a_kernel_a_gateway_started_says_so_without_a_page(kernel):
    await kernel.execute("import os; _key = os.environ.pop('ANTHROPIC_API_KEY')\n"
                         "os.environ['KERNEL_GATEWAY'] = '1'\n%agent new")  # Kernel Gateway's mark
    try:
        remote = said(await kernel.execute("%%agent\nhello"))
        assert "No Anthropic API key found" in remote and GATEWAY_HELP in remote, remote
    finally:
        await kernel.execute("os.environ['ANTHROPIC_API_KEY'] = _key; del os.environ['KERNEL_GATEWAY']")
