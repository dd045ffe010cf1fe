"""The store's operations, written once against a unit of work (`unit.Unit`).

Each function reads what it needs, checks every condition, and only then stages its writes; the
backend commits them atomically. Nothing here knows whether it runs in memory or on DynamoDB.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, JsonValue

from .errors import ActiveRunExists, ConcurrentUpdate, Conflict, DecisionConflict, Gone, NotFound, TerminalState
from .ports import ClaimResult, DecisionResult, FinishRun, SnapshotUpdate, TurnStart, TurnStarted
from .records import (
    LIVE_MESSAGE_STATUS,
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
    RunStatus,
    StepRecordRow,
    ToolCallRecord,
    check_id,
)
from .turns import assistant_placeholder, conversation_title, message_record, visible_text
from .unit import Unit

__all__ = [
    "append_events",
    "attach_task_token",
    "check_move",
    "claim_tool_call",
    "decide_approval",
    "expire_approval",
    "finish_run",
    "heartbeat",
    "mark_notified",
    "mark_running",
    "record_tool_outcome",
    "request_approval",
    "save_snapshot",
    "save_step",
    "settle_approval",
    "answer_tool_call",
    "attach_run_token",
    "save_checkpoint",
    "start_tool_call",
    "start_turn",
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


def _run(unit: Unit, user_id: str, run_id: str) -> RunRecord:
    run = unit.run(user_id, run_id)
    if run is None:
        raise NotFound(f"run {run_id} not found")
    return run


def _live_run(unit: Unit, user_id: str, run_id: str) -> RunRecord:
    run = _run(unit, user_id, run_id)
    if run.status in TERMINAL["run"]:
        raise TerminalState(f"run {run_id} is {run.status}")
    return run


def _conversation(unit: Unit, user_id: str, conversation_id: str) -> ConversationRecord:
    found = unit.conversation(user_id, conversation_id)
    if found is None:
        raise NotFound(f"conversation {conversation_id} not found")
    return found


def _approval(unit: Unit, user_id: str, approval_id: str) -> ApprovalRecord:
    found = unit.approval(user_id, approval_id)
    if found is None:
        raise NotFound(f"approval {approval_id} not found")
    return found


M = TypeVar("M", bound=BaseModel)


def _update(record: M, **changes: Any) -> M:
    return record.model_copy(update=changes)


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
    seq = conversation.last_message_seq
    user_message = None
    if turn.user_message is not None:
        seq += 1
        user_message = message_record(user_id, turn.conversation_id, turn.user_message, seq=seq, now=turn.now)
    ids = [turn.assistant_message_id] + ([user_message.message_id] if user_message else [])
    if len(set(ids)) != len(ids) or any(unit.message_id_taken(user_id, turn.conversation_id, i) for i in ids):
        raise Conflict("a message id of this turn is already used in this conversation")
    assistant = assistant_placeholder(user_id, turn, seq=seq + 1, parent=user_message)
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
        started_at=turn.now,
        heartbeat_at=turn.now,
    )
    conversation = _update(
        conversation,
        title=conversation.title or conversation_title(turn.title, user_message),
        status="running",
        active_run_id=turn.run_id,
        last_message_seq=assistant.seq,
        version=conversation.version + 1,
        updated_at=turn.now,
    )
    unit.put(conversation, new=existing is None)
    for superseded in turn.supersede_seqs:
        message = unit.message(user_id, turn.conversation_id, superseded)
        if message is None:
            raise NotFound(f"message {superseded} of conversation {turn.conversation_id} not found")
        if message.status not in TERMINAL["message"]:
            raise Conflict(f"message {message.message_id} is {message.status}; only a finished one is replaced")
        unit.put(_update(message, superseded_by=turn.run_id))
    if user_message is not None:
        unit.put(user_message, new=True)
    unit.put(assistant, new=True)
    unit.put(run, new=True)
    return TurnStarted(conversation, run, user_message, assistant)


# -- runs ---------------------------------------------------------------------------------------------


def mark_running(unit: Unit, user_id: str, run_id: str, *, now: int) -> RunRecord:
    """queued/waiting/interrupted → running, with a heartbeat."""
    run = _run(unit, user_id, run_id)
    check_move("run", run.status, "running")
    run = _update(run, status="running", heartbeat_at=now, version=run.version + 1)
    unit.put(run)
    conversation = _conversation(unit, user_id, run.conversation_id)
    if conversation.status != "running":
        unit.put(_update(conversation, status="running", updated_at=now))
    message = _assistant(unit, run)
    if message.status == "waiting":
        unit.put(_update(message, status=LIVE_MESSAGE_STATUS["running"]))
    return run


def heartbeat(unit: Unit, user_id: str, run_id: str, *, now: int) -> None:
    """Note that the run is alive."""
    unit.put(_update(_live_run(unit, user_id, run_id), heartbeat_at=now))


def request_abort(unit: Unit, user_id: str, run_id: str, *, reason: str) -> RunRecord:
    """Mark a live run to be stopped; a terminal or already marked run is left as it is."""
    run = _run(unit, user_id, run_id)
    if run.status in TERMINAL["run"] or run.cancel_reason is not None:
        return run
    run = _update(run, cancel_reason=reason, version=run.version + 1)
    unit.put(run)
    return run


def _assistant(unit: Unit, run: RunRecord) -> MessageRecord:
    message = unit.message(run.user_id, run.conversation_id, run.assistant_message_seq)
    if message is None:
        raise NotFound(f"message {run.assistant_message_id} not found")
    return message


def _snapshot(unit: Unit, run: RunRecord, snapshot: SnapshotUpdate, *, status: str | None = None, now: int) -> None:
    message = _assistant(unit, run)
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
    unit.put(_update(message, **changes))


def save_snapshot(unit: Unit, user_id: str, run_id: str, snapshot: SnapshotUpdate, *, now: int) -> None:
    """The assistant message's parts snapshot while it streams."""
    _snapshot(unit, _live_run(unit, user_id, run_id), snapshot, now=now)


