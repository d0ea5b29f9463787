"""The names of safety paths and credential places, shared by the permission checks
(``jupyter_agent.safety``) and the Bash sandbox (:mod:`.sandbox`), which must protect
exactly the same places."""

from __future__ import annotations

SAFETY_DIRS = (".git", ".hg", ".husky", ".githooks", ".ipython", ".jupyter", ".ssh")
SAFETY_FILES = (".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile", ".zshrc",
                ".zprofile", ".zshenv", ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".kshrc", ".inputrc",
                ".gitconfig", ".gitmodules", ".ripgreprc", ".envrc", ".direnvrc", "sitecustomize.py",
                "usercustomize.py")
#: Folders under ``~/.config`` that hold start-up code or git's own configuration.
CONFIG_DIRS = ("git", "fish", "direnv")
SITE_DIRS = ("site-packages", "dist-packages")
CREDENTIAL_DIRS = (".ssh", ".gnupg", ".aws", ".azure", ".kube")
CREDENTIAL_FILES = (".netrc", "_netrc", ".pgpass", ".git-credentials", ".pypirc")
#: ssh's private key files (their ``.pub`` halves are public and not matched)
PRIVATE_KEY_NAMES = ("id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk")
#: The names that make a folder a git directory (a bare repository, ``GIT_DIR``), whatever
#: the folder is called.
GIT_DIR_LAYOUT = ("HEAD", "objects", "refs")

__all__ = ["CONFIG_DIRS", "CREDENTIAL_DIRS", "CREDENTIAL_FILES", "GIT_DIR_LAYOUT", "PRIVATE_KEY_NAMES", "SAFETY_DIRS",
           "SAFETY_FILES", "SITE_DIRS"]
