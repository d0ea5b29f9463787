"""The Bash sandbox: bubblewrap's command line, and the check of the safety paths after
each command.

What a sandboxed command can and cannot do (SECURITY.md says the same to users):

* It **reads** every file your user can read: the whole file system is bound read-only
  (``/proc`` is its own, showing only the sandbox's processes; ``/tmp`` is a private,
  empty tmpfs).
* It **writes** only inside the working folder, and there not to its safety paths (the
  names of :mod:`.safety_names` at any depth, ``.vscode``, ``*.pth`` in a
  ``site-packages``; with the home folder inside the working folder, ``~/bin``,
  ``~/.local/bin``, ``~/.config/git`` and the like too): those that exist are bound
  read-only; those missing at the top level are covered, while the command runs, by empty
  read-only placeholders that are removed after it; one that appears deeper (a new
  ``sub/.git``, a new ``x.pth``) is renamed after the command (``sub/.git.sandbox-blocked``)
  and the model is told. The residual risk: while the command runs, such a new entry below
  the top level exists, so a program *outside* the sandbox that runs git (or direnv, ...)
  in that sub-folder during the command could use it.
* It has **no privileges**: its own user namespace, no capabilities, an unprivileged uid
  (root is mapped to ``nobody``), no further user namespaces, ``no_new_privs`` (bubblewrap
  sets it). So ``mount``, ``umount`` and ``mount -o remount`` fail, as root too, and the
  read-only binds hold.
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
import logging
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..loop.tool import ToolError
from .safety_names import CONFIG_DIRS, GIT_DIR_LAYOUT, SAFETY_DIRS, SAFETY_FILES, SITE_DIRS

log = logging.getLogger(__name__)

#: Editor folders whose tasks can run when the folder is opened.
EDITOR_DIRS = (".vscode",)
PROTECTED_NAMES = frozenset((*SAFETY_DIRS, *SAFETY_FILES, *EDITOR_DIRS))
#: Missing at the top level, these are covered by a placeholder while a command runs (all
#: dot names, which file browsers hide); a folder placeholder for folder names.
PLACEHOLDER_DIRS = (*SAFETY_DIRS, *EDITOR_DIRS)
PLACEHOLDER_FILES = tuple(name for name in SAFETY_FILES if name.startswith("."))
#: What a safety entry a sandboxed command made is renamed to end with.
BLOCKED_SUFFIX = ".sandbox-blocked"
#: The most entries of the working folder the check walks (about a second's work); a bigger
#: folder cannot be checked, and the sandbox says so rather than protecting less.
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


def scan(folder: str) -> dict[str, Entry]:
    """Every safety entry of ``folder`` at any depth (symlinks are not followed; a
    protected folder is not entered). A ToolError when the folder is too big to check."""
    home = os.path.realpath(os.path.expanduser("~"))
    found: dict[str, Entry] = {}
    count = 0
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as listing:
                children = list(listing)
        except OSError as exc:  # unreadable for the command too: nothing there to protect
            log.debug("the sandbox check cannot list %s: %s", current, exc)
            continue
        count += len(children)
        if count > MAX_ENTRIES:
            raise ToolError(f"The working folder has more than {MAX_ENTRIES:,} files and folders: too many for the "
                            "sandbox to check its git folders and start-up files. Run the command in a smaller "
                            "working folder, or with the sandbox off (it will then ask).")
        if set(GIT_DIR_LAYOUT) <= {child.name for child in children}:
            st = os.lstat(current)
            found[current] = Entry((st.st_dev, st.st_ino), Kind.GIT_DIR)
            continue
        for child in children:
            try:
                if _is_protected(current, child.name, home):
                    st = child.stat(follow_symlinks=False)
                    found[child.path] = Entry((st.st_dev, st.st_ino), Kind.NAMED)
                elif child.is_dir(follow_symlinks=False):
                    stack.append(child.path)
            except OSError as exc:  # gone meanwhile
                log.debug("the sandbox check skips %s: %s", child.path, exc)
    return found


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


def _identity_args() -> list[str]:
    uid, gid = os.getuid(), os.getgid()
    return ["--unshare-user", "--uid", str(uid or NOBODY), "--gid", str(gid if uid else NOBODY),
            "--disable-userns", "--cap-drop", "ALL"]


def bwrap_argv(command: str, folder: str, protected: dict[str, Entry], placeholders: Iterable[str]) -> list[str]:
    """``bash -c command`` under bubblewrap, as the module docstring describes."""
    argv = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for top in SOCKET_DIRS:
        if os.path.isdir(top) and not os.path.islink(top):
            argv += ["--tmpfs", top]
    for path in _socket_paths(folder):
        argv += ["--ro-bind", "/dev/null", path]
    argv += ["--bind", folder, folder]
    for path in sorted(protected):
        real = os.path.realpath(path)
        if not os.path.exists(real):
            raise ToolError(f"The sandbox cannot protect {path}: it is a link to something that does not exist. "
                            "Remove the link, or run the command with the sandbox off (it will then ask).")
        argv += ["--ro-bind", real, path]
    for path in placeholders:
        if os.path.basename(path) in PLACEHOLDER_DIRS:
            argv += ["--tmpfs", path, "--remount-ro", path]
        else:
            argv += ["--ro-bind", "/dev/null", path]
    return [*argv, *_identity_args(), "--unshare-net", "--unshare-pid", "--die-with-parent", "--chdir", folder,
            "--", "bash", "-c", command]


def probe_argv(bwrap: str) -> list[str]:
    """A trial run with the isolation every sandboxed command gets."""
    return [bwrap, "--ro-bind", "/", "/", "--tmpfs", "/tmp", *_identity_args(), "--unshare-net", "--unshare-pid",
            "--", "true"]


@dataclass
class SandboxRun:
    """One sandboxed command: its ``argv``, and what :meth:`finish` checks once it ended."""

    folder: str
    argv: list[str]
    before: dict[str, Entry]
    placeholders: list[str] = field(default_factory=list)

    def finish(self) -> list[str]:
        """Remove the placeholders; rename every safety entry the command made (one whose
        identity was not there before) so nothing runs it later; say what was renamed.
        Call it once the command's processes are gone (the sandbox's process namespace
        ends with the command)."""
        for path in self.placeholders:
            _remove_placeholder(path)
        known = {entry.ident for entry in self.before.values()}
        notes = []
        for path, entry in sorted(scan(self.folder).items()):
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
    before = scan(folder)
    placeholders = [os.path.join(folder, name) for name in (*PLACEHOLDER_DIRS, *PLACEHOLDER_FILES)
                    if not os.path.lexists(os.path.join(folder, name))]
    return SandboxRun(folder, bwrap_argv(command, folder, before, placeholders), before, placeholders)


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


__all__ = ["BLOCKED_SUFFIX", "MAX_ENTRIES", "Entry", "Kind", "SandboxRun", "bwrap_argv", "prepare_sandbox",
           "probe_argv", "scan"]
