"""The names of safety paths, shared by the permission checks (``jupyter_agent.safety``)
and the Bash sandbox (:mod:`.sandbox`), which must protect exactly the same places."""

from __future__ import annotations

SAFETY_DIRS = (".git", ".hg", ".husky", ".githooks", ".ipython", ".jupyter", ".ssh")
SAFETY_FILES = (".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile", ".zshrc",
                ".zprofile", ".zshenv", ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".kshrc", ".inputrc",
                ".gitconfig", ".gitmodules", ".ripgreprc", ".envrc", ".direnvrc", "sitecustomize.py",
                "usercustomize.py")
#: Folders under ``~/.config`` that hold start-up code or git's own configuration.
CONFIG_DIRS = ("git", "fish", "direnv")
SITE_DIRS = ("site-packages", "dist-packages")
#: The names that make a folder a git directory (a bare repository, ``GIT_DIR``), whatever
#: the folder is called.
GIT_DIR_LAYOUT = ("HEAD", "objects", "refs")

__all__ = ["CONFIG_DIRS", "GIT_DIR_LAYOUT", "SAFETY_DIRS", "SAFETY_FILES", "SITE_DIRS"]
