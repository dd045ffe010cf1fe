"""Every TextStreamPart maps to the chunk the SDK's `toUIMessageChunk` gives for the same part."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pydantic.alias_generators import to_camel

from stepline.protocol import stream_parts as sp
from stepline.protocol.chunks import Citation
from stepline.protocol.to_chunks import UIStreamOptions, to_ui_message_chunk
from tests.support.sdk_oracle import SdkOracle


class Error(Exception):
    """Named like JavaScript's Error so both sides print `Error: …`."""


SDK_TYPES = {
    sp.Start: "start",
    sp.Finish: "finish",
    sp.StartStep: "start-step",
    sp.FinishStep: "finish-step",
    sp.Abort: "abort",
    sp.StreamError: "error",
    sp.Raw: "raw",
    sp.TextStart: "text-start",
    sp.TextDelta: "text-delta",
    sp.TextEnd: "text-end",
    sp.ReasoningStart: "reasoning-start",
    sp.ReasoningDelta: "reasoning-delta",
    sp.ReasoningEnd: "reasoning-end",
    sp.File: "file",
    sp.ReasoningFile: "reasoning-file",
    sp.Source: "source",
    sp.Custom: "custom",
    sp.ToolInputStart: "tool-input-start",
    sp.ToolInputDelta: "tool-input-delta",
    sp.ToolInputEnd: "tool-input-end",
    sp.ToolCall: "tool-call",
    sp.ToolResult: "tool-result",
    sp.ToolError: "tool-error",
    sp.ToolOutputDenied: "tool-output-denied",
    sp.ToolApprovalRequest: "tool-approval-request",
    sp.ToolApprovalResponse: "tool-approval-response",
}


def sdk_value(value: Any) -> Any:
    if isinstance(value, BaseException):
        return {"__error__": True, "message": str(value)}
    if isinstance(value, Citation):
        return value.to_wire()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            to_camel(f.name): sdk_value(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if getattr(value, f.name) is not None
        }
    if isinstance(value, tuple | list):
        return [sdk_value(v) for v in value]
    return value


def sdk_part(part: sp.TextStreamPart) -> dict[str, Any]:
    return {"type": SDK_TYPES[type(part)], **sdk_value(part)}


CALL = sp.ToolCall(tool_call_id="c1", tool_name="weather", input={"city": "Paris"})
PM = {"p": {"k": 1}}
PARTS: list[sp.TextStreamPart] = [
    sp.Start(),
    sp.Finish(finish_reason="stop"),
    sp.Finish(finish_reason="tool-calls"),
    sp.StartStep(),
    sp.FinishStep(finish_reason="stop", provider_metadata=PM),
    sp.Abort(reason="user stopped"),
    sp.Abort(),
    sp.StreamError(error=Error("secret=123 leaked")),
    sp.Raw(raw_value={"x": 1}),
    sp.TextStart(id="t", provider_metadata=PM),
    sp.TextDelta(id="t", text="Hello"),
    sp.TextEnd(id="t"),
    sp.TextEnd(
        id="t",
        citations=(Citation(source={"type": "source", "sourceType": "url", "id": "s", "url": "https://a.example"}),),
    ),
    sp.ReasoningStart(id="r", provider_metadata=PM),
    sp.ReasoningDelta(id="r", text="hmm"),
    sp.ReasoningEnd(id="r", provider_metadata={"anthropic": {"signature": "sig"}}),
    sp.File(file=sp.GeneratedFile(media_type="image/png", base64="iVBORw0KGgo=")),
    sp.ReasoningFile(file=sp.GeneratedFile(media_type="image/png", base64="AAAA"), provider_metadata=PM),
    sp.Source(id="s1", source_type="url", url="https://a.example/x", title="A"),
    sp.Source(id="s2", source_type="document", media_type="application/pdf", title="Spec", filename="s.pdf"),
    sp.Custom(kind="anthropic.server-tool", provider_metadata=PM),
    sp.ToolInputStart(id="c1", tool_name="weather", title="Weather", provider_metadata=PM),
    sp.ToolInputStart(id="c2", tool_name="mcp", dynamic=True, input_encoding="text"),
    sp.ToolInputDelta(id="c1", delta='{"ci'),
    sp.ToolInputEnd(id="c1"),
    CALL,
    sp.ToolCall(
        tool_call_id="c2", tool_name="web_search", input={"q": 1}, provider_executed=True, tool_metadata={"m": 1}
    ),
    sp.ToolCall(
        tool_call_id="c3", tool_name="nope", input="{bad", invalid=True, dynamic=True, error=Error("no such tool")
    ),
    sp.ToolResult(tool_call_id="c1", tool_name="weather", input={"city": "Paris"}, output={"temp": 20}),
    sp.ToolResult(tool_call_id="c1", tool_name="weather", input={}, output=None, preliminary=True),
    sp.ToolError(tool_call_id="c1", tool_name="weather", input={}, error=Error("Weather API down")),
    sp.ToolError(
        tool_call_id="c2", tool_name="web_search", input={}, error={"code": "max_uses"}, provider_executed=True
    ),
    sp.ToolOutputDenied(tool_call_id="c1", tool_name="weather"),
    sp.ToolApprovalRequest(approval_id="a1", tool_call=CALL),
    sp.ToolApprovalRequest(approval_id="a2", tool_call=CALL, is_automatic=True, reason="policy", signature="sig"),
    sp.ToolApprovalResponse(approval_id="a1", tool_call=CALL, approved=False, reason="no"),
    sp.ToolApprovalResponse(approval_id="a2", tool_call=CALL, approved=True),
]

