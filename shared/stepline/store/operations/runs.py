"""The operations on a turn and its run.

Starting a turn (its messages, run and the conversation's active run), the run's life while it
works (heartbeat, steps, snapshots, events, checkpoints, its task token, notifications) and its
end, which closes whatever it left open.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from pydantic import JsonValue

from ..branches import leaving as branch_leaving
from ..errors import ActiveRunExists, ConcurrentUpdate, Conflict
from ..ports import FinishRun, SnapshotUpdate, TurnStart, TurnStarted
from ..records import (
    LIVE_MESSAGE_STATUS,
    TERMINAL,
    CheckpointReason,
    CheckpointRecord,
    ConversationRecord,
    EventRecord,
    MessageRecord,
    NewEvent,
    RunRecord,
    RunStatus,
    StepRecordRow,
    ToolCallRecord,
    check_id,
)
from ..turns import assistant_placeholder, conversation_title, message_record
from ..unit import Unit
from .approvals import expire_with
from .branches import conversation_messages, last_active
from .common import (
    DELTA_RETENTION_MS,
    assistant_message,
    check_move,
    get_approval,
    get_conversation,
    get_run,
    live_run,
    stage_checkpoint,
    stage_events,
    stage_snapshot,
    update,
    upsert_tool_calls,
)
from .forks import stage_seed

__all__ = [
    "append_events",
    "attach_run_token",
    "finish_run",
    "heartbeat",
    "mark_notified",
    "mark_running",
    "request_abort",
    "save_checkpoint",
    "save_snapshot",
    "save_step",
    "start_turn",
]

# -- turns -------------------------------------------------------------------------------------------


def start_turn(unit: Unit, user_id: str, turn: TurnStart) -> TurnStarted:
    """User message, assistant placeholder, run and the conversation's active run, together."""
    for value, what in (
        (user_id, "user id"),
        (turn.conversation_id, "conversation id"),
        (turn.run_id, "run id"),
        (turn.assistant_message_id, "message id"),
    ):
        check_id(value, what)
    existing = unit.conversation(user_id, turn.conversation_id)
    conversation = existing or ConversationRecord(
        user_id=user_id,
        conversation_id=turn.conversation_id,
        agent=turn.agent,
        created_at=turn.now,
        updated_at=turn.now,
    )
    if existing is not None and turn.agent is not None and existing.agent not in (None, turn.agent):
        raise Conflict(f"conversation {turn.conversation_id} is answered by agent {existing.agent}, not {turn.agent}")
    if conversation.active_run_id is not None:
        raise ActiveRunExists(turn.conversation_id, conversation.active_run_id)
    if unit.run(user_id, turn.run_id) is not None:
        raise Conflict(f"run {turn.run_id} already exists")
    leaving, parent = _branch(unit, turn, existing)
    seq = conversation.last_message_seq
    user_message = None
    if turn.user_message is not None:
        seq += 1
        user_message = message_record(
            user_id, turn.conversation_id, turn.user_message, seq=seq, now=turn.now, parent_id=parent
        )
    ids = [turn.assistant_message_id] + ([user_message.message_id] if user_message else [])
    if len(set(ids)) != len(ids) or any(unit.message_id_taken(user_id, turn.conversation_id, i) for i in ids):
        raise Conflict("a message id of this turn is already used in this conversation")
    assistant = assistant_placeholder(
        user_id, turn, seq=seq + 1, parent_id=user_message.message_id if user_message else parent
    )
    run = RunRecord(
        user_id=user_id,
        run_id=turn.run_id,
        conversation_id=turn.conversation_id,
        request_message_id=user_message.message_id if user_message else "",
        assistant_message_id=turn.assistant_message_id,
        assistant_message_seq=assistant.seq,
        trigger=turn.trigger,
        provider=turn.provider,
        model=turn.model,
        agent=turn.agent,
        agent_fingerprint=turn.agent_fingerprint,
        context=turn.context,
        trace=turn.trace,
        started_at=turn.now,
        heartbeat_at=turn.now,
    )
    if turn.seed is not None:  # a fork: its replayed steps, first checkpoint and decided waits, in this unit
        run, assistant = stage_seed(unit, run, assistant, turn.seed, now=turn.now, retention=DELTA_RETENTION_MS)
    inbox = conversation.inbox
    if turn.dequeue is not None:
        if not any(e.message_id == turn.dequeue for e in inbox):
            raise Conflict(f"message {turn.dequeue} is no longer waiting (cancelled, or already answered)")
        inbox = [e for e in inbox if e.message_id != turn.dequeue]
    conversation = update(
        conversation,
        inbox=inbox,
        title=conversation.title or conversation_title(turn.title, user_message),
        status="running",
        active_run_id=turn.run_id,
        last_message_seq=assistant.seq,
        version=conversation.version + 1,
        updated_at=turn.now,
    )
    unit.put(conversation, new=existing is None)
    for message in leaving:
        unit.put(update(message, superseded_by=turn.run_id))
    if user_message is not None:
        unit.put(user_message, new=True)
    unit.put(assistant, new=True)
    unit.put(run, new=True)
    return TurnStarted(conversation, run, user_message, assistant)