def _upsert_tool_calls(unit: Unit, user_id: str, run_id: str, tool_calls: Sequence[ToolCallRecord]) -> None:
    for call in tool_calls:
        existing = unit.tool_call(user_id, run_id, call.tool_call_id)
        if existing is not None and existing.status in TERMINAL["tool_call"]:
            continue  # a settled tool call keeps its outcome
        unit.put(call, new=existing is None)


def _checkpoint(
    unit: Unit, run: RunRecord, state: dict[str, Any], step_index: int, reason: CheckpointReason, now: int
) -> CheckpointRecord:
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
    run = _live_run(unit, user_id, run_id)
    if run_status is not None:
        check_move("run", run.status, run_status)
    if unit.step(user_id, run_id, step.step_index) is not None:
        raise Conflict(f"step {step.step_index} of run {run_id} is already saved")
    unit.put(step, new=True)
    _upsert_tool_calls(unit, user_id, run_id, tool_calls)
    _snapshot(unit, run, snapshot, status=LIVE_MESSAGE_STATUS.get(run_status or ""), now=now)
    checkpoint = _checkpoint(unit, run, checkpoint_state, step.step_index, reason, now)
    changes: dict[str, Any] = {
        "checkpoint_seq": checkpoint.seq,
        "active_step_index": step.step_index,
        "heartbeat_at": now,
    }
    if run_status is not None:
        changes["status"] = run_status
        conversation = _conversation(unit, user_id, run.conversation_id)
        if run_status == "waiting_user" and conversation.status != "waiting_user":
            unit.put(_update(conversation, status="waiting_user", updated_at=now))
    unit.put(_update(run, **changes))
    return checkpoint


def _append(
    unit: Unit, run: RunRecord, events: Sequence[NewEvent], now: int, retention: int
) -> tuple[RunRecord, list[EventRecord]]:
    stored: list[EventRecord] = []
    seq = run.last_event_seq
    for event in events:
        seq += 1
        record = EventRecord(
            user_id=run.user_id,
            run_id=run.run_id,
            seq=seq,
            type=event.type,
            chunks=event.chunks,
            durable=event.durable,
            created_at=now,
            expires_at=None if event.durable else now + retention,
        )
        unit.put(record, new=True)  # (run_id, seq) is written once: a second writer conflicts
        stored.append(record)
    return _update(run, last_event_seq=seq), stored


