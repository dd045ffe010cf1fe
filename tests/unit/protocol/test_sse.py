from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from stepline.errors import ProtocolError
from stepline.protocol.chunks import FinishChunk, StartChunk, TextDeltaChunk, TextEndChunk, TextStartChunk
from stepline.protocol.sse import (
    DONE,
    KEEP_ALIVE,
    STREAM_OPEN,
    UI_MESSAGE_STREAM_HEADERS,
    SseDecoder,
    decode_ui_message_stream,
    encode_chunk,
    encode_ui_message_stream,
    with_keep_alive,
)

CHUNKS = [
    StartChunk(message_id="m"),
    TextStartChunk(id="t"),
    TextDeltaChunk(id="t", delta="é\u2028\n"),
    TextEndChunk(id="t"),
    FinishChunk(finish_reason="stop"),
]


def test_headers_are_the_sdk_five() -> None:
    assert UI_MESSAGE_STREAM_HEADERS == {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        "connection": "keep-alive",
        "x-vercel-ai-ui-message-stream": "v1",
        "x-accel-buffering": "no",
    }


def test_encoding_is_compact_json_with_done() -> None:
    body = "".join(encode_ui_message_stream(CHUNKS[:1]))
    assert body == 'data: {"type":"start","messageId":"m"}\n\n' + DONE


def test_event_ids_number_from_the_given_sequence() -> None:
    frames = list(encode_ui_message_stream(CHUNKS[:2], first_event_id=7, done=False))
    assert frames == [
        'id: 7\ndata: {"type":"start","messageId":"m"}\n\n',
        'id: 8\ndata: {"type":"text-start","id":"t"}\n\n',
    ]
    assert encode_chunk(CHUNKS[1], event_id="x").startswith("id: x\n")


def test_round_trip_byte_by_byte() -> None:
    body = "".join(encode_ui_message_stream(CHUNKS, first_event_id=1))
    decoder = SseDecoder()
    events = [event for char in body for event in decoder.feed(char)]
    assert [e.id for e in events] == ["1", "2", "3", "4", "5", None]
    assert decode_ui_message_stream(body) == CHUNKS


@pytest.mark.parametrize(
    "body",
    [
        'data:{"type":"start"}\n\n',
        'data: {"type":"start"}\r\n\r\n',
        'data: {"type":"start"}\r\rdata: {"type":"tr',
        '\ufeffdata: {"type":"start"}\n\n',
        ': comment\nevent: message\nid: 4\nretry: 10\ndata: {"type":\ndata: "start"}\n\n',
    ],
)
def test_decoder_tolerates_what_the_sdk_parser_tolerates(body: str) -> None:
    assert decode_ui_message_stream(body) == [StartChunk()]


def test_truncated_last_event_is_dropped_and_done_is_skipped() -> None:
    assert decode_ui_message_stream('data: [DONE]\n\ndata: {"type":"start"}') == []


def test_decoder_keeps_a_trailing_cr_until_it_knows_whether_lf_follows() -> None:
    decoder = SseDecoder()
    assert decoder.feed('data: {"type":"start"}\r') == []
    assert decoder.feed("\n\r\n")[0].data == '{"type":"start"}'


def test_bad_json_names_the_event() -> None:
    with pytest.raises(ProtocolError, match="SSE event 1: data is not valid JSON"):
        decode_ui_message_stream('data: {"type":"start"}\n\ndata: {oops\n\n')


def test_invalid_chunk_names_the_field() -> None:
    with pytest.raises(ProtocolError, match="SSE event 0: delta: Field required"):
        decode_ui_message_stream('data: {"type":"text-delta","id":"t"}\n\n')
    with pytest.raises(ProtocolError, match="unknown UI message chunk type"):
        decode_ui_message_stream('data: {"type":"nope"}\n\n')


def test_nan_is_rejected_like_json_parse() -> None:
    with pytest.raises(ProtocolError, match="not valid JSON"):
        decode_ui_message_stream('data: {"type":"message-metadata","messageMetadata":NaN}\n\n')


async def _slow(frames: list[tuple[float, str]]) -> AsyncIterator[str]:
    for delay, frame in frames:
        await asyncio.sleep(delay)
        yield frame


def test_keep_alive_fills_idle_gaps_only() -> None:
    async def collect() -> list[str]:
        return [
            f
            async for f in with_keep_alive(
                _slow([(0.0, "a"), (0.25, "b"), (0.0, "c")]), interval=0.1, open_comment=True
            )
        ]

    frames = asyncio.run(collect())
    assert frames[0] == STREAM_OPEN
    assert frames[1] == "a"
    assert frames[-2:] == ["b", "c"]
    assert 1 <= frames.count(KEEP_ALIVE) <= 3
    assert set(frames[2:-2]) == {KEEP_ALIVE}


def test_keep_alive_interval_must_be_positive() -> None:
    async def run() -> None:
        async for _ in with_keep_alive(_slow([]), interval=0):
            pass

    with pytest.raises(ValueError, match="positive"):
        asyncio.run(run())