def _branch(
    unit: Unit, turn: TurnStart, conversation: ConversationRecord | None
) -> tuple[list[MessageRecord], str | None]:
    """The messages the turn takes off the active branch, and the message its first new message follows.

    A turn without `branch` follows the active branch's last message; one with it follows
    `branch.after`, which must be on the active branch (`Conflict`: a switch or another branch got
    there first), and the finished messages after it leave the branch (`store.branches`).
    """
    if conversation is None:
        return [], None
    if turn.branch is None:
        last = last_active(unit, conversation)
        return [], last.message_id if last is not None else None
    try:
        leaving = branch_leaving(conversation_messages(unit, conversation), turn.branch.after)
    except ValueError as error:
        raise Conflict(str(error)) from None
    for message in leaving:
        if message.status not in TERMINAL["message"]:
            raise Conflict(f"message {message.message_id} is {message.status}; only a finished one is replaced")
    return leaving, turn.branch.after


# -- runs ---------------------------------------------------------------------------------------------


def mark_running(unit: Unit, user_id: str, run_id: str, *, now: int) -> RunRecord:
    """queued/waiting/interrupted → running, with a heartbeat."""
    run = get_run(unit, user_id, run_id)
    check_move("run", run.status, "running")
    run = update(run, status="running", heartbeat_at=now, version=run.version + 1)
    unit.put(run)
    conversation = get_conversation(unit, user_id, run.conversation_id)
    if conversation.status != "running":
        unit.put(update(conversation, status="running", updated_at=now))
    message = assistant_message(unit, run)
    if message.status == "waiting":
        unit.put(update(message, status=LIVE_MESSAGE_STATUS["running"]))
    return run


def heartbeat(unit: Unit, user_id: str, run_id: str, *, now: int) -> None:
    """Note that the run is alive."""
    unit.put(update(live_run(unit, user_id, run_id), heartbeat_at=now))


def request_abort(unit: Unit, user_id: str, run_id: str, *, reason: str) -> RunRecord:
    """Mark a live run to be stopped; a terminal or already marked run is left as it is."""
    run = get_run(unit, user_id, run_id)
    if run.status in TERMINAL["run"] or run.cancel_reason is not None:
        return run
    run = update(run, cancel_reason=reason, version=run.version + 1)
    unit.put(run)
    return run


def save_snapshot(unit: Unit, user_id: str, run_id: str, snapshot: SnapshotUpdate, *, now: int) -> None:
    """The assistant message's parts snapshot while it streams."""
    stage_snapshot(unit, live_run(unit, user_id, run_id), snapshot, now=now)


def save_step(
    unit: Unit,
    user_id: str,
    run_id: str,
    *,
    step: StepRecordRow,
    tool_calls: Sequence[ToolCallRecord],
    snapshot: SnapshotUpdate,
    checkpoint_state: dict[str, Any],
    reason: CheckpointReason,
    now: int,
    run_status: RunStatus | None = None,
) -> CheckpointRecord:
    """Step record, tool-call upserts, parts snapshot and checkpoint (and the run's new status)."""
    run = live_run(unit, user_id, run_id)
    if run_status is not None:
        check_move("run", run.status, run_status)
    if unit.step(user_id, run_id, step.step_index) is not None:
        raise Conflict(f"step {step.step_index} of run {run_id} is already saved")
    unit.put(step, new=True)
    upsert_tool_calls(unit, user_id, run_id, tool_calls)
    stage_snapshot(unit, run, snapshot, status=LIVE_MESSAGE_STATUS.get(run_status or ""), now=now)
    checkpoint = stage_checkpoint(unit, run, checkpoint_state, step.step_index, reason, now)
    changes: dict[str, Any] = {
        "checkpoint_seq": checkpoint.seq,
        "active_step_index": step.step_index,
        "heartbeat_at": now,
    }
    if run_status is not None:
        changes["status"] = run_status
        conversation = get_conversation(unit, user_id, run.conversation_id)
        if run_status == "waiting_user" and conversation.status != "waiting_user":
            unit.put(update(conversation, status="waiting_user", updated_at=now))
    unit.put(update(run, **changes))
    return checkpoint