def append_events(
    unit: Unit, user_id: str, run_id: str, events: Sequence[NewEvent], *, now: int, retention: int = DELTA_RETENTION_MS
) -> list[EventRecord]:
    """Append events with the next seqs; an ended run's log is closed (its last event is its end)."""
    run, stored = _append(unit, _live_run(unit, user_id, run_id), events, now, retention)
    unit.put(run)
    return stored


def finish_run(
    unit: Unit, user_id: str, run_id: str, finish: FinishRun, *, retention: int = DELTA_RETENTION_MS
) -> RunRecord:
    """Terminal state, final parts, cleared active run; closes only what is still running."""
    run = _run(unit, user_id, run_id)
    if run.status == finish.status:
        return run  # a retried finalize is harmless
    check_move("run", run.status, finish.status)
    snapshot = finish.snapshot
    if finish.event is not None and run.last_event_seq > snapshot.snapshot_seq:
        raise ConcurrentUpdate(f"run {run_id} has events after the final snapshot; build it again")
    if finish.event is not None:  # the run's last event; the final snapshot includes it
        run = _append(unit, run, [finish.event], finish.now, retention)[0]
        snapshot = dataclasses.replace(snapshot, snapshot_seq=run.last_event_seq)
    _snapshot(unit, run, snapshot, status=finish.status, now=finish.now)
    run = _update(
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
    conversation = _conversation(unit, user_id, run.conversation_id)
    if conversation.active_run_id == run_id:
        unit.put(
            _update(
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
            unit.put(_update(step, status="failed", ended_at=now))
    for call in unit.run_tool_calls(run.user_id, run.run_id):
        if call.status in ("running", "pending"):
            error: dict[str, JsonValue] = {"message": f"run ended ({run.status}) while the tool was {call.status}"}
            unit.put(_update(call, status="error", error=error, ended_at=now))
        elif call.status == "awaiting_approval":
            unit.put(_update(call, status="expired", ended_at=now))
    for approval in unit.run_approvals(run.user_id, run.run_id):
        if approval.status == "requested":
            unit.put(_update(approval, status="expired", decided_at=now))


# -- approvals ---------------------------------------------------------------------------------------


def request_approval(
    unit: Unit,
    user_id: str,
    run_id: str,
    *,
    approvals: Sequence[ApprovalRecord],
    tool_calls: Sequence[ToolCallRecord],
    snapshot: SnapshotUpdate,
    checkpoint_state: dict[str, Any],
    event: NewEvent | None,
    now: int,
    retention: int = DELTA_RETENTION_MS,
) -> CheckpointRecord:
    """Tool calls awaiting approval, approvals, checkpoint, run waiting and the event, together."""
    run = _run(unit, user_id, run_id)
    check_move("run", run.status, "waiting_approval")
    for approval in approvals:
        check_id(approval.approval_id, "approval id")
        if unit.approval(user_id, approval.approval_id) is not None:
            raise Conflict(f"approval {approval.approval_id} already exists")
        if unit.approval_for_tool_call(user_id, run_id, approval.tool_call_id) is not None:
            raise Conflict(f"tool call {approval.tool_call_id} already has an approval")
    _snapshot(unit, run, snapshot, status=LIVE_MESSAGE_STATUS["waiting_approval"], now=now)
    _upsert_tool_calls(unit, user_id, run_id, tool_calls)
    if event is not None:
        run = _append(unit, run, [event], now, retention)[0]
    checkpoint = _checkpoint(unit, run, checkpoint_state, run.active_step_index, "approval_wait", now)
    for approval in approvals:
        unit.put(_update(approval, checkpoint_seq=checkpoint.seq, status="requested"), new=True)
    unit.put(_update(run, status="waiting_approval", checkpoint_seq=checkpoint.seq, version=run.version + 1))
    conversation = _conversation(unit, user_id, run.conversation_id)
    unit.put(_update(conversation, status="waiting_approval", updated_at=now))
    return checkpoint


def attach_task_token(unit: Unit, user_id: str, approval_id: str, task_token: str) -> ApprovalRecord:
    """Store the Step Functions task token of a requested approval."""
    approval = _approval(unit, user_id, approval_id)
    if approval.status != "requested":
        raise Conflict(f"approval {approval_id} is {approval.status}; no token can be attached")
    approval = _update(approval, task_token=task_token)
    unit.put(approval)
    return approval


def _expire(unit: Unit, approval: ApprovalRecord, now: int) -> ApprovalRecord:
    expired = _update(approval, status="expired", decided_at=now)
    unit.put(expired)
    call = unit.tool_call(approval.user_id, approval.run_id, approval.tool_call_id)
    if call is not None and call.status == "awaiting_approval":
        unit.put(_update(call, status="expired", ended_at=now))
    return expired


def decide_approval(
    unit: Unit,
    user_id: str,
    approval_id: str,
    *,
    approved: bool,
    reason: str | None,
    now: int,
    decided_by: str | None = None,
) -> tuple[DecisionResult | None, Gone | None]:
    """Compare-and-set `requested → processing` with the decision.

    Returns `(result, None)`, or `(None, Gone)` after staging the expiry (the caller commits it,
    then raises): an approval found expired is recorded as expired.
    """
    decision = "approved" if approved else "denied"
    approval = _approval(unit, user_id, approval_id)
    if approval.status == "requested" and approval.expires_at is not None and now >= approval.expires_at:
        _expire(unit, approval, now)
        return None, Gone(f"approval {approval_id} expired")
    if approval.status == "expired":
        raise Gone(f"approval {approval_id} expired")
    if approval.status != "requested":
        if approval.decision == decision:
            return DecisionResult(approval, first=False), None
        raise DecisionConflict(f"approval {approval_id} was already {approval.decision}")
    approval = _update(
        approval,
        status="processing",
        decision=decision,
        reason=reason,
        decided_at=now,
        decided_by=decided_by,
        claim_token=f"{approval_id}:{now}",
    )
    unit.put(approval)
    return DecisionResult(approval, first=True), None


def settle_approval(unit: Unit, user_id: str, approval_id: str, *, now: int) -> ApprovalRecord:
    """`processing → approved/denied`; the tool call becomes pending (to run) or denied."""
    approval = _approval(unit, user_id, approval_id)
    if approval.status in ("approved", "denied"):
        return approval
    if approval.status != "processing" or approval.decision is None:
        raise Conflict(f"approval {approval_id} is {approval.status}; there is no decision to settle")
    approval = _update(approval, status=approval.decision)
    unit.put(approval)
    call = unit.tool_call(user_id, approval.run_id, approval.tool_call_id)
    if call is not None and call.status == "awaiting_approval":
        approved = approval.decision == "approved"
        unit.put(_update(call, status="pending" if approved else "denied", ended_at=None if approved else now))
    return approval


def expire_approval(unit: Unit, user_id: str, approval_id: str, *, now: int) -> ApprovalRecord:
    """`requested → expired`; a decided approval is returned unchanged."""
    approval = _approval(unit, user_id, approval_id)
    return _expire(unit, approval, now) if approval.status == "requested" else approval


def mark_notified(unit: Unit, user_id: str, run_id: str, key: str) -> bool:
    """Record that the run's notification `key` was published; False when it already was.

    Allowed on an ended run too (the end itself is notified after it is committed). It changes
    nothing else of the run, so it never conflicts with the run's own transitions except by
    revision (then the unit runs again on fresh reads).
    """
    run = _run(unit, user_id, run_id)
    if key in run.notified:
        return False
    unit.put(_update(run, notified=[*run.notified, key]))
    return True


# -- tool calls ----------------------------------------------------------------------------------


def claim_tool_call(
    unit: Unit,
    user_id: str,
    run_id: str,
    tool_call_id: str,
    *,
    tool_name: str,
    input: JsonValue,
    step_index: int,
    claim_token: str,
    now: int,
) -> ClaimResult:
    """Claim a tool call for execution (created when the step has not saved it yet)."""
    _live_run(unit, user_id, run_id)
    existing = unit.tool_call(user_id, run_id, tool_call_id)
    call = existing or ToolCallRecord(
        user_id=user_id,
        run_id=run_id,
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        input=input,
        step_index=step_index,
    )
    if call.status in TERMINAL["tool_call"]:
        return ClaimResult("done", call)
    if call.status == "awaiting_approval" or (call.status == "running" and call.started_at is not None):
        # Started by an earlier holder: it may have had a side effect, so it is never taken over.
        return ClaimResult("in_progress", call)
    # pending, or claimed by a holder that died before starting the body: safe to (re)claim.
    call = _update(call, status="running", claim_token=claim_token, started_at=None)
    unit.put(call, new=existing is None)
    return ClaimResult("claimed", call)


def start_tool_call(
    unit: Unit, user_id: str, run_id: str, tool_call_id: str, *, claim_token: str, now: int
) -> ToolCallRecord:
    """The claim holder is about to run the body: from here a crash means "possibly ran"."""
    call = unit.tool_call(user_id, run_id, tool_call_id)
    if call is None:
        raise NotFound(f"tool call {tool_call_id} not found")
    if call.status != "running" or call.claim_token != claim_token or call.started_at is not None:
        raise Conflict(f"tool call {tool_call_id} is no longer claimed by this worker")
    call = _update(call, started_at=now)
    unit.put(call)
    return call


def answer_tool_call(
    unit: Unit,
    user_id: str,
    run_id: str,
    tool_call_id: str,
    *,
    output: JsonValue,
    error: dict[str, JsonValue] | None,
    now: int,
) -> ToolCallRecord:
    """The client's output for a client-side tool call (a question's answer): `pending → success/error`."""
    _live_run(unit, user_id, run_id)
    call = unit.tool_call(user_id, run_id, tool_call_id)
    if call is None:
        raise NotFound(f"tool call {tool_call_id} not found")
    if call.status in TERMINAL["tool_call"]:
        if call.output == output and call.error == error:
            return call  # the same answer again
        raise Conflict(f"tool call {tool_call_id} was already answered")
    if call.status != "pending":
        raise Conflict(f"tool call {tool_call_id} is {call.status}; it does not wait for a client output")
    call = _update(call, status="error" if error is not None else "success", output=output, error=error, ended_at=now)
    unit.put(call)
    return call


def save_checkpoint(
    unit: Unit, user_id: str, run_id: str, *, state: dict[str, Any], reason: CheckpointReason, now: int
) -> CheckpointRecord:
    """A checkpoint without a step (the run's initial state, or a resume)."""
    run = _live_run(unit, user_id, run_id)
    checkpoint = _checkpoint(unit, run, state, run.active_step_index, reason, now)
    unit.put(_update(run, checkpoint_seq=checkpoint.seq))
    return checkpoint


def attach_run_token(unit: Unit, user_id: str, run_id: str, task_token: str) -> RunRecord:
    """Store the Step Functions task token of a run waiting for the client."""
    run = _live_run(unit, user_id, run_id)
    run = _update(run, task_token=task_token)
    unit.put(run)
    return run


def record_tool_outcome(
    unit: Unit,
    user_id: str,
    run_id: str,
    tool_call_id: str,
    *,
    claim_token: str,
    output: JsonValue,
    error: dict[str, JsonValue] | None,
    now: int,
) -> ToolCallRecord:
    """Record the claim holder's outcome: `running → success/error`."""
    _run(unit, user_id, run_id)
    call = unit.tool_call(user_id, run_id, tool_call_id)
    if call is None:
        raise NotFound(f"tool call {tool_call_id} not found")
    if call.claim_token != claim_token:
        raise Conflict(f"tool call {tool_call_id} is claimed by another worker")
    if call.status in TERMINAL["tool_call"]:
        return call
    call = _update(call, status="error" if error is not None else "success", output=output, error=error, ended_at=now)
    unit.put(call)
    return call
