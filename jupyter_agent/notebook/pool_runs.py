"""Runs in a conversation's own kernel that leave the notebook as it is, and what a Read says of that kernel.

:func:`run_code_in_kernel` is ``KernelRun`` for a notebook file (the CLI's kernel, or a
notebook file a ``%%agent`` conversation works on): the code runs in the notebook's kernel of
the pool (:mod:`.kernels`), started if need be, with ``store_history=False`` (no execution
count, no history entry), and nothing is written into the notebook.
:func:`pool_kernel_info` is what a Read of such a notebook tells of its kernel.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from .document import KernelInfo, NotebookDocument, NotebookError, RunResult, scratch_cell
from .kernels import KernelPool
from .namespace import changed_names


async def run_code_in_kernel(doc: NotebookDocument, kernels: KernelPool | None, code: str, *,
                             timeout: float, abort: asyncio.Event | None) -> RunResult:
    """Run ``code`` in the kernel of a file/memory notebook (started if need be) and store
    nothing: no outputs in the notebook, no execution count, no history entry."""
    if kernels is None:
        raise NotebookError("No kernel pool is attached to this notebook, so no code can run in its kernel.")
    snapshot = await doc.snapshot()
    kernel = await kernels.get(doc.path, snapshot.kernel_name)
    before = await kernel.namespace_ids()
    kernels.epochs.check(str(doc.path), kernel.identity)
    execution = await kernel.execute(code, timeout=timeout, abort=abort, store_history=False)
    after = await kernel.namespace_ids() if execution.status != "died" else None
    if after is not None:
        kernels.epochs.saw(str(doc.path), list(after))
    if execution.status == "died":
        await kernels.discard(doc.path)
    return RunResult(cell=scratch_cell(code), outputs=execution.outputs, execution_count=None,
                     status=execution.status, saved=False, note=execution.note,
                     names_changed=changed_names(before, after))


def pool_kernel_info(kernels: KernelPool | None, path: Path) -> KernelInfo:
    """A file or memory notebook's kernel in the pool: running or not, the folder it runs
    (or would start) in, and the code it ran under each count."""
    kernel = kernels.running(path) if kernels is not None else None
    folder = path.parent if path.parent.is_dir() else Path.cwd()
    return KernelInfo(running=kernel is not None, working_folder=str(folder),
                      sources=dict(kernel.ran) if kernel is not None else None)
