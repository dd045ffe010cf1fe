"""Start and stop the test MCP server (`tests.support.mcp_server`) as a process, over HTTP or stdio."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stepline.loop.tools import Tool, ToolContext
from stepline.tools.mcp import StdioServer

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class HttpMcp:
    url: str
    process: subprocess.Popen[str]

    def stop(self) -> None:
        """The server is down from here on (its port refuses connections)."""
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


def _env(count_file: Path | None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "shared")])}
    if count_file is not None:
        env["MCP_COUNT_FILE"] = str(count_file)
    return env


@contextmanager
def http_mcp(count_file: Path | None = None) -> Iterator[HttpMcp]:
    """The server on 127.0.0.1, on a port the OS chose; stopped at the end."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.mcp_server", "http"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=_env(count_file),
        cwd=ROOT,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # the server prints its port once its socket is bound
        assert line.startswith("PORT "), f"the MCP server did not start: {line!r}"
        server = HttpMcp(f"http://127.0.0.1:{int(line.split()[1])}/mcp", process)
        yield server
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(10)
        if process.stdout is not None:
            process.stdout.close()


def stdio_mcp(name: str = "local", **options: object) -> StdioServer:
    """A stdio server entry that starts the test server (one process per session)."""
    env = {k: v for k, v in _env(None).items() if k in ("PATH", "PYTHONPATH", "HOME")}
    return StdioServer.model_validate(
        {
            "name": name,
            "command": sys.executable,
            "args": ["-m", "tests.support.mcp_server", "stdio"],
            "env": env,
            "cwd": str(ROOT),
            **options,
        }
    )


def closed_port_url() -> str:
    """A loopback URL nothing listens on (the port was free a moment ago)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/mcp"


def invoke(tool: Tool, arguments: dict[str, Any]) -> Any:
    """Run a tool's executor once, outside any loop (its last output)."""

    async def go() -> Any:
        context = ToolContext(tool_call_id="call-1", tool_name=tool.name, run_id="run-1", messages=[])
        outputs = [value async for value, _ in tool.run(tool.validate_input(arguments), context)]
        return outputs[-1]

    return asyncio.run(go())
