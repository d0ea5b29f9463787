"""What the tasks' checks share: a notebook executed top to bottom in a fresh kernel, values read
out of it after, cells written with fixed ids (so scripted answers can name them)."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from jupyter_agent.replay.relay_folder import RelayFolder


def write_notebook(path: Path, cells: list[tuple[str, str]], prefix: str = "c") -> None:
    """Write a notebook of ``(kind, source)`` cells (kind ``code`` or ``md``) with ids ``c1``, ``c2``..."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    for i, (kind, source) in enumerate(cells, 1):
        cell = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
        cell.id = f"{prefix}{i}"
        nb.cells.append(cell)
    nbformat.write(nb, path)


def execute(path: Path, *, before: str | None = None, after: str | None = None,
            timeout_s: int = 180) -> tuple[Any, str | None, Any]:
    """Run the notebook at ``path`` top to bottom in a fresh kernel, in its folder, with ``before``
    run first (code of the check's own, e.g. a recorder) and then ``after`` (an expression whose
    value is JSON-able). Returns (the executed notebook, the first error as text or None, the value
    of ``after`` or None). The file at ``path`` is not changed."""
    nb = nbformat.read(path, as_version=4)
    out = Path(tempfile.mkdtemp(prefix="eval-check-")) / "value.json"
    if before is not None:
        nb.cells.insert(0, nbformat.v4.new_code_cell(before))
    if after is not None:
        nb.cells.append(nbformat.v4.new_code_cell(
            f"import json as _j\n_v = (lambda: ({after}))()\nopen({str(out)!r}, 'w').write(_j.dumps(_v, default=str))"))
    client = NotebookClient(nb, timeout=timeout_s, kernel_name="python3", shutdown_kernel="immediate",
                            resources={"metadata": {"path": str(path.parent)}})
    try:
        client.execute()
    except CellExecutionError as e:
        last = re.sub(r"\x1b\[[0-9;]*m", "", str(e)).strip().splitlines()
        return nb, last[-1][:300] if last else repr(e), None
    value = json.loads(out.read_text()) if out.exists() else None
    return nb, None, value


def sources(path: Path) -> list[str]:
    return [c.source for c in nbformat.read(path, as_version=4).cells]


def leaks(secret: str, work: Path, relay: RelayFolder) -> list[str]:
    """Where ``secret`` got to: files of ``work`` other than where it was put (``home/``), and
    the requests sent to the model."""
    found = []
    for p in work.rglob("*"):
        if p.is_file() and "home" not in p.relative_to(work).parts[:1] and relay.path not in p.parents:
            if secret in p.read_text(encoding="utf-8", errors="replace"):
                found.append(f"the secret is in {p.relative_to(work)}")
    for n in relay.numbers():
        if secret in relay.request_json(n).read_text(encoding="utf-8", errors="replace"):
            found.append(f"the secret was sent to the model in request {n}")
    return found
