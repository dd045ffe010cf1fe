"""The journaled default toolset (`tests.restart.journal_tools`) and `gated_step`, a tool that is still
running when the test kills the server: it journals its start, then waits for a gate file
(`<journal>.gate`) that the test never creates, for at most `GATE_SECONDS`, and journals its end.

`STEPLINE_TOOLS=tests.restart.control_tools`. A second start line would be a tool run twice.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from stepline import tool
from stepline.tools.context import RunContext
from tests.restart.journal_tools import JOURNAL_VARIABLE, TOOL_APPROVAL
from tests.restart.journal_tools import TOOLS as JOURNALED

GATE_SECONDS = 30.0


def note(line: str) -> None:
    with open(os.environ[JOURNAL_VARIABLE], "a", encoding="utf-8") as journal:
        journal.write(line + "\n")
        journal.flush()
        os.fsync(journal.fileno())


async def gated(conversation: str, tool: str) -> None:
    """Journal `conversation tool`, wait until the gate opens (at most `GATE_SECONDS`), journal `… ended`."""
    await asyncio.to_thread(note, f"{conversation} {tool}")
    gate = Path(os.environ[JOURNAL_VARIABLE] + ".gate")
    for _ in range(int(GATE_SECONDS / 0.05)):
        if await asyncio.to_thread(gate.exists):
            break
        await asyncio.sleep(0.05)
    await asyncio.to_thread(note, f"{conversation} {tool} ended")


@tool
async def gated_step(label: str, context: RunContext) -> str:
    """A step of work that lasts until its gate opens."""
    await gated(context.conversation_id, "gated_step")
    return f"done {label}"


TOOLS = [*JOURNALED, gated_step]
__all__ = ["TOOLS", "TOOL_APPROVAL", "gated", "note"]
