"""Suite-wide: the fake Messages API fixtures (fake_api, fake_api_factory, fake_api_env),
and ``jupyter_dirs`` (IPython/Jupyter folders of the test's own, for tests that start kernels)."""

import pytest

pytest_plugins = ["jupyter_agent.testing.pytest_plugin"]


@pytest.fixture
def jupyter_dirs(tmp_path, monkeypatch):
    """Fresh IPython/Jupyter config, data and runtime folders for this test."""
    for var in ("IPYTHONDIR", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR"):
        folder = tmp_path / var.lower()
        folder.mkdir()
        monkeypatch.setenv(var, str(folder))
