"""Following a run's event log as SSE: what is stored, then the live tail, until the run stops.

The run's workers append chunks to the event log (DynamoDB, consistent reads); this reads them
back in order with the SSE id `"{seq}.{index}"` of each chunk (`stepline.store.replay`), so a
client that comes back with `Last-Event-ID` gets exactly what it missed.

A stream ends:
- when the run has ended and every event was sent: `data: [DONE]`;
- when the run waits for the user (an approval or a question) and `stop_at_input` is set: also
  `[DONE]`, so a stock client's `sendAutomaticallyWhen` can send the answer (it only sends once the
  stream is over). A stream that follows the run through its waits (the resume stream) leaves it
  unset and keeps the connection open with keep-alive comments until the run goes on, or until
  the run has waited `wait_hold_seconds` (then `[DONE]`: the client answers the stock way);
- when `max_seconds` is reached (Lambda's 15-minute limit): without `[DONE]`; the client resumes.

How it learns that there is more: by a notification from the run's writer when it has a
subscription (`stepline.runtime.stream_push`), else by polling. A notification sends it to the
log at once; without one it reads the run after `push_poll_seconds` (with a subscription) or
`poll_seconds` (without), so a notification that never comes costs one poll interval, never an
event. The log is the truth either way, and chunks already sent are never sent again. When the
writers coalesce their notifications (`CoalescingNotifier`: one per burst of appends on AWS), a
stream polls at `poll_seconds` for `push_linger_seconds` (the window) after its start, after each
notification and after each read that found events, which covers every append a dropped
notification stood for.

The tail never stops a run: a client that goes away only ends its own stream.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from anyio import to_thread

from ..protocol._json import dumps
from ..protocol.sse import DONE
from ..runtime.stream_push import RunSubscription
from ..runtime.watchers import NOTE_SECONDS
from ..store.event_batcher import DELTA_EVENT
from ..store.ports import Store
from ..store.records import TERMINAL, WAITING_RUN, EventRecord, RunRecord
from ..store.replay import WHOLE_EVENT, EventPosition, chunks_after, event_id
from .threads import RunSync

_LOG = logging.getLogger("stepline.api")

__all__ = ["TailOptions", "follow_run", "wait_position"]

_AT_WORK = frozenset({"queued", "running"})
"""The statuses of a run neither ended nor waiting."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TailOptions:
    """How a stream polls and when it gives up."""

    poll_seconds: float = 0.1
    push_poll_seconds: float = 1.0
    """With a subscription to the run's notifications, the fallback poll: how late a lost
    notification can make an event at most."""
    push_linger_seconds: float = 0.0
    """With a subscription: how long the stream polls at `poll_seconds` after its start, after a
    notification and after a read that found events (the writers' coalescing window)."""
    wait_poll_seconds: float = 1.0
    """While the run waits for a person, the poll backs off (doubling) up to this interval."""
    max_seconds: float = 840.0
    """Under Lambda's 15 minutes, with room to close cleanly."""
    stop_at_input: bool = True
    wait_hold_seconds: float | None = None
    """Without `stop_at_input`: end the stream (`[DONE]`) once the run has waited this long, since a
    stream held open costs its function's time while nothing happens."""
    input_grace_seconds: float = 0.0
    """A wait only ends the stream once something was sent, or after this long. A continuation
    needs it: the run still reads waiting until its worker picks up the answer just given."""


def _frame(seq: int, index: int, chunk: Any) -> str:
    return f"id: {event_id(seq, index)}\ndata: {dumps(chunk)}\n\n"


