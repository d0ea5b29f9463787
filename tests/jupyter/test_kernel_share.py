"""The kernel is shared with the user: a cell that blocks the kernel's event loop while a
run streams costs neither the run nor a second request (issue 31).

The issue's case is ``time.sleep(75)``, longer than the default stall limit (60 s). To keep
CI short this kernel's stall limit is set to a few seconds (``JUPYTER_AGENT_STALL_TIMEOUT``)
and the user's cell sleeps a few seconds longer than that: the same behaviour, since the
model's reader thread, not the blocked loop, times the server's silence.
"""

from __future__ import annotations

import pytest
import pytest_asyncio

from jupyter_agent.testing import response, stall, text

from ..test_model import established_to
from .conftest import WAIT_FOR_WARMUP
from .frontend import Frontend, isolated_env
from .test_kernel_magic import display_id_of, transcript

pytestmark = pytest.mark.asyncio(loop_scope="module")

STALL_S = 5  # this kernel's stall limit (the default is 60 s); not shorter: a loaded CI can pause a stream for seconds
BLOCK_S = STALL_S + 3  # the user's cell blocks the loop longer than that


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def kernel(api, module_tmp):
    """A kernel with a short stall limit, the extension loaded."""
    env = isolated_env(module_tmp, **api.env(), JUPYTER_AGENT_STALL_TIMEOUT=str(STALL_S))
    frontend = await Frontend(module_tmp, env).start()
    assert (await frontend.execute("%load_ext jupyter_agent"))["reply"]["status"] == "ok"
    await frontend.execute(WAIT_FOR_WARMUP, timeout=120)
    yield frontend
    await frontend.stop()


async def test_a_cell_that_blocks_the_loop_longer_than_the_stall_limit_costs_no_request(kernel, script, api):
    words = " ".join(f"word{i}" for i in range(150))
    script(response(text(words), chunk_chars=6, delay_s=0.02))  # ~3 s of streaming
    requests_before = len(api.requests)
    run = await kernel.execute("%%agent\nTell me a long story")
    await kernel.until(lambda: "word1" in kernel.widget_text(), 20, "the answer to stream")
    blocked = await kernel.execute(f"import time; time.sleep({BLOCK_S})", timeout=BLOCK_S + 60)
    assert blocked["reply"]["status"] == "ok" and blocked["seconds"] >= BLOCK_S
    md = await transcript(kernel, display_id_of(run), timeout=60)
    assert words in md and "✓ *Finished*" in md
    assert "retrying" not in md and "stalled" not in md
    assert len(api.requests) == requests_before + 1  # one request: nothing was paid twice
    assert api.requests[-1].outcome == "ok"
    # the conversation's model keeps its one reader thread (idle) and no connection open
    readers = await kernel.value("len([t for t in __import__('threading').enumerate() "
                                 "if t.name.startswith('jupyter-agent-reader')])")
    assert readers == "1"
    assert established_to(api.port) == 0


async def test_a_server_that_stops_sending_is_still_a_stall_in_the_kernel(kernel, script, api):
    script(stall(after=3, seconds=60), response(text("Back again.")))
    requests_before = len(api.requests)
    run = await kernel.execute("%%agent\nSay something")
    md = await transcript(kernel, display_id_of(run), timeout=60)
    assert "Back again." in md and "✓ *Finished*" in md and "stream_stalled" in md  # the retry is shown
    assert [r.outcome for r in api.requests[requests_before:]] == ["stall", "ok"]
