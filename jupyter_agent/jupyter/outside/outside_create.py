"""An outside agent's ``create_notebook``, the kernel's part: the new notebook written as the
agent's own Write (its rules, the policy, the card showing the whole file, the run's undo
deleting it again), then opened in a tab of the page that asked (the bridge's ``open``).

The file is written where the Jupyter server keeps it: under the server's root as the page
says it (``server_root``). A kernel that does not share the server's disk (a gateway's) cannot
write it: refused, saying so.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..bridge.kernel_bridge import KernelBridge

log = logging.getLogger(__name__)

#: Seconds the page has to open the new notebook.
OPEN_TIMEOUT_S = 30.0


class CannotCreate(Exception):
    """The notebook cannot be created here; the message says why and what to do."""


async def create_notebook(run: Any, page: Any, where: Any, args: dict[str, Any], progress: Any,
                          bridge: KernelBridge | None) -> tuple[Any, str]:
    """Write the new notebook ``args["new_path"]`` (server-relative), then open it in ``page``
    (asked over ``bridge``): Write's result, and what happened after it ('' when Write failed
    or was denied)."""
    import nbformat

    from ...tools.write import Write
    new_path = str(args.get("new_path") or "")
    if where.remote or not page.server_root:
        raise CannotCreate("This notebook's kernel does not share the Jupyter server's disk (a gateway's kernel?): "
                      "create the notebook in JupyterLab (File > New > Notebook) instead. Nothing was created.")
    target = Path(page.server_root).expanduser() / new_path
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("%load_ext jupyter_agent")])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    result = await run.call_tool("Write", {"file_path": str(target), "content": nbformat.writes(notebook)},
                                 progress, page.client_id, tools=[Write()])
    if result.block.get("is_error"):
        return result, ""
    opened = "The page was not asked to open it (its jupyter-agent is older): open it in JupyterLab."
    if page.open and bridge is not None:
        try:
            await bridge.request(page.client_id, "open", path=new_path, timeout=OPEN_TIMEOUT_S)
            opened = "It is open in a tab of the user's JupyterLab page."
        except Exception as exc:  # the file is there: say the open failed, and how to open it
            log.info("the page did not open %s: %s", new_path, exc)
            opened = f"The page could not open it ({exc}): open it in JupyterLab."
    return result, f"Created {new_path} (one cell: %load_ext jupyter_agent). {opened}"