def append_events(
    unit: Unit, user_id: str, run_id: str, events: Sequence[NewEvent], *, now: int, retention: int = DELTA_RETENTION_MS
) -> list[EventRecord]:
    """Append events with the next seqs; an ended run's log is closed (its last event is its end)."""
    run, stored = stage_events(unit, live_run(unit, user_id, run_id), events, now, retention)
    unit.put(run)
    return stored


def finish_run(
    unit: Unit, user_id: str, run_id: str, finish: FinishRun, *, retention: int = DELTA_RETENTION_MS
) -> RunRecord:
    """Terminal state, final parts, cleared active run; closes only what is still running."""
    run = get_run(unit, user_id, run_id)
    if run.status == finish.status:
        return run  # a retried finalize is harmless
    check_move("run", run.status, finish.status)
    denied = [get_approval(unit, user_id, approval_id) for approval_id in finish.expire_approvals]
    if any(approval.status != "requested" for approval in denied):
        raise ConcurrentUpdate(f"an approval of run {run_id} was decided meanwhile; build the end again")
    snapshot = finish.snapshot
    if finish.event is not None and run.last_event_seq > snapshot.snapshot_seq:
        raise ConcurrentUpdate(f"run {run_id} has events after the final snapshot; build it again")
    if finish.event is not None:  # the run's last event; the final snapshot includes it
        run = stage_events(unit, run, [finish.event], finish.now, retention)[0]
        snapshot = dataclasses.replace(snapshot, snapshot_seq=run.last_event_seq)
    stage_snapshot(unit, run, snapshot, status=finish.status, now=finish.now)
    run = update(
        run,
        status=finish.status,
        ended_at=finish.now,
        finish_reason=finish.finish_reason,
        usage=finish.usage,
        error=finish.error,
        cancel_reason=finish.cancel_reason,
        version=run.version + 1,
    )
    unit.put(run)
    _close_open_nodes(unit, run, finish.now)
    reason = run.cancel_reason or f"run_{run.status}"
    for approval in denied:  # a sub-agent's raised request; the run's own are closed above
        if approval.run_id != run_id:
            expire_with(unit, approval, reason, finish.now)
    conversation = get_conversation(unit, user_id, run.conversation_id)
    if conversation.active_run_id == run_id:
        unit.put(
            update(
                conversation,
                active_run_id=None,
                status="failed" if finish.status == "failed" else "idle",
                updated_at=finish.now,
                version=conversation.version + 1,
            )
        )
    return run


def _close_open_nodes(unit: Unit, run: RunRecord, now: int) -> None:
    for step in unit.run_steps(run.user_id, run.run_id):
        if step.status == "running":
            unit.put(update(step, status="failed", ended_at=now))
    for call in unit.run_tool_calls(run.user_id, run.run_id):
        if call.status in ("running", "pending"):
            error: dict[str, JsonValue] = {"message": f"run ended ({run.status}) while the tool was {call.status}"}
            unit.put(update(call, status="error", error=error, ended_at=now))
        elif call.status == "awaiting_approval":
            unit.put(update(call, status="expired", ended_at=now))
    for approval in unit.run_approvals(run.user_id, run.run_id):
        if approval.status == "requested":
            reason = run.cancel_reason or f"run_{run.status}"
            unit.put(update(approval, status="expired", decided_at=now, expired_reason=reason))


def save_checkpoint(
    unit: Unit, user_id: str, run_id: str, *, state: dict[str, Any], reason: CheckpointReason, now: int
) -> CheckpointRecord:
    """A checkpoint without a step (the run's initial state, or a resume)."""
    run = live_run(unit, user_id, run_id)
    checkpoint = stage_checkpoint(unit, run, state, run.active_step_index, reason, now)
    unit.put(update(run, checkpoint_seq=checkpoint.seq))
    return checkpoint


def attach_run_token(unit: Unit, user_id: str, run_id: str, task_token: str) -> RunRecord:
    """Store the Step Functions task token of a run waiting for the client."""
    run = live_run(unit, user_id, run_id)
    run = update(run, task_token=task_token)
    unit.put(run)
    return run


def mark_notified(unit: Unit, user_id: str, run_id: str, key: str) -> bool:
    """Record that the run's notification `key` was published; False when it already was.

    Allowed on an ended run too (the end itself is notified after it is committed). It changes
    nothing else of the run, so it never conflicts with the run's own transitions except by
    revision (then the unit runs again on fresh reads).
    """
    run = get_run(unit, user_id, run_id)
    if key in run.notified:
        return False
    unit.put(update(run, notified=[*run.notified, key]))
    return True
