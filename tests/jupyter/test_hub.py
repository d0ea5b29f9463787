"""A real JupyterHub with two users (docs/deploy.md, "JupyterHub").

The hub (jupyterhub from PyPI) runs its own proxy (configurable-http-proxy from npm, which
./dev installs into .venv/chp), the dummy authenticator with a password and one local
process per user's server, each user's home under this test's temporary folder. Each user
gets a token with their password, starts their server through the hub's REST API and runs
a kernel with ``%load_ext jupyter_agent`` through the hub's proxy (REST + websocket, the
user's token): the agent (real SDK, the fake Messages API) works in that user's folder and
lists only that user's notebooks, and the administrator's policy
(``jupyter_agent_policy.json`` on the servers' ``$JUPYTER_CONFIG_PATH``) holds against the
user's own ``%config``, and sends every run to the provider and region it pins (Amazon Bedrock
in eu-central-1: the fake serves Bedrock's paths, SigV4 and event-stream; docs/providers.md).
When the hub stops, no hub, proxy, server or kernel process is left.
"""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from jupyter_agent.policy import POLICY_FILE
from jupyter_agent.testing import FakeMessagesAPI, response, text, tool_use

from .hub import CHP, KernelClient, kill_survivors, running_hub, survivors

USERS = ("alice", "bob")
EMPTY_NOTEBOOK = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
LAST_RESULT = ("from jupyter_agent.jupyter.magic.agent_magic import get_session\n"
               "print([b['content'] for b in get_session(get_ipython()).runs[-1].state.messages[-1]['content']])")


@pytest.fixture
def proxy_installed() -> None:
    if not CHP.exists():
        message = f"configurable-http-proxy is not installed at {CHP} (./dev installs it with npm)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


# It costs ~33 s of CPU in all (hub, proxy, two servers, two kernels, this test), so ~20 s
# of wall time on two free cores; a machine loaded ten times over took 150-200 s.
@pytest.mark.timeout(300)
async def test_two_users_on_a_hub_each_agent_in_its_own_folder_under_the_admin_policy(tmp_path, proxy_installed):
    admin = tmp_path / "admin"
    admin.mkdir()
    policy = admin / POLICY_FILE
    api = FakeMessagesAPI([], strict=True).start()
    # (the fake stands for the region's address: under a pin, ANTHROPIC_BEDROCK_BASE_URL is not read)
    policy.write_text(json.dumps({"allowed_models": ["claude-sonnet-*"], "permission_mode": "default",
                                  "max_budget_usd": 0.05, "provider": "bedrock",
                                  "provider_region": "eu-central-1", "provider_base_url": api.base_url}))
    marker = ""
    try:
        # the spawner gives each server AWS credentials (fake ones); no provider of their own
        aws = {k: v for k, v in api.env("bedrock").items() if k != "JUPYTER_AGENT_PROVIDER"}
        aws.update(AWS_REGION="us-west-2", AWS_EC2_METADATA_DISABLED="true")  # the policy's region wins
        with running_hub(tmp_path / "hub", USERS, {**aws, "JUPYTER_CONFIG_PATH": str(admin)}) as hub:
            marker = hub.marker
            for user in USERS:
                await hub.login_token(user)
            await asyncio.gather(*(hub.start_server(user) for user in USERS))
            for user in USERS:  # each user's notebook, saved through their own server
                await hub.request("PUT", f"/user/{user}/api/contents/{user}-work.ipynb", token=hub.tokens[user],
                                  body={"type": "notebook", "content": EMPTY_NOTEBOOK}, expect=201)
            code, _ = await hub.request("GET", "/user/alice/api/contents", token=hub.tokens["bob"])
            assert code == 403  # bob's token does not open alice's server
            kernels = {user: await KernelClient(hub, user).open(f"{user}-work.ipynb") for user in USERS}
            for kernel in kernels.values():
                assert (await kernel.execute("%load_ext jupyter_agent"))[0] == "ok"

            # the user's own %config cannot loosen the administrator's policy
            alice = kernels["alice"]
            for setting in ("permission_mode = 'bypassPermissions'", "permission_mode = 'acceptEdits'",
                            "model = 'claude-opus-4-1'", "max_budget_usd = 5.0", "provider = 'vertex'"):
                _, out = await alice.execute(f"%config AgentConfig.{setting}")
                assert "not allowed" in out or "above the administrator's" in out, (setting, out)
                assert str(policy) in out, out
            _, status = await alice.execute("%agent")
            assert "permission mode: default" in status, status
            assert f"$0.05 per run (administrator's policy: {policy})" in status, status
            assert "provider:        bedrock (the administrator's policy), region eu-central-1" in status, status

            # alice's agent lists the notebooks of its folder: hers alone
            api.add(response(tool_use("Glob", {"pattern": "**/*.ipynb"})), response(text("You have one notebook.")))
            status, out = await alice.execute("%%agent\nWhich notebooks do I have?")
            assert status == "ok" and "completed" in out, out
            assert str(hub.homes / "alice") in json.dumps(api.requests[-2].body)  # its working folder
            listing = str(api.requests[-1].body["messages"][-1]["content"])
            assert "alice-work.ipynb" in listing and "bob" not in listing, listing

            # bob's agent too; its first response costs more than the policy's spend limit
            api.add(response(tool_use("Glob", {"pattern": "**/*.ipynb"}), usage={"input_tokens": 20_000}))
            status, out = await kernels["bob"].execute("%%agent\nWhich notebooks do I have?")
            assert status == "ok" and "`max_budget`" in out and "spend limit of \\$0.05" in out, out
            assert str(hub.homes / "bob") in json.dumps(api.requests[-1].body)
            _, listing = await kernels["bob"].execute(LAST_RESULT)
            assert "bob-work.ipynb" in listing and "alice" not in listing, listing
            assert len(api.requests) == 3 and not api.rejections
            for request in api.requests:  # every run went where the policy sends it
                assert request.provider == "bedrock", request.path
                assert "/eu-central-1/bedrock/aws4_request" in request.headers["authorization"]
            for kernel in kernels.values():
                kernel.close()
            # the check below sees them while they run: the hub, its proxy, two servers, two kernels
            assert len(survivors(marker)) >= 6, survivors(marker)
    finally:
        api.close()
        left = survivors(marker) if marker else []
        kill_survivors(marker) if marker else None
    assert left == [], f"processes outlived the hub: {left}"
