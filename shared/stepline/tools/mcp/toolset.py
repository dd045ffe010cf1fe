"""MCP servers as a toolset: their tools as ordinary `Tool`s, listed once per process.

`McpToolset` is a live `Sequence[Tool]` (`LiveTools`): the worker reads it at every step (`Services.loop_config`
copies it), and the first read lists each server's tools. A server that lists is never asked again
in this process; one that is down is skipped (its tools are missing from that step, the run goes
on) and asked again at a later step, at most every `retry_seconds`. Its `approval` mapping is live
the same way.

Each tool carries its server entry's approval (`Tool.approval`), so an `Agent` that lists the
toolset among its `tools` waits for a person where the entry says so, with no `tool_approval` of
its own. Each tool's executor opens a session, calls the tool and maps the result
(`stepline.tools.mcp.results`); every failure is an `McpToolError`, which the loop turns into a
tool error the model reads. The call goes through the loop's tool guard like any other tool, so
on AWS it is claimed in the store before it runs and never run twice (see docs/tools.md).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from mcp.types import Tool as McpTool
from pydantic import JsonValue

from ...agent.toolsets import LiveTools
from ...loop.tools import ApprovalSetting, Tool, ToolContext
from .config import HttpServer, StdioServer, exposed_name
from .connection import HeaderSource, call_tool, list_tools
from .results import output_of, to_model_output
from .secrets import ParameterHeaders

__all__ = ["McpToolset"]

log = logging.getLogger("stepline.tools.mcp")

Server = HttpServer | StdioServer


_T = TypeVar("_T")


def _run(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run `coroutine` to the end from sync code, also when the caller is inside an event loop."""
    with ThreadPoolExecutor(1, thread_name_prefix="stepline-mcp") as pool:
        return pool.submit(asyncio.run, coroutine).result()


class McpToolset(LiveTools):
    """The tools of `servers`, and optionally function tools served beside them.

    Example:
        ```python
        from stepline.tools import workspace
        from stepline.tools.mcp import HttpServer, McpToolset

        TOOLS = McpToolset(
            [HttpServer(name="github", url="https://example.com/mcp", prefix="gh",
                        headers_parameter="/stepline/mcp/github", approval={"create_issue": "user-approval"})],
            tools=workspace.TOOLS, tool_approval=workspace.TOOL_APPROVAL,
        )
        TOOL_APPROVAL = TOOLS.approval
        ```
    """

    def __init__(
        self,
        servers: Sequence[Server],
        *,
        tools: Sequence[Tool] = (),
        tool_approval: Mapping[str, ApprovalSetting] | None = None,
        headers: HeaderSource | None = None,
        retry_seconds: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._servers = list(servers)
        self._functions = list(tools)
        self._function_approval: dict[str, ApprovalSetting] = dict(tool_approval or {})
        self._headers: HeaderSource = headers if headers is not None else ParameterHeaders()
        self._retry_seconds = retry_seconds
        self._clock = clock
        self._listed: dict[str, list[Tool]] = {}
        self._approval: dict[str, ApprovalSetting] = {}
        self._retry_at: dict[str, float] = {}
        self._lock = threading.Lock()
        self.approval: Mapping[str, ApprovalSetting] = _LiveApproval(self)
        """Approval per exposed tool name: the function tools' and each listed server's."""

    # -- the tools, read afresh (LiveTools) -----------------------------------------------------------

    def _current(self) -> list[Tool]:
        self._list_due()
        return [*self._functions, *(t for s in self._servers for t in self._listed.get(s.name, []))]

    def approvals(self) -> dict[str, ApprovalSetting]:
        self._list_due()
        return {**self._function_approval, **self._approval}

    # -- listing -------------------------------------------------------------------------------------

    def _list_due(self) -> None:
        with self._lock:
            now = self._clock()
            due = [s for s in self._servers if s.name not in self._listed and now >= self._retry_at.get(s.name, 0.0)]
            if not due:
                return
            outcomes = _run(self._list(due))
            taken = {t.name for t in self._functions} | {t.name for tools in self._listed.values() for t in tools}
            for server, outcome in zip(due, outcomes, strict=True):
                if isinstance(outcome, BaseException):
                    self._retry_at[server.name] = now + self._retry_seconds
                    log.warning("MCP server %s is not listed (its tools are missing for now): %s", server.name, outcome)
                    continue
                self._listed[server.name] = self._tools(server, outcome, taken)

    async def _list(self, servers: list[Server]) -> list[list[McpTool] | BaseException]:
        return await asyncio.gather(*(list_tools(s, self._headers) for s in servers), return_exceptions=True)

    def _tools(self, server: Server, listed: list[McpTool], taken: set[str]) -> list[Tool]:
        tools: list[Tool] = []
        for remote in listed:
            if not server.offers(remote.name):
                continue
            name = exposed_name(server, remote.name)
            if name in taken:
                log.warning("MCP server %s: tool %s is left out, its name %s is taken", server.name, remote.name, name)
                continue
            taken.add(name)
            approval: ApprovalSetting | None = server.approval_for(remote.name)
            tools.append(self._tool(server, remote, name, approval))
            if approval is not None:
                self._approval[name] = approval
        return tools

    def _tool(self, server: Server, remote: McpTool, name: str, approval: ApprovalSetting | None) -> Tool:
        headers = self._headers

        async def execute(arguments: Any, context: ToolContext) -> JsonValue:
            meta = {"stepline/toolCallId": context.tool_call_id}
            if context.run_id is not None:
                meta["stepline/runId"] = context.run_id
            result = await call_tool(server, remote.name, dict(arguments or {}), headers=headers, meta=meta)
            return output_of(result)

        schema: dict[str, JsonValue] = dict(remote.input_schema) if remote.input_schema else {"type": "object"}
        return Tool(
            name=name,
            description=remote.description,
            title=remote.title,
            input_schema=schema,
            execute=execute,
            to_model_output=to_model_output,
            approval=approval,
        )


class _LiveApproval(Mapping[str, ApprovalSetting]):
    """The toolset's approval policy, read afresh each time (servers are listed lazily)."""

    def __init__(self, toolset: McpToolset) -> None:
        self._toolset = toolset

    def __getitem__(self, name: str) -> ApprovalSetting:
        return self._toolset.approvals()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._toolset.approvals())

    def __len__(self) -> int:
        return len(self._toolset.approvals())

    def __bool__(self) -> bool:
        """Always true: empty now (a server not listed yet) is no reason for a caller to drop the policy."""
        return True
