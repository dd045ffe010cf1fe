"""Sub-agents three levels deep, for the kill -9 test of delegation (`tests.restart.delegation_agents:AGENTS`).

The lead asks alpha, beta and gamma at once; gamma asks delta. alpha, beta and delta each stamp
a label (a tool that needs the person's approval), then answer; the lead, once the three have
answered, stamps its own label (the fourth approval), then answers. alpha's first step streams its
text slowly (`delaysMs`), so a test can kill the server while a child streams; beta's answer after
its stamp streams slowly too, so a kill right after beta's decision lands before beta's step ends.

Every stamp that runs appends `conversation stamp label` to the journal file
(`STEPLINE_TEST_TOOL_JOURNAL`), flushed before it returns: a label twice is a tool run twice.
Script books are stateless (the step is the number of assistant messages since the prompt), as a
server that is killed and started again needs.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from stepline import Agent, tool
from stepline.llm.script_book import ScriptBook
from stepline.tools.context import RunContext
from tests.restart.journal_tools import JOURNAL_VARIABLE

SLOW_WORDS = 40
SLOW_MS = 75
"""alpha's slow first step: 40 words, 75 ms apart (3 s), long enough to be cut by a kill."""
_STOP: dict[str, Any] = {"type": "finish", "finishReason": {"unified": "stop", "raw": "stop"}, "usage": {}}
_CALLS: dict[str, Any] = {"type": "finish", "finishReason": {"unified": "tool-calls", "raw": "tool_use"}, "usage": {}}


def _record(line: str) -> None:
    with open(os.environ[JOURNAL_VARIABLE], "a", encoding="utf-8") as journal:
        journal.write(line + "\n")
        journal.flush()
        os.fsync(journal.fileno())


@tool(approval="user-approval")
async def stamp(label: str, context: RunContext) -> str:
    """Stamp a label (needs the person's approval)."""
    await asyncio.to_thread(_record, f"{context.conversation_id} stamp {label}")
    return f"stamped {label}"


def _text(value: str, prefix: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    delta = {"type": "text-delta", "id": "t", "delta": value}
    return [*(prefix or []), {"type": "text-start", "id": "t"}, delta, {"type": "text-end", "id": "t"}, _STOP]


def _calls(*calls: tuple[str, str, str]) -> list[dict[str, Any]]:
    parts = [{"type": "tool-call", "toolCallId": i, "toolName": n, "input": v} for i, n, v in calls]
    return [*parts, _CALLS]


def _slow(words: list[str], then: list[dict[str, Any]]) -> dict[str, Any]:
    """A text streamed word by word, `SLOW_MS` apart, then `then` at once."""
    deltas = [{"type": "text-delta", "id": "s", "delta": w} for w in words]
    parts = [{"type": "text-start", "id": "s"}, *deltas, {"type": "text-end", "id": "s"}, *then]
    return {"parts": parts, "delaysMs": [0, *[SLOW_MS] * len(words)]}


def _book(name: str, steps: list[Any]) -> ScriptBook:
    return ScriptBook.from_book({"scripts": [], "fallback": {"steps": steps}}, model_id=name)


def _stamp_call(call_id: str, label: str) -> tuple[str, str, str]:
    return (call_id, "stamp", f'{{"label": "{label}"}}')


SLOW_TEXT = [f"alpha{i} " for i in range(SLOW_WORDS)]
alpha = Agent(
    name="alpha",
    description="Stamps alpha.",
    model=_book("alpha", [_slow(SLOW_TEXT, _calls(_stamp_call("a1", "alpha"))), _text("alpha stamped.")]),
    tools=[stamp],
)
beta = Agent(
    name="beta",
    description="Stamps beta.",
    model=_book("beta", [_calls(_stamp_call("b1", "beta")), _slow(["beta ", "is ", "stamped."] * 10, [_STOP])]),
    tools=[stamp],
)
delta = Agent(
    name="delta",
    description="Stamps delta.",
    model=_book("delta", [_calls(_stamp_call("d1", "delta")), _text("delta stamped.")]),
    tools=[stamp],
)
gamma = Agent(
    name="gamma",
    description="Asks delta.",
    model=_book("gamma", [_calls(("g1", "delta", '{"task": "stamp delta"}')), _text("gamma heard: delta stamped.")]),
    tools=[delta.as_tool()],
)
lead = Agent(
    name="lead",
    description="Asks alpha, beta and gamma at once, then stamps its own label.",
    model=_book(
        "lead",
        [
            _calls(
                ("c-alpha", "alpha", '{"task": "stamp alpha"}'),
                ("c-beta", "beta", '{"task": "stamp beta"}'),
                ("c-gamma", "gamma", '{"task": "ask delta"}'),
            ),
            _calls(_stamp_call("l1", "lead")),
            _text("All four are stamped."),
        ],
    ),
    tools=[alpha.as_tool(), beta.as_tool(), gamma.as_tool(), stamp],
)
AGENTS = {"lead": lead}
LABELS = ("alpha", "beta", "delta", "lead")
