"""A Jupyter server with jupyter-agent's MCP endpoint, shared by a module's tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from .server import Server

    running = Server(tmp_path_factory.mktemp("mcpserver"))
    yield running
    running.close()
