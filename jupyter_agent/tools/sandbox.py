"""The Bash sandbox: bubblewrap's command line, and the check of the safety paths after
each command.

What a sandboxed command can and cannot do (SECURITY.md says the same to users):

* It **reads** every file your user can read (the whole file system is bound read-only),
  except the credential places the Read tool asks for in every mode: ``.ssh/``,
  ``.gnupg/``, ``.aws/``, ``.azure/``, ``.kube/``, ``.netrc``, ``.pgpass``,
  ``.git-credentials``, ``.pypirc`` and ssh private key names, in the home folder and at
  any depth of the working folder, and ``~/.config/gcloud``, ``~/.docker/config.json``:
  those are empty. ``/proc`` is its own (only the sandbox's processes); ``/tmp`` is a
  private, empty tmpfs.
* It **writes** only inside the working folder, and there not to its safety paths (the
  names of :mod:`.safety_names` at any depth, ``.vscode``, ``*.pth`` in a
  ``site-packages``; with the home folder inside the working folder, ``~/bin``,
  ``~/.local/bin``, ``~/.config/git`` and the like; a folder a git configuration names as
  ``core.hooksPath``). Those that exist are bound read-only; those missing at the top
  level are covered, while the command runs, by empty read-only placeholders that are
  removed after it; one that appears deeper (a new ``sub/.git``, a new ``x.pth``) is
  renamed after the command (``sub/.git.sandbox-blocked``) and the model is told. A folder
  the check cannot list is bound read-only whole; one the command made unlistable is
  opened (its owner's bits) and looked into after it. The residual risk: while the command
  runs, such a new entry below the top level exists, so a program *outside* the sandbox
  that runs git (or direnv, ...) in that sub-folder during the command could use it.
* It has **no privileges**: its own user namespace, no capabilities, an unprivileged uid
  (root is mapped to ``nobody``), no further user namespaces (bubblewrap 0.8 and later),
  ``no_new_privs`` (bubblewrap sets it). So ``mount``, ``umount`` and ``mount -o
  remount`` fail, as root too, and the read-only binds hold.
* It has **no network** (its own network namespace: abstract unix sockets are out of
  reach too) and no unix socket outside the working folder: ``/run`` (``/var/run``) is an
  empty tmpfs, and every other socket file the kernel lists as bound (``/proc/net/unix``)
  is covered by ``/dev/null``. A socket bound outside the working folder by a process in
  another network namespace (a container's), or bound after the command started, is not
  in that list.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import logging
import os
import re
import stat
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..loop.tool import ToolError
from .safety_names import (CONFIG_DIRS, CREDENTIAL_DIRS, CREDENTIAL_FILES, GIT_DIR_LAYOUT, PRIVATE_KEY_NAMES,
                           SAFETY_DIRS, SAFETY_FILES, SITE_DIRS)

log = logging.getLogger(__name__)

#: Editor folders whose tasks can run when the folder is opened.
EDITOR_DIRS = (".vscode",)
PROTECTED_NAMES = frozenset((*SAFETY_DIRS, *SAFETY_FILES, *EDITOR_DIRS))
#: Credential places (those the Read tool asks for in every mode): hidden in the sandbox.
SECRET_NAMES = frozenset((*CREDENTIAL_DIRS, *CREDENTIAL_FILES, *PRIVATE_KEY_NAMES))
#: Missing at the top level, these are covered by a placeholder while a command runs (all
#: dot names, which file browsers hide); a folder placeholder for folder names.
PLACEHOLDER_DIRS = (*SAFETY_DIRS, *EDITOR_DIRS)
PLACEHOLDER_FILES = tuple(name for name in SAFETY_FILES if name.startswith("."))
#: What a safety entry a sandboxed command made is renamed to end with.
BLOCKED_SUFFIX = ".sandbox-blocked"
#: The most entries of the working folder the check walks before a command (it walks about
#: 100,000 a second); a bigger folder is refused with that reason rather than protected less.
MAX_ENTRIES = 300_000
#: Folders of sockets hidden as a whole (an empty tmpfs over each; ``/var/run`` is
#: usually a link to ``/run``).
SOCKET_DIRS = ("/run", "/var/run")
#: The uid and gid the sandbox maps root to.
NOBODY = 65534


class Kind(enum.Enum):
    """Why an entry is protected: its name (or place), or its layout as a git directory."""

    NAMED = "named"
    GIT_DIR = "git_dir"


@dataclass(frozen=True)
class Entry:
    """A protected entry: its identity (device, inode of the entry itself) and kind."""

    ident: tuple[int, int]
    kind: Kind


def _is_protected(parent: str, name: str, home: str) -> bool:
    if name in PROTECTED_NAMES:
        return True
    if name.endswith(".pth") and os.path.basename(parent) in SITE_DIRS:
        return True
    if parent == home:
        return name == "bin"
    if parent == os.path.join(home, ".local"):
        return name == "bin"
    return parent == os.path.join(home, ".config") and name in CONFIG_DIRS


@dataclass
class Scan:
    """What a walk of the working folder found: the safety entries, and the folders it
    could not list (the command could have put anything there)."""

    found: dict[str, Entry] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)
    #: credential places (``.aws/``, ``.netrc``, ``id_ed25519``...): hidden from the command
    secrets: list[str] = field(default_factory=list)


def scan(folder: str, *, limit: int | None = None, open_up: frozenset[str] | None = None) -> Scan:
    """Every safety entry of ``folder`` at any depth (symlinks are not followed; a
    protected folder is not entered). Past ``limit`` entries, a ToolError. ``open_up``:
    after a command, a folder it left unlistable that is not one of these (unlistable
    before) is given its owner's read, write and search bits, so that nothing hides in it."""
    home = os.path.realpath(os.path.expanduser("~"))
    result = Scan()
    count = 0
    stack = [folder]
    while stack:
        current = stack.pop()
        children = _listing(current, open_up)
        if children is None:
            result.unreadable.append(current)
            continue
        count += len(children)
        if limit is not None and count > limit:
            raise ToolError(f"The working folder has more than {limit:,} files and folders: too many for the "
                            "sandbox to check its git folders and start-up files. Run the command in a smaller "
                            "working folder, or with the sandbox off (it will then ask).")
        if set(GIT_DIR_LAYOUT) <= {child.name for child in children}:
            with contextlib.suppress(OSError):  # (gone meanwhile: nothing to protect)
                st = os.lstat(current)
                result.found[current] = Entry((st.st_dev, st.st_ino), Kind.GIT_DIR)
            continue
        for child in children:
            try:
                if child.name in SECRET_NAMES:
                    result.secrets.append(child.path)
                if _is_protected(current, child.name, home):
                    st = child.stat(follow_symlinks=False)
                    result.found[child.path] = Entry((st.st_dev, st.st_ino), Kind.NAMED)
                elif child.is_dir(follow_symlinks=False) and child.name not in SECRET_NAMES:
                    stack.append(child.path)
            except OSError as exc:  # gone meanwhile
                log.debug("the sandbox check skips %s: %s", child.path, exc)
    return result


