"""The agent of the fork kill -9 tests (`STEPLINE_AGENT=tests.restart.fork_agents:AGENT`).

Its model is the real `openai` SDK on Chat Completions (`OPENAI_BASE_URL`: the test's local
wire-format server, `tests/support/fake_openai.py`, where every model call is counted). Asked to send
the report, the model gathers (`gather`), asks to send it (`send_report`, which needs the person's
approval), then answers. Both tools journal each real execution (`conversation tool`, flushed before
the body goes on; `send_report` also `… send_report ended` once its gate, `<journal>.gate`, opens).

Before a tool is claimed, `on_tool_execution_start` holds while `<journal>.hold` exists: a test that
kills the server right after a fork was accepted knows the fork's tool cannot have started.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from stepline import Agent, tool
from stepline.llm.openai import OpenAIChatModel
from stepline.loop.callbacks import ToolExecutionStartEvent
from stepline.tools.context import RunContext
from tests.restart.control_tools import GATE_SECONDS, gated, note
from tests.restart.journal_tools import JOURNAL_VARIABLE


@tool
async def gather(topic: str, context: RunContext) -> str:
    """Gather the figures for a topic."""
    await asyncio.to_thread(note, f"{context.conversation_id} gather")
    return f"figures for {topic}"


@tool(approval="user-approval")
async def send_report(to: str, context: RunContext) -> str:
    """Send the report (needs the person's approval); lasts until its gate opens."""
    await gated(context.conversation_id, "send_report")
    return f"sent to {to}"


async def hold(event: ToolExecutionStartEvent) -> None:
    """Before any tool is claimed: wait while `<journal>.hold` exists (at most `GATE_SECONDS`)."""
    held = Path(os.environ[JOURNAL_VARIABLE] + ".hold")
    for _ in range(int(GATE_SECONDS / 0.05)):
        if not await asyncio.to_thread(held.exists):
            return
        await asyncio.sleep(0.05)


AGENT = Agent(
    name="fork-kill",
    model=OpenAIChatModel("gpt-4.1"),
    tools=[gather, send_report],
    on_tool_execution_start=hold,
)