OPTION_SETS: list[tuple[str, UIStreamOptions, dict[str, Any]]] = [
    ("defaults", UIStreamOptions(), {}),
    (
        "no reasoning, sources on",
        UIStreamOptions(send_reasoning=False, send_sources=True),
        {"sendReasoning": False, "sendSources": True},
    ),
    (
        "no start/finish",
        UIStreamOptions(send_start=False, send_finish=False),
        {"sendStart": False, "sendFinish": False},
    ),
    ("custom onError redacts tool errors", UIStreamOptions(on_error=lambda e: "Sorry."), {"onErrorText": "Sorry."}),
    (
        "onError without redaction",
        UIStreamOptions(on_error=lambda e: "Sorry.", redact_tool_errors=False),
        {"onErrorText": "Sorry.", "redactToolErrors": False},
    ),
    ("response message id", UIStreamOptions(response_message_id="msg-9"), {"responseMessageId": "msg-9"}),
]


def test_every_sdk_part_type_is_exercised() -> None:
    assert {type(p) for p in PARTS} == set(SDK_TYPES)
    assert set(sp.__all__) - {t.__name__ for t in SDK_TYPES} == {
        "Data",
        "GeneratedFile",
        "LanguageModelUsage",
        "TextStreamPart",
    }


@pytest.mark.parametrize(
    ("options", "sdk_options"), [(o, s) for _, o, s in OPTION_SETS], ids=[n for n, _, _ in OPTION_SETS]
)
def test_mapping_matches_sdk(sdk: SdkOracle, options: UIStreamOptions, sdk_options: dict[str, Any]) -> None:
    expected = sdk.call("mapParts", parts=[sdk_part(p) for p in PARTS], options=sdk_options)
    actual = [None if (c := to_ui_message_chunk(p, options)) is None else c.to_wire() for p in PARTS]
    assert actual == expected


def test_message_metadata_on_start_and_finish_matches_sdk(sdk: SdkOracle) -> None:
    parts: list[sp.TextStreamPart] = [sp.Start(), sp.Finish(finish_reason="stop")]
    expected = sdk.call("mapParts", parts=[sdk_part(p) for p in parts], options={"messageMetadata": {"model": "m"}})
    actual = [to_ui_message_chunk(p, message_metadata={"model": "m"}) for p in parts]
    assert [c.to_wire() for c in actual if c is not None] == expected
