"""Runs on the local AWS: scripted model steps, counted tools, starting a turn, reading the result."""

from __future__ import annotations

import itertools
import time
from typing import Any

from stepline.loop.tools import Tool
from stepline.protocol.chunks import parse_chunk
from stepline.protocol.reducer import reduce_ui_message_stream
from stepline.runtime.turn import begin_turn
from stepline.store.replay import chunks_of
from tests.support.local_aws import LocalAws

USER = "alice"
STOP = {
    "type": "finish",
    "finishReason": {"unified": "stop", "raw": "stop"},
    "usage": {"inputTokens": {"total": 5}, "outputTokens": {"total": 2}},
}
TOOLS_FINISH = {
    "type": "finish",
    "finishReason": {"unified": "tool-calls", "raw": "tool_use"},
    "usage": {"inputTokens": {"total": 5}, "outputTokens": {"total": 2}},
}
ids = itertools.count(1)


def text_step(text: str) -> list[dict[str, Any]]:
    return [
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": text},
        {"type": "text-end", "id": "t"},
        STOP,
    ]


def call_step(tool: str, input_text: str, call_id: str = "c1") -> list[dict[str, Any]]:
    return [{"type": "tool-call", "toolCallId": call_id, "toolName": tool, "input": input_text}, TOOLS_FINISH]


class Counted:
    """A tool whose executions are counted (the body must never run twice)."""

    def __init__(self, name: str, output: Any) -> None:
        self.runs = 0
        self.tool = Tool(name=name, input_schema={"type": "object"}, execute=self._run)
        self._output = output

    async def _run(self, _: Any) -> Any:
        self.runs += 1
        return self._output


def begin(aws: LocalAws, text: str = "hello", *, run_id: str | None = None, **options: Any) -> str:
    """Start a turn in a conversation of its own (`options` go to `begin_turn`); its run id."""
    run_id = run_id or f"run-{next(ids)}"
    begin_turn(
        aws.services,
        USER,
        conversation_id=f"c-{run_id}",
        run_id=run_id,
        assistant_message_id=f"a-{run_id}",
        user_message={"id": f"u-{run_id}", "role": "user", "parts": [{"type": "text", "text": text}]},
        **options,
    )
    return run_id


def final_message(aws: LocalAws, run_id: str) -> dict[str, Any]:
    run = aws.services.store.get_run(USER, run_id)
    return aws.services.store.get_message(USER, run.conversation_id, run.assistant_message_id).model_dump()


def replayed(aws: LocalAws, run_id: str) -> dict[str, Any] | None:
    events = aws.services.store.events_after(USER, run_id, 0, now=aws.services.clock())
    return reduce_ui_message_stream([parse_chunk(c) for c in chunks_of(events)]).message


def billed(aws: LocalAws, run_id: str) -> tuple[int, int]:
    """(state transitions, Lambda invocations) of a run's execution, from its history."""
    history = aws.workflow.history(run_id)
    transitions = sum(1 for e in history if e["type"].endswith("StateEntered"))
    return transitions, sum(1 for e in history if e["type"] == "TaskScheduled")


def wait_for_token(aws: LocalAws, tool_call_id: str) -> str:
    """The approval id of `tool_call_id`, once AwaitInput has attached its task token."""
    deadline = time.monotonic() + 60  # moto's interpreter on a busy machine: seconds per state
    while time.monotonic() < deadline:
        for pending in aws.services.store.pending_approvals(USER):
            approval = aws.services.store.get_approval(USER, pending.approval_id)
            if approval.tool_call_id == tool_call_id and approval.task_token:
                return approval.approval_id
        time.sleep(0.02)
    raise AssertionError(f"no task token for {tool_call_id}")
