"""Round 3 of the administrator's policy (issue 42, findings 3 to 5), through the public
entry points: the pins of where requests go that no environment variable moves (each
provider, the real SDK clients over real HTTP to two fake Messages APIs: the approved one and
one the environment names), the fallback model held to ``allowed_models`` after a real 529,
and the policy read from the places a user cannot take away (``env -u JUPYTER_CONFIG_PATH``
with ``jupyter agent run`` in a Python environment of the test's own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from jupyter_agent import query
from jupyter_agent.loop.events import ModelFallback
from jupyter_agent.model import AnthropicModel
from jupyter_agent.policy import POLICY_FILE, PolicyViolation, load_policy
from jupyter_agent.testing import overloaded, response, text
from tests import test_providers
from tests.test_providers import CLOUD, use

#: no provider settings of this machine (variables, ~/.aws, gcloud), in every test here
clean_env = test_providers.clean_env
pytestmark = pytest.mark.usefixtures("clean_env")

REPO = Path(__file__).resolve().parents[1]


def _policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **settings: object) -> Path:
    admin = tmp_path / "admin"
    admin.mkdir(exist_ok=True)
    (admin / POLICY_FILE).write_text(json.dumps(settings))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(admin))
    return admin


# -- 4. provider pins no environment variable overrides -------------------------------------------
@pytest.mark.parametrize("provider", ["anthropic", *CLOUD])
async def test_a_pinned_base_url_wins_over_the_providers_variable(provider, fake_api_factory, monkeypatch, tmp_path):
    approved, elsewhere = fake_api_factory(), fake_api_factory()
    use(elsewhere, provider, monkeypatch)  # credentials, and the provider's *_BASE_URL to elsewhere
    monkeypatch.delenv("JUPYTER_AGENT_PROVIDER", raising=False)
    if provider == "anthropic":
        monkeypatch.setenv("ANTHROPIC_BASE_URL", elsewhere.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", elsewhere.api_key)
    base = approved.base_url + ("/anthropic" if provider == "foundry" else "")
    _policy(tmp_path, monkeypatch, provider=provider, provider_base_url=base)
    approved.add(response(text("from the approved address")))
    terminal = await query("hi", model="claude-sonnet-4-5", cwd=tmp_path).wait()
    assert terminal.reason == "completed", terminal.message
    assert len(approved.requests) == 1 and elsewhere.requests == []
    # a base_url in code is refused too, and a model object made around the pins
    with pytest.raises(ValueError, match="pins where requests go"):
        AnthropicModel("claude-sonnet-4-5", provider=provider, base_url=elsewhere.base_url,
                       provider_settings=load_policy().provider_settings())
    with pytest.raises(PolicyViolation, match="does not go where the administrator's policy"):
        query("hi", model=elsewhere.model("claude-sonnet-4-5", provider=provider), cwd=tmp_path)
    assert elsewhere.requests == []


async def test_a_pinned_foundry_resource_is_not_moved_by_its_base_url_variable(fake_api, monkeypatch, tmp_path):
    """The issue's case: ``{"provider": "foundry", "provider_resource": "corp-approved"}`` with
    ``ANTHROPIC_FOUNDRY_BASE_URL`` in the environment. The client the run makes goes to the
    pinned resource; the address in the variable gets nothing."""
    use(fake_api, "foundry", monkeypatch)
    _policy(tmp_path, monkeypatch, provider="foundry", provider_resource="corp-approved")
    model = query("hi", model="claude-sonnet-4-5", cwd=tmp_path).params.model
    client = model._get_client()  # (the SDK's Foundry client the run's first request would use)
    assert str(client.base_url) == "https://corp-approved.services.ai.azure.com/anthropic/"
    await model.aclose()
    assert fake_api.requests == []


@pytest.mark.parametrize("variable", ["ANTHROPIC_BEDROCK_BASE_URL", "AWS_REGION"])
async def test_a_pinned_bedrock_region_goes_to_that_region_only(variable, fake_api, monkeypatch, tmp_path):
    use(fake_api, "bedrock", monkeypatch)
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    _policy(tmp_path, monkeypatch, provider="bedrock", provider_region="eu-central-1")
    model = query("hi", model="claude-sonnet-4-5", cwd=tmp_path).params.model
    client = model._get_client()
    assert str(client.base_url).rstrip("/") == "https://bedrock-runtime.eu-central-1.amazonaws.com"
    await model.aclose()
    assert fake_api.requests == []


def test_a_base_url_pin_must_be_an_address(monkeypatch, tmp_path):
    _policy(tmp_path, monkeypatch, provider="anthropic", provider_base_url="file:///etc/passwd")
    with pytest.raises(PolicyViolation, match="invalid provider_base_url"):
        load_policy()


# -- 5. the fallback model is held to allowed_models ---------------------------------------------
async def test_the_fallback_model_is_checked_like_the_model(fake_api, monkeypatch, tmp_path):
    _policy(tmp_path, monkeypatch, allowed_models=["claude-sonnet-*"])
    with pytest.raises(PolicyViolation, match="fallback model 'claude-opus-4-1' is not allowed"):
        query("hi", model=fake_api.model("claude-sonnet-4-5", fallback_model="claude-opus-4-1", fallback_after=1),
              cwd=tmp_path)
    with pytest.raises(PolicyViolation, match="'claude-opus-4-1' is not allowed"):
        query("hi", model="claude-opus-4-1", cwd=tmp_path)
    assert fake_api.requests == []
    # an allowed fallback is used after the 529, as before (the check above is what stopped it)
    fake_api.add(overloaded(), response(text("from the fallback")))
    run = query("hi", model=fake_api.model("claude-sonnet-4-5", fallback_model="claude-sonnet-4", fallback_after=1),
                cwd=tmp_path)
    events = [event async for event in run]
    assert any(isinstance(e, ModelFallback) and e.to_model == "claude-sonnet-4" for e in events)
    assert [r.body["model"] for r in fake_api.requests] == ["claude-sonnet-4-5", "claude-sonnet-4"]


# -- 3. the policy stays when JUPYTER_CONFIG_PATH is unset ---------------------------------------
def test_the_system_and_environment_folders_are_read_whatever_the_environment_says():
    """In a fresh process (jupyter_core reads the variables when it is imported): with
    ``$JUPYTER_PLATFORM_DIRS`` set, jupyter_core's system folders become ``$XDG_CONFIG_DIRS``'s,
    which a user may point anywhere; the policy's stay."""
    env = {k: v for k, v in os.environ.items() if k != "JUPYTER_CONFIG_PATH"}
    code = "from jupyter_agent.policy import policy_dirs; print('\\n'.join(map(str, policy_dirs())))"
    for extra in ({}, {"JUPYTER_PLATFORM_DIRS": "1", "XDG_CONFIG_DIRS": "/nowhere"},
                  {"JUPYTER_CONFIG_PATH": "/srv/more"}):
        dirs = subprocess.run([sys.executable, "-c", code], env={**env, **extra}, check=True, capture_output=True,
                              text=True).stdout.split("\n")
        for fixed in (os.path.join(sys.prefix, "etc", "jupyter"), "/usr/local/etc/jupyter", "/etc/jupyter",
                      *extra.get("JUPYTER_CONFIG_PATH", "").split()):
            assert fixed in dirs, (extra, dirs)


