"""The two comm protocols between the kernel and the JupyterLab page (and the classes by which
the page finds chat()'s input), defined once for Python.

``labextension/src/protocol.ts`` defines the same names for the page, with the same
values; ``tests/jupyter/test_protocol_parity.py`` parses that file and fails when a
constant differs or exists on one side only. Change both together, and bump the version
on any change an older other side would misread. docs/bridge.md describes the messages.

* The **bridge** (``jupyter/bridge/kernel_bridge.py`` ⇄ ``labextension/src/bridge.ts``): the agent's
  requests to read, edit and run the notebook open in a page.
* The **panel** (``jupyter/panel/panel_comm.py`` ⇄ ``labextension/src/panel.ts``): the side
  panel's chat with this kernel's agent session.

Nothing here imports anything: ``%load_ext`` loads it and must stay fast.
"""

from __future__ import annotations

from enum import StrEnum

# -- the live-notebook bridge -----------------------------------------------------------------

#: The comm target both sides register.
BRIDGE_TARGET = "jupyter_agent.bridge"
#: Bumped on any incompatible change; each side refuses the other's messages of another
#: version with code ``version`` and tells the user to reload the page or reinstall.
BRIDGE_VERSION = 2
#: Operations the page answers. ``ask`` and ``ask_end`` (``ask_id``): an outside agent's call waits for
#: the user's approval on a notebook the page shows in the background (``outside_ask.py``): the page
#: shows a notification until ``ask_end``; only a page whose hello says ``asks: true`` is sent them.
#: ``focus``: whether the notebook is the page's current one, its active cell and the cells
#: selected (an outside agent's ``active_notebook``; a page whose hello says ``focus: true``).
#: ``open`` (``path``, server-relative): the page opens that notebook in a tab of its own (an outside
#: agent's ``create_notebook``, once the user allowed the file; a page whose hello says ``open: true``).
#: ``show_outputs`` (``cell_id``, ``outputs``): a page that loaded while a run of that cell goes on
#: (a reload) shows the run's outputs there (``rejoin.py``); an older page refuses it (unknown_op).
BRIDGE_OPS = ("hello", "version", "read", "insert", "replace", "delete", "run", "restore", "show_run", "ask",
              "ask_end", "focus", "open", "show_outputs")
#: The size one bridge message may have, in bytes of its JSON: well under the 10 MiB a
#: Tornado websocket accepts (a larger message closes the page's kernel connection).
BRIDGE_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
#: In a live read, the characters of one output's data beyond which it is cut, with a note.
BRIDGE_MAX_OUTPUT_CHARS = 100_000
#: In a live read, the characters of all outputs together beyond which later outputs are
#: cut too (the cells' sources always come whole).
BRIDGE_MAX_READ_OUTPUT_CHARS = 1_000_000
#: What is kept of a cut output: the first characters of its text, then the note.
BRIDGE_CUT_OUTPUT_KEEP_CHARS = 2_000
#: The ``output_type`` of the note that stands for what a live read left out.
BRIDGE_OMITTED_OUTPUT = "stream"
#: What a run's reply says in ``status``.
BRIDGE_RUN_STATUSES = ("ok", "error", "interrupted", "timeout")


class BridgeCode(StrEnum):
    """Why a bridge request failed: the ``code`` of a refusal (the page's or the kernel's)."""

    BAD_REQUEST = "bad_request"  # a message of the wrong shape
    VERSION = "version"  # the other side speaks another protocol version
    UNKNOWN_OP = "unknown_op"
    STALE = "stale"  # the notebook changed since the caller read it
    NOT_FOUND = "not_found"  # no cell with that id
    NO_KERNEL = "no_kernel"  # the page's notebook has no kernel
    TOO_LARGE = "too_large"  # the message would be over BRIDGE_MAX_MESSAGE_BYTES
    SEND_FAILED = "send_failed"  # the page could not send its reply
    FAILED = "failed"  # anything else the page could not do
    # kernel side only (no page sends them)
    GONE = "gone"  # the page said goodbye or its comm closed
    NO_ANSWER = "no_answer"  # the page did not answer in time


