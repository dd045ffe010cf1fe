"""The SDK's browser transport parses Stepline's SSE into the same chunks and the same message."""

from __future__ import annotations

from typing import Any

import pytest

from stepline.protocol.chunks import parse_chunk
from stepline.protocol.reducer import read_ui_message_stream
from stepline.protocol.sse import KEEP_ALIVE, STREAM_OPEN, decode_ui_message_stream, encode_ui_message_stream
from tests.conformance.reduce_cases import CASES
from tests.support.sdk_oracle import SdkOracle

VALID = [(name, chunks, message) for name, chunks, message in CASES if not name.startswith("violation")]


def stepline_body(chunks: list[dict[str, Any]]) -> str:
    frames = list(encode_ui_message_stream([parse_chunk(c) for c in chunks], first_event_id=1))
    # Interleave the comments a live Stepline stream sends (stream open, keep-alives).
    return STREAM_OPEN + "".join(frame + (KEEP_ALIVE if i % 3 == 0 else "") for i, frame in enumerate(frames))


@pytest.mark.parametrize(("chunks", "message"), [(c, m) for _, c, m in VALID], ids=[n for n, _, _ in VALID])
def test_sdk_reads_stepline_sse_into_the_same_message(
    sdk: SdkOracle, chunks: list[dict[str, Any]], message: dict[str, Any] | None
) -> None:
    body = stepline_body(chunks)
    parsed = sdk.call("parseSse", body=body)
    assert "error" not in parsed
    assert parsed["chunks"] == chunks
    expected = sdk.call("sseToMessage", body=body, message=message)
    snapshots = list(read_ui_message_stream(decode_ui_message_stream(body), message=message))
    assert (snapshots[-1] if snapshots else None) == expected["final"]


@pytest.mark.parametrize(
    "body",
    [
        'data:{"type":"start"}\n\n',
        'data: {"type":"start"}\r\n\r\n',
        'data: {"type":"start"}\r\r',
        'data: {"type":"start"}\r\r\r',
        '\ufeffdata: {"type":"start"}\n\n',
        ': comment\nevent: message\nid: 4\nretry: 10\ndata: {"type":\ndata: "start"}\n\n',
        'data: {"type":"start"}\n\ndata: [DONE]\n\ndata: {"type":"finish"}',
        'data: {"type":"text-start","id":"a"}\n\ndata: {"type":"text-delta","id":"a","delta":"\u2028x"}\n\n',
    ],
)
def test_decoder_agrees_with_the_sdk_parser(sdk: SdkOracle, body: str) -> None:
    assert [c.to_wire() for c in decode_ui_message_stream(body)] == sdk.call("parseSse", body=body)["chunks"]


def test_both_reject_an_unknown_chunk_type(sdk: SdkOracle) -> None:
    result = sdk.call("parseSse", body='data: {"type":"nope"}\n\n')
    assert result["error"]["name"] == "AI_TypeValidationError"
    with pytest.raises(Exception, match="unknown UI message chunk type"):
        decode_ui_message_stream('data: {"type":"nope"}\n\n')


def test_both_reject_a_tool_input_without_input_key(sdk: SdkOracle) -> None:
    body = 'data: {"type":"tool-input-available","toolCallId":"c","toolName":"w"}\n\n'
    assert sdk.call("parseSse", body=body)["error"]["name"] == "AI_TypeValidationError"
    with pytest.raises(Exception, match="input: Field required"):
        decode_ui_message_stream(body)
