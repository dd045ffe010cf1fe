"""The operations on approvals.

Requesting them (with the run waiting and its checkpoint), attaching the task token, deciding once
(compare-and-set), settling the decision onto the tool call, and expiring.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import Conflict, DecisionConflict, Gone
from ..ports import SnapshotUpdate
from ..records import LIVE_MESSAGE_STATUS, ApprovalRecord, CheckpointRecord, NewEvent, ToolCallRecord, check_id
from ..results import DecisionResult
from ..unit import Unit
from .common import (
    DELTA_RETENTION_MS,
    check_move,
    get_approval,
    get_conversation,
    get_run,
    stage_checkpoint,
    stage_events,
    stage_snapshot,
    update,
    upsert_tool_calls,
)

__all__ = [
    "attach_task_token",
    "decide_approval",
    "expire_approval",
    "expire_with",
    "request_approval",
    "settle_approval",
]


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
    run = get_run(unit, user_id, run_id)
    check_move("run", run.status, "waiting_approval")
    for approval in approvals:
        check_id(approval.approval_id, "approval id")
        if unit.approval(user_id, approval.approval_id) is not None:
            raise Conflict(f"approval {approval.approval_id} already exists")
        if unit.approval_for_tool_call(user_id, run_id, approval.tool_call_id) is not None:
            raise Conflict(f"tool call {approval.tool_call_id} already has an approval")
    stage_snapshot(unit, run, snapshot, status=LIVE_MESSAGE_STATUS["waiting_approval"], now=now)
    upsert_tool_calls(unit, user_id, run_id, tool_calls)
    if event is not None:
        run = stage_events(unit, run, [event], now, retention)[0]
    checkpoint = stage_checkpoint(unit, run, checkpoint_state, run.active_step_index, "approval_wait", now)
    for approval in approvals:
        unit.put(update(approval, checkpoint_seq=checkpoint.seq, status="requested"), new=True)
    unit.put(update(run, status="waiting_approval", checkpoint_seq=checkpoint.seq, version=run.version + 1))
    conversation = get_conversation(unit, user_id, run.conversation_id)
    unit.put(update(conversation, status="waiting_approval", updated_at=now))
    return checkpoint


def attach_task_token(unit: Unit, user_id: str, approval_id: str, task_token: str) -> ApprovalRecord:
    """Store the Step Functions task token of a requested approval."""
    approval = get_approval(unit, user_id, approval_id)
    if approval.status != "requested":
        raise Conflict(f"approval {approval_id} is {approval.status}; no token can be attached")
    approval = update(approval, task_token=task_token)
    unit.put(approval)
    return approval


def _expire(unit: Unit, approval: ApprovalRecord, now: int) -> ApprovalRecord:
    return expire_with(unit, approval, "timeout", now)


def expire_with(unit: Unit, approval: ApprovalRecord, reason: str, now: int) -> ApprovalRecord:
    """Stage `requested → expired` with `reason`, its tool call (awaiting approval) expired too."""
    expired = update(approval, status="expired", decided_at=now, expired_reason=reason)
    unit.put(expired)
    call = unit.tool_call(approval.user_id, approval.run_id, approval.tool_call_id)
    if call is not None and call.status == "awaiting_approval":
        unit.put(update(call, status="expired", ended_at=now))
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
    trace: str | None = None,
) -> tuple[DecisionResult | None, Gone | None]:
    """Compare-and-set `requested → processing` with the decision.

    Returns `(result, None)`, or `(None, Gone)` after staging the expiry (the caller commits it,
    then raises): an approval found expired is recorded as expired.
    """
    decision = "approved" if approved else "denied"
    approval = get_approval(unit, user_id, approval_id)
    if approval.status == "requested" and approval.expires_at is not None and now >= approval.expires_at:
        _expire(unit, approval, now)
        return None, Gone(f"approval {approval_id} expired")
    if approval.status == "expired":
        raise Gone(f"approval {approval_id} expired")
    if approval.status != "requested":
        if approval.decision == decision:
            return DecisionResult(approval, first=False), None
        raise DecisionConflict(f"approval {approval_id} was already {approval.decision}")
    approval = update(
        approval,
        status="processing",
        decision=decision,
        reason=reason,
        decided_at=now,
        decided_by=decided_by,
        decision_trace=trace,
        claim_token=f"{approval_id}:{now}",
    )
    unit.put(approval)
    return DecisionResult(approval, first=True), None


def settle_approval(unit: Unit, user_id: str, approval_id: str, *, now: int) -> ApprovalRecord:
    """`processing → approved/denied`; the tool call becomes pending (to run) or denied."""
    approval = get_approval(unit, user_id, approval_id)
    if approval.status in ("approved", "denied"):
        return approval
    if approval.status != "processing" or approval.decision is None:
        raise Conflict(f"approval {approval_id} is {approval.status}; there is no decision to settle")
    approval = update(approval, status=approval.decision)
    unit.put(approval)
    call = unit.tool_call(user_id, approval.run_id, approval.tool_call_id)
    if call is not None and call.status == "awaiting_approval":
        approved = approval.decision == "approved"
        unit.put(update(call, status="pending" if approved else "denied", ended_at=None if approved else now))
    return approval


def expire_approval(unit: Unit, user_id: str, approval_id: str, *, now: int) -> ApprovalRecord:
    """`requested → expired`; a decided approval is returned unchanged."""
    approval = get_approval(unit, user_id, approval_id)
    return _expire(unit, approval, now) if approval.status == "requested" else approval
