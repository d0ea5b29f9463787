"""Every provider end to end: the anthropic SDK's own Bedrock, Vertex and Foundry clients over
real HTTP to the fake Messages API, which serves each provider's paths, authentication and
(Bedrock) AWS event-stream encoding; and a local server without caching or thinking."""

from __future__ import annotations

import io
import json
import os
import sys

import httpx2
import pytest

from jupyter_agent import query
from jupyter_agent.cli import main
from jupyter_agent.loop.events import AssistantMessage, ModelRetry, Notice, StreamEvent
from jupyter_agent.loop.model_protocol import ModelError, ModelRequest
from jupyter_agent.loop.permission_result import PermissionAllow
from jupyter_agent.model import AnthropicModel
from jupyter_agent.model.compat import IMAGE_PLACEHOLDER, Feature, notice_kind
from jupyter_agent.model.providers import MissingExtra, Provider, ProviderSettings, wire_model
from jupyter_agent.policy import PolicyViolation
from jupyter_agent.redact import redact
from jupyter_agent.replay.cloud import FAKE_AWS_SECRET_ACCESS_KEY, FAKE_GOOGLE_TOKEN
from jupyter_agent.testing import http_error, overloaded, response, stream_error, text, tool_use
from jupyter_agent.view.labels import model_error_advice

CLOUD = ("bedrock", "vertex", "foundry")
#: every variable that could give a provider credentials, a region or a base URL
_PROVIDER_VARS = (
    "JUPYTER_AGENT_PROVIDER", "JUPYTER_AGENT_REPLAY", "JUPYTER_AGENT_MODEL", "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
    "AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_BEARER_TOKEN_BEDROCK", "ANTHROPIC_BEDROCK_BASE_URL",
    "GOOGLE_OAUTH_ACCESS_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS", "CLOUD_ML_REGION", "ANTHROPIC_VERTEX_PROJECT_ID",
    "GOOGLE_CLOUD_PROJECT", "ANTHROPIC_VERTEX_BASE_URL", "ANTHROPIC_FOUNDRY_API_KEY", "ANTHROPIC_FOUNDRY_RESOURCE",
    "ANTHROPIC_FOUNDRY_BASE_URL", "GCE_METADATA_HOST", "K_SERVICE",
)


