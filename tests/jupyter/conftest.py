"""Fixtures: one fake Messages API and one real kernel per test module (started once:
~1 s), with the kernel's environment pointing the SDK at the fake."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_asyncio

from jupyter_agent.testing import FakeMessagesAPI

from .frontend import Frontend, isolated_env

# Joins the background warm-up that %load_ext started (seconds on a loaded machine), so
# that whichever test runs first does not spend its timeouts on it (tests/jupyter/test_warmup.py
# tests the warm-up itself).
WAIT_FOR_WARMUP = "__import__('jupyter_agent.jupyter.kernel.warmup', fromlist=['_']).wait()"


@pytest.fixture(scope="module")
def module_tmp(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("kernel")


@pytest.fixture(scope="module")
def api():
    """A strict fake API for the module; each test adds its script and must use all of it."""
    server = FakeMessagesAPI([], strict=True).start()
    yield server
    server.close()
    assert not server.unmet(), server.unmet()


@pytest.fixture
def script(api):
    """``script(*responses)`` adds responses; the test fails if any is left unused or a
    request of its own was rejected. What is left is cleared, so that a test that failed
    half way answers neither the next test's requests on the shared server nor its re-run's
    (tests/reruns.py)."""
    rejected_before = len(api.rejections)
    yield api.add
    left = api.clear_script()
    assert left == 0, f"{left} scripted responses were not requested"
    assert not api.rejections[rejected_before:], [r.error for r in api.rejections[rejected_before:]]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def kernel(api, module_tmp):
    """A kernel that loaded the extension, its SDK pointed at the fake API."""
    env = isolated_env(module_tmp, **api.env())
    frontend = await Frontend(module_tmp, env).start()
    result = await frontend.execute("%load_ext jupyter_agent")
    assert result["reply"]["status"] == "ok", result
    await frontend.execute(WAIT_FOR_WARMUP, timeout=120)
    yield frontend
    await frontend.stop()


@pytest.fixture(scope="module")
def lab(api, tmp_path_factory):
    """A JupyterLab server and browser for the browser tests of one module (see lab.py)."""
    from .lab import Lab

    server = Lab(tmp_path_factory.mktemp("lab"), api.env())
    yield server
    server.close()


@pytest.fixture
def page_of(lab, request):
    """``page_of(name)`` opens notebook ``name`` in a new page of ``lab``; after the test,
    each page still open is screenshot (its end state), the pages close and the kernels stop."""
    yield lab.open
    # A re-run (tests/reruns.py) keeps the first attempt's screenshots: it is the failure.
    attempt = getattr(request.node, "execution_count", 1)
    lab.finish(request.node.name if attempt == 1 else f"{request.node.name}-attempt{attempt}")
