"""An administrator's limits on agent runs, which a user's own settings cannot loosen.

An administrator (of a JupyterHub, a shared server, a single-user image) writes
``jupyter_agent_policy.json`` into a system-wide Jupyter config folder::

    {
      "allowed_models": ["claude-sonnet-4-5", "claude-haiku-*"],
      "permission_mode": "default",
      "max_budget_usd": 0.50
    }

- ``allowed_models``: model ids (shell-style patterns) a run may use;
- ``permission_mode``: the loosest mode a user may choose (``plan`` is the strictest,
  then ``default``, ``acceptEdits``, ``bypassPermissions``);
- ``max_budget_usd``: what one run may spend (the loop's estimate from list prices); a
  run that reaches it ends ``max_budget``. A user may set a lower limit, never a higher one.
- ``provider`` (``anthropic``, ``bedrock``, ``vertex``, ``foundry``): where every run's
  requests go (docs/providers.md); a user choosing another is refused. With it, the
  provider's ``provider_region`` (AWS or Google Cloud region), ``provider_project``
  (Google Cloud project) and ``provider_resource`` (Foundry resource) are pinned too, and
  ``provider_base_url`` (a proxy of the administrator's, say). Under any pin, no
  environment variable (``ANTHROPIC_BASE_URL``, ``ANTHROPIC_FOUNDRY_BASE_URL``...) and no
  ``base_url`` in code moves the requests elsewhere. Two files that pin different values
  stop every run, naming both.

Where it is read (docs/deploy.md, "JupyterHub"): the environment's folder
(``{sys.prefix}/etc/jupyter``) and the system's (``/usr/local/etc/jupyter``, ``/etc/jupyter``),
whatever the environment says, plus the folders of ``$JUPYTER_CONFIG_PATH``; never the
user's own ``~/.jupyter`` (``$JUPYTER_CONFIG_DIR``). Every file found counts and the
strictest value of each setting wins, so a folder added to ``$JUPYTER_CONFIG_PATH`` can only
tighten the limits, and unsetting it lifts only what it added: an administrator's file
belongs in the system folder, where the user cannot remove it. A file that cannot be read or says
something unknown stops every run with a message naming it (it fails closed). The files
are read again for each run, so a change applies to the next run without a restart.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import JupyterAgentError
from .loop.permission_result import PERMISSION_MODES, check_permission_mode
from .model.providers import PROVIDER_ENV, PROVIDER_NAMES, Provider, ProviderSettings, resolve_provider

log = logging.getLogger(__name__)

POLICY_FILE = "jupyter_agent_policy.json"
#: Strictest first: a mode may be used when it is no looser than the administrator's.
MODE_STRICTNESS = ("plan", "default", "acceptEdits", "bypassPermissions")
assert sorted(MODE_STRICTNESS) == sorted(PERMISSION_MODES)
_KEYS = ("allowed_models", "permission_mode", "max_budget_usd", "provider", "provider_region",
         "provider_project", "provider_resource", "provider_base_url")
#: The settings a policy pins (one value for every user), not bounds.
_PINS = ("provider", "provider_region", "provider_project", "provider_resource", "provider_base_url")


class PolicyViolation(JupyterAgentError, ValueError):
    """A setting the administrator's policy does not allow; the message names the file."""


#: The system's config folders on POSIX, always read: jupyter_core's own list of them follows
#: the environment (``$JUPYTER_PLATFORM_DIRS`` swaps it for ``$XDG_CONFIG_DIRS``'s), which a
#: user's process may change; these cannot be taken away by it.
SYSTEM_POLICY_DIRS = ("/usr/local/etc/jupyter", "/etc/jupyter") if os.name == "posix" else ()


def policy_dirs() -> list[Path]:
    """The folders a policy file is read from: ``$JUPYTER_CONFIG_PATH``'s (a user may add
    folders there, which only tightens), then the environment's (``{sys.prefix}/etc/jupyter``)
    and the system's (:data:`SYSTEM_POLICY_DIRS` whatever the environment says, and
    jupyter_core's). Never ``$JUPYTER_CONFIG_DIR`` (the user's). Unsetting a variable removes
    only what the variable added."""
    from jupyter_core import paths

    extra = [p for p in os.environ.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep) if p.strip()]
    environment = os.path.join(sys.prefix, "etc", "jupyter")
    dirs: list[Path] = []
    for folder in (*extra, environment, *paths.ENV_CONFIG_PATH, *SYSTEM_POLICY_DIRS, *paths.SYSTEM_CONFIG_PATH):
        path = Path(folder).expanduser()
        if path not in dirs:
            dirs.append(path)
    return dirs