async def follow_run(
    store: Store,
    user_id: str,
    run_id: str,
    *,
    after: EventPosition | None = None,
    options: TailOptions = TailOptions(),
    clock: Callable[[], int],
    threads: RunSync | None = None,
    wake: RunSubscription | None = None,
    at_work: Callable[[RunRecord], bool] | None = None,
    note: Callable[[], None] | None = None,
) -> AsyncIterator[str]:
    """SSE frames of the run's chunks after `after` (all when None), live, until the run stops.

    A poll reads the run (consistent reads; its `last_event_seq` is the log's last seq), and the
    log only when that says it has something new; while the run
    waits for a person, the polls back off to `wait_poll_seconds`. A notification on `wake` (take
    the subscription before calling), and a poll after a read that found only deltas, read the log
    at once instead, and the run only once the log has nothing new or something other than deltas
    came (a delta batch never ends or parks a run). On DynamoDB a run read is two consistent reads
    and a log read one, so a stream that follows a model's text pays one read a poll, not three.
    `at_work(run)` says a waiting run is not waiting for a person (its sub-agents work): the stream
    follows it on. `note()` says that someone follows the run (`stepline.runtime.watchers`): called
    on the threads at the start and every `NOTE_SECONDS`; a failed note is logged, not fatal.
    """
    run_sync: RunSync = threads or to_thread.run_sync
    position: EventPosition = after if after is not None else (0, WHOLE_EVENT)
    started = time.monotonic()
    deadline = started + options.max_seconds
    sent = False
    base = options.poll_seconds if wake is None else options.push_poll_seconds
    interval = base
    waiting_since: float | None = None
    log_first = False
    linger = options.push_linger_seconds if wake is not None else 0.0
    fast_until = started + linger

    async def pause(seconds: float) -> bool:
        nonlocal fast_until
        if time.monotonic() < fast_until:
            seconds = min(seconds, options.poll_seconds)
        woken = await _pause(wake, seconds)
        if woken:
            fast_until = max(fast_until, time.monotonic() + linger)
        return woken

    noted: float | None = None
    while time.monotonic() < deadline:
        noted = await _renew(note, noted, run_sync, run_id)
        seen = position[0] if position[1] == WHOLE_EVENT else position[0] - 1
        run = None if log_first else await run_sync(lambda: store.get_run(user_id, run_id))
        if run is None or run.last_event_seq > seen:
            events = await run_sync(lambda s=seen: store.events_after(user_id, run_id, s, now=clock()))
            for event in events:
                for index, chunk in enumerate(event.chunks):
                    if _unseen(event.seq, index, position):
                        yield _frame(event.seq, index, chunk)
                        sent = True
                position = (event.seq, WHOLE_EVENT)
            if events:
                interval = base
                fast_until = max(fast_until, time.monotonic() + linger)
                if all(e.type == DELTA_EVENT for e in events) and (run is None or run.status in _AT_WORK):
                    # A delta batch never ends or parks a run: while they come, a poll reads the log
                    # alone, and the run only once a read finds nothing new or something else.
                    waiting_since = None  # it has worked since any wait seen: a later one counts from its start
                    await pause(interval)
                    log_first = True
                    continue
                # Read the run again before deciding anything: it was read before these events, and a
                # worker that resumed in between would look waiting still (the stream would end).
                log_first = False
                continue
            if run is None:
                log_first = False
                continue  # the log alone had nothing new: the status may have changed; read the run
        now = time.monotonic()
        waiting = await _waits_for_a_person(run_sync, run, at_work)
        waiting_since = (waiting_since or now) if waiting else None
        if options.stop_at_input:
            stop_waiting = sent or now - started >= options.input_grace_seconds
        else:
            hold = options.wait_hold_seconds
            stop_waiting = hold is not None and waiting_since is not None and now - waiting_since >= hold
        ended = run.status in TERMINAL["run"] or (waiting and stop_waiting)
        if ended and waiting and at_work is not None:
            # The children were read after the run: what one raised into its log in between (its
            # budget card) is in a read made after theirs, and the stream must not end before it.
            run = await run_sync(lambda: store.get_run(user_id, run_id))
            ended = run.status in TERMINAL["run"] or run.status in WAITING_RUN
        if ended and run.last_event_seq <= position[0]:
            yield DONE
            return
        log_first = await pause(interval)
        interval = min(interval * 2, max(options.wait_poll_seconds, base)) if waiting else base


async def _renew(note: Callable[[], None] | None, noted: float | None, run_sync: RunSync, run_id: str) -> float | None:
    """Call `note` when it is due (at once, then every `NOTE_SECONDS`); when it was last called."""
    if note is None or (noted is not None and time.monotonic() - noted < NOTE_SECONDS):
        return noted
    try:
        await run_sync(note)
    except Exception:  # the window is a cost, not a correctness matter: the stream goes on
        _LOG.warning("could not note the stream of run %s", run_id, exc_info=True)
    return time.monotonic()


async def _waits_for_a_person(run_sync: RunSync, run: RunRecord, at_work: Callable[[RunRecord], bool] | None) -> bool:
    """Whether the run waits for a person: a wait for sub-agents at work is none."""
    if run.status not in WAITING_RUN:
        return False
    return at_work is None or not await run_sync(lambda: at_work(run))


async def _pause(wake: RunSubscription | None, seconds: float) -> bool:
    """Until the next notification (True) or `seconds` (False)."""
    if wake is None:
        await asyncio.sleep(seconds)
        return False
    return await wake.wait(seconds)


def _unseen(seq: int, index: int, position: EventPosition) -> bool:
    seen_seq, seen_index = position
    return seq > seen_seq or (seq == seen_seq and seen_index != WHOLE_EVENT and index > seen_index)


def wait_position(events: Iterable[EventRecord], *, approval_ids: set[str], tool_call_ids: set[str]) -> EventPosition:
    """Where a run stopped to wait for these approvals or answers: the end of the step that asked.

    A client that answers has everything up to that point (it read the request in that stream),
    so a continuation streams what comes after it, whether the run still waits or has gone on.
    Returns the position of the `finish-step` that follows the last request; `(0, -1)` when none
    of them is in the log.
    """
    asked: EventPosition | None = None
    found: EventPosition | None = None
    for seq, index, chunk in chunks_after(events):
        kind = chunk.get("type")
        if (kind == "tool-approval-request" and chunk.get("approvalId") in approval_ids) or (
            kind == "tool-input-available" and chunk.get("toolCallId") in tool_call_ids
        ):
            asked, found = (seq, index), None
        elif kind == "finish-step" and asked is not None and found is None:
            found = (seq, index)
    return found or asked or (0, WHOLE_EVENT)
