"""Each MCP server of these tests is a Python process importing the SDK: on a loaded machine
(CI's parallel workers) that can take longer than the 30 s a server is given to start."""

import pytest


@pytest.fixture(autouse=True)
def patient_server_start(monkeypatch):
    monkeypatch.setenv("MCP_TIMEOUT", "120000")
