"""An outside run's outputs redacted in the kernel, before they leave it.

The cells an outside agent's calls run (``execute_request`` ids that start with
``protocol.RUN_TAG_PREFIX``) publish their outputs on the kernel's IOPub as any cell does.
The Jupyter server reads them there for ``run_status`` and ``run_cell``'s "still running"
answer (``mcp_server/runs.py``), but it knows only the secrets of its own environment, not
the kernel's: a key the kernel was given alone (a gateway host's), or one a cell set. So the
kernel redacts those messages before they are sent: each ``Session`` that publishes on IOPub
(ipykernel's one, used by the streams' IO thread and by displays, results and errors on the
main thread) sends through :func:`redacting`. Secrets are what
:func:`~jupyter_agent.redact.redact` knows at the moment a message leaves, so a key the
running cell itself just put in ``os.environ`` is known too. The page shows these outputs
redacted as well, and the notebook saves them so: a secret never lands in a notebook
through an outside agent's run. The user's own cells are not touched.
"""

from __future__ import annotations

import functools
import logging
import sys
from typing import Any

from ...mcp_server.protocol import RUN_TAG_PREFIX
from ...redact import redact

log = logging.getLogger(__name__)

#: The IOPub messages that carry a cell's outputs.
OUTPUT_KINDS = frozenset({"stream", "display_data", "update_display_data", "execute_result", "error"})
#: What an output becomes if it could not be checked (it is not sent as it was).
WITHHELD = "[jupyter-agent could not check this output for secrets: withheld]\n"
_MARK = "_jupyter_agent_redacts_outside_runs"


def install(kernel: Any) -> int:
    """Make every IOPub-publishing session of ``kernel`` (an ipykernel kernel) redact the
    outputs of outside runs; how many sessions were wrapped now (0 when done before)."""
    shell = getattr(kernel, "shell", None)
    holders = (kernel, sys.stdout, sys.stderr, getattr(shell, "display_pub", None), getattr(shell, "displayhook", None))
    sessions = {id(s): s for s in (getattr(h, "session", None) for h in holders) if s is not None}
    wrapped = 0
    for session in sessions.values():
        if getattr(session, _MARK, False) or not callable(getattr(session, "send", None)):
            continue
        session.send = redacting(session.send)
        setattr(session, _MARK, True)
        wrapped += 1
    return wrapped


def redacting(send: Any) -> Any:
    """``Session.send`` that redacts an outside run's outputs first (any thread)."""

    @functools.wraps(send)
    def wrapped(stream: Any, msg_or_type: Any, content: Any = None, parent: Any = None, *args: Any,
                **kwargs: Any) -> Any:
        if isinstance(msg_or_type, dict):  # a message built already (the streams' flush)
            kind = msg_or_type.get("msg_type") or (msg_or_type.get("header") or {}).get("msg_type")
            if kind in OUTPUT_KINDS and of_outside_run(msg_or_type.get("parent_header")):
                msg_or_type = {**msg_or_type, "content": _checked(kind, msg_or_type.get("content"))}
        elif msg_or_type in OUTPUT_KINDS and of_outside_run(parent):
            content = _checked(msg_or_type, content)
        return send(stream, msg_or_type, content, parent, *args, **kwargs)

    return wrapped


def of_outside_run(parent: Any) -> bool:
    """Whether ``parent`` (a message or its header) is an outside call's cell run."""
    if not isinstance(parent, dict):
        return False
    header = parent.get("header")
    msg_id = (header if isinstance(header, dict) else parent).get("msg_id")
    return str(msg_id or "").startswith(RUN_TAG_PREFIX)


def _checked(kind: str, content: Any) -> Any:
    try:
        return redacted_content(content)
    except Exception:  # never send what could not be checked; say so in the output instead
        log.warning("could not redact an outside run's %s output; withheld", kind, exc_info=True)
        if kind == "stream":
            return {"name": "stderr", "text": WITHHELD}
        if kind == "error":
            return {"ename": "Error", "evalue": WITHHELD, "traceback": [WITHHELD]}
        return {"data": {"text/plain": WITHHELD}, "metadata": {}}


def redacted_content(content: Any) -> Any:
    """An output message's content with its text redacted: a stream's text, an error's name,
    value and traceback, and the text-like entries of a display's data (``text/*``, JSON);
    images and other binary data are kept as they are (base64 is not text to search)."""
    if not isinstance(content, dict):
        return content
    out = dict(content)
    for key in ("text", "ename", "evalue", "traceback"):
        if key in out:
            out[key] = _scrub(out[key])
    data = out.get("data")
    if isinstance(data, dict):
        out["data"] = {mime: _scrub(value) if _textual(mime) else value for mime, value in data.items()}
    return out


def _textual(mime: str) -> bool:
    return mime.startswith("text/") or mime.endswith("json") or mime == "application/javascript"


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items()}
    return value
