"""Turn a run's UI message chunks into the events the store appends: boundaries at once, deltas batched.

Not every token delta needs its own write (docs/data-model.md, "The event log"): state
boundaries are persisted as they happen, high-frequency deltas are coalesced per time window.

- A *boundary* chunk (every chunk except `text-delta`, `reasoning-delta` and `tool-input-delta`)
  first flushes the pending delta batch, then becomes an event of its own, written at once. Its
  event `type` comes from `EVENT_TYPES`. Boundary events are
  durable, except a transient data chunk: it is never part of the message, so its event is
  `durable=False` (for live display only) and expires with the delta batches.
- An *opening* boundary (`start-step`, `text-start`, `reasoning-start`: they show nothing by
  themselves) is held until the next chunk, and written with it in the same append, or by `poll()`
  once `window` has passed: the first token of a step costs one write, not three.
- A *delta* chunk is written at once when it is the first delta of its part (the leading edge: a
  part's first token is visible as soon as it exists), or when a whole `window` has passed since the
  last delta batch was written (a model slower than one delta per window is never held).
  Otherwise it is held, and the held deltas are flushed as ONE event (`type="delta"`,
  `durable=False`) once `window` has passed since the last flush: by the next `add`, by `poll()`
  from a timer, or by `flush()`.
- Inside a batch, consecutive deltas of the same part (same chunk type and id) are merged into one
  chunk: 500 token deltas of one text part become one `text-delta`. Deltas of different parts keep
  their exact order. A merged chunk carries the last `providerMetadata` of its run (what the
  reducer would have kept).

The writer reports how long its appends take (`wrote`): while they take longer than a quarter of
the window, the window widens to four times their duration, so the writer spends at most a quarter
of its time writing. A slow store (moto's DynamoDB copies its tables on every transaction, and
holds the process's GIL while it does) gets fewer, larger batches instead of a writer that does
little but write while the model's tokens wait behind it.

What is ready at one moment is appended as one event (`together`, the writer's side): a flushed
delta batch and the boundary that flushed it, or the held openings and the first delta, are the
chunks of one event, one item to write (1 write unit under 1 KB, not one per event). It is typed and
durable as its first boundary (a transient data chunk is never merged into a durable event). A
client's position is an event's seq and a chunk's index in it, so resuming from it stays exact.

So a delta is never held longer than the (widened) window; the number of writes per second stays
near `1 / window` plus the leading edges and the boundaries,
whatever the token rate, and reducing the chunks of all events in order gives the same message as reducing the
original chunks (the tests check this property on random streams and timings).

Event types (`EVENT_TYPES`; `message_saved` is written by the store itself, not from a chunk):

| chunk types | event type |
|---|---|
| `start` | `conversation` |
| `start-step` / `finish-step` / `reset-step` | `step_start` / `step_end` / `step_reset` |
| `text-start`, `reasoning-start` / `text-end`, `reasoning-end` | `part_start` / `part_end` |
| `tool-input-start`, `tool-input-available`, `tool-input-error` | `tool_use` |
| `tool-approval-request` / `tool-approval-response` | `approval` / `approval_resolved` |
| `tool-output-available`, `tool-output-error`, `tool-output-denied` | `tool_result` |
| `source-url`, `source-document`, `file`, `reasoning-file`, `custom` | `content` |
| `data-*` | `data` |
| `message-metadata` / `steering-message` | `metadata` / `steering` |
| `finish` / `abort` / `error` | `done` / `abort` / `error` |
| delta batches | `delta` |
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

from pydantic import JsonValue

from ..protocol.chunks import (
    DataChunk,
    ProviderMetadata,
    ReasoningDeltaChunk,
    TextDeltaChunk,
    ToolInputDeltaChunk,
    UIMessageChunk,
)
from .records import NewEvent

__all__ = [
    "DEFAULT_WINDOW",
    "DELTA_CHUNK_TYPES",
    "DELTA_EVENT",
    "EVENT_TYPES",
    "OPENING_CHUNK_TYPES",
    "UNATTENDED_WINDOW",
    "EventBatcher",
    "event_type_of",
    "together",
]

DEFAULT_WINDOW: Final = 0.100
"""Seconds a delta may be held for the next batch while someone watches (docs/data-model.md: 100 ms).

The stream reads the log every 100 ms (`stepline.api.tail.TailOptions.poll_seconds`), so a
narrower window would only split what one read returns into more write units."""

UNATTENDED_WINDOW: Final = 1.0
"""The same for a run that no chat started (a headless start, a schedule, a webhook): nobody is
known to watch it, so each delta batch waits a second; the event log and the stream push then cost
about a tenth of a chat's per second of text."""

