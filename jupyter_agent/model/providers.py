"""Where Claude is reached: the Anthropic API, Amazon Bedrock, Google Vertex AI or Microsoft Foundry.

Each provider goes through the anthropic SDK's own client class (``AsyncAnthropic``,
``AsyncAnthropicBedrock``, ``AsyncAnthropicVertex``, ``AsyncAnthropicFoundry``), with
credentials from the provider's usual places (docs/providers.md):

- ``anthropic``: ``ANTHROPIC_API_KEY`` (or ``ANTHROPIC_AUTH_TOKEN``), ``ANTHROPIC_BASE_URL``;
- ``bedrock``: AWS credentials (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, ``AWS_PROFILE``,
  anything boto3 finds, or a Bedrock API key ``AWS_BEARER_TOKEN_BEDROCK``), ``AWS_REGION``;
- ``vertex``: Google Application Default Credentials (or an access token in
  ``GOOGLE_OAUTH_ACCESS_TOKEN``), ``CLOUD_ML_REGION``, ``ANTHROPIC_VERTEX_PROJECT_ID``;
- ``foundry``: ``ANTHROPIC_FOUNDRY_API_KEY`` and ``ANTHROPIC_FOUNDRY_RESOURCE`` (or
  ``ANTHROPIC_FOUNDRY_BASE_URL``).

Nothing here imports ``anthropic`` at module level (the SDK is imported when a client is
made), so the settings, the policy and the credential checks stay cheap to load.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, cast

from ..loop.model_protocol import ModelError

log = logging.getLogger(__name__)

__all__ = ["Provider", "PROVIDER_ENV", "VERTEX_TOKEN_ENV", "PROVIDER_NAMES", "ProviderSettings",
           "resolve_provider", "wire_model", "credentials_problem", "make_client", "raw_events",
           "MissingExtra", "NO_CREDENTIALS", "NO_API_KEY_MESSAGE", "base_url_from_env"]

#: The environment variable that picks the provider when no setting does.
PROVIDER_ENV = "JUPYTER_AGENT_PROVIDER"
#: An OAuth access token for Vertex AI, used instead of Application Default Credentials
#: (e.g. ``export GOOGLE_OAUTH_ACCESS_TOKEN=$(gcloud auth print-access-token)``).
VERTEX_TOKEN_ENV = "GOOGLE_OAUTH_ACCESS_TOKEN"


class Provider(str, Enum):
    """Where requests go. The value is what settings, the CLI and the policy say."""

    ANTHROPIC = "anthropic"
    BEDROCK = "bedrock"
    VERTEX = "vertex"
    FOUNDRY = "foundry"


PROVIDER_NAMES = tuple(p.value for p in Provider)

#: The pip extra each provider's SDK client needs, and the libraries it brings.
_EXTRAS = {Provider.BEDROCK: ("bedrock", ("boto3", "botocore")),
           Provider.VERTEX: ("vertex", ("google.auth",))}

#: What a user without an Anthropic API key reads (the ``anthropic`` provider).
NO_API_KEY_MESSAGE = (
    "No Anthropic API key found. Set one in the environment before starting Jupyter "
    "(`export ANTHROPIC_API_KEY=sk-ant-...`) or pass api_key=... to AnthropicModel. "
    "To run offline without a key, use the replay model: "
    "`export JUPYTER_AGENT_REPLAY=path/to/transcript.json`, or "
    "model=jupyter_agent.testing.ReplayModel('path/to/transcript.json') (jupyter_agent.replay.model)."
)

#: What a user without credentials reads, per provider: exactly what to set.
NO_CREDENTIALS = {
    Provider.BEDROCK: (
        "No AWS credentials found for Amazon Bedrock. Set them in the environment before starting "
        "Jupyter: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (plus AWS_SESSION_TOKEN for temporary "
        "credentials), or AWS_PROFILE naming a profile of ~/.aws/config (`aws sso login` or `aws "
        "configure`), or a Bedrock API key in AWS_BEARER_TOKEN_BEDROCK."),
    Provider.VERTEX: (
        "No Google Cloud credentials found for Vertex AI. Run `gcloud auth application-default login` "
        "before starting Jupyter, or set GOOGLE_APPLICATION_CREDENTIALS to a service account's key "
        f"file, or set {VERTEX_TOKEN_ENV} to an access token (`gcloud auth print-access-token`)."),
    Provider.FOUNDRY: (
        "No Microsoft Foundry key found. Set ANTHROPIC_FOUNDRY_API_KEY (the key of your Foundry "
        "resource) in the environment before starting Jupyter."),
}
_NO_REGION = {
    Provider.BEDROCK: "No AWS region set for Amazon Bedrock: set AWS_REGION (e.g. us-east-1), or a region "
                      "in your AWS profile, or AgentConfig.provider_region.",
    Provider.VERTEX: "No Google Cloud region set for Vertex AI: set CLOUD_ML_REGION (e.g. us-east5 or "
                     "global), or AgentConfig.provider_region.",
    Provider.FOUNDRY: "No Microsoft Foundry resource set: set ANTHROPIC_FOUNDRY_RESOURCE (NAME of "
                      "https://NAME.services.ai.azure.com) or ANTHROPIC_FOUNDRY_BASE_URL, or "
                      "AgentConfig.provider_resource.",
}
_NO_PROJECT = ("No Google Cloud project set for Vertex AI: set ANTHROPIC_VERTEX_PROJECT_ID (or "
               "GOOGLE_CLOUD_PROJECT), or AgentConfig.provider_project.")

#: What to check after a 401, 403 or 404 from each cloud provider (the marker ends the view's advice).
PROVIDER_CHECK = {
    Provider.BEDROCK: ("Check the AWS credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE), the "
                       "region, and that your account has access to this model in Amazon Bedrock (Model access; "
                       "newer models need an inference profile id such as us.anthropic...) (docs/providers.md)."),
    Provider.VERTEX: ("Check the Google credentials (gcloud auth application-default login), the project and "
                      "region, and that the Claude model is enabled in Vertex AI's Model Garden (docs/providers.md)."),
    Provider.FOUNDRY: ("Check ANTHROPIC_FOUNDRY_API_KEY, the resource, and that the model is deployed in your "
                       "Foundry resource (docs/providers.md)."),
}

#: What to check when a cloud provider's endpoint could not be reached or broke off (the
#: Anthropic API's own advice names ANTHROPIC_BASE_URL, which does not apply there).
PROVIDER_REACH = {
    Provider.BEDROCK: ("Check the network, the AWS region (AWS_REGION, or AgentConfig.provider_region) and "
                       "ANTHROPIC_BEDROCK_BASE_URL if you set one (docs/providers.md)."),
    Provider.VERTEX: ("Check the network, the region (CLOUD_ML_REGION, or AgentConfig.provider_region) and "
                      "ANTHROPIC_VERTEX_BASE_URL if you set one (docs/providers.md)."),
    Provider.FOUNDRY: ("Check the network and the resource (ANTHROPIC_FOUNDRY_RESOURCE or "
                       "ANTHROPIC_FOUNDRY_BASE_URL) (docs/providers.md)."),
}

#: Each provider's base URL override in the environment (the SDK's own names).
_BASE_URL_ENV = {Provider.ANTHROPIC: "ANTHROPIC_BASE_URL", Provider.BEDROCK: "ANTHROPIC_BEDROCK_BASE_URL",
                 Provider.VERTEX: "ANTHROPIC_VERTEX_BASE_URL", Provider.FOUNDRY: "ANTHROPIC_FOUNDRY_BASE_URL"}


class MissingExtra(ModelError):
    """The provider's client needs a library that is not installed; says which extra to install."""

    def __init__(self, provider: Provider, missing: str) -> None:
        extra = _EXTRAS[provider][0]
        super().__init__(f"The {provider.value} provider needs {missing}, which is not installed: "
                         f"pip install 'jupyter-agent[{extra}]' (then restart the kernel).",
                         kind="missing_dependency")


