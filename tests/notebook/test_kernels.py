"""NotebookRun in a real kernel: outputs, state, errors, images, timeouts, Stop, shutdown.

One kernel serves the module (same notebook path, same session), as it would serve one
conversation; the shutdown test starts its own.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import nbformat
import pytest
import pytest_asyncio
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from jupyter_agent.notebook import (
    KernelPool,
    MemoryNotebook,
    ToolSession,
    close_session,
    register_document,
    tool_session,
)
from jupyter_agent.permissions import Permissions
from jupyter_agent.loop.services import Services
from jupyter_agent.loop.tool import ToolContext
from tests.tools.conftest import call_tool

from .corpus import PNG

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def jupyter_dirs(tmp_path_factory):
    """Kernels must not touch the user's IPython/Jupyter folders."""
    base = tmp_path_factory.mktemp("jupyter")
    patch = pytest.MonkeyPatch()
    for var, sub in (("IPYTHONDIR", "ipython"), ("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                     ("JUPYTER_RUNTIME_DIR", "runtime")):
        (base / sub).mkdir()
        patch.setenv(var, str(base / sub))
    yield base
    patch.undo()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def session(jupyter_dirs):
    shared = ToolSession(kernels=KernelPool(transport="ipc", kernel_name="python3"))
    yield shared
    await close_session(shared)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return Path(os.path.realpath(tmp_path_factory.mktemp("nbwork")))


def make_notebook(folder: Path, *sources: str) -> Path:
    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nb.cells = [new_markdown_cell("# Runs", id="title")] + [new_code_cell(s, id=f"c{i}") for i, s in enumerate(sources)]
    path = folder / "nb.ipynb"
    path.write_text(nbformat.writes(nb) + "\n")
    return path


def ctx_for(folder: Path, session: ToolSession) -> ToolContext:
    policy = Permissions(mode="bypassPermissions", cwd=folder, allow=["NotebookRun"])
    return ToolContext(cwd=folder, permissions=policy, services=Services(session))


async def run(ctx, cell_id: str) -> dict:
    return await call_tool(ctx, "NotebookRun", {"notebook_path": "nb.ipynb", "cell_id": cell_id})


async def test_outputs_come_back_and_are_saved_into_the_notebook(folder, session):
    path = make_notebook(folder, "print('hello')\n6 * 7", "z = 1")
    ctx = ctx_for(folder, session)
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    result = await run(ctx, "c0")
    assert not result.get("is_error")
    assert result["content"].startswith("Ran cell c0 [") and "hello" in result["content"] and "42" in result["content"]
    cells = json.loads(path.read_text())["cells"]
    nbformat.validate(json.loads(path.read_text()))
    outputs = cells[1]["outputs"]
    assert [o["output_type"] for o in outputs] == ["stream", "execute_result"]
    assert outputs[1]["data"]["text/plain"] == ["42"] and cells[1]["execution_count"] == outputs[1]["execution_count"]
    assert cells[0]["source"] == ["# Runs"] and cells[2]["outputs"] == []  # other cells untouched
    # the model's own run does not make the notebook "modified since read"
    assert not (await run(ctx, "c1")).get("is_error")


async def test_state_lives_on_between_runs_in_the_notebooks_folder(folder, session):
    make_notebook(folder, "shared_value = 41", "import os\nprint(shared_value + 1, os.getcwd())")
    ctx = ctx_for(folder, session)
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    await run(ctx, "c0")
    result = await run(ctx, "cell-2")
    assert f"42 {folder}" in result["content"]


async def test_an_exception_is_shown_without_colour_codes(folder, session):
    make_notebook(folder, "def f():\n    return 1 / 0\nf()")
    ctx = ctx_for(folder, session)
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    result = await run(ctx, "c0")
    assert "raised an error" in result["content"] and "ZeroDivisionError: division by zero" in result["content"]
    assert "\x1b[" not in result["content"] and "return 1 / 0" in result["content"]


async def test_images_come_back_as_image_blocks(folder, session):
    make_notebook(folder, f"from IPython.display import Image, display\nimport base64\n"
                          f"display(Image(data=base64.b64decode('{PNG}')))")
    ctx = ctx_for(folder, session)
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    result = await run(ctx, "c0")
    images = [b for b in result["content"] if b["type"] == "image"]
    assert images and images[0]["source"]["data"] == PNG


async def test_a_cell_over_its_time_limit_is_interrupted_and_the_kernel_survives(folder, session):
    make_notebook(folder, "import time\nprint('start', flush=True)\ntime.sleep(30)", "print('still alive')")
    ctx = ctx_for(folder, session)
    tool_session(ctx).cell_timeout_s = 1.0
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    started = asyncio.get_running_loop().time()
    result = await run(ctx, "c0")
    assert result["is_error"] and "timed out" in result["content"] and "start" in result["content"]
    assert "KeyboardInterrupt" in result["content"]
    assert asyncio.get_running_loop().time() - started < 10
    assert "still alive" in (await run(ctx, "c1"))["content"]
    tool_session(ctx).cell_timeout_s = None


async def test_stop_interrupts_a_running_cell(folder, session):
    make_notebook(folder, "import time\ntime.sleep(30)")
    ctx = ctx_for(folder, session)
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    asyncio.get_running_loop().call_later(0.5, ctx.abort.set)
    result = await run(ctx, "c0")
    assert result["is_error"] and "interrupted by the user" in result["content"]


async def test_memory_notebook_runs_in_the_same_kernel(folder, session):
    make_notebook(folder, "memory_value = 41")  # the file notebook leaves a value in its kernel
    file_ctx = ctx_for(folder, session)
    await call_tool(file_ctx, "Read", {"file_path": "nb.ipynb"})
    assert not (await run(file_ctx, "c0")).get("is_error")
    doc = MemoryNotebook(folder / "nb.ipynb", new_notebook(cells=[new_code_cell("print(memory_value)", id="m")]),
                         kernels=session.kernels)
    ctx = ctx_for(folder, ToolSession(kernels=session.kernels))
    register_document(tool_session(ctx), doc)
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    result = await run(ctx, "m")
    assert "41" in result["content"] and doc.cells[0]["outputs"][0]["text"] == "41\n"


async def test_close_session_shuts_the_kernel_down(folder, jupyter_dirs):
    own = ToolSession(kernels=KernelPool(transport="ipc", kernel_name="python3"))
    make_notebook(folder, "1 + 1")
    ctx = ctx_for(folder, own)
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    assert "2" in (await run(ctx, "c0"))["content"]
    kernel = await own.kernels.get(folder / "nb.ipynb")
    assert await kernel.manager.is_alive()
    await close_session(own)
    assert not await kernel.manager.is_alive() and own.kernels is None


async def test_a_kernel_that_cannot_start_is_an_error_result(folder, jupyter_dirs):
    broken = ToolSession(kernels=KernelPool(transport="ipc", kernel_name="no-such-kernel"))
    make_notebook(folder, "1 + 1")
    ctx = ctx_for(folder, broken)
    await call_tool(ctx, "Read", {"file_path": "nb.ipynb"})
    result = await run(ctx, "c0")
    assert result["is_error"] and "Could not start a 'no-such-kernel' kernel" in result["content"]
    assert json.loads((folder / "nb.ipynb").read_text())["cells"][1]["outputs"] == []
