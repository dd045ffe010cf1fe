from __future__ import annotations

from typing import Any

import pytest

from stepline.errors import UIMessageStreamError
from stepline.protocol import partial_json
from stepline.protocol.chunks import DataChunk, UIMessageChunk, parse_chunk
from stepline.protocol.reducer import UIMessageReducer, read_ui_message_stream, reduce_ui_message_stream


def chunks(*raw: dict[str, Any]) -> list[UIMessageChunk]:
    return [parse_chunk(c) for c in raw]


def test_reading_mid_stream_does_not_disturb_later_deltas() -> None:
    reducer = UIMessageReducer()
    for chunk in chunks(
        {"type": "start", "messageId": "m"},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": "Hel"},
        {"type": "tool-input-start", "toolCallId": "c", "toolName": "w"},
        {"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": '{"a":'},
    ):
        reducer.apply(chunk)
    middle = reducer.snapshot()
    assert middle["parts"][0]["text"] == "Hel"
    assert middle["parts"][1]["input"] == {}
    for chunk in chunks(
        {"type": "text-delta", "id": "t", "delta": "lo"},
        {"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": "[1,"},
    ):
        reducer.apply(chunk)
    final = reducer.message()
    assert final["parts"][0]["text"] == "Hello"
    assert final["parts"][1]["input"] == {"a": [1]}
    assert final["parts"][1]["rawInput"] == '{"a":[1,'
    assert middle["parts"][0]["text"] == "Hel"  # snapshots are copies


def test_streamed_tool_input_is_parsed_only_when_read(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    real = partial_json.PartialJson.value

    def counting(self: partial_json.PartialJson) -> Any:
        nonlocal calls
        calls += 1
        return real(self)

    monkeypatch.setattr(partial_json.PartialJson, "value", counting)
    deltas = [
        {"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": '{"k":"' if i == 0 else "x"}
        for i in range(10_000)
    ]
    stream = chunks({"type": "tool-input-start", "toolCallId": "c", "toolName": "w"}, *deltas)
    result = reduce_ui_message_stream(stream)
    assert calls == 1  # once, for the final read; never per delta
    assert result.message is not None
    assert result.message["parts"][0]["input"] == {"k": "x" * 9_999}


def test_terminate_on_error_raises_the_violation() -> None:
    stream = chunks({"type": "start"}, {"type": "tool-output-denied", "toolCallId": "nope"})
    with pytest.raises(UIMessageStreamError) as caught:
        reduce_ui_message_stream(stream, terminate_on_error=True)
    assert (caught.value.chunk_type, caught.value.chunk_id) == ("tool-invocation", "nope")
    with pytest.raises(UIMessageStreamError):
        list(read_ui_message_stream(stream, terminate_on_error=True))


def test_violation_keeps_the_message_built_before_it() -> None:
    result = reduce_ui_message_stream(
        chunks(
            {"type": "start", "messageId": "m"},
            {"type": "text-start", "id": "t"},
            {"type": "text-delta", "id": "t", "delta": "ok"},
            {"type": "reasoning-delta", "id": "r", "delta": "x"},
            {"type": "text-delta", "id": "t", "delta": "never"},
        )
    )
    assert result.error is not None and result.error.chunk_type == "reasoning-delta"
    assert result.message is not None and result.message["parts"][0]["text"] == "ok"


def test_resumed_replay_resets_on_first_start_even_with_the_same_id() -> None:
    existing = {"id": "m", "role": "assistant", "parts": [{"type": "text", "text": "old", "state": "done"}]}
    replay = chunks(
        {"type": "start", "messageId": "m"}, {"type": "text-start", "id": "t"}, {"type": "text-end", "id": "t"}
    )
    continued = UIMessageReducer(existing)
    replayed = UIMessageReducer(existing, reset_on_first_start=True)
    for chunk in replay:
        continued.apply(chunk)
        replayed.apply(chunk)
    assert len(continued.message()["parts"]) == 2
    assert replayed.message()["parts"] == [{"type": "text", "text": "", "state": "done"}]


def test_data_callbacks_see_transient_and_persistent_data() -> None:
    seen: list[DataChunk] = []
    reducer = UIMessageReducer(on_data=seen.append)
    for chunk in chunks({"type": "data-a", "data": 1, "transient": True}, {"type": "data-b", "data": 2}):
        reducer.apply(chunk)
    assert [c.type for c in seen] == ["data-a", "data-b"]
    assert [p["type"] for p in reducer.message()["parts"]] == ["data-b"]


def test_result_reports_finish_reason_abort_and_error_texts() -> None:
    result = reduce_ui_message_stream(
        chunks(
            {"type": "start"},
            {"type": "error", "errorText": "boom"},
            {"type": "abort"},
            {"type": "finish", "finishReason": "error"},
        )
    )
    assert (result.finish_reason, result.aborted, result.errors) == ("error", True, ("boom",))


def test_the_input_message_is_not_mutated() -> None:
    existing = {"id": "m", "role": "assistant", "parts": []}
    reduce_ui_message_stream(chunks({"type": "start-step"}, {"type": "text-start", "id": "t"}), message=existing)
    assert existing == {"id": "m", "role": "assistant", "parts": []}