@dataclass(frozen=True)
class ProviderSettings:
    """Where a provider's requests go, beyond what its environment variables say.

    ``region``: the AWS region (Bedrock) or Google Cloud region (Vertex); ``project``: the
    Google Cloud project (Vertex); ``resource``: the Foundry resource name. Empty: the
    provider's environment variables decide.
    """

    region: str = ""
    project: str = ""
    resource: str = ""
    #: the administrator's policy pins where requests go (``policy.py``): the base URL is
    #: :attr:`base_url` (else the provider's own address), never an environment variable's
    #: or one passed in code
    pinned: bool = False
    #: the pinned base URL (a proxy of the administrator's, say); "": the provider's own
    base_url: str = ""


def resolve_provider(value: str | Provider | None = None) -> Provider:
    """``value``, else ``$JUPYTER_AGENT_PROVIDER``, else ``anthropic``; a ValueError naming
    the valid names for anything else."""
    if isinstance(value, Provider):
        return value
    raw = (value if value else os.environ.get(PROVIDER_ENV, "")).strip().lower()
    if not raw:
        return Provider.ANTHROPIC
    try:
        return Provider(raw)
    except ValueError:
        where = "provider" if value else f"${PROVIDER_ENV}"
        raise ValueError(f"{where} must be one of {', '.join(PROVIDER_NAMES)}, not {raw!r}.") from None