def _listing(folder: str, open_up: frozenset[str] | None) -> list[os.DirEntry[str]] | None:
    """The entries of ``folder``, or None when it cannot be listed (see :func:`scan`)."""
    for attempt in (1, 2):
        try:
            with os.scandir(folder) as listing:
                return list(listing)
        except PermissionError:
            if attempt == 2 or open_up is None or folder in open_up:
                break
            try:  # the command's own folder (the same user made it): open it to look inside
                os.chmod(folder, stat.S_IMODE(os.lstat(folder).st_mode) | 0o700)
            except OSError as exc:
                log.warning("the sandbox check cannot open %s: %s", folder, exc)
                break
        except OSError as exc:  # gone meanwhile, or not a folder any more
            log.debug("the sandbox check cannot list %s: %s", folder, exc)
            return []
    return None


def _socket_paths(folder: str) -> list[str]:
    """The socket files bound outside ``folder``, ``/tmp`` and :data:`SOCKET_DIRS`, as the
    kernel lists them (``/proc/net/unix``; abstract ones start with ``@`` and are left to
    the network namespace)."""
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="replace") as listing:
            lines = listing.read().splitlines()[1:]
    except OSError as exc:
        log.debug("no /proc/net/unix: %s", exc)
        return []
    hidden = (folder, "/tmp", *SOCKET_DIRS)
    paths = set()
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) < 8 or not fields[7].startswith("/"):
            continue
        path = fields[7]
        if any(path == top or path.startswith(top.rstrip("/") + "/") for top in hidden):
            continue
        with contextlib.suppress(OSError):
            if stat.S_ISSOCK(os.lstat(path).st_mode):
                paths.add(path)
    return sorted(paths)


def _identity_args(bwrap: str = "bwrap") -> list[str]:
    uid, gid = os.getuid(), os.getgid()
    # (no nested user namespaces where bwrap can say so, 0.8 and later; without it the
    # binds still hold: mounts inherited by a nested namespace are locked)
    nested = ["--disable-userns"] if _knows_option(bwrap, "--disable-userns") else []
    return ["--unshare-user", "--uid", str(uid or NOBODY), "--gid", str(gid if uid else NOBODY), *nested,
            "--cap-drop", "ALL"]