def _environment_of_its_own(tmp_path: Path) -> Path:
    """A Python environment (``python -m venv``) whose ``sys.prefix`` is the test's, with this
    checkout's packages on its path: its ``etc/jupyter`` is an environment config folder no
    other test reads."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(subprocess.run([str(venv / "bin/python"), "-c", where], check=True, capture_output=True,
                               text=True).stdout.strip())
    ours = sysconfig.get_paths()["purelib"]
    (site / "checkout.pth").write_text(f"import site; site.addsitedir({ours!r})\n{REPO}\n")
    return venv


def test_unsetting_jupyter_config_path_does_not_lift_the_policy(tmp_path, fake_api):
    """The issue's repro: ``env -u JUPYTER_CONFIG_PATH jupyter agent run nb.ipynb -p hi --model
    claude-opus-4-1 --permission-mode bypassPermissions`` ran. With the policy in the
    environment's config folder it is refused, with the variable set or not."""
    import nbformat

    venv = _environment_of_its_own(tmp_path)
    etc = venv / "etc" / "jupyter"
    etc.mkdir(parents=True)
    (etc / POLICY_FILE).write_text(json.dumps({"allowed_models": ["claude-sonnet-*"], "permission_mode": "default",
                                               "max_budget_usd": 0.05}))
    nb = tmp_path / "nb.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), nb)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "JUPYTER_AGENT_", "JUPYTER_CONFIG"))}
    env.update(fake_api.env(), HOME=str(tmp_path), JUPYTER_CONFIG_DIR=str(tmp_path / "user-jupyter"))
    for argv in (["--model", "claude-opus-4-1"], ["--permission-mode", "bypassPermissions"]):
        done = subprocess.run([str(venv / "bin/python"), "-m", "jupyter_agent.cli", "run", str(nb), "-p", "hi",
                               *argv], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert done.returncode != 0, (argv, done.stdout, done.stderr)
        assert str(etc / POLICY_FILE) in done.stdout + done.stderr, (argv, done.stdout, done.stderr)
    assert fake_api.requests == []
