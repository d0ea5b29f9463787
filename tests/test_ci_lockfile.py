"""CI installs the JupyterLab extension's npm packages exactly as ``labextension/yarn.lock``
says and fails when the lockfile is out of date (``.ci/run`` exports
``YARN_ENABLE_IMMUTABLE_INSTALLS=true``, which the ``jlpm install`` hatch-jupyter-builder runs
during ``pip install`` inherits); a developer's ``./dev`` may still update the lockfile
(``labextension/.yarnrc.yml`` allows it).

Both tests install a copy of the extension's manifest whose ``package.json`` dropped a
dependency, with the npm registry pointed at a closed port: yarn resolves from the
lockfile, and the CI install stops right there (~1 s, no network).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.programs import installed

ROOT = Path(__file__).resolve().parents[1]


def ci_env() -> dict[str, str]:
    """The variables ``.ci/run`` exports for the install and the tests."""
    return dict(re.findall(r"^export (\w+)=(\S+)$", (ROOT / ".ci/run").read_text(), re.M))


@pytest.fixture
def stale(tmp_path) -> Path:
    """The extension's manifest with ``typescript`` dropped: its yarn.lock is out of date."""
    for name in ("package.json", "yarn.lock", ".yarnrc.yml"):
        shutil.copy(ROOT / "labextension" / name, tmp_path / name)
    manifest = json.loads((tmp_path / "package.json").read_text())
    del manifest["devDependencies"]["typescript"]
    (tmp_path / "package.json").write_text(json.dumps(manifest, indent=2))
    return tmp_path


def jlpm_install(cwd: Path, extra_env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("YARN_")}
    env.update(extra_env, YARN_NPM_REGISTRY_SERVER="http://127.0.0.1:9")  # offline
    return subprocess.run([installed("jlpm"), "install", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_ci_fails_when_yarn_lock_is_out_of_date(stale):
    before = (stale / "yarn.lock").read_text()
    result = jlpm_install(stale, ci_env())
    assert result.returncode != 0, result.stdout
    assert "The lockfile would have been modified by this install, which is explicitly forbidden." in result.stdout
    assert (stale / "yarn.lock").read_text() == before


def test_a_developer_install_may_update_yarn_lock(stale):
    # The descriptor the manifest asked for (other packages' names may contain
    # "typescript@npm:" too, e.g. @babel/plugin-syntax-typescript).
    spec = "typescript@npm:" + json.loads((ROOT / "labextension/package.json").read_text())[
        "devDependencies"]["typescript"]
    assert spec in (stale / "yarn.lock").read_text()
    # (update-lockfile: the lockfile only, without linking node_modules)
    result = jlpm_install(stale, {}, "--mode=update-lockfile")
    assert result.returncode == 0, result.stdout
    assert spec not in (stale / "yarn.lock").read_text()
