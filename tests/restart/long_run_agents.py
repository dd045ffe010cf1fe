"""The long task for `stepline dev` (`tests.restart.long_run_agents:AGENTS`), its model a fake server.

The agent reads parts 1..N (`STEPLINE_TEST_LONG_STEPS`, default `DEFAULT_STEPS`) with the long
task's `read` tool (tests/support/long_task.py), each output `SIZE` bytes, under the compaction
policy of tests/unit/runtime/test_compaction_step.py. Its model is OpenAI's Chat Completions
through the real `openai` SDK, pointed at the fake the test runs (`STEPLINE_TEST_LONG_MODEL_URL`,
tests/restart/long_run_model.py): the fake decides each step from the prompt, so a server killed
and started again needs nothing but its data folder.

Every execution of `read` appends `conversation read <part>` to the journal file
(`STEPLINE_TEST_TOOL_JOURNAL`), flushed before the output is returned: a part twice is a tool run twice.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from stepline import Agent
from stepline.context.policy import ContextPolicy
from stepline.llm.openai import OpenAIChatModel
from stepline.loop.stop import is_step_count
from stepline.loop.tools import Tool, ToolContext
from stepline.tools.context import RunContext
from tests.restart.journal_tools import JOURNAL_VARIABLE
from tests.restart.long_run_model import MODEL_ID, STEPS_VARIABLE, URL_VARIABLE
from tests.support.fake_openai import API_KEY
from tests.support.long_task import read_tool

DEFAULT_STEPS = 500
SIZE = 100_000
"""Bytes of each `read` output (the issue's 100 KB)."""
POLICY = ContextPolicy(context_window=32_000, output_reserve=2_000, keep_recent=3)


def steps() -> int:
    return int(os.environ.get(STEPS_VARIABLE) or DEFAULT_STEPS)


def _record(line: str) -> None:
    with open(os.environ[JOURNAL_VARIABLE], "a", encoding="utf-8") as journal:
        journal.write(line + "\n")
        journal.flush()
        os.fsync(journal.fileno())


def _journaled_read() -> Tool:
    inner = read_tool(SIZE)
    assert inner.execute is not None
    read = inner.execute

    async def execute(request: Any, context: ToolContext) -> Any:
        run = context.runtime_context
        conversation = run.conversation_id if isinstance(run, RunContext) else "?"
        await asyncio.to_thread(_record, f"{conversation} read {int(request['part'])}")
        return read(request)

    return Tool(name=inner.name, description=inner.description, input_schema=inner.input_schema, execute=execute)


def _agent() -> Agent:
    model = OpenAIChatModel(MODEL_ID, base_url=os.environ[URL_VARIABLE], api_key=API_KEY)
    return Agent(
        name="long",
        description="Reads every part of a long document, one a step.",
        model=model,
        tools=[_journaled_read()],
        context=POLICY,
        stop_when=is_step_count(steps() + 5),
    )


AGENTS = {"long": _agent()}
