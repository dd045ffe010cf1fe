"""One MCP session per call, over the official SDK's `Client`, and every way it fails as one error.

A session is opened for each listing and each call and closed after it: a Lambda invocation runs
its step in an event loop of its own (`asyncio.run`), so nothing the SDK holds (an HTTP client, a
stdio subprocess, a task group) could outlive it. For a remote server that is one extra
round-trip per call; a stdio server is started per call (fine for `stepline dev`).

Whatever goes wrong — connection refused, the connection dropped mid-call, a JSON-RPC error, a
timeout, an `isError` result — ends as `McpToolError` with a message naming the server (never its
URL or headers), which the loop turns into a tool error the model reads.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, cast

from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client  # pyright: ignore[reportPrivateUsage]
from mcp.types import CallToolResult, Implementation
from mcp.types import Tool as McpTool
from mcp_types import CONNECTION_CLOSED

from ...errors import StepLineError
from .config import HttpServer, StdioServer

__all__ = ["HeaderSource", "McpToolError", "call_tool", "list_tools"]

HeaderSource = Callable[[HttpServer], Mapping[str, str]]
"""The headers of a server's requests (configured ones merged with its parameter's)."""

_CLIENT_INFO = Implementation(name="stepline", version="0.1.0")


class McpToolError(StepLineError):
    """An MCP listing or call that did not give a result; the text is safe to show the model."""


def _leaf(error: BaseException) -> BaseException:
    """The first real error inside the SDK's (nested) task-group exception groups."""
    while isinstance(error, BaseExceptionGroup):
        inner: tuple[BaseException, ...] = cast(Any, error).exceptions
        if not inner:
            break
        error = inner[0]
    return cast(BaseException, error)


def _describe(server: HttpServer | StdioServer, error: BaseException) -> str:
    leaf = _leaf(error)
    if isinstance(leaf, MCPError) and leaf.error.code != CONNECTION_CLOSED:
        return f"MCP server {server.name} answered with an error: {leaf.error.message}"
    if isinstance(leaf, FileNotFoundError | PermissionError):
        return f"MCP server {server.name} cannot be started: {leaf.strerror or type(leaf).__name__}"
    detail = str(leaf).strip() or type(leaf).__name__
    return f"MCP server {server.name} is unreachable or dropped the connection ({type(leaf).__name__}: {detail})"


@asynccontextmanager
async def _session(server: HttpServer | StdioServer, headers: HeaderSource) -> AsyncGenerator[Client]:
    if isinstance(server, HttpServer):
        http = create_mcp_http_client(headers=dict(headers(server)))
        transport = streamable_http_client(server.url, http_client=http)
        async with http, Client(transport, client_info=_CLIENT_INFO) as client:
            yield client
    else:
        env = {k: v.get_secret_value() for k, v in server.env.items()} if server.env is not None else None
        parameters = StdioServerParameters(command=server.command, args=server.args, env=env, cwd=server.cwd)
        async with Client(parameters, client_info=_CLIENT_INFO) as client:
            yield client


async def list_tools(server: HttpServer | StdioServer, headers: HeaderSource) -> list[McpTool]:
    """Every tool the server lists (all pages), within the server's timeout."""
    try:
        async with asyncio.timeout(server.timeout_seconds), _session(server, headers) as client:
            tools: list[McpTool] = []
            cursor: str | None = None
            for _ in range(100):  # a paginator that never ends cannot hang the listing
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    break
            return tools
    except TimeoutError:
        raise McpToolError(
            f"MCP server {server.name} did not list its tools within {server.timeout_seconds} s"
        ) from None
    except McpToolError:
        raise
    except Exception as error:
        raise McpToolError(_describe(server, error)) from None


async def call_tool(
    server: HttpServer | StdioServer,
    tool: str,
    arguments: dict[str, Any],
    *,
    headers: HeaderSource,
    meta: dict[str, Any] | None = None,
) -> CallToolResult:
    """The tool's result; `McpToolError` for an `isError` result and for every failure to get one."""
    try:
        async with asyncio.timeout(server.timeout_seconds), _session(server, headers) as client:
            result = await client.call_tool(tool, arguments, meta=meta)  # pyright: ignore[reportArgumentType]
    except TimeoutError:
        raise McpToolError(
            f"MCP tool {tool} of server {server.name} timed out after {server.timeout_seconds} s"
        ) from None
    except McpToolError:
        raise
    except Exception as error:
        raise McpToolError(_describe(server, error)) from None
    if result.is_error:
        texts = [block.text for block in result.content if block.type == "text"]
        raise McpToolError("; ".join(texts) or f"MCP tool {tool} of server {server.name} failed")
    return result
