"""What a run is given from outside, the same for every front: the notebook's path, an
API key (or a replay transcript), the files a replay expects, the counts typed as options.

The kernel's session (``jupyter/kernel/agent_session.py``, ``%%agent``), the command line (``cli.py``),
``query()`` (``agent.py``: ``$JUPYTER_AGENT_REPLAY``) and the launchers all ask here, so
they give the same answers.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any


NOTEBOOK_ENV = "JUPYTER_AGENT_NOTEBOOK"
REPLAY_ENV = "JUPYTER_AGENT_REPLAY"
#: The context window runs work to, in tokens (overrides the model's known window).
CONTEXT_WINDOW_ENV = "JUPYTER_AGENT_CONTEXT_WINDOW"


#: Set by Jupyter Kernel Gateway in the environment of every kernel it starts.
KERNEL_GATEWAY_ENV = "KERNEL_GATEWAY"
#: Set by Jupyter Enterprise Gateway's kernel launchers in every kernel's environment.
ENTERPRISE_GATEWAY_ENV = "KERNEL_ID"

REMOTE_KEY_HELP = (
    "This kernel runs on another machine than the notebook server (a Kernel Gateway or Enterprise "
    "Gateway), which gives its kernels only the variables it is told to pass. To pass the key the "
    "notebook server has in its environment, allow it on both sides:\n"
    "    the notebook server:   --GatewayClient.allowed_envs=ANTHROPIC_API_KEY   (env_whitelist before "
    "jupyter_server 2)\n"
    "    a Kernel Gateway:      --JupyterWebsocketPersonality.env_whitelist=ANTHROPIC_API_KEY\n"
    "    an Enterprise Gateway: --EnterpriseGatewayApp.client_envs=ANTHROPIC_API_KEY\n"
    "Or set the key in the gateway's own environment and let its kernels inherit it: "
    "--KernelGatewayApp.env_process_whitelist=ANTHROPIC_API_KEY (Enterprise Gateway: "
    "--EnterpriseGatewayApp.inherited_envs). Restart the kernel afterwards. "
    "See docs/deploy.md in jupyter-agent.")


def started_by_gateway() -> bool:
    """Whether a Kernel Gateway or an Enterprise Gateway started this process's kernel
    (each marks its kernels' environment)."""
    return os.environ.get(KERNEL_GATEWAY_ENV) == "1" or bool(os.environ.get(ENTERPRISE_GATEWAY_ENV))


def _provider_problem(provider: str | None, settings: Any) -> tuple[bool, str | None]:
    """(whether the run goes to the Anthropic API, what stops another provider or None),
    with the administrator's pins applied. Raises ValueError for an unknown provider or one
    the policy refuses."""
    from .model.providers import MissingExtra, Provider, credentials_problem
    from .policy import load_policy

    policy = load_policy()
    chosen = policy.check_provider(provider)
    if chosen is Provider.ANTHROPIC:
        return True, None
    try:
        return False, credentials_problem(chosen, policy.provider_settings(settings))
    except MissingExtra as exc:
        return False, str(exc)


def no_key_message(where: str = "notebook", *, remote: bool = False, provider: str | None = None,
                   settings: Any = None) -> str:
    """What a user without an Anthropic key reads, told where they are: ``"notebook"``
    (the kernel: set the key without writing it into the notebook) or ``"terminal"``
    (``jupyter agent run``: export it). ``remote``: the kernel runs on another machine
    than the notebook server, and the message says how a gateway passes the key.
    ``provider``/``settings``: for Bedrock, Vertex or Foundry, what that provider needs."""
    if where not in ("notebook", "terminal"):
        raise ValueError(f"no_key_message(where={where!r}): use 'notebook' or 'terminal'.")
    anthropic, problem = _provider_problem(provider, settings)
    if not anthropic:
        offline = ("    jupyter agent run NOTEBOOK --replay demo" if where == "terminal"
                   else f"    %agent --replay demo      (or set {REPLAY_ENV}=PATH before starting the kernel)")
        head = "jupyter agent run: nothing was started.\n\n" if where == "terminal" else "Nothing was started.\n\n"
        return (f"{head}{problem or 'The provider cannot be used here.'}\nSee docs/providers.md in "
                f"jupyter-agent.\n\nTo try it offline with a recorded run instead:\n{offline}")
    if where == "terminal":
        return ("jupyter agent run: no Anthropic API key found, so nothing was started.\n\n"
                "To use Claude, set the key in the environment:\n"
                "    export ANTHROPIC_API_KEY=sk-ant-...\n"
                "To try it offline with a recorded run instead:\n"
                "    jupyter agent run NOTEBOOK --replay demo      (or the path of a recorded transcript .json)")
    if where != "notebook":
        raise ValueError(f"no_key_message(where={where!r}): use 'notebook' or 'terminal'.")
    gateway = f"{REMOTE_KEY_HELP}\n\n" if remote else ""
    return ("No Anthropic API key found, so nothing was started.\n\n" + gateway +
            "To use Claude, give the kernel a key without writing it into the notebook:\n"
            '    import os, getpass; os.environ["ANTHROPIC_API_KEY"] = getpass.getpass("Anthropic API key: ")\n'
            "(or start Jupyter with ANTHROPIC_API_KEY set in its environment).\n\n"
            "To try it offline with a recorded run instead, use the replay model:\n"
            "    %agent --replay demo      (the packaged demo; or the path of a recorded transcript .json)\n"
            f"or set {REPLAY_ENV}=PATH before starting the kernel.")


def resolve_notebook_path(candidate: str | None, cwd: Path | None = None) -> str | None:
    """An existing ``.ipynb`` path from what the server or editor gave the kernel.

    jupyter_server sets ``JPY_SESSION_NAME`` to the notebook's absolute path (older
    versions: relative to the server root, while the kernel runs in the notebook's
    directory), so try it as given, then from the kernel's directory and its parents,
    then by file name.
    """
    if not candidate or not candidate.endswith(".ipynb"):
        return None
    cwd = cwd or Path.cwd()
    path = Path(candidate).expanduser()
    options = [path] if path.is_absolute() else [cwd / path, *(p / path for p in cwd.parents), cwd / path.name]
    for option in options:
        if option.is_file():
            return str(option.resolve())
    return str(options[0] if path.is_absolute() else cwd / path.name)


def resolve_transcript(name: str) -> str:
    """A replay transcript path: a file, or the name of a packaged one (``demo``)."""
    # Imported here: the testing package is not needed to load the extension.
    from .replay.packaged import resolve_transcript as resolve

    return resolve(name)


def prepare_replay_files(transcript: str, cwd: Path) -> list[str]:
    """Write the files a recorded run expects (``files`` of the transcript) that are
    missing under ``cwd``; never overwrites. Returns what it wrote. A transcript with
    ``"scratch": true`` gets its files in each run's own scratch folder instead
    (``replay/runs.py``), so nothing is written here."""
    from .model.transcript import write_expected_files

    try:
        data = json.loads(Path(transcript).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if data.get("scratch"):
        return []
    return write_expected_files(data.get("files") or {}, cwd)


def missing_key(model: Any, replay: str | None, *, provider: str | None = None, settings: Any = None) -> bool:
    """True when a run would need credentials and none are there: an Anthropic key, or what
    ``provider`` (else ``$JUPYTER_AGENT_PROVIDER`` or the administrator's pin) needs (AWS,
    Google Cloud, Foundry credentials; its region or project). ValueError for an unknown
    provider or one the policy refuses."""
    if model is not None and not isinstance(model, str):
        return False  # a Model object brings its own way to talk
    if replay or (model in (None, "") and os.environ.get(REPLAY_ENV)):
        return False
    anthropic, problem = _provider_problem(provider, settings)
    if not anthropic:
        return problem is not None
    return not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN"))


def positive_int(text: str) -> int:
    """argparse type for counts such as ``--remove N``: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def turn_limit(text: str) -> int:
    """argparse type for ``--max-turns``: a whole number; 0 means no limit (in cells, in
    ``%agent`` and on the command line alike)."""
    return 0 if text.strip() == "0" else positive_int(text)
