"""An outside agent's ``active_notebook``, the kernel's part: what each page showing a notebook
on this kernel says of it (``focus``, a read of the page's state: nothing changes, nobody is
asked). The server gathers the kernels' answers and tells the client which notebook the user
works in and its active cell (``mcp_server/kernel_link.py``).
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from ...redact import redact

if TYPE_CHECKING:
    from ..bridge.kernel_bridge import KernelBridge

log = logging.getLogger(__name__)

#: Seconds a page has to answer ``focus`` (a busy page is left out, not waited for).
FOCUS_TIMEOUT_S = 5.0


async def focus_of_pages(bridge: KernelBridge | None) -> dict[str, Any]:
    """The reply: one JSON text block, a list of the ``focus`` answers of ``bridge``'s pages
    (values, not prose: the server reads them), each with its page's client id; sources redacted."""
    pages = [p for p in (bridge.pages.values() if bridge is not None else ()) if not p.gone and p.focus]
    found: list[dict[str, Any]] = []
    for page in pages:
        try:
            result = await bridge.request(page.client_id, "focus", timeout=FOCUS_TIMEOUT_S)  # type: ignore[union-attr]
        except Exception as exc:  # a page that went away or does not answer: left out, said in the log
            log.debug("the page %s did not say its focus: %s", page.client_id, exc)
            continue
        if not isinstance(result, dict):
            continue
        entry = {k: result.get(k) for k in ("path", "current", "focused_at", "has_focus", "active_cell_id",
                                            "active_cell_type", "active_index", "selected_ids")}
        source = result.get("active_source")
        entry["active_source"] = redact(source) if isinstance(source, str) else None
        found.append(entry)
    return {"ok": True, "content": [{"type": "text", "text": json.dumps(found)}]}
