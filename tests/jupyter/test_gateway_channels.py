"""The MCP server's websocket to a gateway's kernel (``jupyter_agent/mcp_server/gateway.py``)
against a real Jupyter Kernel Gateway, without a browser: the kernel's epoch (the pid a gateway
does not give) is the count of new kernel sessions seen on IOPub, so a restart by the gateway
is told as one (``kernel_link.kernel_epoch``); a gateway that goes away closes the websocket,
which fails the waiting calls at once; a kernel the gateway does not have is a clear error.
(A kernel the gateway culls or deletes leaves the websocket open: the server's check that the
kernel lives tells that one, ``test_mcp_gateway_browser.py``.)
"""

from __future__ import annotations

import asyncio
import json
import urllib.request

import pytest

from jupyter_agent.mcp_server.gateway import LOST, GatewayChannels
from jupyter_agent.mcp_server.kernel_link import KernelComms, kernel_epoch
from jupyter_agent.mcp_server.tools import OutsideError

from .gateway import KernelGateway


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    from jupyter_server.gateway.gateway_client import GatewayClient

    server = KernelGateway(tmp_path_factory.mktemp("gateway"))
    GatewayClient.clear_instance()
    GatewayClient.instance(url=server.url)  # (as --GatewayClient.url sets it in a server)
    yield server
    GatewayClient.clear_instance()
    server.close()


def start_kernel(gateway: KernelGateway) -> str:
    request = urllib.request.Request(f"{gateway.url}/api/kernels", data=json.dumps({"name": "python3"}).encode(),
                                     method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as r:
        return str(json.loads(r.read())["id"])


def comms_to(kernel_id: str) -> KernelComms:
    """The server's comms to a gateway's kernel, as ``ServerBackend`` makes them."""
    from jupyter_server.gateway.managers import GatewayKernelManager

    kernel = GatewayKernelManager()
    kernel.kernel_id = kernel_id
    comms = KernelComms(kernel)
    assert isinstance(comms.client, GatewayChannels)
    return comms


async def session_after_request(comms: KernelComms) -> str:
    """The kernel's session once it answered a request of ours (its status messages carry it)."""
    comms._connected = False
    await comms.connect()
    assert comms.client.kernel_session
    return str(comms.client.kernel_session)


@pytest.mark.timeout(180)
async def test_a_restart_is_a_new_epoch(gateway):
    kernel_id = start_kernel(gateway)
    comms = comms_to(kernel_id)
    try:
        first = await session_after_request(comms)
        epoch = kernel_epoch(comms.kernel, comms)
        assert epoch == 0
        assert await session_after_request(comms) == first  # the same process: the same epoch

        await asyncio.to_thread(gateway.restart, kernel_id)
        # The fresh kernel says nothing to this connection unasked: the waiting call's check asks
        # it (ping, on control), and its answer tells the restart.
        for _ in range(300):
            if kernel_epoch(comms.kernel, comms) != epoch:
                break
            comms.client.ping()
            await asyncio.sleep(0.1)
        assert kernel_epoch(comms.kernel, comms) == epoch + 1  # a restart: told
        second = await session_after_request(comms)
        assert second != first and kernel_epoch(comms.kernel, comms) == epoch + 1  # once

    finally:
        comms.close()


@pytest.mark.timeout(180)
async def test_the_gateway_stopping_fails_the_waiting_call_at_once(tmp_path):
    """The websocket closes (the gateway stopped, or dropped the connection): the call waiting on
    it fails at once, saying nothing started a new kernel; the next connect says so too."""
    from jupyter_server.gateway.gateway_client import GatewayClient

    other = KernelGateway(tmp_path)
    gateway_client = GatewayClient.instance()
    urls = gateway_client.url, gateway_client.ws_url
    gateway_client.url, gateway_client.ws_url = other.url, other.url.replace("http", "ws", 1)
    try:
        comms = comms_to(start_kernel(other))
        try:
            await session_after_request(comms)
            waiting = asyncio.get_event_loop().create_future()
            comms.waiting["a-call"] = waiting
            await asyncio.to_thread(other.close)
            with pytest.raises(OutsideError, match="nothing started a new kernel"):
                await asyncio.wait_for(waiting, 60)
            assert comms.lost == LOST
            with pytest.raises(OutsideError, match="nothing started a new kernel"):
                await comms.connect()
        finally:
            comms.close()
    finally:
        gateway_client.url, gateway_client.ws_url = urls
        other.close()


@pytest.mark.timeout(120)
async def test_a_kernel_the_gateway_does_not_have_is_a_clear_error(gateway):
    comms = comms_to("00000000-0000-0000-0000-000000000000")
    try:
        with pytest.raises(OutsideError, match="cannot be reached"):
            await comms.connect()
    finally:
        comms.close()
