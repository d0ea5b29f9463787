"""The live-notebook bridge's failures, kernel side (docs/bridge.md, "Limits and failures").

Every refusal carries a :class:`~.protocol.BridgeCode`; the sentence the model gets is
written here from the code (:func:`failure_message`), never parsed back. ``gone`` and
``no_answer`` are the kernel's own (:class:`PageGone`). Nothing here imports the notebook
package: ``%load_ext`` starts the bridge and must stay fast.
"""

from __future__ import annotations

from typing import Any

from ...errors import JupyterAgentError
from .comm_protocol import BRIDGE_MAX_MESSAGE_BYTES, BRIDGE_VERSION, BridgeCode, version_mismatch

NOT_ANSWERING = (
    "The notebook page that started this run stopped answering (it was reloaded or closed, or "
    "its kernel restarted), so nothing more was applied to it. Run the %%agent cell again from "
    "the open notebook.")


class BridgeError(JupyterAgentError):
    """A request the page refused or could not answer; ``code`` is a
    :class:`~.protocol.BridgeCode` (``stale`` when the document changed since the caller
    read it). The live backend turns it into the notebook errors the tools report."""

    def __init__(self, message: str, code: str = BridgeCode.FAILED) -> None:
        super().__init__(message)
        self.code = code


class PageGone(BridgeError):
    """The page did not answer in time (``no_answer``), said goodbye or its comm closed
    (``gone``)."""

    def __init__(self, message: str = NOT_ANSWERING, code: str = BridgeCode.GONE) -> None:
        super().__init__(message, code)


def failure_message(code: str, detail: str) -> str:
    """What the model is told of a refusal with ``code`` (``detail``: the page's words)."""
    if code == BridgeCode.TOO_LARGE:
        return (f"The notebook page could not answer: the message would be larger than the "
                f"{BRIDGE_MAX_MESSAGE_BYTES // (1024 * 1024)} MiB the bridge carries ({detail}). Ask for "
                "less: smaller cells or edits, or outputs that print less.")
    if code == BridgeCode.SEND_FAILED:
        return f"The notebook page could not send its answer ({detail}). The page is still open; try again."
    if code == BridgeCode.VERSION:
        return detail
    return detail or "the page refused the request"


def mismatch_message(protocol: Any) -> str:
    """What the user and the model are told when the page speaks another bridge version."""
    return (version_mismatch("bridge", protocol, BRIDGE_VERSION)
            + " Until then the agent edits no open notebook.")
