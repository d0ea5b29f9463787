"""The background warm-up that ``%load_ext jupyter_agent`` starts (the first run must not
wait seconds for ``import anthropic``): the kernel's own thread never loads the SDK for
it, and a run started before the warm-up ended waits for it and just works."""

from __future__ import annotations

import pytest_asyncio

from jupyter_agent.testing import response, text

from .frontend import Frontend, isolated_env
from .test_kernel_magic import display_id_of, transcript

WATCHED = ("anthropic", "pydantic", "ipywidgets", "jupyter_agent.loop.query", "jupyter_agent.conversation",
           "jupyter_agent.jupyter.widgets.runview")

# A finder that notes which thread loads each watched module (the import system asks the
# finders only in the thread that loads a module), and can make the warm-up's `import
# anthropic` slow, as on a loaded machine: its loader sleeps before running the module
# (under that module's own lock only; a finder that slept would hold the global import
# lock and stall every import of the kernel). A pre_run_cell hook notes, for each cell,
# whether the warm-up was still running when the cell started.
WHO_LOADS = """\
import importlib.machinery, sys, threading, time
from IPython import get_ipython
from jupyter_agent.jupyter.kernel import warmup as _warmup

class _SlowLoader:
    def __init__(self, real, slow_s):
        self.real, self.slow_s = real, slow_s
    def __getattr__(self, name):
        return getattr(self.real, name)
    def create_module(self, spec):
        return self.real.create_module(spec)
    def exec_module(self, module):
        time.sleep(self.slow_s)
        self.real.exec_module(module)

class _WhoLoads:
    def __init__(self, slow_s):
        self.loaded_by, self.slow_s = {}, slow_s
    def find_spec(self, name, path=None, target=None):
        if name not in %r:
            return None
        self.loaded_by.setdefault(name, []).append(threading.current_thread().name)
        if name != "anthropic" or not self.slow_s:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        spec.loader = _SlowLoader(spec.loader, self.slow_s)
        return spec

_who = _WhoLoads(%%r)
sys.meta_path.insert(0, _who)
_warm_at_cell_start = []
get_ipython().events.register("pre_run_cell", lambda info: _warm_at_cell_start.append(_warmup.state()["running"]))
""" % (WATCHED,)  # noqa: UP031 - filled twice: the watched names now, each test's delay later

STATE = "__import__('jupyter_agent.jupyter.kernel.warmup', fromlist=['_']).state()"


@pytest_asyncio.fixture
async def fresh_kernel(api, tmp_path):
    """A new kernel (the warm-up runs once per process) that has not loaded the extension."""
    frontend = await Frontend(tmp_path, isolated_env(tmp_path, **api.env())).start()
    yield frontend
    await frontend.stop()


async def warmup_state(kernel) -> dict:
    return eval(await kernel.value(STATE))  # a dict of plain values, printed by repr()


async def test_load_ext_leaves_the_sdk_to_the_background(fresh_kernel):
    kernel = fresh_kernel
    assert (await kernel.execute(WHO_LOADS % 0.0))["reply"]["status"] == "ok"
    assert (await kernel.execute("%load_ext jupyter_agent"))["reply"]["status"] == "ok"
    for _ in range(600):  # the warm-up imports ~2 s of modules; give a loaded machine a minute
        state = await warmup_state(kernel)
        if not state["running"]:
            break
        await kernel.execute("import time; time.sleep(0.1)")
    assert state["thread"] == "jupyter-agent-warmup" and not state["running"], state
    assert state["failed"] == {}, state  # every module it names exists and imports
    loaded_by = eval(await kernel.value("_who.loaded_by"))
    assert loaded_by == {name: ["jupyter-agent-warmup"] for name in WATCHED}  # not "MainThread"
    # ...and it built the API client's TLS context (loading the CA bundle) for the first run
    assert await kernel.value("bool(__import__('jupyter_agent.model.tls', fromlist=['_'])._built)") == "True"


async def test_the_warm_up_imports_nbformat_without_building_the_iri_grammar(fresh_kernel):
    """nbformat imports jsonschema, whose "iri" checker would build rfc3987_syntax's lark
    grammar (~1.9 s of CPU) at every kernel start: docs/design.md, "Kernel start and nbformat"."""
    kernel = fresh_kernel
    assert (await kernel.execute("%load_ext jupyter_agent"))["reply"]["status"] == "ok"
    while (state := await warmup_state(kernel))["running"]:
        await kernel.execute("import time; time.sleep(0.1)")
    assert state["failed"] == {} and state["cpu_s"] > 0, state
    names = ("nbformat", "jsonschema", "lark", "rfc3987_syntax.syntax_helpers")
    loaded = eval(await kernel.value(f"{{m: m in __import__('sys').modules for m in {names!r}}}"))
    assert loaded == {"nbformat": True, "jsonschema": True, "lark": False, "rfc3987_syntax.syntax_helpers": False}


async def test_a_run_started_during_the_warm_up_waits_for_it_and_works(fresh_kernel, script):
    kernel = fresh_kernel
    script(response(text("Hello after the warm-up.")))
    assert (await kernel.execute(WHO_LOADS % 1.5))["reply"]["status"] == "ok"  # a slow `import anthropic`
    assert (await kernel.execute("%load_ext jupyter_agent"))["reply"]["status"] == "ok"
    result = await kernel.execute("%%agent\nSay hello", timeout=60)  # at once: the warm-up is still importing
    assert result["reply"]["status"] == "ok", result["outputs"]
    assert eval(await kernel.value("_warm_at_cell_start[-2]")) is True  # (-1 is this value's cell)
    md = await transcript(kernel, display_id_of(result), timeout=60)
    assert "Hello after the warm-up." in md and "✓ *Finished* (`completed`)" in md
    loaded_by = eval(await kernel.value("_who.loaded_by"))
    assert loaded_by["anthropic"] == ["jupyter-agent-warmup"]  # loaded once, in the background
    assert (await kernel.execute("1 + 1"))["reply"]["status"] == "ok"  # the kernel is fine


async def test_the_warm_up_can_be_turned_off(api, script, tmp_path):
    script(response(text("Hello without a warm-up.")))
    env = isolated_env(tmp_path, **api.env(), JUPYTER_AGENT_WARMUP="0")
    kernel = await Frontend(tmp_path, env).start()
    try:
        assert (await kernel.execute(WHO_LOADS % 0.0))["reply"]["status"] == "ok"
        assert (await kernel.execute("%load_ext jupyter_agent"))["reply"]["status"] == "ok"
        assert (await warmup_state(kernel))["thread"] is None
        result = await kernel.execute("%%agent\nSay hello", timeout=60)
        md = await transcript(kernel, display_id_of(result), timeout=60)  # it imports the SDK now
        assert "Hello without a warm-up." in md and "✓ *Finished* (`completed`)" in md
        # the run's own import: on the kernel's thread, or on its model's reader thread (where
        # the SDK's client is made: model/reader.py), never on a warm-up thread
        loaders = eval(await kernel.value("_who.loaded_by"))["anthropic"]
        assert len(loaders) == 1 and (loaders[0] == "MainThread" or loaders[0].startswith("jupyter-agent-reader"))
    finally:
        await kernel.stop()
