"""Safety paths: places whose change alters what runs next, so writing them always asks.

A write to one of these asks a person in every mode, ``bypassPermissions`` included,
unless an allow rule *really names* the place (:func:`rule_names_place`):

* version control: ``.git/`` (and any folder that is a git directory: a bare
  repository, ``GIT_DIR`` elsewhere, ``.git/modules``, ``.git/worktrees``), ``.hg/``,
  ``.husky/``, ``.githooks/``, ``.gitconfig``, ``.gitmodules``, ``~/.config/git/``;
* shells and their helpers: ``.bashrc``, ``.bash_profile``, ``.bash_aliases``,
  ``.profile``, ``.zshrc``... ``~/.config/fish/``, direnv's ``.envrc``;
* Python and Jupyter start-up: ``sitecustomize.py``, ``usercustomize.py``, ``*.pth`` in
  a ``site-packages``/``dist-packages`` folder, ``.ipython/``, ``.jupyter/``;
* the user's programs and keys: ``~/.local/bin/``, ``~/bin/``, ``.ssh/``.

Credential places are the other kind: reading them asks in every mode, since what a tool
reads goes to the model (:func:`credential_hit`): ``.ssh/``, ``.gnupg/``, ``.aws/``,
``.azure/``, ``.kube/``, ``~/.config/gcloud/``, ``~/.docker/config.json``, ``.netrc``,
``.pgpass``, ``.git-credentials``, ``.pypirc``, and private key files named like ssh's
(``id_rsa``, ``id_ed25519``...) anywhere. Grep and Glob leave them out.

Names are compared case-insensitively where the file system is (macOS, Windows), since
there ``.GIT/hooks`` is ``.git/hooks``.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from .tools.paths import ResolvedPath, glob_is_literal, unescape_glob
from .tools.safety_names import (CONFIG_DIRS, CREDENTIAL_DIRS, CREDENTIAL_FILES, GIT_DIR_LAYOUT, PRIVATE_KEY_NAMES,
                                 SAFETY_DIRS, SAFETY_FILES, SITE_DIRS)

#: Compare names without case: True on file systems that ignore it (tests may flip it).
CASE_INSENSITIVE = sys.platform in ("darwin", "win32")


@dataclass(frozen=True)
class SafetyHit:
    """Why a path is protected, and the path components a rule must name to release it."""

    reason: str
    anchor: tuple[str, ...]


def _fold(name: str) -> str:
    return name.casefold() if CASE_INSENSITIVE else name


def _is_git_dir(folder: Path) -> bool:
    """A folder laid out as a git directory (bare repository, ``GIT_DIR``, a submodule's)."""
    try:
        head, objects, refs = (folder / name for name in GIT_DIR_LAYOUT)
        return head.is_file() and objects.is_dir() and refs.is_dir()
    except OSError:
        return False


def _check(path: Path, home: Path) -> SafetyHit | None:
    parts = [_fold(p) for p in path.parts]
    for name in SAFETY_DIRS:
        if _fold(name) in parts[:-1] or (parts and parts[-1] == _fold(name)):
            return SafetyHit(f"it is inside {name}/", (name,))
    if parts and parts[-1] in {_fold(n) for n in SAFETY_FILES}:
        return SafetyHit(f"{path.name} is a shell, git or Python start-up file", (path.name,))
    if parts and parts[-1].endswith(".pth") and any(_fold(s) in parts[:-1] for s in SITE_DIRS):
        return SafetyHit(f"{path.name} is a .pth file, which Python runs at start-up", (path.name,))
    home_parts = [_fold(p) for p in home.parts]
    if len(parts) > len(home_parts) and parts[:len(home_parts)] == home_parts:
        below = parts[len(home_parts):]
        if len(below) >= 2 and below[0] == _fold(".config") and below[1] in {_fold(n) for n in CONFIG_DIRS}:
            return SafetyHit(f"it is inside ~/.config/{below[1]}/", (".config", path.parts[len(home_parts) + 1]))
        if len(below) >= 3 and below[:2] == [_fold(".local"), "bin"]:
            return SafetyHit("it is inside ~/.local/bin/, where your programs are", (".local", "bin"))
        if len(below) >= 2 and below[0] == "bin":
            return SafetyHit("it is inside ~/bin/, where your programs are", ("bin",))
    for depth in range(len(path.parts) - 1, 0, -1):  # a git directory without a .git component
        folder = Path(*path.parts[:depth])
        if _is_git_dir(folder):
            inner = path.parts[depth] if depth < len(path.parts) else ""
            return SafetyHit(f"it is inside the git directory {folder}", (folder.name, inner) if inner else
                             (folder.name,))
    return None


def safety_hit(path: ResolvedPath) -> SafetyHit | None:
    """The protection ``path`` falls under (as named, or where its symlinks lead), or None."""
    home = Path(os.path.realpath(os.path.expanduser("~")))
    for candidate in (path.lexical, path.real):
        hit = _check(candidate, home)
        if hit is not None:
            return hit
    return None


def _check_credentials(path: Path, home: Path) -> SafetyHit | None:
    parts = [_fold(p) for p in path.parts]
    for name in CREDENTIAL_DIRS:
        if _fold(name) in parts[:-1] or (parts and parts[-1] == _fold(name)):
            return SafetyHit(f"it is inside {name}/, which holds credentials", (name,))
    last = parts[-1] if parts else ""
    if last in {_fold(n) for n in CREDENTIAL_FILES}:
        return SafetyHit(f"{path.name} holds credentials", (path.name,))
    if last in {_fold(n) for n in PRIVATE_KEY_NAMES}:
        return SafetyHit(f"{path.name} is named like a private key", (path.name,))
    home_parts = [_fold(p) for p in home.parts]
    if len(parts) > len(home_parts) and parts[:len(home_parts)] == home_parts:
        below = parts[len(home_parts):]
        if len(below) >= 2 and below[:2] == [_fold(".config"), "gcloud"]:
            return SafetyHit("it is inside ~/.config/gcloud/, which holds credentials", (".config", "gcloud"))
        if below == [_fold(".docker"), _fold("config.json")]:
            return SafetyHit("~/.docker/config.json holds registry credentials", (".docker", "config.json"))
    return None


def credential_hit(path: ResolvedPath) -> SafetyHit | None:
    """The credential place ``path`` is (as named, or where its symlinks lead), or None:
    reading it asks in every mode unless a rule names the place (:func:`rule_names_place`)."""
    home = Path(os.path.realpath(os.path.expanduser("~")))
    for candidate in (path.lexical, path.real):
        hit = _check_credentials(candidate, home)
        if hit is not None:
            return hit
    return None


def rule_names_place(pattern: str, hit: SafetyHit) -> bool:
    """Does a rule's pattern name the protected place itself, component by component?

    ``Edit(.git/hooks/**)`` names ``.git``; ``Edit(./**)`` (what "Always allow" suggests),
    ``Edit(me.github.io/**)`` and ``Edit(docs.github/**)`` do not: only whole literal
    path components count, never substrings or wildcards.
    """
    expanded = os.path.expanduser(pattern.strip())
    components = [_fold(unescape_glob(c)) if glob_is_literal(c) else None for c in expanded.split("/")]
    anchor = [_fold(a) for a in hit.anchor]
    n = len(anchor)
    return any(components[i:i + n] == anchor for i in range(len(components) - n + 1))
