"""One assertion per row of spec 000's TextStreamPart → UIMessageChunk table, plus the stream wrapper."""

from __future__ import annotations

from typing import Any

import pytest

from stepline.protocol import stream_parts as sp
from stepline.protocol.to_chunks import (
    DEFAULT_ERROR_TEXT,
    UIChunkMapper,
    UIStreamOptions,
    error_message,
    to_ui_message_chunk,
    to_ui_message_stream,
)

CALL = sp.ToolCall(tool_call_id="c1", tool_name="weather", input={"city": "Paris"})


def wire(part: sp.TextStreamPart, options: UIStreamOptions | None = None, **kw: Any) -> dict[str, Any] | None:
    chunk = to_ui_message_chunk(part, options, **kw)
    return None if chunk is None else chunk.to_wire()


ROWS: list[tuple[str, sp.TextStreamPart, dict[str, Any] | None]] = [
    (
        "text-start",
        sp.TextStart(id="t", provider_metadata={"p": {}}),
        {"type": "text-start", "id": "t", "providerMetadata": {"p": {}}},
    ),
    (
        "text-delta renames text to delta",
        sp.TextDelta(id="t", text="Hi"),
        {"type": "text-delta", "id": "t", "delta": "Hi"},
    ),
    ("text-end", sp.TextEnd(id="t"), {"type": "text-end", "id": "t"}),
    ("reasoning-start", sp.ReasoningStart(id="r"), {"type": "reasoning-start", "id": "r"}),
    (
        "reasoning-delta renames text",
        sp.ReasoningDelta(id="r", text="x"),
        {"type": "reasoning-delta", "id": "r", "delta": "x"},
    ),
    ("reasoning-end", sp.ReasoningEnd(id="r"), {"type": "reasoning-end", "id": "r"}),
    ("custom", sp.Custom(kind="openai.x"), {"type": "custom", "kind": "openai.x"}),
    (
        "file becomes a data URL",
        sp.File(file=sp.GeneratedFile(media_type="image/png", base64="QUJD")),
        {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,QUJD"},
    ),
    (
        "reasoning-file",
        sp.ReasoningFile(file=sp.GeneratedFile(media_type="text/plain", base64="eA==")),
        {"type": "reasoning-file", "mediaType": "text/plain", "url": "data:text/plain;base64,eA=="},
    ),
    ("source is off by default", sp.Source(id="s", source_type="url", url="https://a.example"), None),
    (
        "tool-input-start renames id to toolCallId",
        sp.ToolInputStart(id="c1", tool_name="weather", title="W"),
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "weather", "title": "W"},
    ),
    (
        "tool-input-delta renames delta to inputTextDelta",
        sp.ToolInputDelta(id="c1", delta="{"),
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": "{"},
    ),
    ("tool-input-end is dropped", sp.ToolInputEnd(id="c1"), None),
    (
        "tool-call becomes tool-input-available",
        CALL,
        {"type": "tool-input-available", "toolCallId": "c1", "toolName": "weather", "input": {"city": "Paris"}},
    ),
    (
        "invalid tool-call becomes tool-input-error with the model's error text",
        sp.ToolCall(
            tool_call_id="c2", tool_name="nope", input="{", invalid=True, dynamic=True, error=ValueError("no tool")
        ),
        {
            "type": "tool-input-error",
            "toolCallId": "c2",
            "toolName": "nope",
            "input": "{",
            "dynamic": True,
            "errorText": "ValueError: no tool",
        },
    ),
    (
        "tool-result becomes tool-output-available, None output sent as null",
        sp.ToolResult(tool_call_id="c1", tool_name="weather", input={}, output=None),
        {"type": "tool-output-available", "toolCallId": "c1", "output": None},
    ),
    (
        "tool-error becomes tool-output-error",
        sp.ToolError(tool_call_id="c1", tool_name="weather", input={}, error=RuntimeError("down")),
        {"type": "tool-output-error", "toolCallId": "c1", "errorText": "RuntimeError: down"},
    ),
    (
        "provider-executed tool-error keeps the provider's JSON",
        sp.ToolError(tool_call_id="c1", tool_name="ws", input={}, error={"code": "x"}, provider_executed=True),
        {"type": "tool-output-error", "toolCallId": "c1", "errorText": '{"code":"x"}', "providerExecuted": True},
    ),
    (
        "tool-output-denied carries only toolCallId",
        sp.ToolOutputDenied(tool_call_id="c1", tool_name="w"),
        {"type": "tool-output-denied", "toolCallId": "c1"},
    ),
    (
        "tool-approval-request",
        sp.ToolApprovalRequest(approval_id="a", tool_call=CALL, is_automatic=True, signature="s"),
        {"type": "tool-approval-request", "approvalId": "a", "toolCallId": "c1", "isAutomatic": True, "signature": "s"},
    ),
    (
        "tool-approval-response",
        sp.ToolApprovalResponse(approval_id="a", tool_call=CALL, approved=False, reason="no"),
        {"type": "tool-approval-response", "approvalId": "a", "approved": False, "reason": "no"},
    ),
    (
        "start-step keeps only the boundary",
        sp.StartStep(request={"body": "big"}, warnings=("w",)),
        {"type": "start-step"},
    ),
    (
        "finish-step keeps only the boundary",
        sp.FinishStep(finish_reason="stop", usage=sp.LanguageModelUsage(input_tokens=3)),
        {"type": "finish-step"},
    ),
    ("start", sp.Start(), {"type": "start"}),
    ("finish keeps finishReason", sp.Finish(finish_reason="length"), {"type": "finish", "finishReason": "length"}),
    ("abort passes through", sp.Abort(reason="stop"), {"type": "abort", "reason": "stop"}),
    (
        "error reveals nothing by default",
        sp.StreamError(error=RuntimeError("db password=hunter2")),
        {"type": "error", "errorText": DEFAULT_ERROR_TEXT},
    ),
    ("raw is dropped", sp.Raw(raw_value={"a": 1}), None),
    (
        "Stepline data part becomes a data chunk",
        sp.Data(name="retry", data={"reason": "rate limited", "attempt": 1}),
        {"type": "data-retry", "data": {"reason": "rate limited", "attempt": 1}},
    ),
]


@pytest.mark.parametrize(("part", "expected"), [(p, e) for _, p, e in ROWS], ids=[n for n, _, _ in ROWS])
def test_mapping_row(part: sp.TextStreamPart, expected: dict[str, Any] | None) -> None:
    assert wire(part) == expected


def test_send_reasoning_false_drops_reasoning_and_reasoning_files() -> None:
    options = UIStreamOptions(send_reasoning=False)
    file = sp.GeneratedFile(media_type="image/png", base64="AA==")
    for part in (
        sp.ReasoningStart(id="r"),
        sp.ReasoningDelta(id="r", text="x"),
        sp.ReasoningEnd(id="r"),
        sp.ReasoningFile(file=file),
    ):
        assert wire(part, options) is None
    assert wire(sp.File(file=file), options) is not None


def test_send_sources_maps_url_and_document_sources() -> None:
    options = UIStreamOptions(send_sources=True)
    assert wire(sp.Source(id="s", source_type="url", url="https://a.example", title="A"), options) == {
        "type": "source-url",
        "sourceId": "s",
        "url": "https://a.example",
        "title": "A",
    }
    document = sp.Source(id="d", source_type="document", media_type="application/pdf", title="T", filename="t.pdf")
    assert wire(document, options) == {
        "type": "source-document",
        "sourceId": "d",
        "mediaType": "application/pdf",
        "title": "T",
        "filename": "t.pdf",
    }


def test_send_start_and_finish_false() -> None:
    options = UIStreamOptions(send_start=False, send_finish=False)
    assert wire(sp.Start(), options) is None
    assert wire(sp.Finish(finish_reason="stop"), options) is None


def test_start_carries_message_id_and_metadata() -> None:
    options = UIStreamOptions(response_message_id="m1")
    assert wire(sp.Start(), options, message_metadata={"a": 1}) == {
        "type": "start",
        "messageMetadata": {"a": 1},
        "messageId": "m1",
    }


def test_finish_reasons_the_client_rejects_travel_as_other() -> None:
    assert wire(sp.Finish(finish_reason="unknown")) == {"type": "finish", "finishReason": "other"}
    assert wire(sp.Finish(finish_reason="interrupted")) == {"type": "finish", "finishReason": "other"}


def test_on_error_formats_stream_errors_and_redacts_tool_errors() -> None:
    options = UIStreamOptions(on_error=lambda e: f"failed ({type(e).__name__})")
    assert wire(sp.StreamError(error=KeyError("x")), options) == {"type": "error", "errorText": "failed (KeyError)"}
    error = sp.ToolError(tool_call_id="c", tool_name="w", input={}, error=RuntimeError("token=abc"))
    assert wire(error, options) == {
        "type": "tool-output-error",
        "toolCallId": "c",
        "errorText": "failed (RuntimeError)",
    }
    keep = UIStreamOptions(on_error=lambda e: "x", redact_tool_errors=False)
    assert wire(error, keep)["errorText"] == "RuntimeError: token=abc"  # type: ignore[index]


def test_declared_tool_kinds_decide_the_dynamic_flag() -> None:
    options = UIStreamOptions(tools={"weather": "static", "mcp": "dynamic"})
    assert "dynamic" not in wire(sp.ToolCall(tool_call_id="a", tool_name="weather", input={}, dynamic=True), options)  # type: ignore[operator]
    assert wire(sp.ToolCall(tool_call_id="b", tool_name="mcp", input={}), options)["dynamic"] is True  # type: ignore[index]
    assert wire(sp.ToolCall(tool_call_id="c", tool_name="other", input={}, dynamic=False), options)["dynamic"] is False  # type: ignore[index]


def test_error_message_reads_like_javascript() -> None:
    assert error_message(None) == "unknown error"
    assert error_message("plain") == "plain"
    assert error_message(ValueError("bad")) == "ValueError: bad"
    assert error_message(ValueError()) == "ValueError"
    assert error_message({"a": [1]}) == '{"a":[1]}'


def test_mapper_skips_the_tool_error_that_follows_an_invalid_call() -> None:
    invalid = sp.ToolCall(tool_call_id="c", tool_name="nope", input={}, invalid=True, error=ValueError("x"))
    follow_up = sp.ToolError(tool_call_id="c", tool_name="nope", input={}, error=ValueError("x"))
    chunks = list(to_ui_message_stream([invalid, follow_up, follow_up]))
    assert [c.type for c in chunks] == ["tool-input-error", "tool-output-error"]


def test_mapper_sends_metadata_before_the_step_boundary_and_inside_start_and_finish() -> None:
    mapper = UIChunkMapper(UIStreamOptions(message_metadata=lambda part: {"seen": type(part).__name__}))
    assert [c.type for c in mapper.map(sp.Start())] == ["start"]
    assert [c.type for c in mapper.map(sp.TextDelta(id="t", text="x"))] == ["text-delta", "message-metadata"]
    assert [c.type for c in mapper.map(sp.FinishStep(finish_reason="stop"))] == ["message-metadata", "finish-step"]
    finish = mapper.map(sp.Finish(finish_reason="stop"))
    assert [c.to_wire() for c in finish] == [
        {"type": "finish", "finishReason": "stop", "messageMetadata": {"seen": "Finish"}}
    ]
