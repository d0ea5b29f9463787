"""Suite-wide: the fake Messages API fixtures (fake_api, fake_api_factory, fake_api_env),
``jupyter_dirs`` (IPython/Jupyter folders of the test's own, for tests that start kernels),
a PATH without the venv, and the random order's seed at the end of the report."""

import os

import pytest

from tests.programs import path_without_scripts

pytest_plugins = ["jupyter_agent.testing.pytest_plugin", "tests.reruns"]


@pytest.fixture
def jupyter_dirs(tmp_path, monkeypatch):
    """Fresh IPython/Jupyter config, data and runtime folders for this test."""
    for var in ("IPYTHONDIR", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR"):
        folder = tmp_path / var.lower()
        folder.mkdir()
        monkeypatch.setenv(var, str(folder))


def pytest_configure(config):
    """Run the suite as on a fresh machine, where nothing put the venv's ``bin/`` on PATH
    (``./dev test`` does not activate it): a test or a product path that finds one of
    the project's programs through PATH fails here too, not only on someone else's machine.
    Programs come from :func:`tests.programs.installed`."""
    os.environ["PATH"] = path_without_scripts()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Name the seed of the random order (pytest-randomly) last, where a failure is read:
    its own header line is hidden by ``-q``, which CI uses."""
    if config.pluginmanager.hasplugin("randomly"):
        seed = config.getoption("randomly_seed")
        terminalreporter.write_line(f"Tests ran in random order, seed {seed}: repeat this order with "
                                    f"`-p randomly --randomly-seed={seed}`")
