"""MCP servers the tests start, written with the ``mcp`` SDK's MCPServer (FastMCP in mcp 1.x).

Each is a script in the test's own folder; a stdio server writes its process id into
``pid`` beside it when it starts, so a test can tell whether that process is still there.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

#: First line of each server: jsonschema (imported by the SDK) would build an RFC 3987 grammar
#: at import (seconds of CPU in every server process); these servers validate no IRI.
_NO_IRI_GRAMMAR = "import sys; sys.modules['rfc3987_syntax'] = None\n"

STDIO_SERVER = _NO_IRI_GRAMMAR + '''
import base64, os, pathlib, sys
import anyio
from mcp.server.mcpserver import MCPServer
from mcp_types import EmbeddedResource, ImageContent, TextContent, TextResourceContents

HERE = pathlib.Path(__file__).parent
(HERE / "pid").write_text(str(os.getpid()))
server = MCPServer("calc")
PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000005570107d50000000049454e44ae426082")).decode()


@server.tool()
def add(a: int, b: int) -> str:
    """Add two whole numbers."""
    return f"sum={a + b}"


@server.tool()
def touch(name: str) -> str:
    """Create a file in the server's folder."""
    (HERE / name).write_text("made by the MCP server")
    return "made " + name


@server.tool()
def mixed() -> list:
    """Text, an image and a resource."""
    return [TextContent(text="a picture:"), ImageContent(data=PNG, mime_type="image/png"),
            EmbeddedResource(resource=TextResourceContents(uri="file:///notes.txt", text="the notes"))]


@server.tool()
def crash() -> str:
    """The server dies while answering."""
    os._exit(3)


@server.tool()
def spawn() -> str:
    """Starts a child of its own that outlives the server unless its process group is killed."""
    import subprocess
    child = subprocess.Popen(["sleep", "600"])
    (HERE / "child_pid").write_text(str(child.pid))
    return "spawned"


@server.tool()
async def wait() -> str:
    """Takes a minute."""
    (HERE / "waiting").write_text("yes")
    await anyio.sleep(60)
    return "done"


print("calc server started", file=sys.stderr, flush=True)
server.run()
'''

HTTP_SERVER = _NO_IRI_GRAMMAR + '''
import socket, sys
import uvicorn
from mcp.server.mcpserver import MCPServer

server = MCPServer("web")


@server.tool()
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


sock = socket.socket()
sock.bind(("127.0.0.1", 0))
sock.listen()
print(sock.getsockname()[1], flush=True)
uvicorn.Server(uvicorn.Config(server.streamable_http_app(), log_level="warning")).run(sockets=[sock])
'''


def stdio_server(folder: Path) -> dict[str, object]:
    """Write the stdio server into ``folder``; its settings as ``mcp_servers`` takes them."""
    script = folder / "calc_server.py"
    script.write_text(STDIO_SERVER)
    return {"command": sys.executable, "args": [str(script)]}


def process_alive(pid: int) -> bool:
    """Is ``pid`` a live process (not a zombie)?"""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def start_http_server(folder: Path) -> tuple[asyncio.subprocess.Process, int]:
    """Start the streamable-HTTP server on a free port; (its process, the port)."""
    script = folder / "web_server.py"
    script.write_text(HTTP_SERVER)
    process = await asyncio.create_subprocess_exec(sys.executable, str(script), stdout=asyncio.subprocess.PIPE,
                                                   env={**os.environ})
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), 30)
    return process, int(line)
