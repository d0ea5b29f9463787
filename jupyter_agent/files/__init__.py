"""File primitives below both ``tools/`` and ``notebook/``: what is at a path
(:mod:`.filestat`) and how a file is written without ever being half-written
(:mod:`.atomic`). They import only ``loop/`` (for ``ToolError``).
"""