def base_url_from_env(provider: Provider) -> str | None:
    """The base URL override the environment sets for ``provider`` (the SDK's variable)."""
    return os.environ.get(_BASE_URL_ENV[provider]) or None


# -- model names ------------------------------------------------------------------------------
#: Undated ids to the dated versions the cloud providers name (Bedrock and Vertex have no aliases).
_DATED = {
    "claude-opus-4-1": "20250805", "claude-opus-4": "20250514", "claude-sonnet-4-5": "20250929",
    "claude-sonnet-4": "20250514", "claude-haiku-4-5": "20251001", "claude-3-7-sonnet": "20250219",
    "claude-3-5-haiku": "20241022",
}
_DATE_SUFFIX = re.compile(r"^(claude-.+)-(\d{8})$")


def wire_model(provider: Provider, name: str) -> str:
    """The model id ``provider`` expects for the Anthropic model id ``name``.

    Bedrock: ``anthropic.claude-sonnet-4-5-20250929-v1:0`` (an id that already names a Bedrock
    model, an inference profile such as ``us.anthropic....`` or an ARN passes unchanged).
    Vertex: ``claude-sonnet-4-5@20250929`` (an id with ``@`` passes unchanged). The Anthropic
    API and Foundry take the id as it is.
    """
    if provider is Provider.BEDROCK:
        if "anthropic." in name or name.startswith("arn:"):
            return name
        dated = f"{name}-{_DATED[name]}" if name in _DATED else name
        return f"anthropic.{dated}-v1:0"
    if provider is Provider.VERTEX:
        if "@" in name:
            return name
        if name in _DATED:
            return f"{name}@{_DATED[name]}"
        m = _DATE_SUFFIX.match(name)
        return f"{m.group(1)}@{m.group(2)}" if m else name
    return name


# -- credentials --------------------------------------------------------------------------------
def _require(provider: Provider) -> None:
    if provider not in _EXTRAS:
        return
    import importlib

    for module in _EXTRAS[provider][1]:
        try:
            importlib.import_module(module)
        except ImportError:
            raise MissingExtra(provider, module.replace(".", "-")) from None


def _aws_has_credentials(env: Mapping[str, str]) -> bool:
    if env.get("AWS_BEARER_TOKEN_BEDROCK"):
        return True
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        return True
    import boto3
    import botocore.exceptions

    try:  # the profile, SSO, a web identity, the instance's role: whatever boto3 finds
        return boto3.Session(profile_name=env.get("AWS_PROFILE") or None).get_credentials() is not None
    except botocore.exceptions.BotoCoreError as exc:  # ProfileNotFound and the like
        log.debug("boto3 found no credentials: %s", exc)
        return False


def _aws_region(settings: ProviderSettings, env: Mapping[str, str]) -> str | None:
    region = settings.region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        return region
    import boto3
    import botocore.exceptions

    try:
        return boto3.Session(profile_name=env.get("AWS_PROFILE") or None).region_name or None
    except botocore.exceptions.BotoCoreError:
        return None


def _google_has_credentials(env: Mapping[str, str]) -> bool:
    """Whether Application Default Credentials are there to be found, without the network
    probe ``google.auth.default()`` makes when they are not (seconds of timeouts)."""
    if env.get(VERTEX_TOKEN_ENV) or env.get("GOOGLE_APPLICATION_CREDENTIALS"):
        return True
    config = Path(env.get("CLOUDSDK_CONFIG") or Path.home() / ".config" / "gcloud")
    if (config / "application_default_credentials.json").is_file():
        return True
    # Google's own runtimes serve credentials from their metadata server.
    if any(env.get(k) for k in ("GCE_METADATA_HOST", "K_SERVICE", "GAE_APPLICATION", "FUNCTION_TARGET")):
        return True
    try:
        return Path("/sys/class/dmi/id/product_name").read_text().strip().startswith("Google")
    except OSError:
        return False


