"""jupyter-agent as an MCP server for outside agents (Claude Code, Cursor...): docs/mcp-server.md.

:mod:`.tools` defines the tools and builds the SDK's server on a backend; :mod:`.http` serves
it over streamable HTTP from the Jupyter server extension, reaching each notebook's kernel
through :mod:`.kernel_link`; :mod:`.stdio` is ``jupyter agent mcp``, a stdio server that
forwards to that endpoint. What a call does happens in the kernel (``jupyter/outside/outside_hub.py``),
with the same approvals, stale checks and undo as the agent's own runs.
"""
