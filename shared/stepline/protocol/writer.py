"""Write a UI Message Stream by hand: data, transient data, metadata, text, files, merged streams.

The Pythonic `createUIMessageStream` (`packages/ai/src/ui-message-stream/create-ui-message-stream.ts`
and `handle-ui-message-stream-finish.ts`, `ai@7.0.173`), with a writer for custom data parts:

    async def execute(writer: UIMessageStreamWriter) -> None:
        writer.write_transient_data("status", "retrieving")
        writer.write_data("sources", sources, id="sources")
        writer.merge(model_chunks)

    async for chunk in create_ui_message_stream(execute, on_finish=save):
        ...

An exception in `execute` or in a merged stream becomes an `error` chunk whose text comes from
`on_error` (default: nothing about the cause). `on_finish` receives the final messages, built by
the same reducer clients use, and whether the response continued the last assistant message.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from ..errors import UIMessageStreamError
from .chunks import (
    DataChunk,
    ErrorChunk,
    FileChunk,
    MessageMetadataChunk,
    StartChunk,
    TextDeltaChunk,
    TextEndChunk,
    TextStartChunk,
    UIMessageChunk,
)
from .parts import UIMessage
from .reducer import UIMessageReducer
from .to_chunks import DEFAULT_ERROR_TEXT

__all__ = ["UIMessageStreamFinish", "UIMessageStreamWriter", "create_ui_message_stream"]


@dataclass(frozen=True, slots=True)
class UIMessageStreamFinish:
    """What `on_finish` receives once the stream has ended."""

    messages: list[dict[str, Any]]
    """The original messages with the response applied (replacing the last one on a continuation)."""
    response_message: dict[str, Any]
    is_continuation: bool
    is_aborted: bool
    finish_reason: str | None


class UIMessageStreamWriter:
    """Handed to `execute`; every method enqueues chunks on the stream."""

    def __init__(self, emit: Callable[[UIMessageChunk], None], spawn: Callable[[AsyncIterable[UIMessageChunk]], None]):
        self._emit = emit
        self._spawn = spawn

    def write(self, chunk: UIMessageChunk) -> None:
        """Write any chunk as it is."""
        self._emit(chunk)

    def write_data(self, name: str, data: JsonValue, *, id: str | None = None) -> None:
        """Data kept in `message.parts`; a later write with the same name and id replaces it."""
        self._emit(
            DataChunk(type=f"data-{name}", data=data)
            if id is None
            else DataChunk(type=f"data-{name}", data=data, id=id)
        )

    def write_transient_data(self, name: str, data: JsonValue, *, id: str | None = None) -> None:
        """Data for this stream's UI only: never stored in the message."""
        fields: dict[str, Any] = {"type": f"data-{name}", "data": data, "transient": True}
        if id is not None:
            fields["id"] = id
        self._emit(DataChunk(**fields))

    def write_message_metadata(self, metadata: JsonValue) -> None:
        """Deep-merged into the message's metadata."""
        self._emit(MessageMetadataChunk(message_metadata=metadata))

    def write_text(self, text: str, *, id: str | None = None) -> None:
        """A whole text part (start, one delta, end)."""
        part_id = id or f"text-{uuid.uuid4().hex[:12]}"
        self._emit(TextStartChunk(id=part_id))
        self._emit(TextDeltaChunk(id=part_id, delta=text))
        self._emit(TextEndChunk(id=part_id))

    def write_file(self, url: str, media_type: str) -> None:
        """A file part (a hosted URL or a data URL)."""
        self._emit(FileChunk(url=url, media_type=media_type))

    def merge(self, stream: AsyncIterable[UIMessageChunk]) -> None:
        """Forward another chunk stream concurrently; the stream ends when every merged one has."""
        self._spawn(stream)


async def create_ui_message_stream(
    execute: Callable[[UIMessageStreamWriter], Awaitable[None] | None],
    *,
    original_messages: Sequence[UIMessage | dict[str, Any]] = (),
    generate_id: Callable[[], str] | None = None,
    on_error: Callable[[BaseException], str] | None = None,
    on_finish: Callable[[UIMessageStreamFinish], Awaitable[None] | None] | None = None,
) -> AsyncIterator[UIMessageChunk]:
    """Run `execute` with a writer and yield what it writes, in order.

    The `start` chunk gets the response message id when it has none: the id of the last original
    message if that is an assistant message (a continuation), else `generate_id()`.
    """
    originals = [m.to_wire() if isinstance(m, UIMessage) else m for m in original_messages]
    last = originals[-1] if originals and originals[-1].get("role") == "assistant" else None
    message_id = last["id"] if last is not None else (generate_id or _new_id)()
    queue: asyncio.Queue[UIMessageChunk | None] = asyncio.Queue()
    tasks: list[asyncio.Task[None]] = []

    def fail(error: BaseException) -> None:
        queue.put_nowait(ErrorChunk(error_text=on_error(error) if on_error is not None else DEFAULT_ERROR_TEXT))

    async def pump(stream: AsyncIterable[UIMessageChunk]) -> None:
        try:
            async for chunk in stream:
                queue.put_nowait(chunk)
        except Exception as error:  # a merged stream's failure becomes an error chunk
            fail(error)

    async def run() -> None:
        try:
            result = execute(
                UIMessageStreamWriter(queue.put_nowait, lambda s: tasks.append(asyncio.create_task(pump(s))))
            )
            if inspect.isawaitable(result):
                await result
        except Exception as error:
            fail(error)
        while tasks:  # merges may be added while earlier ones run
            await tasks.pop(0)
        queue.put_nowait(None)

    runner = asyncio.create_task(run())
    reducer = UIMessageReducer(last, message_id=message_id)
    try:
        while (chunk := await queue.get()) is not None:
            if isinstance(chunk, StartChunk) and chunk.message_id is None:
                chunk = chunk.model_copy(update={"message_id": message_id})
                chunk.__pydantic_fields_set__.add("message_id")
            with contextlib.suppress(UIMessageStreamError):  # the client sees the same violation; the stream goes on
                reducer.apply(chunk)
            yield chunk
    finally:
        runner.cancel()
        for task in tasks:
            task.cancel()
    if on_finish is not None:
        response = reducer.message()
        is_continuation = last is not None and response["id"] == last["id"]
        finish = UIMessageStreamFinish(
            messages=[*(originals[:-1] if is_continuation else originals), response],
            response_message=response,
            is_continuation=is_continuation,
            is_aborted=reducer.aborted,
            finish_reason=reducer.finish_reason,
        )
        outcome = on_finish(finish)
        if inspect.isawaitable(outcome):
            await outcome


def _new_id() -> str:
    return f"msg-{uuid.uuid4().hex}"