@dataclass(frozen=True)
class AdminPolicy:
    """The administrator's limits, merged from every policy file found (strictest wins).

    ``sources`` says which file set each limit, for messages. An empty policy (no file)
    limits nothing.
    """

    #: One tuple of patterns per file that lists models: a model must match one of each.
    allowed_models: tuple[tuple[str, ...], ...] = ()
    permission_mode: str | None = None
    max_budget_usd: float | None = None
    sources: dict[str, str] = field(default_factory=dict)
    #: pinned values: ``provider``, ``provider_region``, ``provider_project``, ``provider_resource``
    pins: dict[str, str] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return (not self.allowed_models and self.permission_mode is None and self.max_budget_usd is None
                and not self.pins)

    def check_provider(self, provider: str | Provider | None) -> Provider:
        """The provider a run uses: ``provider`` (else ``$JUPYTER_AGENT_PROVIDER``, else the
        administrator's pin, else ``anthropic``); a :class:`PolicyViolation` naming the file
        when the user chose another than the pinned one."""
        pinned = self.pins.get("provider")
        chosen = provider if provider else os.environ.get(PROVIDER_ENV, "").strip() or None
        if pinned is None:
            return resolve_provider(chosen)
        if chosen is not None and resolve_provider(chosen).value != pinned:
            raise PolicyViolation(
                f"The provider {resolve_provider(chosen).value!r} is not allowed: the administrator's policy "
                f"({self.sources['provider']}) sends every run to {pinned!r}. Remove your own provider "
                f"setting (AgentConfig.provider, --provider or $JUPYTER_AGENT_PROVIDER).")
        return Provider(pinned)

    def provider_settings(self, own: ProviderSettings | None = None) -> ProviderSettings:
        """The user's region, project and resource, with the administrator's pins in their place."""
        own = own or ProviderSettings()
        return ProviderSettings(region=self.pins.get("provider_region") or own.region,
                                project=self.pins.get("provider_project") or own.project,
                                resource=self.pins.get("provider_resource") or own.resource,
                                pinned=bool(self.pins), base_url=self.pins.get("provider_base_url", ""))

    def check_reach(self, model: Any) -> None:
        """A model object made elsewhere (``query(model=AnthropicModel(...))``) goes where the
        pins say: made with :meth:`provider_settings`, its base URL the pinned one; else a
        :class:`PolicyViolation` (nothing is sent)."""
        settings = getattr(model, "provider_settings", None)
        if not self.pins or not isinstance(settings, ProviderSettings):
            return
        wanted = self.provider_settings(settings)
        if settings != wanted or (getattr(model, "base_url", None) or "") != wanted.base_url:
            where = ", ".join(sorted({self.sources[k] for k in self.pins}))
            raise PolicyViolation(
                f"This model object does not go where the administrator's policy ({where}) sends every run "
                f"(pinned: {', '.join(sorted(self.pins))}): pass the model by its id (model='...'), or make it "
                "with provider_settings=jupyter_agent.policy.load_policy().provider_settings() and no base_url.")

    def model_allowed(self, name: str) -> bool:
        return all(any(fnmatch.fnmatchcase(name, p) for p in patterns) for patterns in self.allowed_models)

    def check_model(self, name: str, role: str = "model") -> str:
        """``name`` if the policy allows it, else a :class:`PolicyViolation` naming the file.
        ``role``: what the name is to the run, for the message (``fallback model``)."""
        if not self.model_allowed(name):
            allowed = ", ".join(p for patterns in self.allowed_models for p in patterns)
            raise PolicyViolation(
                f"The {role} {name!r} is not allowed by the administrator's policy "
                f"({self.sources['allowed_models']}): use one of {allowed} "
                f"(e.g. %config AgentConfig.model = '...').")
        return name

    def mode_allowed(self, mode: str) -> bool:
        if self.permission_mode is None:
            return True
        return MODE_STRICTNESS.index(mode) <= MODE_STRICTNESS.index(self.permission_mode)

    def check_permission_mode(self, mode: str) -> str:
        """``mode`` if it is no looser than the administrator's, else a :class:`PolicyViolation`."""
        check_permission_mode(mode)
        if not self.mode_allowed(mode):
            allowed = [m for m in MODE_STRICTNESS if self.mode_allowed(m)]
            raise PolicyViolation(
                f"Permission mode {mode!r} is not allowed: the administrator's policy "
                f"({self.sources['permission_mode']}) allows at most {self.permission_mode!r} "
                f"(one of {', '.join(allowed)}).")
        return mode

    def default_mode(self, wanted: str = "default") -> str:
        """``wanted`` if allowed, else the administrator's mode (for a default nobody chose)."""
        return wanted if self.mode_allowed(wanted) else str(self.permission_mode)

    def check_budget(self, usd: float | None) -> float | None:
        """The spend limit of a run: the user's ``usd`` (None or 0: none of their own),
        which may be lower than the administrator's, never higher."""
        own = usd if usd else None
        if own is not None and (not isinstance(own, (int, float)) or not math.isfinite(own) or own < 0):
            raise ValueError(f"max_budget_usd must be a positive number of US dollars, not {usd!r}.")
        if self.max_budget_usd is None:
            return own
        if own is not None and own > self.max_budget_usd:
            raise PolicyViolation(
                f"A spend limit of ${own:g} per run is above the administrator's "
                f"${self.max_budget_usd:g} ({self.sources['max_budget_usd']}).")
        return own if own is not None else self.max_budget_usd


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PolicyViolation(f"The administrator's policy {path} cannot be read ({exc}); "
                              "no agent run starts until it is fixed.") from None
    if not isinstance(data, dict) or set(data) - set(_KEYS):
        unknown = ", ".join(sorted(set(data) - set(_KEYS))) if isinstance(data, dict) else "not an object"
        raise PolicyViolation(f"The administrator's policy {path} is not valid ({unknown}): it may set "
                              f"{', '.join(_KEYS)}; no agent run starts until it is fixed.")
    return data