#: The codes a page may send (the kernel adds ``gone`` and ``no_answer``).
BRIDGE_PAGE_CODES = {
    "badRequest": BridgeCode.BAD_REQUEST.value,
    "version": BridgeCode.VERSION.value,
    "unknownOp": BridgeCode.UNKNOWN_OP.value,
    "stale": BridgeCode.STALE.value,
    "notFound": BridgeCode.NOT_FOUND.value,
    "noKernel": BridgeCode.NO_KERNEL.value,
    "tooLarge": BridgeCode.TOO_LARGE.value,
    "sendFailed": BridgeCode.SEND_FAILED.value,
    "failed": BridgeCode.FAILED.value,
}

# -- the side panel -----------------------------------------------------------------------------

#: The comm target the panel opens (registered by ``%load_ext``).
PANEL_TARGET = "jupyter_agent.panel"
#: Bumped on any incompatible change of the panel's messages.
PANEL_VERSION = 1
#: Page -> kernel ``op``s: ``hello`` (send the whole state), ``send`` (``prompt``), ``stop``,
#: ``new`` (a new conversation), ``mode`` (``mode``), ``approve`` (``request``, ``choice``,
#: ``feedback``; more fields, such as the call's ``tool_use_id``, may be added); ``send`` may
#: carry ``context`` (the active cell, the selected cells and text); ``fix`` and ``explain``
#: (``cell``, ``error``, ``above``: the Fix with agent / Explain buttons of an error output);
#: ``resume`` (the conversation saved for this notebook comes back: ``%agent resume``).
PANEL_OPS = ("hello", "send", "stop", "new", "mode", "approve", "undo", "compact", "fix", "explain", "resume")
#: Kernel -> page ``type``s: ``state`` (everything), ``update`` (what changed since the last
#: message), ``error`` (``text``: a refused request, said in the panel), ``note`` (``text``:
#: what a request did, said in the panel; a page that does not know it ignores it).
PANEL_MESSAGE_TYPES = ("state", "update", "error", "note")
#: The ``kind`` of a run's item as the panel draws it.
PANEL_ITEM_KINDS = ("prompt", "text", "thinking", "tool", "notice", "block", "unknown")
#: An approval's answers (``approve``'s ``choice``).
PANEL_CHOICES = ("allow", "always", "deny")


def version_mismatch(what: str, theirs: object, ours: int) -> str:
    """What the user is told when the page speaks another version of ``what`` ("bridge"
    or "panel") protocol than this kernel."""
    return (f"The JupyterLab page speaks {what} protocol {theirs!r}, this kernel's jupyter-agent speaks "
            f"{ours}: install the same jupyter-agent version for the server and the kernel, then reload "
            "the page.")


# -- chat() ------------------------------------------------------------------------------------
# ipywidgets' Textarea has no key events: the page (``labextension/src/chatKeys.ts``) finds
# chat()'s input and Send button by these classes. Enter (or a click on Send) there does not
# click the button: it ends the input's own value with CHAT_SEND_MARK, which the kernel takes
# as "send this text". A click is another widget's message, and ipywidgets holds back an
# input's later values while one is on its way, so a click could reach the kernel before the
# last keystrokes did (the message sent was cut: "Write hi\nt"); the input's own values arrive
# in order, the mark last.

#: The class of chat()'s box: its input and Send button are found inside it.
CHAT_CLASS = "ja-chat"
#: The class of chat()'s input (an ipywidgets Textarea): Enter there sends (the send mark).
CHAT_INPUT_CLASS = "ja-chat-input"
#: The class of chat()'s Send button.
CHAT_SEND_CLASS = "ja-chat-send"
#: Ends chat()'s input value when the page asks to send it (U+2063, an invisible separator:
#: nothing shows while a busy kernel has not taken it yet).
CHAT_SEND_MARK = "\u2063"
