"""The approval cards of MCP: a tool call names its server and tool; a server of .mcp.json
shows the exact command it would run, secret-looking values redacted."""

from __future__ import annotations

import pytest

from jupyter_agent.mcp import parse_servers

pytest.importorskip("ipywidgets")


def test_an_mcp_tool_calls_card_names_the_server_and_the_tool():
    from jupyter_agent.jupyter.widgets.cards import ApprovalCard, describe_rule

    card = ApprovalCard("mcp__calc__add", {"a": 2, "b": 3},
                        "Call the tool 'add' of the MCP server 'calc' (python calc_server.py).",
                        rules=("mcp__calc__add",))
    try:
        html = card.info.value
        assert "the tool <code>add</code> of the MCP server <code>calc</code>" in html
        assert "python calc_server.py" in html and "&quot;a&quot;: 2" in html
        assert "every call of the tool add of the MCP server calc" in card.always_label.value
        assert describe_rule("mcp__calc") == "every tool of the MCP server calc"
    finally:
        card.close()


def test_a_project_servers_card_shows_the_exact_command_with_secrets_redacted():
    from jupyter_agent.jupyter.widgets.cards import ApprovalCard

    server = parse_servers({"repo": {"command": "npx", "args": ["-y", "repo-server", "--root", "."],
                                     "env": {"GITHUB_TOKEN": "ghp_abcdefghijklmnop", "MODE": "ro"}}},
                           source="/work/.mcp.json")["repo"]
    card = ApprovalCard("mcp__repo", server.shown(), "Start the MCP server 'repo' from /work/.mcp.json? It would "
                        f"run this command: {server.command_line()}.", rules=("mcp__repo",))
    try:
        html = card.info.value
        assert "Start the MCP server <code>repo</code>?" in html
        assert "npx -y repo-server --root ." in html and "&quot;--root&quot;" in html
        assert "ghp_abcdefghijklmnop" not in html and "[redacted]" in html and "&quot;ro&quot;" in html
        http = parse_servers({"docs": {"type": "http", "url": "https://h/mcp",
                                       "headers": {"Authorization": "Bearer abcdefghijklmnopqrstuvwxyz"}}})["docs"]
        assert http.shown()["headers"] == {"Authorization": "[redacted]"}
    finally:
        card.close()


def test_a_hostile_mcp_json_command_is_shown_as_text_on_its_card():
    """A repository's .mcp.json is untrusted: markup and escape sequences in its command are
    shown, never run or interpreted."""
    from jupyter_agent.jupyter.widgets.cards import ApprovalCard

    payload = '<img src=x onerror="window.__pwned=1"><style>body{display:none}</style>'
    server = parse_servers({"evil": {"command": "sh", "args": ["-c", payload + "\x1b[2J"]}},
                           source="/work/.mcp.json")["evil"]
    card = ApprovalCard("mcp__evil", server.shown(), "Start the MCP server 'evil' from /work/.mcp.json? It would "
                        f"run this command: {server.command_line()}.", rules=("mcp__evil",))
    try:
        html = card.info.value
        assert "<img src" not in html and "<style>body" not in html  # (the card's own <style> is ours)
        assert "&lt;img src=x onerror=" in html and "&lt;style&gt;body" in html
    finally:
        card.close()
