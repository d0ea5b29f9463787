"""``./dev demo``: JupyterLab on a copy of ``notebooks/``, ready to use, online or offline.

JupyterLab's autosave writes every run into the notebooks it shows, so the demo shows a
copy, ``demo-notebooks/`` (ignored by git), made afresh from ``notebooks/`` at each start
(``--keep``: keep the copy as it was left): the tracked lessons stay as committed whatever
the user does. ``--notebooks DIR`` opens DIR itself instead.
It opens the start-here notebook (``*start*.ipynb``, else the folder). With
``ANTHROPIC_API_KEY`` set, the agent talks to Claude. Without a key it runs offline: every
kernel the server starts gets ``JUPYTER_AGENT_REPLAY`` (the packaged demo transcript, or
the one given with ``--replay``), so ``%%agent``, ``chat()`` and the side panel replay a
recorded session through the project's fake Messages API, and the launcher says so.
``--no-browser`` starts the server without opening a browser; ``--terminal`` runs the
terminal demo instead (``jupyter_agent.demo``). Other options go to JupyterLab.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import textwrap
from pathlib import Path

from .environment import REPLAY_ENV, resolve_transcript

DESCRIPTION = ("Set up, then open JupyterLab on a fresh copy of notebooks/ in demo-notebooks/ (offline "
               "with the replay model when ANTHROPIC_API_KEY is unset). Other options go to JupyterLab.")
#: The tracked lessons, and the ignored copy the demo shows (.gitignore lists it).
SOURCE_NOTEBOOKS = "notebooks"
DEMO_NOTEBOOKS = "demo-notebooks"
COPIED = ("A fresh copy of notebooks/ ({folder}): the demo's changes and JupyterLab's autosave stay "
          "there, and the next ./dev demo starts from notebooks/ again (--keep keeps the copy).")
OFFLINE = ("No ANTHROPIC_API_KEY: running OFFLINE with the replay model. Every agent run "
           "replays a recorded session and names it: {transcript} by default; the one a cell "
           "names with --replay (start-here's cell: live_cell.json), kept for that kernel's "
           "later runs; the recorded fix or explanation for Fix with agent and Explain. Your "
           "prompts are not used and nothing goes to the network. Set ANTHROPIC_API_KEY and "
           "run this again to use Claude.")
ONLINE = "ANTHROPIC_API_KEY is set: the agent talks to Claude ({model})."
CLOUD = "JUPYTER_AGENT_PROVIDER={provider} and its credentials are set: the agent talks to Claude there ({model})."
REPLAYING = "JUPYTER_AGENT_REPLAY is set: the agent replays {transcript} (offline)."
#: Configuration for the demo's server only (first on its JUPYTER_CONFIG_PATH, so the
#: user's own stays as it is): JupyterLab's "get notified about Jupyter news?" prompt is
#: off, since it covers the notebook's corner in a newcomer's first minutes.
DEMO_CONFIG = Path(__file__).parent / "demo_config"


def start_notebook(folder: Path) -> Path | None:
    """The notebook to open first: ``start-here.ipynb``, else the first ``*start*.ipynb``."""
    preferred = folder / "start-here.ipynb"
    if preferred.is_file():
        return preferred
    found = sorted(p for p in folder.glob("*.ipynb") if "start" in p.name.lower())
    return found[0] if found else None


def lab_command(argv: list[str] | None = None, environ: dict[str, str] | None = None,
                ) -> tuple[list[str], dict[str, str], str]:
    """What ``./dev demo`` runs: (command, environment, what to tell the user)."""
    parser = argparse.ArgumentParser(prog="./dev demo", description=DESCRIPTION)
    parser.add_argument("--no-browser", action="store_true", help="start JupyterLab without opening a browser")
    parser.add_argument("--terminal", action="store_true",
                        help="run the terminal demo instead (an agent edits and runs a notebook; no browser)")
    parser.add_argument("--notebooks", help="folder to open as it is (default: a fresh copy of ./notebooks "
                        "in ./demo-notebooks)")
    parser.add_argument("--keep", action="store_true",
                        help="open ./demo-notebooks as the last demo left it, rather than a fresh copy")
    parser.add_argument("--port", type=int, help="port of the server (default: JupyterLab's)")
    parser.add_argument("--replay", help="offline transcript to replay when no API key is set "
                        "(default: the packaged demo)")
    args, rest = parser.parse_known_args(argv)
    env = dict(os.environ if environ is None else environ)
    folder = Path(args.notebooks or DEMO_NOTEBOOKS).expanduser().resolve()
    copied = ""
    if args.notebooks is None:
        copied = copy_notebooks(Path(SOURCE_NOTEBOOKS), folder, fresh=not args.keep)
    if not folder.is_dir():
        parser.error(f"no folder {folder}: run ./dev demo from the repository, or give --notebooks DIR")

    if env.get(REPLAY_ENV):
        note = REPLAYING.format(transcript=env[REPLAY_ENV])
    elif env.get("ANTHROPIC_API_KEY") or env.get("ANTHROPIC_AUTH_TOKEN") or _cloud_ready(env):
        from .model.anthropic_model import DEFAULT_MODEL

        model = env.get("JUPYTER_AGENT_MODEL") or DEFAULT_MODEL
        provider = env.get("JUPYTER_AGENT_PROVIDER", "").strip().lower()
        note = (CLOUD.format(provider=provider, model=model) if provider not in ("", "anthropic")
                else ONLINE.format(model=model))
    else:
        try:
            transcript = resolve_transcript(args.replay or "demo")
        except FileNotFoundError as exc:
            parser.error(str(exc))
        env[REPLAY_ENV] = transcript
        note = OFFLINE.format(transcript=Path(transcript).name)

    cmd = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={folder}"]
    start = start_notebook(folder)
    if start is not None:
        cmd.append(f"--LabApp.default_url=/lab/tree/{start.name}")
    if args.no_browser:
        cmd.append("--no-browser")
    if args.port is not None:  # (0: any free port)
        cmd.append(f"--port={args.port}")
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(p for p in (str(DEMO_CONFIG), env.get("JUPYTER_CONFIG_PATH")) if p)
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in rest:
        cmd.append("--allow-root")  # containers run as root; JupyterLab refuses without it
    note = f"jupyter-agent: JupyterLab on {folder}\n" + "\n".join(textwrap.wrap(" ".join((copied, note)).strip(), 78))
    return cmd + rest, env, note


def copy_notebooks(source: Path, copy: Path, *, fresh: bool) -> str:
    """Make ``copy`` the demo's folder: ``source``'s files copied over it (``fresh``), or
    only those it lacks. Files the user added to the copy stay. Returns what to tell the
    user ("" when there is no ``source``: the folder is made empty)."""
    copy.mkdir(parents=True, exist_ok=True)
    if not source.is_dir():
        return ""
    for path in sorted(source.rglob("*")):
        if not path.is_file() or {".ipynb_checkpoints", "__pycache__"} & set(path.relative_to(source).parts):
            continue
        target = copy / path.relative_to(source)
        if fresh or not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    return COPIED.format(folder=copy.name + "/") if fresh else f"{copy.name}/ as the last demo left it (--keep)."


def _cloud_ready(env: dict[str, str]) -> bool:
    """Whether ``$JUPYTER_AGENT_PROVIDER`` names a cloud provider whose credentials are set
    (docs/providers.md): then the demo runs online there."""
    from .model.providers import MissingExtra, Provider, credentials_problem, resolve_provider

    raw = env.get("JUPYTER_AGENT_PROVIDER", "").strip()
    try:
        provider = resolve_provider(raw) if raw else Provider.ANTHROPIC
        return provider is not Provider.ANTHROPIC and credentials_problem(provider, env=env) is None
    except (ValueError, MissingExtra) as exc:  # said by the run itself, where the user reads it
        print(f"jupyter-agent: {exc}", file=sys.stderr)
        return False


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--terminal" in argv:
        from .demo import main as terminal_demo

        argv.remove("--terminal")
        return terminal_demo(argv)
    cmd, env, note = lab_command(argv)
    banner = "=" * 78
    print(f"{banner}\n{note}\n{banner}", flush=True)
    os.execve(sys.executable, cmd, env)  # JupyterLab takes over this process (Ctrl+C stops it)
    return 0  # not reached


if __name__ == "__main__":
    raise SystemExit(main())