_SMOOTHING: Final = 0.3
"""Weight of the newest sample in the running average of the append durations."""

_WRITE_SHARE: Final = 4
"""The window is at least this many times an append's duration (a writer writes a quarter of the time)."""

DELTA_EVENT: Final = "delta"
"""The `type` of a delta batch event."""

DELTA_CHUNK_TYPES: Final = frozenset({"text-delta", "reasoning-delta", "tool-input-delta"})
"""The chunk types that are coalesced; every other chunk is a boundary."""

OPENING_CHUNK_TYPES: Final = frozenset({"start-step", "text-start", "reasoning-start"})
"""Boundaries that are held until the next chunk (they open something the next chunk fills)."""

EVENT_TYPES: Final[dict[str, str]] = {
    "start": "conversation",
    "start-step": "step_start",
    "finish-step": "step_end",
    "reset-step": "step_reset",
    "text-start": "part_start",
    "reasoning-start": "part_start",
    "text-end": "part_end",
    "reasoning-end": "part_end",
    "tool-input-start": "tool_use",
    "tool-input-available": "tool_use",
    "tool-input-error": "tool_use",
    "tool-approval-request": "approval",
    "tool-approval-response": "approval_resolved",
    "tool-output-available": "tool_result",
    "tool-output-error": "tool_result",
    "tool-output-denied": "tool_result",
    "source-url": "content",
    "source-document": "content",
    "file": "content",
    "reasoning-file": "content",
    "custom": "content",
    "message-metadata": "metadata",
    "steering-message": "steering",
    "finish": "done",
    "abort": "abort",
    "error": "error",
}
"""The event `type` of a boundary chunk, by chunk `type` (`data-*` chunks map to `data`)."""

_DeltaChunk = TextDeltaChunk | ReasoningDeltaChunk | ToolInputDeltaChunk
_Wire = dict[str, JsonValue]


def event_type_of(chunk_type: str) -> str:
    """The event `type` for a chunk `type` (`delta` for the three delta chunk types)."""
    if chunk_type in DELTA_CHUNK_TYPES:
        return DELTA_EVENT
    if chunk_type.startswith("data-"):
        return "data"
    return EVENT_TYPES[chunk_type]


class _Run:
    """Consecutive deltas of one part, merged into one chunk when the batch is written."""

    __slots__ = ("first", "key", "metadata", "pieces")

    def __init__(self, key: tuple[str, str], chunk: _DeltaChunk) -> None:
        self.key = key
        self.first = chunk
        self.pieces: list[str] = [_text(chunk)]
        self.metadata: ProviderMetadata | None = _metadata(chunk)

    def append(self, chunk: _DeltaChunk) -> None:
        self.pieces.append(_text(chunk))
        metadata = _metadata(chunk)
        if metadata is not None:
            self.metadata = metadata

    def to_wire(self) -> _Wire:
        first = self.first
        if len(self.pieces) == 1:
            return first.to_wire()
        text = "".join(self.pieces)
        if isinstance(first, ToolInputDeltaChunk):
            return ToolInputDeltaChunk(tool_call_id=first.tool_call_id, input_text_delta=text).to_wire()
        if self.metadata is None:
            return type(first)(id=first.id, delta=text).to_wire()
        return type(first)(id=first.id, delta=text, provider_metadata=self.metadata).to_wire()


def _text(chunk: _DeltaChunk) -> str:
    return chunk.input_text_delta if isinstance(chunk, ToolInputDeltaChunk) else chunk.delta


def _metadata(chunk: _DeltaChunk) -> ProviderMetadata | None:
    return None if isinstance(chunk, ToolInputDeltaChunk) else chunk.provider_metadata


def _key(chunk: _DeltaChunk) -> tuple[str, str]:
    return (chunk.type, chunk.tool_call_id if isinstance(chunk, ToolInputDeltaChunk) else chunk.id)


