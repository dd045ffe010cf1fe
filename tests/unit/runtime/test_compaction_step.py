"""The compaction step on the durable path: a run far longer than its model's window completes.

The model fake (`tests.support.long_task`) refuses any request over its 32k-token window, measured
at the wire on its own, and any request with a tool call apart from its result. Each worker call
builds its services anew over one store (as a Lambda in another process would); a crash is an
exception no handler catches (the function dies), after which the step is invoked again, as Step
Functions retries it.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from stepline import Agent
from stepline.context.policy import ContextPolicy
from stepline.context.tokens import shared_tokens
from stepline.llm.base import ToolDefinition
from stepline.loop.state import LoopState
from stepline.loop.stop import is_step_count
from stepline.protocol._json import dumps
from stepline.protocol.model_messages import ModelMessage
from stepline.runtime.compaction import compactions
from stepline.runtime.handlers import handlers
from stepline.store.history import SUMMARY_PART
from stepline.store.memory import MemoryStore
from stepline.store.records import CheckpointReason, CheckpointRecord
from stepline.testing.engine import LambdaContext
from stepline.testing.harness import Harness
from stepline.testing.script import FunctionModel, call, text
from tests.support.long_task import LongTask, long_task_model, part_text, read_tool

POLICY = ContextPolicy(context_window=32_000, output_reserve=2_000, keep_recent=3)


class Crash(BaseException):
    """The function's process dies (no handler sees it)."""


def _agent(total: int, size: int) -> Agent:
    return Agent(name="long", tools=[read_tool(size)], context=POLICY, stop_when=is_step_count(total + 5))


def _summary_parts(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in parts if p.get("type") == SUMMARY_PART]


def test_a_run_of_sixty_steps_over_a_32k_window_completes_compacting_as_it_goes() -> None:
    task = LongTask(total=60)
    store = RecordingStore()
    harness = Harness(_agent(60, 6_000), model=long_task_model(task), store=store)
    result = harness.turn("Read all 60 parts.")
    assert result.status == "completed", result.stream_errors
    assert result.message["parts"][-1]["text"] == "All 60 parts are read."
    assert task.refused == 0 and max(task.sizes) <= task.window
    assert [t.input for t in result.tool_calls] == [{"part": k} for k in range(1, 61)]  # each part once
    summaries = _summary_parts(result.stored_message["parts"])
    assert len(summaries) == task.summaries >= 3
    assert [s["data"]["index"] for s in summaries] == list(range(1, len(summaries) + 1))
    assert result.message["metadata"]["context"]["compactions"] == len(summaries)
    assert store.reasons.count("compaction") == len(summaries)
    last = summaries[-1]["data"]
    assert last["tokensAfter"] < last["tokensBefore"] and "Parts 1 to" in last["summary"]


def test_the_next_turn_carries_the_summary_and_the_steps_it_kept() -> None:
    task = LongTask(total=30)
    harness = Harness(_agent(30, 6_000), model=long_task_model(task))
    first = harness.turn("Read all 30 parts.")
    assert first.status == "completed"
    conversation = first.run.conversation_id
    task.total = 31
    second = harness.turn("One more part, please.", conversation_id=conversation)
    assert second.status == "completed", second.stream_errors
    assert [t.input for t in second.tool_calls] == [{"part": 31}]  # the summary told it 1..k were read
    history = second.message["metadata"]["context"]["history"]
    assert history["summarizedThrough"] and history["leftOut"] == 0


class RecordingStore(MemoryStore):
    """The memory store, noting each checkpoint's reason."""

    def __init__(self) -> None:
        super().__init__()
        self.reasons: list[str] = []

    def save_checkpoint(
        self, user_id: str, run_id: str, *, state: dict[str, Any], reason: CheckpointReason, now: int
    ) -> CheckpointRecord:
        self.reasons.append(reason)
        return super().save_checkpoint(user_id, run_id, state=state, reason=reason, now=now)


def _drive(harness: Harness, run_id: str) -> None:
    """ModelStep until it stops continuing, each call a new process (the retry after a crash first)."""
    event = {"userId": harness.user_id, "runId": run_id, "firstStep": 0}
    while (
        handlers(harness.services)["stepline-model-step"](event, LambdaContext(uuid.uuid4().hex))["next"] == "continue"
    ):
        pass
    handlers(harness.services)["stepline-finalize-run"](event, LambdaContext(uuid.uuid4().hex))


