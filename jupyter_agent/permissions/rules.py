"""Permission rules: ``Tool`` or ``Tool(pattern)``, read once, and which tools a rule names
(the families: a rule naming one file-editing tool names all three; ``mcp__<server>`` every
tool of that server). What a rule allows is decided in :mod:`jupyter_agent.permissions`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..tools.paths import compile_glob
from ..tools.shell_parse import rule_words

#: The file-editing tools are one family: a rule naming any of them covers them all
#: (``Write(pyproject.toml)`` also stops an Edit of it), as in Claude Code.
EDIT_FAMILY = ("Edit", "Write", "NotebookEdit")
#: The tools that run code in a notebook's kernel: a ``NotebookRun`` rule covers the range run
#: and the scratch run too (allowing NotebookRun under acceptEdits already lets any code run:
#: the model can write it into a cell), and a ``NotebookRun`` deny stops them all.
RUN_FAMILY = ("NotebookRun", "NotebookRunCells", "KernelRun")
#: A rule naming the first tool also covers the others (a ``Grep`` rule stays a Grep rule).
RULE_FAMILIES = {**{name: EDIT_FAMILY for name in EDIT_FAMILY}, "Read": ("Read", "Glob", "Grep"),
                 "NotebookRun": RUN_FAMILY}
_RULE = re.compile(r"^\s*([A-Za-z_][\w-]*)\s*(?:\((.*)\))?\s*$", re.DOTALL)


@dataclass(frozen=True)
class Rule:
    """``Tool`` or ``Tool(pattern)``."""

    tool: str
    pattern: str | None = None

    @classmethod
    def parse(cls, text: str) -> Rule:
        match = _RULE.match(text) if isinstance(text, str) else None
        if not match or (match.group(2) is not None and not match.group(2).strip()):
            raise ValueError(f"Invalid permission rule {text!r}: write Tool or Tool(glob), e.g. 'Edit(src/**)'.")
        pattern = match.group(2).strip() if match.group(2) is not None else None
        if pattern is not None and match.group(1) == "Bash":  # words: `git status`, `git diff:*`
            try:
                rule_words(pattern)
            except ValueError as exc:
                raise ValueError(f"Invalid permission rule {text!r}: {exc}.") from None
        elif pattern is not None:
            try:
                compile_glob(pattern)
            except ValueError as exc:
                raise ValueError(f"Invalid permission rule {text!r}: {exc}.") from None
        return cls(match.group(1), pattern)

    def __str__(self) -> str:
        return self.tool if self.pattern is None else f"{self.tool}({self.pattern})"

    def names(self, tool_name: str, server: str | None = None) -> bool:
        """Does the rule name the tool ``tool_name`` (of the MCP server ``server``, when it is
        one)? ``mcp__github`` names the tools of the server ``github`` only: its name is
        compared whole, never as a prefix of ``github_``'s tools."""
        if tool_name == self.tool or tool_name in RULE_FAMILIES.get(self.tool, ()):
            return True
        if self.mcp_server is None:
            return False
        if server is not None:
            return server == self.mcp_server and tool_name.startswith(f"mcp__{server}__")
        return _mcp_servers_of(tool_name) == {self.mcp_server}

    @property
    def mcp_server(self) -> str | None:
        """``mcp__<server>`` names every tool of that MCP server: the server's name, else None."""
        server = self.tool[len("mcp__"):] if self.tool.startswith("mcp__") else ""
        return server if server and "__" not in server and self.pattern is None else None


def _mcp_servers_of(tool_name: str) -> set[str]:
    """The servers an MCP tool's name ``mcp__<server>__<tool>`` may belong to. A server's
    name has no ``__`` but may end in ``_``, and a tool's may start with one, so
    ``mcp__github___x`` is ``github_``'s ``x`` or ``github``'s ``_x``: both are returned, and
    a rule naming one server names the tool only when its server is known for certain."""
    if not tool_name.startswith("mcp__"):
        return set()
    rest = tool_name[len("mcp__"):]
    first = rest.find("__")
    servers = set()
    while first > 0 and rest[first:first + 2] == "__":
        if rest[first + 2:]:
            servers.add(rest[:first])
        first += 1  # `github___x`: the separator may start one `_` later
    return servers
