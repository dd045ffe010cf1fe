r"""Server-Sent Events framing of the UI Message Stream: encode for clients, decode for tools and tests.

Encoding mirrors `json-to-sse-transform-stream.ts` and `ui-message-stream-headers.ts` (`ai@7.0.173`):
each chunk is `data: <json>\n\n`, a normal end adds `data: [DONE]\n\n`. Stepline may add an
`id: <seq>` line before the data (the event's sequence number in the run's durable log, which a
reconnecting client sends back as `Last-Event-ID`) and `: keep-alive` comments; the AI SDK's parser
accepts both.

Decoding follows the parser the SDK uses (`eventsource-parser` 3.1): `data:` with or without a
space, CRLF/CR/LF line ends, multi-line data joined with `\n`, `event:`/`id:`/comment lines, a
leading BOM; an event is dispatched only at a blank line, so a truncated last event is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import Final

from pydantic import ValidationError

from ..errors import ProtocolError
from ._json import dumps, loads_strict
from .chunks import UIMessageChunk, parse_chunk

__all__ = [
    "DONE",
    "KEEP_ALIVE",
    "STREAM_OPEN",
    "UI_MESSAGE_STREAM_HEADERS",
    "SseDecoder",
    "SseEvent",
    "decode_ui_message_stream",
    "encode_chunk",
    "encode_ui_message_stream",
    "with_keep_alive",
]

UI_MESSAGE_STREAM_HEADERS: Final[dict[str, str]] = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "connection": "keep-alive",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}
"""The five response headers of a UI Message Stream (the SDK's `UI_MESSAGE_STREAM_HEADERS`)."""

DONE: Final = "data: [DONE]\n\n"
KEEP_ALIVE: Final = ": keep-alive\n\n"
STREAM_OPEN: Final = ": stream-open\n\n"
_LINE_END: Final = re.compile(r"\r\n|\r|\n")  # only these: JSON may carry U+2028 and friends verbatim


def encode_chunk(chunk: UIMessageChunk, *, event_id: int | str | None = None) -> str:
    """One SSE event for a chunk, optionally with an `id:` line."""
    data = f"data: {dumps(chunk.to_wire())}\n\n"
    return data if event_id is None else f"id: {event_id}\n{data}"


def encode_ui_message_stream(
    chunks: Iterable[UIMessageChunk], *, first_event_id: int | None = None, done: bool = True
) -> Iterator[str]:
    """Frame a chunk stream as SSE text; numbered from `first_event_id` when given."""
    event_id = first_event_id
    for chunk in chunks:
        yield encode_chunk(chunk, event_id=event_id)
        if event_id is not None:
            event_id += 1
    if done:
        yield DONE


async def with_keep_alive(
    frames: AsyncIterable[str], *, interval: float, open_comment: bool = False
) -> AsyncIterator[str]:
    """Interleave `: keep-alive` comments whenever `frames` is idle for `interval` seconds.

    Proxies and API Gateway drop idle connections; the comment keeps bytes flowing without
    changing what the client sees.
    """
    if interval <= 0:
        raise ValueError("keep-alive interval must be positive")
    if open_comment:
        yield STREAM_OPEN
    iterator = aiter(frames)
    pending: asyncio.Task[str] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(anext(iterator))
            done, _ = await asyncio.wait({pending}, timeout=interval)
            if not done:
                yield KEEP_ALIVE
                continue
            task, pending = pending, None
            try:
                frame = task.result()
            except StopAsyncIteration:
                return
            yield frame
    finally:
        if pending is not None and not pending.done():
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await pending


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched SSE event."""

    data: str
    id: str | None = None
    event: str | None = None


class SseDecoder:
    """Incremental SSE parser: feed text as it arrives, get complete events back."""

    def __init__(self) -> None:
        self._buffer = ""
        self._first = True
        self._data: list[str] = []
        self._id: str | None = None
        self._event: str | None = None

    def feed(self, text: str) -> list[SseEvent]:
        """Add text; return the events completed by it."""
        if self._first and text:
            self._first = False
            text = text.removeprefix("\ufeff")
        buffer = self._buffer + text
        events: list[SseEvent] = []
        start = 0
        for match in _LINE_END.finditer(buffer):
            if match.group() == "\r" and match.end() == len(buffer):
                break  # a CR at the very end may be the first half of CRLF
            self._line(buffer[start : match.start()], events)
            start = match.end()
        self._buffer = buffer[start:]
        return events

    def _line(self, line: str, events: list[SseEvent]) -> None:
        if not line:
            if self._data:
                events.append(SseEvent(data="\n".join(self._data), id=self._id, event=self._event))
            self._data, self._id, self._event = [], None, None
            return
        if line.startswith(":"):
            return
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            self._data.append(value)
        elif field == "id" and "\0" not in value:
            self._id = value
        elif field == "event":
            self._event = value or None


def decode_ui_message_stream(body: str | Iterable[str]) -> list[UIMessageChunk]:
    """Parse an SSE body into validated chunks (skipping `[DONE]`).

    Raises:
        ProtocolError: An event whose data is not JSON or not a valid chunk; the message names the
            event's position and the problem.
    """
    decoder = SseDecoder()
    events: list[SseEvent] = []
    for piece in [body] if isinstance(body, str) else body:
        events.extend(decoder.feed(piece))
    chunks: list[UIMessageChunk] = []
    for index, event in enumerate(events):
        if event.data == "[DONE]":
            continue
        try:
            chunks.append(parse_chunk(loads_strict(event.data)))
        except ValueError as error:
            reason = _validation_reason(error) if isinstance(error, ValidationError) else "data is not valid JSON"
            raise ProtocolError(f"SSE event {index}: {reason}") from error
    return chunks


def _validation_reason(error: ValidationError) -> str:
    issue = error.errors()[0]
    location = ".".join(str(part) for part in issue["loc"][1:])  # drop the union tag
    return f"{location}: {issue['msg']}" if location else issue["msg"]
