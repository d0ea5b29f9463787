"""``%%agent`` in a real kernel whose environment sends it to Amazon Bedrock (the fake API
serving Bedrock's paths, SigV4 and event-stream frames): a tool round trip, the provider
switched with ``%config``, and the no-credentials message of a provider the kernel has no
credentials for."""

from __future__ import annotations

import pytest
import pytest_asyncio

from jupyter_agent.replay.cloud import FAKE_AWS_SECRET_ACCESS_KEY
from jupyter_agent.testing import response, text, tool_use

from .frontend import Frontend, isolated_env
from .conftest import WAIT_FOR_WARMUP
from .test_kernel_magic import display_id_of, transcript

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def kernel(api, module_tmp):
    """A kernel whose environment chooses Bedrock, with fake AWS credentials, pointed at the fake."""
    home = module_tmp / "home"
    home.mkdir(exist_ok=True)
    env = isolated_env(module_tmp, **api.env("bedrock"), HOME=str(home), CLOUDSDK_CONFIG=str(home / "gcloud"),
                       AWS_CONFIG_FILE=str(home / "aws"), AWS_SHARED_CREDENTIALS_FILE=str(home / "aws-creds"),
                       AWS_EC2_METADATA_DISABLED="true")
    for name in ("GOOGLE_OAUTH_ACCESS_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS", "CLOUD_ML_REGION"):
        env.pop(name, None)
    frontend = await Frontend(module_tmp, env).start()
    assert (await frontend.execute("%load_ext jupyter_agent"))["reply"]["status"] == "ok"
    await frontend.execute(WAIT_FOR_WARMUP, timeout=120)
    yield frontend
    await frontend.stop()


async def test_a_cell_runs_through_bedrock_and_its_secret_is_nowhere(kernel, script, api, module_tmp):
    target = module_tmp / "notes.txt"
    target.write_text("bedrock says hi\n")
    script(response(tool_use("Read", {"file_path": str(target)})), response(text("It says: bedrock says hi.")))
    await kernel.execute("%agent new")
    result = await kernel.execute("%%agent\nWhat does notes.txt say?")
    md = await transcript(kernel, display_id_of(result), timeout=60)
    assert "It says: bedrock says hi." in md and "✓ *Finished*" in md
    bedrock = [r for r in api.requests if r.provider == "bedrock"]
    assert len(bedrock) == 2 and all(r.path.endswith("/invoke-with-response-stream") for r in bedrock)
    assert bedrock[0].headers["authorization"].startswith("AWS4-HMAC-SHA256 ")
    assert FAKE_AWS_SECRET_ACCESS_KEY not in str(kernel.messages)  # never in what the kernel sent


async def test_a_provider_without_credentials_says_what_to_set_and_starts_nothing(kernel, api):
    before = len(api.requests)
    await kernel.execute("%config AgentConfig.provider = 'vertex'")
    try:
        result = await kernel.execute("%%agent\nhello")
        out = "".join(o.get("text", "") for o in result["outputs"])
        assert "No Google Cloud credentials found for Vertex AI" in out, result["outputs"]
        assert "gcloud auth application-default login" in out and "--replay demo" in out
        assert "Traceback" not in out and len(api.requests) == before
        assert not [o for o in result["outputs"] if o["msg_type"] == "display_data"]
    finally:
        await kernel.execute("%config AgentConfig.provider = ''")


async def test_agent_status_shows_the_provider(kernel):
    await kernel.execute("%config AgentConfig.provider_region = 'eu-west-3'")
    try:
        out = (await kernel.execute("%agent"))["outputs"][0]["text"]
        assert "provider:        bedrock, region eu-west-3" in out  # from $JUPYTER_AGENT_PROVIDER, then the setting
    finally:
        await kernel.execute("%config AgentConfig.provider_region = ''")


async def test_the_line_magic_sets_the_provider(kernel):
    try:
        await kernel.execute("%agent --provider foundry")
        out = (await kernel.execute("%agent"))["outputs"][0]["text"]
        assert "provider:        foundry" in out
        bad = await kernel.execute("%agent --provider azure")
        assert "invalid choice: 'azure'" in str(bad["outputs"])
    finally:
        await kernel.execute("%agent --provider ''")
    assert "provider:        bedrock" in (await kernel.execute("%agent"))["outputs"][0]["text"]
