from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from stepline.protocol.chunks import (
    FinishChunk,
    StartChunk,
    TextDeltaChunk,
    TextEndChunk,
    TextStartChunk,
    ToolOutputAvailableChunk,
    UIMessageChunk,
)
from stepline.protocol.writer import UIMessageStreamFinish, UIMessageStreamWriter, create_ui_message_stream


async def model_stream() -> AsyncIterator[UIMessageChunk]:
    for chunk in (StartChunk(), TextStartChunk(id="t"), TextDeltaChunk(id="t", delta="hello"), TextEndChunk(id="t")):
        await asyncio.sleep(0)
        yield chunk
    yield FinishChunk(finish_reason="stop")


def collect(execute: Any, **kw: Any) -> tuple[list[dict[str, Any]], list[UIMessageStreamFinish]]:
    finished: list[UIMessageStreamFinish] = []

    async def run() -> list[dict[str, Any]]:
        stream = create_ui_message_stream(execute, on_finish=finished.append, **kw)
        return [chunk.to_wire() async for chunk in stream]

    return asyncio.run(run()), finished


def test_writer_methods_and_merge_in_order() -> None:
    def execute(writer: UIMessageStreamWriter) -> None:
        writer.write_transient_data("status", "retrieving")
        writer.write_data("sources", [{"url": "https://a.example"}], id="s")
        writer.write_message_metadata({"model": "m"})
        writer.merge(model_stream())

    chunks, finished = collect(execute, generate_id=lambda: "msg-9")
    assert chunks[:3] == [
        {"type": "data-status", "data": "retrieving", "transient": True},
        {"type": "data-sources", "data": [{"url": "https://a.example"}], "id": "s"},
        {"type": "message-metadata", "messageMetadata": {"model": "m"}},
    ]
    assert chunks[3] == {"type": "start", "messageId": "msg-9"}  # id injected into the merged start
    (finish,) = finished
    assert finish.is_continuation is False
    assert finish.response_message["id"] == "msg-9"
    assert [p["type"] for p in finish.response_message["parts"]] == ["data-sources", "text"]  # transient never stored
    assert finish.response_message["metadata"] == {"model": "m"}
    assert finish.finish_reason == "stop"


def test_write_text_and_file_make_whole_parts() -> None:
    async def execute(writer: UIMessageStreamWriter) -> None:
        writer.write(StartChunk())
        writer.write_text("Done.", id="t1")
        writer.write_file("data:image/png;base64,AA==", "image/png")

    chunks, (finish,) = collect(execute)
    assert [c["type"] for c in chunks] == ["start", "text-start", "text-delta", "text-end", "file"]
    assert finish.response_message["parts"] == [
        {"type": "text", "text": "Done.", "state": "done"},
        {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,AA=="},
    ]


def test_exceptions_become_safe_error_chunks() -> None:
    async def failing() -> AsyncIterator[UIMessageChunk]:
        yield StartChunk()
        raise RuntimeError("db password=hunter2")

    def execute(writer: UIMessageStreamWriter) -> None:
        writer.merge(failing())
        raise ValueError("secret")

    chunks, _ = collect(execute)
    assert sorted(c["type"] for c in chunks) == ["error", "error", "start"]
    assert all(c["errorText"] == "An error occurred." for c in chunks if c["type"] == "error")
    chunks, _ = collect(execute, on_error=lambda e: type(e).__name__)
    assert sorted(c.get("errorText", "") for c in chunks) == ["", "RuntimeError", "ValueError"]


def test_continuation_reuses_the_last_assistant_message() -> None:
    original = [
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "delete /tmp/x"}]},
        {
            "id": "a1",
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                {
                    "type": "tool-rm",
                    "toolCallId": "c1",
                    "state": "approval-responded",
                    "input": {"p": "/tmp/x"},
                    "approval": {"id": "ap", "approved": True},
                },
            ],
        },
    ]

    def execute(writer: UIMessageStreamWriter) -> None:
        writer.write(StartChunk())
        writer.write(ToolOutputAvailableChunk(tool_call_id="c1", output="ok"))

    chunks, (finish,) = collect(execute, original_messages=original)
    assert chunks[0] == {"type": "start", "messageId": "a1"}
    assert finish.is_continuation is True
    assert [m["id"] for m in finish.messages] == ["u1", "a1"]
    assert finish.response_message["parts"][1]["state"] == "output-available"