def credentials_problem(provider: Provider, settings: ProviderSettings = ProviderSettings(), *,
                        api_key: str | None = None, base_url: str | None = None,
                        env: Mapping[str, str] | None = None) -> str | None:
    """What stops ``provider`` from being used here (no credentials, no region...), as the
    message a user reads, or None when all is set. Raises :class:`MissingExtra` when the
    provider's library is not installed. ``api_key``: a key passed in code."""
    env = os.environ if env is None else env
    if provider is Provider.ANTHROPIC:
        if api_key or env.get("ANTHROPIC_API_KEY") or env.get("ANTHROPIC_AUTH_TOKEN"):
            return None
        return NO_API_KEY_MESSAGE
    _require(provider)
    if provider is Provider.BEDROCK:
        if not (api_key or _aws_has_credentials(env)):
            return NO_CREDENTIALS[provider]
        return None if _aws_region(settings, env) else _NO_REGION[provider]
    if provider is Provider.VERTEX:
        if not (api_key or _google_has_credentials(env)):
            return NO_CREDENTIALS[provider]
        if not (settings.region or env.get("CLOUD_ML_REGION")):
            return _NO_REGION[provider]
        project = settings.project or env.get("ANTHROPIC_VERTEX_PROJECT_ID") or env.get("GOOGLE_CLOUD_PROJECT")
        token_only = bool(api_key or env.get(VERTEX_TOKEN_ENV))  # Application Default Credentials name a project
        return _NO_PROJECT if token_only and not project else None
    if not (api_key or env.get("ANTHROPIC_FOUNDRY_API_KEY")):
        return NO_CREDENTIALS[provider]
    if not (settings.resource or base_url or env.get("ANTHROPIC_FOUNDRY_RESOURCE")
            or (not settings.pinned and env.get("ANTHROPIC_FOUNDRY_BASE_URL"))):
        return _NO_REGION[provider]
    return None


# -- clients ----------------------------------------------------------------------------------------
def make_client(provider: Provider, settings: ProviderSettings, *, api_key: str | None,
                base_url: str | None, common: dict[str, Any]) -> Any:
    """The SDK's async client for ``provider``. ``common``: ``http_client``, ``timeout``,
    ``max_retries`` (the same for every provider). ``api_key``: the provider's key passed in
    code (Bedrock: an API key; Vertex: an access token; Foundry: the resource key).

    Raises ``ModelError(kind="no_api_key")`` with the provider's message when credentials
    (or the region, project or resource) are missing, :class:`MissingExtra` when its
    library is not installed.
    """
    if provider is not Provider.ANTHROPIC:  # AnthropicModel checks its own client's key, as ever
        problem = credentials_problem(provider, settings, api_key=api_key, base_url=base_url)
        if problem is not None:
            raise ModelError(problem, kind="no_api_key")
    import anthropic

    env = os.environ
    kwargs = dict(common)
    if settings.pinned:  # (given always: the SDK's client would read its variable otherwise)
        base_url = settings.base_url or pinned_address(provider, settings, env)
    if base_url:
        kwargs["base_url"] = base_url
    if provider is Provider.ANTHROPIC:
        if api_key:
            kwargs["api_key"] = api_key
        return anthropic.AsyncAnthropic(**kwargs)
    if provider is Provider.BEDROCK:
        kwargs["aws_region"] = _aws_region(settings, env)
        if api_key:
            kwargs["api_key"] = api_key
        elif not env.get("AWS_BEARER_TOKEN_BEDROCK") and env.get("AWS_PROFILE"):
            kwargs["aws_profile"] = env["AWS_PROFILE"]
        return anthropic.AsyncAnthropicBedrock(**kwargs)
    if provider is Provider.VERTEX:
        kwargs["region"] = settings.region or env["CLOUD_ML_REGION"]
        project = settings.project or env.get("ANTHROPIC_VERTEX_PROJECT_ID") or env.get("GOOGLE_CLOUD_PROJECT")
        if project:
            kwargs["project_id"] = project
        token = api_key or env.get(VERTEX_TOKEN_ENV)
        if token:
            kwargs["access_token"] = token
        return anthropic.AsyncAnthropicVertex(**kwargs)
    if api_key:
        kwargs["api_key"] = api_key
    if settings.resource and not base_url:
        kwargs["resource"] = settings.resource
    return anthropic.AsyncAnthropicFoundry(**kwargs)