def _valid(path: Path, key: str, value: Any) -> Any:
    models = key == "allowed_models" and isinstance(value, list) and all(isinstance(m, str) and m for m in value)
    mode = key == "permission_mode" and value in MODE_STRICTNESS
    budget = (key == "max_budget_usd" and isinstance(value, (int, float)) and not isinstance(value, bool)
              and math.isfinite(value) and value > 0)
    pin = (key in _PINS and isinstance(value, str) and bool(value.strip())
           and (key != "provider" or value in PROVIDER_NAMES)
           and (key != "provider_base_url" or value.startswith(("https://", "http://"))))
    if not (models or mode or budget or pin):
        raise PolicyViolation(f"The administrator's policy {path} has an invalid {key}: {value!r}; "
                              "no agent run starts until it is fixed.")
    return tuple(value) if models else value


def _stricter(mode: str, than: str) -> bool:
    return MODE_STRICTNESS.index(mode) < MODE_STRICTNESS.index(than)


def load_policy(dirs: list[Path] | None = None) -> AdminPolicy:
    """Read and merge every ``jupyter_agent_policy.json`` in :func:`policy_dirs` (or ``dirs``).
    Raises :class:`PolicyViolation` for a file that is there but not valid."""
    models: list[tuple[str, ...]] = []
    mode: str | None = None
    budget: float | None = None
    sources: dict[str, str] = {}
    pins: dict[str, str] = {}
    for folder in policy_dirs() if dirs is None else dirs:
        path = folder / POLICY_FILE
        if not path.is_file():
            continue
        data = _read(path)
        log.debug("administrator's policy from %s: %s", path, sorted(data))
        for key, raw in data.items():
            value = _valid(path, key, raw)
            if key == "allowed_models":
                models.append(value)
                sources[key] = ", ".join(filter(None, (sources.get(key), str(path))))
            elif key == "permission_mode" and (mode is None or _stricter(value, mode)):
                mode, sources[key] = value, str(path)
            elif key == "max_budget_usd" and (budget is None or value < budget):
                budget, sources[key] = float(value), str(path)
            elif key in _PINS and pins.get(key, value) != value:
                raise PolicyViolation(f"The administrator's policies pin different values of {key}: "
                                      f"{pins[key]!r} ({sources[key]}) and {value!r} ({path}); no agent run "
                                      "starts until they agree.")
            elif key in _PINS:
                pins[key], sources[key] = value.strip(), str(path)
    return AdminPolicy(tuple(models), mode, budget, sources, pins)