@pytest.fixture
def clean_env(tmp_path, monkeypatch):
    """No provider credentials from this machine: no variables, no ~/.aws, no gcloud login,
    no instance metadata (boto3 would wait for it)."""
    for var in _PROVIDER_VARS:
        monkeypatch.delenv(var, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(home / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(home / "aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(home / "gcloud"))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(tmp_path / "no-policy"))
    return monkeypatch


def use(fake_api, provider, monkeypatch):
    for key, value in fake_api.env(provider).items():
        monkeypatch.setenv(key, value)


async def allow(name, input, ask):
    return PermissionAllow()


def request_of(*messages, **kw):
    return ModelRequest(messages=list(messages), system=[{"type": "text", "text": "be brief"}], tools=[], **kw)


async def collect(model, request):
    return [event async for event in model.stream(request)]


# -- each provider end to end -------------------------------------------------------------------
@pytest.mark.parametrize("provider", ["anthropic", *CLOUD])
async def test_a_tool_round_trip_through_query_on_each_provider(provider, fake_api, clean_env, tmp_path):
    use(fake_api, provider, clean_env)
    (tmp_path / "a.txt").write_text("the secret word is apricot\n")
    fake_api.add(response(tool_use("Read", {"file_path": str(tmp_path / "a.txt")})),
                 response(text("The word is apricot.", ), chunk_chars=4))
    run = query("What is the word in a.txt?", model="claude-sonnet-4-5", cwd=tmp_path, can_use_tool=allow)
    events = [event async for event in run]
    terminal = await run.wait()
    assert terminal.reason == "completed", terminal.message
    deltas = [e for e in events if isinstance(e, StreamEvent) and e.type == "content_block_delta"
              and (e.delta or {}).get("type") == "text_delta"]
    assert len(deltas) > 3  # streamed in pieces, not one block at the end
    assert "apricot" in "".join(d.delta["text"] for d in deltas)

    first, second = fake_api.requests
    assert first.provider == second.provider == provider and first.stream and first.outcome == "ok"
    results = [b for b in second.body["messages"][-1]["content"] if b.get("type") == "tool_result"]
    assert "apricot" in json.dumps(results)  # the tool's result went back to the model
    body, headers = first.body, first.headers
    if provider == "bedrock":
        assert first.path == "/model/anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream"
        assert headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIAFAKEFAKEFAKE0000/")
        assert "/us-east-1/bedrock/aws4_request" in headers["authorization"] and headers["x-amz-date"]
        assert body["anthropic_version"] and "model" not in body and "stream" not in body
    elif provider == "vertex":
        assert first.path == ("/projects/fake-project/locations/us-east5/publishers/anthropic/models/"
                              "claude-sonnet-4-5@20250929:streamRawPredict")
        assert headers["authorization"] == f"Bearer {FAKE_GOOGLE_TOKEN}"
        assert body["anthropic_version"] and "model" not in body and body["stream"] is True
    elif provider == "foundry":
        assert first.path == "/anthropic/v1/messages" and headers["api-key"]
        assert body["model"] == "claude-sonnet-4-5"
    else:
        assert first.path == "/v1/messages" and body["model"] == "claude-sonnet-4-5"


async def test_bedrock_stream_errors_arrive_as_exception_frames_and_are_retried(fake_api, clean_env):
    use(fake_api, "bedrock", clean_env)
    fake_api.add(stream_error(after=3, error_type="overloaded_error", message="busy"), response(text("fine")))
    model = AnthropicModel("claude-haiku-4-5", retry_base_delay_s=0.001, retry_max_delay_s=0.002)
    events = await collect(model, request_of({"role": "user", "content": "hi"}))
    retry = next(e for e in events if isinstance(e, ModelRetry))
    assert "serviceUnavailableException: busy" in retry.error and retry.error.startswith("overloaded")
    assert events[-1].message["content"] == [{"type": "text", "text": "fine"}]
    assert fake_api.requests[0].outcome == "stream_error"
    assert fake_api.requests[1].path == "/model/anthropic.claude-haiku-4-5-20251001-v1:0/invoke-with-response-stream"
    await model.aclose()


async def test_bedrock_http_errors_keep_their_status(fake_api, clean_env):
    use(fake_api, "bedrock", clean_env)
    fake_api.add(overloaded(), response(text("ok")))
    model = AnthropicModel("anthropic.claude-opus-4-1-20250805-v1:0", retry_base_delay_s=0.001)
    events = await collect(model, request_of({"role": "user", "content": "hi"}))
    assert [e.status for e in events if isinstance(e, ModelRetry)] == [529]
    assert fake_api.requests[0].path.startswith("/model/anthropic.claude-opus-4-1-20250805-v1:0/")  # unchanged
    await model.aclose()


@pytest.mark.parametrize("provider, names", [("bedrock", "Model access"), ("vertex", "Model Garden"),
                                             ("foundry", "ANTHROPIC_FOUNDRY_API_KEY")])
async def test_a_refusal_from_a_cloud_provider_says_what_to_check_there(provider, names, fake_api, clean_env):
    use(fake_api, provider, clean_env)
    fake_api.add(http_error(403, "permission_error", "You don't have access to the model with the specified model ID."))
    model = AnthropicModel("claude-sonnet-4-5")
    with pytest.raises(ModelError) as err:
        await collect(model, request_of({"role": "user", "content": "hi"}))
    message = str(err.value)
    assert err.value.kind == "permission" and names in message and "ANTHROPIC_API_KEY" not in message
    assert "You don't have access" in message and model_error_advice("permission", message) == ""
    await model.aclose()


async def test_the_fake_refuses_what_the_cloud_would(fake_api):
    """The fake checks SigV4's shape and the bearer token, so a client that stopped signing fails here."""
    async with httpx2.AsyncClient(base_url=fake_api.base_url) as client:
        body = {"max_tokens": 5, "messages": [{"role": "user", "content": "hi"}], "anthropic_version": "x"}
        bad = await client.post("/model/m/invoke-with-response-stream", json=body,
                                headers={"authorization": "AWS4-HMAC-SHA256 Credential=nonsense"})
        unsigned = await client.post("/model/m/invoke", json=body)
        no_token = await client.post("/projects/p/locations/r/publishers/anthropic/models/m:rawPredict", json=body)
        no_key = await client.post("/anthropic/v1/messages", json={**body, "model": "m"})
    assert [r.status_code for r in (bad, unsigned, no_token, no_key)] == [401] * 4
    assert "not an AWS SigV4 signature" in bad.json()["message"]  # AWS's error shape
    assert bad.headers["x-amzn-errortype"].startswith("UnrecognizedClientException:")
    assert [r.outcome for r in fake_api.requests] == ["unauthorized"] * 4


# -- credentials --------------------------------------------------------------------------------------
@pytest.mark.parametrize("provider, names", [
    ("bedrock", ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK"]),
    ("vertex", ["gcloud auth application-default login", "GOOGLE_APPLICATION_CREDENTIALS",
                "GOOGLE_OAUTH_ACCESS_TOKEN"]),
    ("foundry", ["ANTHROPIC_FOUNDRY_API_KEY"]),
])
async def test_without_credentials_the_message_names_what_to_set(provider, names, clean_env, tmp_path):
    model = AnthropicModel("claude-sonnet-4-5", provider=provider)
    with pytest.raises(ModelError) as err:
        await collect(model, request_of({"role": "user", "content": "hi"}))
    assert err.value.kind == "no_api_key"
    for name in names:
        assert name in str(err.value)


@pytest.mark.parametrize("provider, name", [("bedrock", "AWS_ACCESS_KEY_ID"), ("vertex", "GOOGLE_OAUTH_ACCESS_TOKEN"),
                                            ("foundry", "ANTHROPIC_FOUNDRY_API_KEY")])
def test_the_cli_says_what_to_set_before_starting_anything(provider, name, clean_env, tmp_path):
    nb = tmp_path / "nb.ipynb"
    nb.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    out = io.StringIO()
    assert main(["run", str(nb), "-p", "hi", "--provider", provider], out=io.StringIO(), err=out) == 2
    assert name in out.getvalue() and "--replay demo" in out.getvalue()  # exit 2, as without an Anthropic key


@pytest.mark.parametrize("provider, settings, missing", [
    ("bedrock", {"AWS_ACCESS_KEY_ID": "AKIAFAKEFAKEFAKE0000", "AWS_SECRET_ACCESS_KEY": "x" * 20}, "AWS_REGION"),
    ("vertex", {"GOOGLE_OAUTH_ACCESS_TOKEN": "ya29.token-of-test"}, "CLOUD_ML_REGION"),
    ("vertex", {"GOOGLE_OAUTH_ACCESS_TOKEN": "ya29.token-of-test", "CLOUD_ML_REGION": "global"},
     "ANTHROPIC_VERTEX_PROJECT_ID"),
    ("foundry", {"ANTHROPIC_FOUNDRY_API_KEY": "k" * 20}, "ANTHROPIC_FOUNDRY_RESOURCE"),
])
async def test_a_missing_region_project_or_resource_is_named(provider, settings, missing, clean_env):
    for key, value in settings.items():
        clean_env.setenv(key, value)
    with pytest.raises(ModelError, match=missing):
        await collect(AnthropicModel(provider=provider), request_of({"role": "user", "content": "hi"}))


async def test_a_missing_library_names_the_extra_to_install(clean_env):
    clean_env.setitem(sys.modules, "boto3", None)  # as if not installed: importing it raises ImportError
    with pytest.raises(MissingExtra, match=r"pip install 'jupyter-agent\[bedrock\]'"):
        await collect(AnthropicModel(provider="bedrock"), request_of({"role": "user", "content": "hi"}))


def test_provider_names_and_model_ids():
    assert wire_model(Provider.BEDROCK, "claude-sonnet-4-5") == "anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert wire_model(Provider.BEDROCK, "us.anthropic.claude-sonnet-4-5-20250929-v1:0").startswith("us.")
    assert wire_model(Provider.BEDROCK, "claude-sonnet-5-5") == "anthropic.claude-sonnet-5-5-v1:0"
    assert wire_model(Provider.VERTEX, "claude-opus-4-1") == "claude-opus-4-1@20250805"
    assert wire_model(Provider.VERTEX, "claude-3-5-haiku-20241022") == "claude-3-5-haiku@20241022"
    assert wire_model(Provider.VERTEX, "claude-sonnet-4-5@20250929") == "claude-sonnet-4-5@20250929"
    assert wire_model(Provider.FOUNDRY, "claude-sonnet-4-5") == "claude-sonnet-4-5"
    with pytest.raises(ValueError, match="bedrock, vertex, foundry"):
        AnthropicModel(provider="azure")


def test_keys_of_every_provider_are_redacted(clean_env):
    clean_env.setenv("AWS_SECRET_ACCESS_KEY", FAKE_AWS_SECRET_ACCESS_KEY)
    shown = redact(f"env: {FAKE_AWS_SECRET_ACCESS_KEY} AKIAIOSFODNN7EXAMPLE {FAKE_GOOGLE_TOKEN}")
    assert shown == "env: [redacted AWS_SECRET_ACCESS_KEY] [redacted credential] [redacted credential]"
    assert "fake" not in repr(AnthropicModel("m", provider="foundry", api_key="fake-foundry-key-123"))


# -- the administrator's policy ---------------------------------------------------------------------
def _policy(tmp_path, monkeypatch, **settings):
    admin = tmp_path / "admin"
    admin.mkdir(exist_ok=True)
    (admin / "jupyter_agent_policy.json").write_text(json.dumps(settings))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(admin))
    return admin


async def test_a_pinned_provider_and_region_apply_to_every_run(fake_api, clean_env, tmp_path):
    use(fake_api, "bedrock", clean_env)
    clean_env.delenv("JUPYTER_AGENT_PROVIDER")
    # (the fake stands for the region's address: a pinned policy ignores ANTHROPIC_BEDROCK_BASE_URL)
    admin = _policy(tmp_path, clean_env, provider="bedrock", provider_region="eu-central-1",
                    provider_base_url=fake_api.base_url)
    fake_api.add(response(text("hello")))
    terminal = await query("hi", model="claude-sonnet-4-5", cwd=tmp_path).wait()
    assert terminal.reason == "completed", terminal.message
    assert "/eu-central-1/bedrock/aws4_request" in fake_api.requests[0].headers["authorization"]
    with pytest.raises(PolicyViolation, match=f"sends every run to 'bedrock'.*{admin}|{admin}.*'bedrock'"):
        query("hi", model="claude-sonnet-4-5", provider="vertex", cwd=tmp_path)
    with pytest.raises(PolicyViolation):  # a model made by hand for another provider too
        query("hi", model=fake_api.model(provider="anthropic"), cwd=tmp_path)


def test_policies_that_pin_different_providers_stop_every_run(clean_env, tmp_path):
    from jupyter_agent.policy import load_policy

    first, second = tmp_path / "one", tmp_path / "two"
    for folder, provider in ((first, "bedrock"), (second, "vertex")):
        folder.mkdir()
        (folder / "jupyter_agent_policy.json").write_text(json.dumps({"provider": provider}))
    with pytest.raises(PolicyViolation, match="pin different values of provider"):
        load_policy([first, second])
    (first / "jupyter_agent_policy.json").write_text(json.dumps({"provider": "azure"}))
    with pytest.raises(PolicyViolation, match="invalid provider"):
        load_policy([first])
    assert load_policy([second]).provider_settings(ProviderSettings(region="r")).region == "r"


def test_agent_config_provider_follows_the_policy(clean_env, tmp_path):
    from traitlets import TraitError

    from jupyter_agent.jupyter.kernel.agent_config import AgentConfig

    config = AgentConfig(provider="Vertex", provider_region="europe-west1")
    assert config.provider == "vertex" and config.provider_settings().region == "europe-west1"
    _policy(tmp_path, clean_env, provider="bedrock")
    with pytest.raises(TraitError, match="not allowed"):
        AgentConfig(provider="vertex")
    assert AgentConfig(provider="bedrock").provider == "bedrock"


# -- local servers that speak the Messages API -----------------------------------------------------
async def test_a_server_without_caching_or_thinking_is_told_once_and_used_without_them(fake_api_factory):
    api = fake_api_factory(ollama_like=True, unsupported=("thinking", "image", "tool_choice"))
    api.add(response(text("one")), response(text("two")))
    model = api.model("qwen3:8b", thinking={"type": "enabled", "budget_tokens": 1024})
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    first = await collect(model, request_of({"role": "user", "content": [image, {"type": "text", "text": "hi"}]},
                                            extra={"tool_choice": {"type": "auto"}}))
    history = [{"role": "user", "content": [image, {"type": "text", "text": "hi"}]},
               first[-1].message, {"role": "user", "content": "again"}]
    second = await collect(model, request_of(*history))
    notices = [e.kind for e in first + second if isinstance(e, Notice)]
    assert sorted(notices) == sorted(notice_kind(f) for f in Feature)  # each once, none twice
    assert isinstance(second[-1], AssistantMessage) and second[-1].message["content"][0]["text"] == "two"
    # three refusals (each resent at once without the feature), then every request goes without them
    assert [r.outcome for r in api.requests] == ["rejected", "rejected", "rejected", "ok", "ok"]
    last = api.requests[-1].body
    assert "thinking" not in last and "tool_choice" not in last and IMAGE_PLACEHOLDER in json.dumps(last)
    assert "cache_control" not in json.dumps(last)
    assert "cache_read_input_tokens" not in json.dumps(first[-1].message)  # nothing was invented
    api.expect_rejections = True
    await model.aclose()


async def test_count_tokens_is_absent_on_an_ollama_like_server(fake_api_factory):
    api = fake_api_factory(ollama_like=True)
    async with httpx2.AsyncClient(base_url=api.base_url) as client:
        r = await client.post("/v1/messages/count_tokens", headers={"x-api-key": "k"},
                              json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 404


def test_the_fake_env_points_each_provider_here(fake_api):
    for provider in CLOUD:
        env = fake_api.env(provider)
        assert env["JUPYTER_AGENT_PROVIDER"] == provider
        assert any(v.startswith(fake_api.base_url) for v in env.values())
    assert os.environ.get("JUPYTER_AGENT_PROVIDER") in (None, "", "anthropic")


async def test_a_local_model_shows_its_cost_and_window_as_unknown_not_as_numbers(fake_api_factory, tmp_path):
    """A local model has no list price and no known window: the displays say "unknown" rather
    than $0.0000 or a fraction of a guessed 200k; a Claude model on the same server keeps both."""
    from jupyter_agent.view.runmodel import RunModel
    from jupyter_agent.view.transcript import context_line, format_usage

    api = fake_api_factory(ollama_like=True)
    shown = {}
    for name in ("qwen3:8b", "claude-haiku-4-5"):
        api.add(response(text("hello")))
        view = RunModel(model=name)
        run = query("hi", model=api.model(name), cwd=tmp_path)
        async for event in run:
            view.handle(event)
        view.finish(await run.wait())
        shown[name] = (format_usage(view), context_line(view))
    assert "cost unknown" in shown["qwen3:8b"][0] and "$" not in shown["qwen3:8b"][0]
    assert "window unknown" in shown["qwen3:8b"][1] and "%" not in shown["qwen3:8b"][1]
    assert "≈ $" in shown["claude-haiku-4-5"][0] and "/ 200k" in shown["claude-haiku-4-5"][1]


def test_the_demo_runs_online_through_a_cloud_provider_with_its_credentials(tmp_path, clean_env):
    from jupyter_agent.environment import REPLAY_ENV
    from jupyter_agent.launch import lab_command

    folder = tmp_path / "notebooks"
    folder.mkdir()
    vertex = {"JUPYTER_AGENT_PROVIDER": "vertex", "GOOGLE_OAUTH_ACCESS_TOKEN": "ya29.launch-test-token",
              "CLOUD_ML_REGION": "us-east5", "ANTHROPIC_VERTEX_PROJECT_ID": "p", "PATH": "/usr/bin"}
    _, env, note = lab_command(["--notebooks", str(folder)], environ=vertex)
    assert REPLAY_ENV not in env and "JUPYTER_AGENT_PROVIDER=vertex" in note
    _, env, note = lab_command(["--notebooks", str(folder)], environ={**vertex, "CLOUD_ML_REGION": ""})
    assert env[REPLAY_ENV] and "OFFLINE" in note  # no region: not usable, so the offline demo


async def test_a_conversation_keeps_its_provider_for_every_run(fake_api, clean_env, tmp_path):
    from jupyter_agent import Conversation

    for key, value in fake_api.env("foundry").items():
        if key != "JUPYTER_AGENT_PROVIDER":  # the conversation says it, not the environment
            clean_env.setenv(key, value)
    fake_api.add(response(text("one")), response(text("two")), response(text("three")))
    conv = Conversation(provider="foundry", cwd=tmp_path)
    assert (await conv.send("first").wait()).reason == "completed"
    assert (await conv.send("second").wait()).reason == "completed"
    assert (await conv.send("third, with this cell's own model", model="claude-haiku-4-5").wait()).reason == "completed"
    assert [r.path for r in fake_api.requests] == ["/anthropic/v1/messages"] * 3
    assert fake_api.requests[-1].body["model"] == "claude-haiku-4-5"
    await conv.aclose()


async def test_bedrock_saying_the_prompt_is_too_long_is_a_prompt_too_long_error(fake_api_factory, clean_env):
    """Bedrock answers errors in AWS's shape ({"message"}, x-amzn-errortype); the reactive
    compaction still sees "prompt is too long" as such."""
    from jupyter_agent.loop.model_protocol import PromptTooLongError

    api = fake_api_factory(context_window=1_000, expect_rejections=True)
    use(api, "bedrock", clean_env)
    model = AnthropicModel("claude-sonnet-4-5")
    with pytest.raises(PromptTooLongError, match="prompt is too long"):
        await collect(model, request_of({"role": "user", "content": "word " * 5_000}))
    assert api.requests[0].outcome == "prompt_too_long" and api.requests[0].provider == "bedrock"
    await model.aclose()


async def test_a_bedrock_api_key_is_sent_as_a_bearer_token_without_aws_keys(fake_api, clean_env):
    clean_env.setenv("ANTHROPIC_BEDROCK_BASE_URL", fake_api.base_url)
    clean_env.setenv("AWS_REGION", "ap-northeast-1")
    clean_env.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-of-the-test")
    fake_api.add(response(text("hi")))
    model = AnthropicModel("claude-haiku-4-5", provider="bedrock")
    events = await collect(model, request_of({"role": "user", "content": "hi"}))
    assert events[-1].message["content"] == [{"type": "text", "text": "hi"}]
    assert fake_api.requests[0].headers["authorization"] == "<redacted>"  # not the fake's: never kept
    assert fake_api.requests[0].route.auth_problem is None and "x-amz-date" not in fake_api.requests[0].headers
    await model.aclose()


async def test_a_foundry_client_made_by_hand_with_an_entra_id_token_provider(fake_api, clean_env):
    """docs/providers.md: Foundry with Microsoft Entra ID is the SDK's client handed over."""
    import anthropic

    tokens = []

    def entra_token() -> str:  # what azure.identity.get_bearer_token_provider returns is called so
        tokens.append(1)
        return "entra-id-token-of-the-test"

    client = anthropic.AsyncAnthropicFoundry(base_url=f"{fake_api.base_url}/anthropic",
                                             azure_ad_token_provider=entra_token)
    fake_api.add(response(text("hi")))
    model = AnthropicModel("claude-sonnet-4-5", provider="foundry", client=client)
    events = await collect(model, request_of({"role": "user", "content": "hi"}))
    assert events[-1].message["content"][0]["text"] == "hi" and tokens
    assert fake_api.requests[0].path == "/anthropic/v1/messages" and fake_api.requests[0].outcome == "ok"
    await client.close()


@pytest.mark.parametrize("provider, base_url, names", [
    ("bedrock", "ANTHROPIC_BEDROCK_BASE_URL", "AWS_REGION"), ("vertex", "ANTHROPIC_VERTEX_BASE_URL", "CLOUD_ML_REGION"),
    ("foundry", "ANTHROPIC_FOUNDRY_BASE_URL", "ANTHROPIC_FOUNDRY_RESOURCE")])
async def test_a_cloud_endpoint_out_of_reach_says_what_to_check_there(provider, base_url, names, fake_api, clean_env):
    """Not ANTHROPIC_BASE_URL, which a cloud provider's requests never use."""
    import socket

    use(fake_api, provider, clean_env)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    clean_env.setenv(base_url, f"http://127.0.0.1:{port}")
    model = AnthropicModel("claude-sonnet-4-5", max_retries=0)
    with pytest.raises(ModelError) as err:
        await collect(model, request_of({"role": "user", "content": "hi"}))
    message = str(err.value)
    assert err.value.kind == "connection" and names in message and base_url in message
    assert "ANTHROPIC_BASE_URL" not in message.replace(base_url, "")
    assert model_error_advice("connection", message) == ""  # the view adds no Anthropic advice
    await model.aclose()
