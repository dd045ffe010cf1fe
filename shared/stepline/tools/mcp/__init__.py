"""MCP servers' tools for an agent, on the official `mcp` SDK (`pip install 'stepline[mcp]'`).

Two ways to use it:

- as a toolset module, configured by the environment: `STEPLINE_TOOLS=stepline.tools.mcp` and
  `STEPLINE_MCP_SERVERS` set to a JSON document (or the path of a file holding one):

      {"servers": [{"type": "http", "name": "docs", "url": "https://example.com/mcp", "prefix": "docs",
                    "headersParameter": "/stepline/mcp/docs", "approval": {"delete_page": "user-approval"}},
                   {"type": "stdio", "name": "files", "command": "uvx", "args": ["some-mcp-server"]}],
       "include": "stepline.tools.workspace"}

  (`include`, optional, names a toolset module whose tools come too);
- in a toolset module of your own: `TOOLS = McpToolset([...])`, `TOOL_APPROVAL = TOOLS.approval`.

The server entries are `stepline.tools.mcp.config`'s models; docs/tools.md has the whole story.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, ValidationError

from ...errors import StepLineError
from ...loop.tools import ApprovalSetting
from .. import load_toolset
from .config import HttpServer, McpServer, ServerList, StdioServer
from .connection import McpToolError
from .results import output_of, to_model_output
from .toolset import McpToolset

__all__ = [
    "HttpServer",
    "McpConfigError",
    "McpServer",
    "McpToolError",
    "McpToolset",
    "ServerList",
    "StdioServer",
    "from_env",
    "output_of",
    "to_model_output",
    "tool_approval",
    "tools",
]


class McpConfigError(StepLineError):
    """`STEPLINE_MCP_SERVERS` is missing or does not describe the servers."""


class _Document(ServerList):
    model_config = ConfigDict(extra="forbid", frozen=True)

    include: str | None = Field(default=None, min_length=1)


_loaded: dict[str, McpToolset] = {}


def from_env(env: Mapping[str, str] | None = None) -> McpToolset:
    """The toolset `STEPLINE_MCP_SERVERS` describes (one per distinct document, per process)."""
    value = (env if env is not None else os.environ).get("STEPLINE_MCP_SERVERS", "").strip()
    if not value:
        raise McpConfigError("STEPLINE_MCP_SERVERS is not set (a JSON document of MCP servers, or its file's path)")
    if value in _loaded:
        return _loaded[value]
    text = value if value.startswith("{") else _read(value)
    try:
        document = _Document.model_validate_json(text)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors())
        raise McpConfigError(f"STEPLINE_MCP_SERVERS is not usable: {problems}") from None
    functions, approval = load_toolset(document.include) if document.include else ((), dict[str, Any]())
    toolset = McpToolset(document.servers, tools=list(functions), tool_approval=dict(approval))
    _loaded[value] = toolset
    return toolset


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise McpConfigError(
            f"STEPLINE_MCP_SERVERS names a file that cannot be read: {path} ({error.strerror})"
        ) from None


def tools() -> McpToolset:
    """The toolset-module entry point (`STEPLINE_TOOLS=stepline.tools.mcp`)."""
    return from_env()


def tool_approval() -> Mapping[str, ApprovalSetting]:
    """The approval policy of `tools()`'s toolset."""
    return from_env().approval
