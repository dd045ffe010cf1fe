"""The default toolset (`stepline.tools.workspace`), each real execution appended to a journal file.

`stepline dev` runs as a separate process in the restart tests (`STEPLINE_TOOLS=tests.restart.journal_tools`)
and is killed between runs, so the count lives in a file (`STEPLINE_TEST_TOOL_JOURNAL`), one line per
execution — `conversation tool` — written and flushed to disk before the tool's body runs.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from typing import Any

from stepline.loop.tools import Tool, ToolContext
from stepline.tools import workspace
from stepline.tools.context import RunContext

JOURNAL_VARIABLE = "STEPLINE_TEST_TOOL_JOURNAL"


def _record(conversation: str, tool: str) -> None:
    with open(os.environ[JOURNAL_VARIABLE], "a", encoding="utf-8") as journal:
        journal.write(f"{conversation} {tool}\n")
        journal.flush()
        os.fsync(journal.fileno())


def _journaled(tool: Tool) -> Tool:
    inner = tool.execute
    if inner is None:  # a client-side tool: the client answers it, nothing runs here
        return tool

    async def execute(request: Any, context: ToolContext) -> Any:
        run = context.runtime_context
        conversation = run.conversation_id if isinstance(run, RunContext) else "?"
        await asyncio.to_thread(_record, conversation, tool.name)
        return await inner(request, context)

    return replace(tool, execute=execute)


TOOLS = [_journaled(tool) for tool in workspace.TOOLS]
TOOL_APPROVAL = workspace.TOOL_APPROVAL
