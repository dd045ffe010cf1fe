"""Stepline: durable AI agent conversations on AWS serverless.

    from stepline import Agent, RunContext, tool

The importable core shared by every Lambda function (it becomes the Lambda layer).
`stepline.protocol` is the Vercel AI SDK v7 UI Message Stream protocol; it imports only the
standard library and pydantic. The names below are imported on first use, so `import
stepline.protocol` (and a function's cold start) loads none of the agent machinery it does not use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy_exports import lazy_exports

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .agent.definition import Agent, AgentDefinitionError
    from .agent.tools import ToolDefinitionError, tool
    from .loop.config import Timeouts
    from .loop.stop import has_tool_call, is_step_count
    from .loop.tools import Tool, ToolContext
    from .tools.context import RunContext

__all__ = [
    "Agent",
    "AgentDefinitionError",
    "RunContext",
    "Timeouts",
    "Tool",
    "ToolContext",
    "ToolDefinitionError",
    "has_tool_call",
    "is_step_count",
    "tool",
]

_EXPORTS = {
    "Agent": "stepline.agent.definition",
    "AgentDefinitionError": "stepline.agent.definition",
    "RunContext": "stepline.tools.context",
    "Timeouts": "stepline.loop.config",
    "Tool": "stepline.loop.tools",
    "ToolContext": "stepline.loop.tools",
    "ToolDefinitionError": "stepline.agent.tools",
    "has_tool_call": "stepline.loop.stop",
    "is_step_count": "stepline.loop.stop",
    "tool": "stepline.agent.tools",
}


__getattr__ = lazy_exports(__name__, _EXPORTS)
