"""The kernel side of the MCP server: an outside agent's calls, carried out on the
notebook a page of this kernel shows (read, edit, move, run, watch, ask)."""