class EventBatcher:
    """Coalesce the UI message chunks of one run into events to append, as they are produced.

    Every method returns the events that are ready now, in order; the caller appends them in that
    order. Nothing is written behind the caller's back: a writer that wants held deltas written
    while the model is silent calls `poll()` at `next_deadline()`, and `flush()` at the end.

    Args:
        window: Seconds between two delta batches (0 writes every delta at once).
        clock: A monotonic clock in seconds (injectable for tests and benchmarks).
    """

    def __init__(self, window: float = DEFAULT_WINDOW, clock: Callable[[], float] = time.monotonic) -> None:
        if not window >= 0:
            raise ValueError("window must be 0 or more seconds")
        self._window = window
        self._clock = clock
        self._runs: list[_Run] = []
        self._opening: list[NewEvent] = []
        """Opening boundaries held for the next chunk (they come before every held delta)."""
        self._opened_at: float | None = None
        self._last_flush: float | None = None
        self._parts: set[tuple[str, str]] = set()
        """The parts that have had a delta (the next delta of any other is a leading edge)."""
        self._write = 0.0
        """The running average of the writer's append durations (`wrote`)."""

    @property
    def window(self) -> float:
        """The configured window."""
        return self._window

    @window.setter
    def window(self, window: float) -> None:
        """A new window from now on (what is held is due by it: sooner when it narrows)."""
        if not window >= 0:
            raise ValueError("window must be 0 or more seconds")
        self._window = window

    @property
    def effective_window(self) -> float:
        """The window in force: the configured one, or four times the appends' duration when that is longer."""
        return 0.0 if self._window == 0 else max(self._window, _WRITE_SHARE * self._write)

    def wrote(self, seconds: float) -> None:
        """The writer's last append took `seconds` (the window widens while appends are slow)."""
        self._write += _SMOOTHING * (seconds - self._write)

    @property
    def has_pending(self) -> bool:
        """True while deltas or opening boundaries are held."""
        return bool(self._runs or self._opening)

    def add(self, chunk: UIMessageChunk) -> list[NewEvent]:
        """Take the next chunk of the stream; return the events to append now."""
        now = self._clock()
        if isinstance(chunk, TextDeltaChunk | ReasoningDeltaChunk | ToolInputDeltaChunk):
            return self._add_delta(chunk, now)
        transient = isinstance(chunk, DataChunk) and chunk.transient is True
        event = NewEvent(type=event_type_of(chunk.type), chunks=[chunk.to_wire()], durable=not transient)
        if chunk.type in OPENING_CHUNK_TYPES:
            events = self._flush(now) if self._runs else []  # held deltas go first; openings wait together
            self._opening.append(event)
            self._opened_at = now if self._opened_at is None else self._opened_at
            return events
        return [*self._flush(now), event]

    def poll(self) -> list[NewEvent]:
        """Write the held deltas if the window has elapsed (for a timer-driven writer)."""
        deadline = self.next_deadline()
        if deadline is None:
            return []
        now = self._clock()
        return self._flush(now) if now >= deadline else []

    def flush(self) -> list[NewEvent]:
        """Write the held deltas now (end of stream, or before the writer stops)."""
        return self._flush(self._clock())

    def next_deadline(self) -> float | None:
        """The clock time at which what is held is due, or None when nothing is held."""
        due: list[float] = []
        if self._runs and self._last_flush is not None:
            due.append(self._last_flush + self.effective_window)
        if self._opening and self._opened_at is not None:
            due.append(self._opened_at + self.effective_window)
        return min(due, default=None)

    def _add_delta(self, chunk: _DeltaChunk, now: float) -> list[NewEvent]:
        key = _key(chunk)
        leading = key not in self._parts
        self._parts.add(key)
        if self._runs and self._runs[-1].key == key:
            self._runs[-1].append(chunk)
        else:
            self._runs.append(_Run(key, chunk))
        due = self._last_flush is None or now >= self._last_flush + self.effective_window
        if leading or due:
            return self._flush(now)
        return []

    def _flush(self, now: float) -> list[NewEvent]:
        events, self._opening, self._opened_at = self._opening, [], None
        if not self._runs:
            return events
        chunks = [run.to_wire() for run in self._runs]
        self._runs = []
        self._last_flush = now
        return [*events, NewEvent(type=DELTA_EVENT, chunks=chunks, durable=False)]


def together(events: list[NewEvent]) -> list[NewEvent]:
    """The events one append writes, as one event.

    Their chunks in order, typed and durable as the first boundary among them (a delta batch when
    there is none). A transient boundary (`durable=False`) and a durable one are never merged: the
    transient chunk would outlive its retention.
    """
    if len(events) < 2:
        return events
    durable = any(e.durable for e in events)
    if durable and any(not e.durable and e.type != DELTA_EVENT for e in events):
        return events
    head = next((e for e in events if e.type != DELTA_EVENT), events[0])
    return [NewEvent(type=head.type, chunks=[c for e in events for c in e.chunks], durable=durable)]
