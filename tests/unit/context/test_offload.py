"""Big tool outputs: offloaded from the prompt (never from the message), read back in pieces by their owner."""

from __future__ import annotations

import asyncio
from typing import Any

from stepline.context.offload import PREVIEW_HEAD, has_handles, offload_outputs
from stepline.context.read_output import MAX_LENGTH, read_output
from stepline.loop.state import LoopState, StepRecord, ToolResultRecord
from stepline.loop.tools import ToolContext
from stepline.protocol.model_messages import (
    AssistantModelMessage,
    JsonOutput,
    TextOutput,
    ToolCallPart,
    ToolModelMessage,
    ToolResultPart,
)
from stepline.store.blobs import MemoryBlobStore
from stepline.store.memory import MemoryStore
from stepline.tools.context import RunContext


def _state(output: Any) -> LoopState:
    value = TextOutput(value=output) if isinstance(output, str) else JsonOutput(value=output)
    return LoopState(
        run_id="r1",
        message_id="m1",
        started_at=0,
        messages=[],
        response_messages=[
            AssistantModelMessage(content=[ToolCallPart(tool_call_id="c1", tool_name="dump", input={})]),
            ToolModelMessage(content=[ToolResultPart(tool_call_id="c1", tool_name="dump", output=value)]),
        ],
    )


def _result_text(state: LoopState) -> str:
    message = state.response_messages[1]
    assert isinstance(message, ToolModelMessage)
    part = message.content[0]
    assert isinstance(part, ToolResultPart) and isinstance(part.output, TextOutput)
    return part.output.value


def _read(blobs: MemoryBlobStore, user: str, **args: Any) -> dict[str, Any]:
    context = RunContext(
        user_id=user, conversation_id="c", run_id="r1", message_id="m1", store=MemoryStore(), blobs=blobs
    )
    tool_context = ToolContext(
        tool_call_id="t", tool_name="read_output", run_id="r1", messages=[], runtime_context=context
    )
    assert read_output.execute is not None
    result: Any = read_output.execute(args, tool_context)
    if asyncio.iscoroutine(result):
        result = asyncio.run(result)
    return result


FIVE_MB = "".join(f"line {n:07d}: {'abcdefghij' * 4}\n" for n in range(5 * 1024 * 1024 // 54))


def test_a_5_mb_output_reaches_the_model_as_a_preview_and_is_read_back_whole_in_pieces() -> None:
    blobs = MemoryBlobStore()
    state = offload_outputs(_state(FIVE_MB), blobs=blobs, user_id="alice", above=20_000)
    shown = _result_text(state)
    assert len(shown) < PREVIEW_HEAD + 1_500 and FIVE_MB[:200] in shown and FIVE_MB[-200:] in shown
    assert has_handles(state.response_messages)
    handle = shown.split(":", 1)[0].rsplit(" ", 1)[-1]
    pieces: list[str] = []
    offset = 0
    while True:
        got = _read(blobs, "alice", handle=handle, offset=offset, length=MAX_LENGTH)
        pieces.append(got["text"])
        offset += got["length"]
        if not got["more"]:
            break
    assert "".join(pieces) == FIVE_MB and got["total"] == len(FIVE_MB)
    found = _read(blobs, "alice", handle=handle, search="line 0031337:")
    assert [m["offset"] for m in found["matches"]] == [FIVE_MB.index("line 0031337:")]
    assert offload_outputs(state, blobs=blobs, user_id="alice", above=20_000) is state  # a redo changes nothing


def test_json_outputs_are_offloaded_as_their_json_and_small_ones_stay() -> None:
    blobs = MemoryBlobStore()
    big = {"rows": [{"id": n, "name": f"row {n}"} for n in range(3_000)]}
    assert "row 2999" in _result_text(offload_outputs(_state(big), blobs=blobs, user_id="alice", above=20_000))
    small = _state("short output")
    assert offload_outputs(small, blobs=blobs, user_id="alice", above=20_000) is small


def test_another_user_cannot_read_an_output_and_a_bad_handle_is_named() -> None:
    blobs = MemoryBlobStore()
    shown = _result_text(offload_outputs(_state("x" * 30_000), blobs=blobs, user_id="alice", above=20_000))
    handle = shown.split(":", 1)[0].rsplit(" ", 1)[-1]
    assert _read(blobs, "alice", handle=handle, length=10)["text"] == "x" * 10
    assert "no output" in _read(blobs, "mallory", handle=handle)["error"]
    assert "unknown handle" in _read(blobs, "alice", handle="../../users/alice")["error"]


class CountingBlobs(MemoryBlobStore):
    def __init__(self) -> None:
        super().__init__()
        self.puts = 0

    def put(self, *args: Any, **kwargs: Any) -> Any:
        self.puts += 1
        return super().put(*args, **kwargs)


def test_an_earlier_step_s_record_keeps_the_preview_and_each_output_is_stored_once() -> None:
    big = "x" * 30_000
    state = _state(big)
    result = ToolResultRecord(tool_call_id="c1", tool_name="dump", output=big)
    earlier = StepRecord(
        step_number=0, finish_reason="tool-calls", tool_results=[result], response_messages=state.response_messages
    )
    last = earlier.model_copy(update={"step_number": 1})
    blobs = CountingBlobs()
    done = offload_outputs(
        state.model_copy(update={"steps": [earlier, last]}), blobs=blobs, user_id="alice", above=20_000
    )
    shown = _result_text(done)
    assert done.steps[0].tool_results[0].output == shown  # what the model saw, not the output
    assert has_handles(done.steps[0].response_messages)
    assert done.steps[1] == last  # the last step's record stays whole (its results are the ledger's)
    assert blobs.puts == 1  # in the prompt and twice in the earlier step: one object, stored once
