"""The event sink of a durable step: TextStreamParts → UI chunks → batched events in the store.

It also keeps the assistant message as the client will see it (the reducer, starting from the
stored parts), so the step can store a parts snapshot that matches the events it wrote.

Streamed deltas (text, reasoning, tool input) are masked here, before the log and the reducer see
them, by a `DeltaMasker` that keeps the state to catch a secret split across two deltas; the
store masks every whole chunk and record again as it writes them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, cast

from ..protocol import stream_parts as sp
from ..protocol.chunks import ErrorChunk, ResetStepChunk, StartStepChunk, UIMessageChunk, parse_chunk
from ..protocol.reducer import UIMessageReducer
from ..protocol.to_chunks import UIChunkMapper, UIStreamOptions
from ..store.errors import TerminalState
from ..store.event_batcher import DEFAULT_WINDOW, EventBatcher, event_type_of, together
from ..store.ports import SnapshotUpdate, Store
from ..store.records import EventRecord, MessageRecord, NewEvent, RunRecord
from ..store.redaction import Redactor
from ..store.redaction_stream import DeltaMasker
from ..store.replay import chunks_of

__all__ = ["RunRecorder"]

_LOG = logging.getLogger("stepline.runtime")
_OUTPUT = (sp.TextDelta, sp.ReasoningDelta, sp.ToolInputStart, sp.ToolCall)
"""What counts as the model's first output (time to first token)."""


class RunRecorder:
    """Writes a run's chunks to its event log and tracks the message they build."""

    def __init__(
        self,
        store: Store,
        run: RunRecord,
        message: MessageRecord,
        *,
        now: Callable[[], int],
        window: float = DEFAULT_WINDOW,
        monotonic: Callable[[], float] = time.monotonic,
        replay: Sequence[EventRecord] = (),
        redactor: Redactor | None = None,
        notify: Callable[[int], None] | None = None,
    ) -> None:
        self._store = store
        self._masker = DeltaMasker(redactor)
        self._notify = notify
        """Called with the last seq after each append: the streams that follow the run read it now."""
        self.quiet = False
        """Nobody follows the run (`stepline.runtime.watchers`): appends notify no stream (each
        notification is a billed publish on AWS). The step's end and its waits still notify."""
        self._run = run
        self._now = now
        # Sources are sent (the SDK's `sendSources`): a search's source-url parts are what the UI lists.
        self._mapper = UIChunkMapper(UIStreamOptions(response_message_id=run.assistant_message_id, send_sources=True))
        self._batcher = EventBatcher(window=window, clock=monotonic)
        self._monotonic = monotonic
        self._reducer = UIMessageReducer(
            {"id": message.message_id, "role": "assistant", "parts": message.parts, "metadata": message.metadata}
        )
        for chunk in chunks_of(e for e in replay if e.seq > message.snapshot_seq):
            # Events written after the stored snapshot (the turn's start, or a crashed attempt's
            # parts) are part of what the client has: the snapshot this step stores must include them.
            self._reducer.apply(parse_chunk(chunk))
        self._skip_start_step = False
        self._monotonic = monotonic
        self._created = monotonic()
        self._first_output: float | None = None
        self.last_seq = run.last_event_seq
        self.closed = False
        """True once the store refused an append because the run had ended."""

    def redo_step(self) -> None:
        """A crashed attempt of this step left events: drop its parts (`reset-step`) and do not open a second step."""
        self.write([ResetStepChunk()])
        self._skip_start_step = True

    async def emit(self, part: sp.TextStreamPart) -> None:
        # A failed step's `error` is not the run's: the step is retried (its parts reset) or the run
        # fails, and `fail_run` writes the one `error` at the end. The stock client stops reading
        # at an `error`, so one in the middle would cut it off from a run that goes on.
        if self._first_output is None and isinstance(part, _OUTPUT):
            self._first_output = self._monotonic()
        chunks = [c for c in self._mapper.map(part) if not isinstance(c, ErrorChunk)]
        if self._skip_start_step and any(isinstance(c, StartStepChunk) for c in chunks):
            self._skip_start_step = False
            chunks = [c for c in chunks if not isinstance(c, StartStepChunk)]
        self.write(chunks)

    @property
    def first_output_ms(self) -> int | None:
        """Milliseconds from this recorder's start (the step's) to the model's first output; None before it."""
        return None if self._first_output is None else round((self._first_output - self._created) * 1000)

    def write(self, chunks: list[UIMessageChunk]) -> None:
        """Write chunks to the event log (the loop's, and start, finish, error)."""
        events: list[NewEvent] = []
        for chunk in self._masker.mask(chunks):
            self._reducer.apply(chunk)
            events.extend(self._batcher.add(chunk))
        events.extend(self._batcher.poll())
        self._append(events)

    def flush(self) -> None:
        """Write everything held: the masker's held-back tails, then the batched deltas."""
        events: list[NewEvent] = []
        for chunk in self._masker.flush():
            self._reducer.apply(chunk)
            events.extend(self._batcher.add(chunk))
        self._append([*events, *self._batcher.flush()])

    @property
    def window(self) -> float:
        """The delta window in force (`stepline.runtime.watchers` moves it while the step runs)."""
        return self._batcher.window

    @window.setter
    def window(self, window: float) -> None:
        self._batcher.window = window

    def tick(self) -> float | None:
        """Write held deltas whose window has passed; returns when the next ones are due (monotonic).

        Deltas are otherwise written when the next chunk arrives: without a timer, text produced
        just before the model pauses (a slow tool input, a provider stall) would wait for the pause.
        """
        self._append(self._batcher.poll())
        return self._batcher.next_deadline()

    def final_event(self, chunks: list[UIMessageChunk]) -> NewEvent:
        """The run's last event (finish, error or abort), for `finish_run` to append with the end.

        What is still batched is written first; the event itself is left to the store, which
        appends it in the same transaction that ends the run, so nothing can follow it.
        """
        self.flush()
        for chunk in chunks:
            self._reducer.apply(chunk)
        return NewEvent(type=event_type_of(chunks[-1].type), chunks=[c.to_wire() for c in chunks])

    def parts(self) -> list[dict[str, Any]]:
        """The message's parts as the written (and held) chunks build them."""
        return list(cast(list[dict[str, Any]], self._reducer.message()["parts"]))

    def _append(self, events: list[NewEvent]) -> None:
        if not events or self.closed:
            return
        events = together(events)
        started = self._monotonic()
        try:
            stored = self._store.append_events(self._run.user_id, self._run.run_id, events, now=self._now())
        except TerminalState:
            # The run was ended meanwhile (an abort): its log is closed, and this step's output with it.
            _LOG.info("run %s has ended; %d events dropped", self._run.run_id, len(events))
            self.closed = True
            return
        self._batcher.wrote(self._monotonic() - started)
        self.last_seq = stored[-1].seq
        if self._notify is not None and not self.quiet:
            self._notify(self.last_seq)

    def snapshot(self, metadata: dict[str, Any] | None = None) -> SnapshotUpdate:
        """The parts the client has after the written events (call after `flush`)."""
        message = self._reducer.message()
        merged = cast(dict[str, Any] | None, message.get("metadata"))
        if metadata is not None:
            merged = {**(merged or {}), **metadata}
        return SnapshotUpdate(parts=list(message["parts"]), metadata=merged, snapshot_seq=self.last_seq)
