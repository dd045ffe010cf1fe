"""Reconnect helpers: chunks of stored events, a message resumed from a snapshot, SSE with chunk ids.

docs/data-model.md "The event log": a reconnecting client gets the message snapshot (which says up
to which event it includes), then exactly the chunks after it, then the live tail, none twice.

Positions. A delta batch event holds several chunks, so a position in the log is a pair
`(seq, index)`: "every chunk up to and including chunk `index` of event `seq`", compared
lexicographically. `index == WHOLE_EVENT` (-1) means the whole event `seq`. SSE frames carry one
chunk each, with the id `"{seq}.{index}"`; a client that comes back with `Last-Event-ID:
{seq}.{index}` resumes at exactly the next chunk, so a partly delivered batch is neither sent
twice nor skipped. `parse_event_id` also accepts a plain `"{seq}"` (the whole event seen), the form
of the store's per-event ids.

Resuming from a snapshot taken in the middle of a text or reasoning part: the snapshot holds the
part (`state: "streaming"`) but not the reducer's memory of which chunk id it belongs to, and a
text part has no id on the wire. `resume` binds the first later chunk of an unknown id to the open
part: a reasoning part by its `id`, a text part when exactly one open text part is unclaimed (so a
stray id that the full stream would have refused is taken for that part). Two text parts open at
once at the snapshot point cannot be told apart; that raises `UIMessageStreamError` rather than
guessing. Stored snapshots are taken at step ends and approval waits, where no part is open; a
client resuming over SSE keeps its own reducer state and never needs this.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Iterator
from typing import Any, Final

from pydantic import JsonValue

from ..errors import UIMessageStreamError
from ..protocol._json import dumps
from ..protocol.chunks import (
    ReasoningDeltaChunk,
    ReasoningEndChunk,
    ReasoningStartChunk,
    ResetStepChunk,
    StartChunk,
    TextDeltaChunk,
    TextEndChunk,
    TextStartChunk,
    UIMessageChunk,
    parse_chunk,
)
from ..protocol.reducer import UIMessageReducer
from ..protocol.sse import DONE
from .records import EventRecord

__all__ = [
    "WHOLE_EVENT",
    "EventPosition",
    "chunks_after",
    "chunks_of",
    "event_id",
    "parse_event_id",
    "resume",
    "sse_frames",
]

EventPosition = tuple[int, int]
"""`(seq, index)`: everything up to and including chunk `index` of event `seq`."""

WHOLE_EVENT: Final = -1
"""The `index` of a position that includes its whole event."""

_EVENT_ID: Final = re.compile(r"(0|[1-9][0-9]{0,17})(?:\.(0|[1-9][0-9]{0,8}))?")

Part = dict[str, Any]


def event_id(seq: int, index: int) -> str:
    """The SSE id of chunk `index` of event `seq`."""
    return f"{seq}.{index}"


def parse_event_id(text: str | None) -> EventPosition | None:
    """The position a `Last-Event-ID` names, or None when it is absent or not one of ours.

    `"{seq}.{index}"` names one chunk; `"{seq}"` names a whole event (`(seq, WHOLE_EVENT)`).
    Only ASCII digits without leading zeros are accepted, so each position has one spelling.
    """
    if text is None:
        return None
    match = _EVENT_ID.fullmatch(text.strip(" \t"))
    if match is None:
        return None
    seq, index = match.group(1), match.group(2)
    return (int(seq), WHOLE_EVENT if index is None else int(index))


def _check_position(position: EventPosition) -> EventPosition:
    seq, index = position
    if seq < 0 or index < WHOLE_EVENT:
        raise ValueError(f"invalid event position {position!r}: seq >= 0 and index >= -1")
    return position


def _seen(seq: int, index: int, position: EventPosition) -> bool:
    after_seq, after_index = position
    return seq < after_seq or (seq == after_seq and (after_index == WHOLE_EVENT or index <= after_index))


def chunks_of(events: Iterable[EventRecord]) -> Iterator[dict[str, JsonValue]]:
    """Every chunk of the events, in order (the stored wire dicts themselves, not copies)."""
    for event in events:
        yield from event.chunks


def chunks_after(
    events: Iterable[EventRecord], position: EventPosition | None = None
) -> Iterator[tuple[int, int, dict[str, JsonValue]]]:
    """`(seq, index, chunk)` for every chunk after `position` (all of them when None).

    Raises:
        ValueError: The events are not in strictly increasing `seq` order (a chunk would be
            applied twice or out of order).
    """
    after = (0, WHOLE_EVENT) if position is None else _check_position(position)
    previous: int | None = None
    for event in events:
        if previous is not None and event.seq <= previous:
            raise ValueError(f"events out of order: seq {event.seq} after seq {previous}")
        previous = event.seq
        if event.seq < after[0]:
            continue
        for index, chunk in enumerate(event.chunks):
            if not _seen(event.seq, index, after):
                yield event.seq, index, chunk


def sse_frames(
    events: Iterable[EventRecord], *, resume_from: EventPosition | None = None, done: bool = False
) -> Iterator[str]:
    """SSE text for the chunks after `resume_from`, one frame per chunk with the id `"{seq}.{index}"`.

    `done` appends `data: [DONE]` (only when the run has ended and these are its last events).
    """
    for seq, index, chunk in chunks_after(events, resume_from):
        yield f"id: {event_id(seq, index)}\ndata: {dumps(chunk)}\n\n"
    if done:
        yield DONE


def resume(
    snapshot_message: dict[str, Any] | None,
    snapshot_seq: int,
    events_after: Iterable[EventRecord],
    *,
    snapshot_index: int = WHOLE_EVENT,
    message_id: str = "",
) -> dict[str, Any]:
    """The message after applying the events that follow the snapshot (a continuation).

    Args:
        snapshot_message: The stored assistant message in wire form (None: start from nothing).
        snapshot_seq: The last event the snapshot includes (0: none).
        events_after: The run's events in seq order; those the snapshot already includes are skipped.
        snapshot_index: With a snapshot taken inside a delta batch, the last chunk of event
            `snapshot_seq` it includes (default: the whole event).
        message_id: The id of a new message when there is no snapshot and no `start` chunk names one.

    Raises:
        UIMessageStreamError: A chunk that does not fit the message (as the reducer raises it), or a
            text chunk that could belong to more than one open text part of the snapshot.
        ValueError: Events out of order, or a stored chunk that is not a valid chunk.
    """
    continuation = _Continuation(snapshot_message, message_id)
    for _, _, chunk in chunks_after(events_after, (snapshot_seq, snapshot_index)):
        continuation.apply(parse_chunk(chunk))
    return continuation.snapshot()


class _OpenPart:
    """A part left streaming in the snapshot, fed by the chunks of the id it was bound to."""

    __slots__ = ("part", "pieces")

    def __init__(self, part: Part) -> None:
        self.part = part
        self.pieces: list[str] = []

    def flush(self) -> None:
        if self.pieces:
            self.part["text"] = str(self.part.get("text", "")) + "".join(self.pieces)
            self.pieces.clear()


_TextChunk = TextDeltaChunk | TextEndChunk | ReasoningDeltaChunk | ReasoningEndChunk


class _Continuation:
    """`UIMessageReducer` over a snapshot, plus the text and reasoning parts the snapshot left open.

    The reducer does not know the parts a snapshot left streaming (its map from chunk id to open
    part is not in the message), so their chunks are applied here, as the reducer would have.
    """

    def __init__(self, message: dict[str, Any] | None, message_id: str) -> None:
        self._reducer = UIMessageReducer(message, message_id=message_id)
        parts: list[Part] = self._reducer.message()["parts"]
        self._unclaimed: list[Part] = [p for p in parts if p["type"] in ("text", "reasoning") and _streaming(p)]
        self._bound: dict[tuple[str, str], _OpenPart] = {}
        self._reducer_ids: set[tuple[str, str]] = set()
        """Ids the reducer owns: started after the snapshot, or bound and since ended."""
        self._open_parts_live = True
        """False once a reset made the reducer forget every open part (its later chunks must fail)."""

    def snapshot(self) -> dict[str, Any]:
        for bound in self._bound.values():
            bound.flush()
        return self._reducer.snapshot()

    def apply(self, chunk: UIMessageChunk) -> None:
        match chunk:
            case TextStartChunk() | ReasoningStartChunk():
                key = ("text" if isinstance(chunk, TextStartChunk) else "reasoning", chunk.id)
                self._reducer_ids.add(key)
                self._bound.pop(key, None)
            case TextDeltaChunk() | TextEndChunk() | ReasoningDeltaChunk() | ReasoningEndChunk():
                bound = self._bind(chunk)
                if bound is not None:
                    self._apply_open(bound, chunk)
                    return
            case ResetStepChunk():
                self._forget_open_parts()
            case StartChunk() if chunk.message_id is not None and chunk.message_id != self._reducer.message_id:
                self._forget_open_parts()
            case _:
                pass
        self._reducer.apply(chunk)

    def _forget_open_parts(self) -> None:
        for bound in self._bound.values():
            bound.flush()
        self._bound.clear()
        self._unclaimed.clear()
        self._open_parts_live = False

    def _bind(self, chunk: _TextChunk) -> _OpenPart | None:
        kind = "text" if isinstance(chunk, TextDeltaChunk | TextEndChunk) else "reasoning"
        key = (kind, chunk.id)
        if key in self._reducer_ids or not self._open_parts_live:
            return None
        bound = self._bound.get(key)
        if bound is not None:
            return bound
        same_kind = [p for p in self._unclaimed if p["type"] == kind]
        by_id = [p for p in same_kind if p.get("id") == chunk.id]
        candidates = by_id[-1:] if by_id else [p for p in same_kind if p.get("id") is None]
        if not candidates:
            return None  # the reducer raises, as it would have on the whole stream
        if len(candidates) > 1:
            raise UIMessageStreamError(
                chunk_type=chunk.type,
                chunk_id=chunk.id,
                message=(
                    f'Cannot resume {chunk.type} "{chunk.id}": the snapshot has {len(candidates)} open '
                    f"{kind} parts and a {kind} part has no id to tell them apart."
                ),
            )
        part = candidates[0]
        self._unclaimed = [p for p in self._unclaimed if p is not part]
        bound = self._bound[key] = _OpenPart(part)
        return bound

    def _apply_open(self, bound: _OpenPart, chunk: _TextChunk) -> None:
        if isinstance(chunk, TextDeltaChunk | ReasoningDeltaChunk):
            bound.pieces.append(chunk.delta)
            if chunk.provider_metadata is not None:
                bound.part["providerMetadata"] = chunk.provider_metadata
            return
        bound.flush()
        part = bound.part
        part["state"] = "done"
        if isinstance(chunk, TextEndChunk) and chunk.citations is not None:
            part["citations"] = copy.deepcopy(chunk.citations)
        if chunk.provider_metadata is not None:
            part["providerMetadata"] = chunk.provider_metadata
        kind = "text" if isinstance(chunk, TextEndChunk) else "reasoning"
        del self._bound[(kind, chunk.id)]
        self._reducer_ids.add((kind, chunk.id))  # ended: a later chunk of this id fails in the reducer


def _streaming(part: Part) -> bool:
    return part.get("state") == "streaming"