@functools.lru_cache(maxsize=8)
def _knows_option(bwrap: str, option: str) -> bool:
    """Does this ``bwrap`` take ``option`` (its ``--help`` lists it)?"""
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.debug("bwrap --help failed: %s", exc)
        return False
    return option.encode() in done.stdout + done.stderr


def bwrap_argv(command: str, folder: str, protected: Scan, placeholders: Iterable[tuple[str, bool]]) -> list[str]:
    """``bash -c command`` under bubblewrap, as the module docstring describes (a folder
    the check could not list is bound read-only whole: what it holds is not known)."""
    argv = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for top in SOCKET_DIRS:
        if os.path.isdir(top) and not os.path.islink(top):
            argv += ["--tmpfs", top]
    for path in _socket_paths(folder):
        argv += ["--ro-bind", "/dev/null", path]
    argv += ["--bind", folder, folder]
    hidden = set(protected.secrets)
    for path in sorted([*protected.found, *protected.unreadable]):
        if path in hidden:
            continue  # hidden below, which also keeps it from being written
        real = os.path.realpath(path)
        if not os.path.exists(real):
            raise ToolError(f"The sandbox cannot protect {path}: it is a link to something that does not exist. "
                            "Remove the link, or run the command with the sandbox off (it will then ask).")
        argv += ["--ro-bind", real, path]
    for path, is_dir in placeholders:
        if is_dir:
            argv += ["--tmpfs", path, "--remount-ro", path]
        else:
            argv += ["--ro-bind", "/dev/null", path]
    for path in sorted({os.path.realpath(p) for p in (*protected.secrets, *_home_secrets())}):
        if os.path.isdir(path):
            argv += ["--tmpfs", path, "--remount-ro", path]
        elif os.path.exists(path):
            argv += ["--ro-bind", "/dev/null", path]
    return [*argv, *_identity_args(), "--unshare-net", "--unshare-pid", "--die-with-parent", "--chdir", folder,
            "--", "bash", "-c", command]


def _home_secrets() -> list[str]:
    """The credential places of the home folder (those the working folder's walk may not
    reach): ``~/.ssh``, ``~/.aws``, ``~/.netrc``, ``~/.config/gcloud``..."""
    home = os.path.expanduser("~")
    places = [os.path.join(home, name) for name in (*CREDENTIAL_DIRS, *CREDENTIAL_FILES)]
    places += [os.path.join(home, ".config", "gcloud"), os.path.join(home, ".docker", "config.json")]
    return [place for place in places if os.path.lexists(place)]


def probe_argv(bwrap: str) -> list[str]:
    """A trial run with the isolation every sandboxed command gets."""
    return [bwrap, "--ro-bind", "/", "/", "--tmpfs", "/tmp", *_identity_args(bwrap), "--unshare-net", "--unshare-pid",
            "--", "true"]


@dataclass
class SandboxRun:
    """One sandboxed command: its ``argv``, and what :meth:`finish` checks once it ended."""

    folder: str
    argv: list[str]
    before: Scan
    #: (path, is a folder) of each placeholder
    placeholders: list[tuple[str, bool]] = field(default_factory=list)

    def finish(self) -> list[str]:
        """Remove the placeholders; rename every safety entry the command made (one whose
        identity was not there before) so nothing runs it later; say what was renamed.
        Call it once the command's processes are gone (the sandbox's process namespace
        ends with the command)."""
        for path, _ in self.placeholders:
            _remove_placeholder(path)
        known = {entry.ident for entry in self.before.found.values()}
        # (no limit: however many files the command made, every one is looked at)
        after = scan(self.folder, limit=None, open_up=frozenset(self.before.unreadable))
        notes = [f"{os.path.relpath(path, self.folder)}: a folder the command made unreadable, not checked"
                 for path in after.unreadable if path not in self.before.unreadable]
        for path, entry in sorted(after.found.items()):
            if entry.ident in known:  # there before (perhaps moved with its folder): it was read-only
                continue
            target = _quarantine(path, entry.kind)
            shown = os.path.relpath(path, self.folder)
            if target is None:
                notes.append(f"{shown}: made by the command, and it could not be renamed")
            else:
                notes.append(f"{shown}: renamed to {os.path.relpath(target, self.folder)}")
        if not notes:
            return []
        log.warning("a sandboxed command made safety paths: %s", "; ".join(notes))
        return ["[The sandbox blocked what the command made where code runs later outside it (git folders and "
                "hooks, shell and Python start-up files, .vscode): " + "; ".join(notes) + ". If that was "
                "meant, run the command with the sandbox off; it will ask first.]"]


