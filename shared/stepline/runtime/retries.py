"""The retries of a durable step, kept in its event log so that none is lost or counted twice.

A step's attempts can span several invocations, and only a step that succeeds saves a checkpoint,
so the log is where each attempt leaves its retries as `data-retry` chunks (their data is
`{reason, attempt}`):

    in-step retries (`run_model_call`)     a `data-retry` without an id, as the loop streams it
    a step retried by Step Functions       transient `data-retry` with an id (`retry-<n>`), the failed
      (`TransientModelError`)              attempt's last chunk: transient, nothing visible yet
    a step redone after its invocation     the same, right after the `reset-step`
      crashed or timed out (infrastructure) of the attempt that redoes it

`logged` reads them all back from the events written since the checkpoint, so the step that
finally succeeds (or the run's end) puts every one in `metadata.retries`. An interrupted attempt
that wrote nothing at all leaves no trace to count.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import JsonValue

from ..loop.state import LoopState
from ..protocol.chunks import DataChunk
from ..protocol.metadata import RetryRecord
from ..protocol.raised import raised_only
from ..store.ports import Store
from ..store.records import EventRecord
from .recorder import RunRecorder

__all__ = [
    "INTERRUPTED",
    "STEP_RETRIES",
    "interrupted",
    "logged",
    "marker",
    "redo_attempts",
    "run_retries",
    "step_retries",
]

STEP_RETRIES = 3
"""Times Step Functions retries a step that failed transiently before any output: the ASL's
`MaxAttempts` for `TransientModelError` (a test keeps the two equal). The worker stops asking for
retries once they are spent, so every requested retry really happens."""

INTERRUPTED = "step interrupted (its function crashed or timed out); redone from the checkpoint"


def _chunks(events: Sequence[EventRecord]) -> list[tuple[dict[str, Any], int]]:
    return [(chunk, event.created_at) for event in events for chunk in event.chunks]


def _is_marker(chunk: dict[str, Any]) -> bool:
    return chunk.get("type") == "data-retry" and isinstance(chunk.get("id"), str)


def logged(events: Sequence[EventRecord]) -> list[RetryRecord]:
    """Every retry the events record, in order."""
    records: list[RetryRecord] = []
    for chunk, at in _chunks(events):
        data = chunk.get("data")
        if chunk.get("type") != "data-retry" or not isinstance(data, dict):
            continue
        reason, attempt = data.get("reason"), data.get("attempt")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if isinstance(reason, str) and isinstance(attempt, int):
            records.append(RetryRecord(reason=reason, attempt=attempt, at=at))
    return records


def step_retries(events: Sequence[EventRecord]) -> int:
    """How many times this step was handed back to Step Functions to retry."""
    return sum(1 for chunk, _ in _chunks(events) if _is_marker(chunk) and _reason(chunk) != INTERRUPTED)


def _reason(chunk: dict[str, Any]) -> object:
    data = chunk.get("data")
    return data.get("reason") if isinstance(data, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]


def interrupted(events: Sequence[EventRecord]) -> bool:
    """Whether the last attempt died mid-step.

    So it did if a step was opened and the log does not end with a retry the worker recorded (a
    redo streams on under the step it reset, so this looks at the whole log).
    """
    chunks = [chunk for chunk, _ in _chunks(events)]
    opened = any(chunk.get("type") == "start-step" for chunk in chunks)
    return opened and not _is_marker(chunks[-1])


def marker(reason: str, attempt: int) -> DataChunk:
    """The `data-retry` chunk of a retry the worker records (an id tells it from the loop's own)."""
    # Transient: the client sees it live, the message keeps it in `metadata.retries` (not as a part,
    # so a redone step's message is the one an uninterrupted run stores).
    data: dict[str, JsonValue] = {"reason": reason, "attempt": attempt}
    return DataChunk(type="data-retry", id=f"retry-{attempt}", data=data, transient=True)


def redo_attempts(state: LoopState, attempts: list[EventRecord], recorder: RunRecorder, *, now: int) -> LoopState:
    """Earlier attempts of this step: their streamed parts dropped, their retries carried on.

    An attempt whose function crashed or timed out mid-step is an infrastructure retry: the step is
    redone from the checkpoint (`reset-step`), whatever it had streamed, and that redo is recorded.
    The approval requests a sub-agent raised into the log while the run waited are no attempt: they
    stay, in the step of their own they were written in.
    """
    attempts = [e for e in attempts if not raised_only(e.chunks)]  # a sub-agent's, while the run waited
    retries = [*state.retries, *logged(attempts)]
    if any(c.get("type") == "start-step" for e in attempts for c in e.chunks):
        crashed = interrupted(attempts)
        recorder.redo_step()  # an attempt of this step that crashed or failed streamed parts: drop them
        if crashed:
            record = RetryRecord(reason=INTERRUPTED, attempt=len(retries) + 1, at=now)
            recorder.write([marker(record.reason, record.attempt)])
            retries.append(record)
    return state.model_copy(update={"retries": retries}) if retries != state.retries else state


def run_retries(store: Store, user_id: str, run_id: str, *, now: int) -> list[RetryRecord]:
    """The checkpoint's retries and those the unfinished step's attempts logged since."""
    checkpoint = store.latest_checkpoint(user_id, run_id)
    if checkpoint is None:
        return []
    state = LoopState.model_validate(checkpoint.state)
    return [*state.retries, *logged(store.events_after(user_id, run_id, checkpoint.last_event_seq, now=now))]
