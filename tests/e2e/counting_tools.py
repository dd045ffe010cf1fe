"""The default toolset (`stepline.tools.workspace`), counting how often each tool really runs.

The end-to-end server loads it by name (`STEPLINE_TOOLS=tests.e2e.counting_tools`); the server runs
in the test's process, so a test reads `RUNS` to check that a tool ran once per conversation.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from stepline.loop.tools import Tool, ToolContext
from stepline.tools import workspace
from stepline.tools.context import RunContext

RUNS: Counter[tuple[str, str]] = Counter()
"""(conversation id, tool name) -> how many times the tool's executor was called."""


def _counted(tool: Tool) -> Tool:
    inner = tool.execute
    if inner is None:  # a client-side tool: the client answers it, nothing runs here
        return tool

    async def execute(request: Any, context: ToolContext) -> Any:
        run = context.runtime_context
        RUNS[(run.conversation_id if isinstance(run, RunContext) else "?", tool.name)] += 1
        return await inner(request, context)

    return replace(tool, execute=execute)


TOOLS = [_counted(tool) for tool in workspace.TOOLS]
TOOL_APPROVAL = workspace.TOOL_APPROVAL
