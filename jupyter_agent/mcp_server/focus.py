"""``active_notebook``'s answer, from what the pages of the open notebooks' kernels say of
their notebook (``focus``: ``jupyter/outside/outside_focus.py``, gathered by ``kernel_link.py``)."""

from __future__ import annotations

from typing import Any

from ..redact import redact

#: Characters of the active cell's source active_notebook returns (head and tail beyond it).
ACTIVE_SOURCE_CHARS = 4_000


def active_text(pages: list[dict[str, Any]], unasked: list[str]) -> str:
    """``active_notebook``'s answer from the pages' ``focus`` answers."""
    current = sorted((p for p in pages if p.get("current")),
                     key=lambda p: (bool(p.get("has_focus")), float(p.get("focused_at") or 0)), reverse=True)
    lines: list[str] = []
    if not current:
        lines.append("No JupyterLab page with jupyter-agent says which notebook is current (is a notebook open, "
                     "with %load_ext jupyter_agent run in it?). list_notebooks shows the open notebooks.")
    else:
        page = current[0]
        lines.append(f"The notebook the user works in: {page['path']}")
        if page.get("active_cell_id"):
            source = str(page.get("active_source") or "")
            if len(source) > ACTIVE_SOURCE_CHARS:
                half = ACTIVE_SOURCE_CHARS // 2
                source = f"{source[:half]}\n[... {len(source) - 2 * half:,} characters left out ...]\n{source[-half:]}"
            lines.append(f"Active cell: {page['active_cell_id']} (index {page.get('active_index')}, "
                         f"{page.get('active_cell_type')}):\n{source}")
        selected = [str(i) for i in page.get("selected_ids") or []]
        if selected:
            lines.append(f"Also selected: {', '.join(selected)}")
        others = sorted({p["path"] for p in current[1:] if p["path"] != page["path"]})
        if others:
            lines.append(f"Also current in other pages: {', '.join(others)}")
    if unasked:
        lines.append(f"Not asked (jupyter-agent not loaded, or the kernel busy with a cell): {', '.join(unasked)}")
    return redact("\n".join(lines))