@pytest.mark.parametrize("when", ["during", "after"])
def test_a_crash_during_a_compaction_redoes_it_and_one_after_it_never_summarizes_again(when: str) -> None:
    crashed: list[str] = []

    def crash(kind: str, summaries: int) -> None:
        if crashed:
            return
        if (when == "during" and kind == "summary" and summaries == 1) or (
            when == "after" and kind == "step" and summaries == 1
        ):
            crashed.append(kind)  # the second compaction's summarizer call, or the step right after the first
            raise Crash

    task = LongTask(total=40, before_answer=crash)
    store = RecordingStore()
    harness = Harness(_agent(40, 6_000), model=long_task_model(task), store=store)
    with pytest.raises(Crash):
        harness.turn("Read all 40 parts.")
    conversation = store.list_conversations(harness.user_id).items[0]
    run_id = conversation.active_run_id
    assert run_id is not None and crashed
    _drive(harness, run_id)
    run = store.get_run(harness.user_id, run_id)
    assert run.status == "completed"
    message = store.get_message(harness.user_id, run.conversation_id, run.assistant_message_id)
    assert message.content.endswith("All 40 parts are read.")
    calls = sorted(store.list_tool_calls(harness.user_id, run_id), key=lambda c: c.step_index)
    assert [c.input for c in calls] == [{"part": k} for k in range(1, 41)]  # no part read twice
    summaries = _summary_parts(list(message.parts))
    checkpoint = store.latest_checkpoint(harness.user_id, run_id)
    assert checkpoint is not None
    done = compactions(LoopState.model_validate(checkpoint.state))
    assert done >= 2
    assert [s["data"]["index"] for s in summaries] == list(range(1, done + 1))  # each once in the message
    assert store.reasons.count("compaction") == done
    assert task.summaries == done
    assert task.summary_requests == done + (1 if when == "during" else 0)  # never again after its checkpoint
    assert task.refused == 0 and max(task.sizes) <= task.window


def test_outputs_of_100_kb_reach_the_model_as_previews_and_the_message_keeps_them_whole() -> None:
    task = LongTask(total=40)
    harness = Harness(_agent(40, 100_000), model=long_task_model(task))
    result = harness.turn("Read all 40 parts.")
    assert result.status == "completed", result.stream_errors
    assert task.refused == 0 and max(task.sizes) <= task.window
    outputs = [p["output"] for p in result.stored_message["parts"] if p.get("type") == "tool-read"]
    assert len(outputs) == 40 and all(len(o) == 100_000 for o in outputs)  # the UI's message: whole outputs
    assert [t.input for t in result.tool_calls] == [{"part": k} for k in range(1, 41)]
    # The checkpoint keeps a preview of each earlier step's output, not the output (twice): it grows by
    # a few KB a step, where 40 whole outputs in each step's record would be 8 MB.
    checkpoint = harness.store.latest_checkpoint(harness.user_id, result.run_id)
    assert checkpoint is not None and len(dumps(checkpoint.state)) < 2 * 100_000 + 40 * 10_000


def test_the_model_reads_an_offloaded_output_with_read_output() -> None:
    def model(prompt: list[ModelMessage], tools: list[ToolDefinition]) -> Any:
        wire = dumps([m.to_wire() for m in prompt])
        handles = re.findall(r"\[stepline output ([0-9a-f]{64}):", wire)
        if not handles:
            return call("read", part=7)
        if '"toolName":"read_output"' not in wire:
            assert "read_output" in [t.name for t in tools]
            return call("read_output", handle=handles[0], offset=50_000, length=200)
        expected = part_text(7, 100_000)[50_000:50_200]
        return text("the piece matches" if dumps(expected) in wire else "the piece differs")

    harness = Harness(_agent(3, 100_000), model=FunctionModel(model))
    result = harness.turn("Read part 7, then look at its middle.")
    assert result.status == "completed", result.stream_errors
    assert result.message["parts"][-1]["text"] == "the piece matches"
    assert [t.name for t in result.tool_calls] == ["read", "read_output"]


def test_outputs_sent_whole_are_summarized_within_the_window_too() -> None:
    task = LongTask(total=8)
    policy = POLICY.model_copy(update={"offload_above": None})
    agent = Agent(name="long", tools=[read_tool(45_000)], context=policy, stop_when=is_step_count(13))
    harness = Harness(agent, model=long_task_model(task))
    result = harness.turn("Read all 8 parts.")
    assert result.status == "completed", result.stream_errors
    assert task.summaries >= 2 and task.refused == 0 and max(task.sizes) <= task.window


def test_a_step_counts_only_the_messages_the_previous_step_added() -> None:
    counted = shared_tokens().counted
    task = LongTask(total=30)
    result = Harness(_agent(30, 6_000), model=long_task_model(task)).turn("Read all 30 parts.")
    assert result.status == "completed"
    # each step adds an assistant and a tool message; a compaction adds a summary: recounting the
    # history every step would count hundreds of messages more
    assert shared_tokens().counted - counted <= 3 * 31 + 2 * task.summaries + 10
