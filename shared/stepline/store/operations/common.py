"""What every store operation shares.

The transition check, the reads that must find their record, and the writes more than one
operation stages (the assistant message's snapshot, tool-call upserts, a checkpoint, appended
events). Staging helpers only `unit.put`; the operation that calls them has checked its conditions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from ..errors import Conflict, NotFound, TerminalState
from ..ports import SnapshotUpdate
from ..records import (
    TERMINAL,
    TRANSITIONS,
    ApprovalRecord,
    CheckpointReason,
    CheckpointRecord,
    ConversationRecord,
    EventRecord,
    MessageRecord,
    NewEvent,
    RunRecord,
    ToolCallRecord,
)
from ..turns import visible_text
from ..unit import Unit

__all__ = [
    "DELTA_RETENTION_MS",
    "assistant_message",
    "check_move",
    "event_records",
    "get_approval",
    "get_conversation",
    "get_run",
    "live_run",
    "stage_checkpoint",
    "stage_events",
    "stage_snapshot",
    "update",
    "upsert_tool_calls",
]

DELTA_RETENTION_MS = 7 * 24 * 3600 * 1000
"""Delta batches expire this long after they are written. Safe: every step boundary stores a parts
snapshot, and a reconnect replays only the events after the latest snapshot."""


def check_move(kind: str, current: str, target: str) -> None:
    """Raise `TerminalState`/`Conflict` unless `current → target` is allowed."""
    terminal = TERMINAL.get(kind, frozenset())
    if current == target and current not in terminal:
        return
    if current in terminal:
        raise TerminalState(f"{kind} is {current}; it cannot become {target}")
    allowed = TRANSITIONS.get(kind, {}).get(current)
    if allowed is not None and target not in allowed:
        raise Conflict(f"{kind} cannot go from {current} to {target}")


def get_run(unit: Unit, user_id: str, run_id: str) -> RunRecord:
    """The run, or `NotFound`."""
    run = unit.run(user_id, run_id)
    if run is None:
        raise NotFound(f"run {run_id} not found")
    return run


def live_run(unit: Unit, user_id: str, run_id: str) -> RunRecord:
    """The run, or `NotFound`; `TerminalState` when it has ended."""
    run = get_run(unit, user_id, run_id)
    if run.status in TERMINAL["run"]:
        raise TerminalState(f"run {run_id} is {run.status}")
    return run


def get_conversation(unit: Unit, user_id: str, conversation_id: str) -> ConversationRecord:
    """The conversation, or `NotFound`."""
    found = unit.conversation(user_id, conversation_id)
    if found is None:
        raise NotFound(f"conversation {conversation_id} not found")
    return found


def get_approval(unit: Unit, user_id: str, approval_id: str) -> ApprovalRecord:
    """The approval, or `NotFound`."""
    found = unit.approval(user_id, approval_id)
    if found is None:
        raise NotFound(f"approval {approval_id} not found")
    return found


M = TypeVar("M", bound=BaseModel)


def update(record: M, **changes: Any) -> M:
    """A copy of the record with `changes` applied."""
    return record.model_copy(update=changes)


def assistant_message(unit: Unit, run: RunRecord) -> MessageRecord:
    """The message the run writes (`assistant_message_seq`), or `NotFound`."""
    message = unit.message(run.user_id, run.conversation_id, run.assistant_message_seq)
    if message is None:
        raise NotFound(f"message {run.assistant_message_id} not found")
    return message


def stage_snapshot(
    unit: Unit, run: RunRecord, snapshot: SnapshotUpdate, *, status: str | None = None, now: int
) -> None:
    """Stage the assistant message's parts (and status); a finished message is never rewritten."""
    message = assistant_message(unit, run)
    if message.status in TERMINAL["message"]:
        raise TerminalState(f"message {message.message_id} is {message.status}")
    changes: dict[str, Any] = {"parts": snapshot.parts, "content": visible_text(snapshot.parts)}
    if snapshot.snapshot_seq >= message.snapshot_seq:
        changes["snapshot_seq"] = snapshot.snapshot_seq
    if snapshot.metadata is not None:
        changes["metadata"] = snapshot.metadata
    if status is not None:
        changes["status"] = status
        if status in TERMINAL["message"]:
            changes["completed_at"] = now
    unit.put(update(message, **changes))


def upsert_tool_calls(unit: Unit, user_id: str, run_id: str, tool_calls: Sequence[ToolCallRecord]) -> None:
    """Stage the step's tool calls; one already settled keeps its outcome."""
    for call in tool_calls:
        existing = unit.tool_call(user_id, run_id, call.tool_call_id)
        if existing is not None and existing.status in TERMINAL["tool_call"]:
            continue  # a settled tool call keeps its outcome
        unit.put(call, new=existing is None)


def stage_checkpoint(
    unit: Unit, run: RunRecord, state: dict[str, Any], step_index: int, reason: CheckpointReason, now: int
) -> CheckpointRecord:
    """Stage the run's next checkpoint (the run itself is updated by the caller)."""
    checkpoint = CheckpointRecord(
        user_id=run.user_id,
        run_id=run.run_id,
        seq=run.checkpoint_seq + 1,
        step_index=step_index,
        reason=reason,
        state=state,
        last_event_seq=run.last_event_seq,
        created_at=now,
    )
    unit.put(checkpoint, new=True)
    return checkpoint


def stage_events(
    unit: Unit, run: RunRecord, events: Sequence[NewEvent], now: int, retention: int
) -> tuple[RunRecord, list[EventRecord]]:
    """Stage the events with the next seqs; returns the run with its new `last_event_seq` (unstaged)."""
    stored = event_records(run.user_id, run.run_id, run.last_event_seq, events, now, retention)
    for record in stored:
        unit.put(record, new=True)  # (run_id, seq) is written once: a second writer conflicts
    return update(run, last_event_seq=stored[-1].seq if stored else run.last_event_seq), stored


def event_records(
    user_id: str, run_id: str, after_seq: int, events: Sequence[NewEvent], now: int, retention: int
) -> list[EventRecord]:
    """The events as records with the seqs after `after_seq` (a delta expires `retention` ms from now)."""
    return [
        EventRecord(
            user_id=user_id,
            run_id=run_id,
            seq=after_seq + offset,
            type=event.type,
            chunks=event.chunks,
            durable=event.durable,
            created_at=now,
            expires_at=None if event.durable else now + retention,
        )
        for offset, event in enumerate(events, start=1)
    ]
