"""What the Jupyter server extension and a kernel say to each other for an outside agent's call.

The server opens a comm to :data:`TARGET` (registered at ``%load_ext jupyter_agent``:
``jupyter/outside.py``) with the call as the open's data, ``{"v", "op", "path", "args",
"client"}``; the kernel answers with one comm message, ``{"v", "ok", "content": [blocks],
"error"}`` (blocks: ``{"type": "text", "text"}`` or ``{"type": "image", "data",
"mime_type"}``), then closes the comm; before it, a long call may send ``{"v", "progress":
text}`` messages. A kernel without the target closes the comm at once.
"""

from __future__ import annotations

#: The streamable-HTTP endpoint, under the Jupyter server's base URL.
PATH = "jupyter-agent/mcp"
TARGET = "jupyter_agent.outside"
VERSION = 1
#: The operations a kernel carries out (``tools.KERNEL_OPS`` maps the MCP tools onto them).
OPS = ("read", "output", "variables", "insert", "replace", "delete", "run")