def prepare_sandbox(command: str, folder: str) -> SandboxRun:
    """Check ``folder`` (a real path) and plan the sandboxed run of ``command``; run its
    ``argv``, then call :meth:`SandboxRun.finish`. Blocking: run it in a thread."""
    before = scan(folder, limit=MAX_ENTRIES)
    # (a folder the user cannot write holds no placeholder, and nothing new either)
    writable = os.access(folder, os.W_OK)
    placeholders = [(os.path.join(folder, name), name in PLACEHOLDER_DIRS)
                    for name in (*PLACEHOLDER_DIRS, *PLACEHOLDER_FILES)
                    if writable and not os.path.lexists(os.path.join(folder, name))]
    for hooks in _hooks_folders(folder, before):
        if os.path.isdir(hooks) and not os.path.islink(hooks):
            st = os.lstat(hooks)
            before.found[hooks] = Entry((st.st_dev, st.st_ino), Kind.NAMED)
        elif not os.path.lexists(hooks) and os.access(os.path.dirname(hooks), os.W_OK):
            placeholders.append((hooks, True))
    return SandboxRun(folder, bwrap_argv(command, folder, before, placeholders), before, placeholders)


_HOOKS_PATH = re.compile(r"^\s*hookspath\s*=\s*(.*?)\s*$", re.IGNORECASE | re.MULTILINE)


def _hooks_folders(folder: str, before: Scan) -> list[str]:
    """The folders inside ``folder`` that a git configuration names as ``core.hooksPath``
    (the user's and the system's, and each repository's found in ``folder``): hooks run
    from there, so they are protected as ``.git/hooks`` is."""
    configs = [(os.path.expanduser("~/.gitconfig"), folder), (os.path.expanduser("~/.config/git/config"), folder),
               ("/etc/gitconfig", folder)]
    for path, entry in before.found.items():
        if entry.kind is Kind.GIT_DIR:
            configs.append((os.path.join(path, "config"), path))
        elif os.path.basename(path) == ".git":
            configs.append((os.path.join(_git_dir(path), "config"), os.path.dirname(path)))
    found = []
    for config, base in configs:
        try:
            with open(config, encoding="utf-8", errors="replace") as handle:
                text = handle.read(1_000_000)
        except OSError:
            continue
        for match in _HOOKS_PATH.finditer(text):
            value = os.path.expanduser(match.group(1).strip('"'))
            hooks = os.path.realpath(os.path.join(base, value))
            covered = any(hooks == p or hooks.startswith(p + "/") for p in (*before.found, *before.unreadable))
            if hooks.startswith(folder.rstrip("/") + "/") and not covered and hooks not in found:
                found.append(hooks)
    return found


def _git_dir(dot_git: str) -> str:
    """The git directory of a ``.git`` entry (a folder, or a file saying ``gitdir: ...``)."""
    if os.path.isdir(dot_git):
        return dot_git
    try:
        with open(dot_git, encoding="utf-8", errors="replace") as handle:
            line = handle.readline(10_000).strip()
    except OSError:
        return dot_git
    target = line.removeprefix("gitdir:").strip()
    return os.path.join(os.path.dirname(dot_git), target) if line.startswith("gitdir:") else dot_git


def _remove_placeholder(path: str) -> None:
    """Remove the empty entry bubblewrap made as a placeholder's mount point; anything else
    there is left alone (the next check renames it)."""
    try:
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            os.rmdir(path)  # only when empty
        elif stat.S_ISREG(st.st_mode) and st.st_size == 0:
            os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("the sandbox's placeholder %s could not be removed: %s", path, exc)


def _quarantine(path: str, kind: Kind) -> str | None:
    """Rename a safety entry out of the way (a git directory's ``HEAD``, which is what
    makes it one); the new name, or None when it cannot be renamed."""
    source = os.path.join(path, GIT_DIR_LAYOUT[0]) if kind is Kind.GIT_DIR else path
    for n in range(1, 100):
        target = source + BLOCKED_SUFFIX + (f"-{n}" if n > 1 else "")
        if os.path.lexists(target):
            continue
        try:
            os.rename(source, target)
        except OSError as exc:
            log.warning("the sandbox could not rename %s: %s", source, exc)
            return None
        return target
    return None


__all__ = ["BLOCKED_SUFFIX", "MAX_ENTRIES", "Entry", "Kind", "SandboxRun", "Scan", "bwrap_argv", "prepare_sandbox",
           "probe_argv", "scan"]