def pinned_address(provider: Provider, settings: ProviderSettings, env: Mapping[str, str]) -> str:
    """The provider's own address for pinned ``settings`` without a pinned base URL: what
    its SDK client uses when no ``*_BASE_URL`` variable is set (the region's, the resource's)."""
    if provider is Provider.ANTHROPIC:
        return "https://api.anthropic.com"
    if provider is Provider.BEDROCK:
        return f"https://bedrock-runtime.{_aws_region(settings, env)}.amazonaws.com"
    if provider is Provider.VERTEX:
        region = settings.region or env.get("CLOUD_ML_REGION", "")
        named = {"global": "https://aiplatform.googleapis.com/v1", "us": "https://aiplatform.us.rep.googleapis.com/v1",
                 "eu": "https://aiplatform.eu.rep.googleapis.com/v1"}
        return named.get(region) or f"https://{region}-aiplatform.googleapis.com/v1"
    resource = settings.resource or env.get("ANTHROPIC_FOUNDRY_RESOURCE", "")
    return f"https://{resource}.services.ai.azure.com/anthropic/"


def credentials_error(provider: Provider, exc: BaseException) -> ModelError | None:
    """The no-credentials error for an exception the SDK raised while authenticating a
    request (Google's ``DefaultCredentialsError``, botocore's ``NoCredentialsError``), else None."""
    names = {c.__name__ for c in type(exc).__mro__}
    if names & {"DefaultCredentialsError", "NoCredentialsError", "PartialCredentialsError",
                "RefreshError", "MissingDependencyError"}:
        if "MissingDependencyError" in names and provider in _EXTRAS:
            return MissingExtra(provider, _EXTRAS[provider][1][0].replace(".", "-"))
        message = NO_CREDENTIALS.get(provider, "No credentials found.")
        return ModelError(f"{message} ({type(exc).__name__})", kind="no_api_key")
    return None


# -- the stream -----------------------------------------------------------------------------------
#: Bedrock's exception frames, as the Messages API's error types (so retries classify them alike).
_BEDROCK_ERRORS = {"throttlingException": "rate_limit_error", "serviceUnavailableException": "overloaded_error",
                   "modelNotReadyException": "overloaded_error", "validationException": "invalid_request_error",
                   "internalServerException": "api_error", "modelStreamErrorException": "api_error",
                   "modelTimeoutException": "api_error", "accessDeniedException": "permission_error"}


def raw_events(sdk_stream: Any) -> AsyncGenerator[Any, None]:
    """The raw events of a response the SDK opened (``messages.create(stream=True)``), decoded
    the way that client's own streams decode them: Server-Sent Events from the Anthropic API,
    Vertex and Foundry; AWS event-stream frames from Bedrock (each frame's payload is a
    Messages API event). Every event comes out as a ``ServerSentEvent`` (``event``, ``data``)."""
    import anthropic

    decoder = getattr(sdk_stream, "_decoder", None)  # what the SDK's stream class itself reads with
    if decoder is None or type(decoder).__name__ == "SSEDecoder":
        # an async generator (the SDK's decoder is one), so it has aclose() for the caller
        return cast("AsyncGenerator[Any, None]", anthropic.AsyncStream.raw_events(sdk_stream.response))
    return _bedrock_events(decoder.aiter_bytes(sdk_stream.response.aiter_bytes()))


async def _bedrock_events(events: Any) -> AsyncGenerator[Any, None]:
    import json

    from anthropic._streaming import ServerSentEvent

    try:
        async for sse in events:
            if sse.event == "error":
                try:
                    data = sse.json()
                    err = data["error"]
                    code = str(err.get("type") or "")
                    err["type"] = _BEDROCK_ERRORS.get(code[:1].lower() + code[1:], "api_error")
                    err["message"] = f"{code}: {err.get('message')}"
                    sse = ServerSentEvent(event="error", data=json.dumps(data))
                except (ValueError, KeyError, TypeError, AttributeError):
                    log.debug("Bedrock error frame kept as it came: %r", sse.data[:200])
            yield sse
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
