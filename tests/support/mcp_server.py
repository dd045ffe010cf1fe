"""A real MCP server (the official SDK's `MCPServer`, FastMCP's successor) for the MCP toolset's tests.

Run as a process, so a test can kill it (a server that is down) and a tool can end it mid-call
(a dropped connection):

    python -m tests.support.mcp_server stdio
    python -m tests.support.mcp_server http   # binds 127.0.0.1:0, prints "PORT <n>" on stdout

Tools: `add` (structured output), `echo` (text), `pixel` (an image), `readme` (an embedded
resource), `fail` (an `isError` result), `crash` (the process exits while the call is open),
`wait` (sleeps, for timeouts), `delete_row` (the one that needs approval in the tests), `count`
(how often `delete_row` really ran, across calls, from a file named by MCP_COUNT_FILE),
`whoami` (the request's `authorization` header, to see the configured headers arrive).
"""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import sys
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp.types import EmbeddedResource, TextResourceContents
from pydantic import BaseModel

PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)

server = MCPServer("stepline-test", log_level="WARNING")


class Sum(BaseModel):
    sum: int


@server.tool(description="Add two integers.")
def add(a: int, b: int) -> Sum:
    return Sum(sum=a + b)


@server.tool(description="Echo the text back.")
def echo(text: str) -> str:
    return f"echo: {text}"


@server.tool(description="A 1x1 PNG.")
def pixel() -> Image:
    return Image(data=PNG_1X1, format="png")


@server.tool(description="The README as an embedded resource.")
def readme() -> EmbeddedResource:
    contents = TextResourceContents(uri="file:///README.md", mime_type="text/markdown", text="# Hello")
    return EmbeddedResource(type="resource", resource=contents)


@server.tool(description="Always fails.")
def fail() -> str:
    raise ToolError("the row is locked")


@server.tool(description="Ends the server process while the call is open.")
async def crash() -> str:
    await asyncio.sleep(0.05)
    os._exit(3)


@server.tool(description="Sleeps for the given seconds.")
async def wait(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "woke up"


def _count_file() -> Path:
    return Path(os.environ.get("MCP_COUNT_FILE", os.devnull))


@server.tool(description="Delete a row (not idempotent: counts its runs).")
def delete_row(row: int) -> str:
    path = _count_file()
    if path != Path(os.devnull):
        runs = int(path.read_text() or "0") if path.exists() else 0
        path.write_text(str(runs + 1))
    return f"row {row} deleted"


@server.tool(description="Who the request says it is.")
def whoami(context: Context) -> str:
    request = context.request_context.request
    headers = getattr(request, "headers", None)
    return str(headers.get("authorization", "nobody")) if headers is not None else "stdio"


def _serve_http() -> None:
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # connections wait in the backlog from here on, before uvicorn accepts them
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    app = server.streamable_http_app()
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        _serve_http()
    else:
        server.run("stdio")
