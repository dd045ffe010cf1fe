"""The write operations every store backend shares.

Each is one `operations` function run in a unit of work. A backend supplies `_do` (how a unit is
opened, redacted and committed); the reads by key it shares are in `unit_reads`, its listings
are its own.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import JsonValue

from .operations import approvals as approval_ops
from .operations import branches as branch_ops
from .operations import inbox as inbox_ops
from .operations import runs as run_ops
from .operations import tool_calls as tool_call_ops
from .ports import FinishRun, SnapshotUpdate, TurnStart, TurnStarted
from .records import (
    ApprovalRecord,
    ArtifactRecord,
    CheckpointReason,
    CheckpointRecord,
    ConversationRecord,
    EventRecord,
    InboxEntry,
    NewEvent,
    RunRecord,
    RunStatus,
    StagedSteers,
    SteerBuilder,
    StepRecordRow,
    ToolCallRecord,
)
from .results import ClaimResult, DecisionResult
from .unit import Unit

__all__ = ["TransactionalStore"]

T = TypeVar("T")


class TransactionalStore(ABC):
    """The store's writes, each atomic through the backend's `_do`."""

    delta_retention_ms: int
    """How long delta-batch events are kept after their run ends (their TTL)."""

    @abstractmethod
    def _do(self, operation: Callable[[Unit], T]) -> T:
        """Run `operation` on a fresh unit of work and commit it (retrying on contention if the backend does)."""

    def start_turn(self, user_id: str, turn: TurnStart) -> TurnStarted:
        return self._do(lambda u: run_ops.start_turn(u, user_id, turn))

    def switch_branch(self, user_id: str, conversation_id: str, message_id: str, *, now: int) -> ConversationRecord:
        mark = f"switch-{uuid.uuid4().hex}"
        return self._do(lambda u: branch_ops.switch_branch(u, user_id, conversation_id, message_id, mark=mark, now=now))

    def enqueue_message(
        self,
        user_id: str,
        conversation_id: str,
        entry: InboxEntry,
        *,
        now: int,
        interrupt: tuple[str, str] | None = None,
    ) -> InboxEntry:
        return self._do(lambda u: inbox_ops.enqueue(u, user_id, conversation_id, entry, now=now, interrupt=interrupt))

    def cancel_queued(self, user_id: str, conversation_id: str, message_id: str, *, now: int) -> InboxEntry:
        return self._do(lambda u: inbox_ops.cancel_queued(u, user_id, conversation_id, message_id, now=now))

    def take_steers(self, user_id: str, run_id: str, build: SteerBuilder, *, now: int) -> StagedSteers | None:
        return self._do(
            lambda u: inbox_ops.take_steers(u, user_id, run_id, build, now=now, retention=self.delta_retention_ms)
        )

    def mark_running(self, user_id: str, run_id: str, *, now: int) -> RunRecord:
        return self._do(lambda u: run_ops.mark_running(u, user_id, run_id, now=now))

    def heartbeat(self, user_id: str, run_id: str, *, now: int) -> None:
        self._do(lambda u: run_ops.heartbeat(u, user_id, run_id, now=now))

    def request_abort(self, user_id: str, run_id: str, *, reason: str) -> RunRecord:
        return self._do(lambda u: run_ops.request_abort(u, user_id, run_id, reason=reason))

    def save_snapshot(self, user_id: str, run_id: str, snapshot: SnapshotUpdate, *, now: int) -> None:
        self._do(lambda u: run_ops.save_snapshot(u, user_id, run_id, snapshot, now=now))

    def save_step(
        self,
        user_id: str,
        run_id: str,
        *,
        step: StepRecordRow,
        tool_calls: Sequence[ToolCallRecord],
        snapshot: SnapshotUpdate,
        checkpoint_state: dict[str, Any],
        reason: CheckpointReason = "step_end",
        now: int,
        run_status: RunStatus | None = None,
    ) -> CheckpointRecord:
        return self._do(
            lambda u: run_ops.save_step(
                u,
                user_id,
                run_id,
                step=step,
                tool_calls=tool_calls,
                snapshot=snapshot,
                checkpoint_state=checkpoint_state,
                reason=reason,
                now=now,
                run_status=run_status,
            )
        )

    def finish_run(self, user_id: str, run_id: str, finish: FinishRun) -> RunRecord:
        return self._do(lambda u: run_ops.finish_run(u, user_id, run_id, finish, retention=self.delta_retention_ms))

    def request_approval(
        self,
        user_id: str,
        run_id: str,
        *,
        approvals: Sequence[ApprovalRecord],
        tool_calls: Sequence[ToolCallRecord],
        snapshot: SnapshotUpdate,
        checkpoint_state: dict[str, Any],
        event: NewEvent | None,
        now: int,
    ) -> CheckpointRecord:
        return self._do(
            lambda u: approval_ops.request_approval(
                u,
                user_id,
                run_id,
                approvals=approvals,
                tool_calls=tool_calls,
                snapshot=snapshot,
                checkpoint_state=checkpoint_state,
                event=event,
                now=now,
                retention=self.delta_retention_ms,
            )
        )

    def attach_task_token(self, user_id: str, approval_id: str, task_token: str) -> ApprovalRecord:
        return self._do(lambda u: approval_ops.attach_task_token(u, user_id, approval_id, task_token))

    def decide_approval(
        self,
        user_id: str,
        approval_id: str,
        *,
        approved: bool,
        reason: str | None,
        now: int,
        decided_by: str | None = None,
        trace: str | None = None,
    ) -> DecisionResult:
        result, gone = self._do(
            lambda u: approval_ops.decide_approval(
                u, user_id, approval_id, approved=approved, reason=reason, now=now, decided_by=decided_by, trace=trace
            )
        )
        if gone is not None:
            raise gone
        assert result is not None
        return result

    def settle_approval(self, user_id: str, approval_id: str, *, now: int) -> ApprovalRecord:
        return self._do(lambda u: approval_ops.settle_approval(u, user_id, approval_id, now=now))

    def mark_notified(self, user_id: str, run_id: str, key: str) -> bool:
        return self._do(lambda u: run_ops.mark_notified(u, user_id, run_id, key))

    def expire_approval(self, user_id: str, approval_id: str, *, now: int) -> ApprovalRecord:
        return self._do(lambda u: approval_ops.expire_approval(u, user_id, approval_id, now=now))

    def claim_tool_call(
        self,
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
        return self._do(
            lambda u: tool_call_ops.claim_tool_call(
                u,
                user_id,
                run_id,
                tool_call_id,
                tool_name=tool_name,
                input=input,
                step_index=step_index,
                claim_token=claim_token,
                now=now,
            )
        )

    def record_tool_outcome(
        self,
        user_id: str,
        run_id: str,
        tool_call_id: str,
        *,
        claim_token: str,
        output: JsonValue = None,
        error: dict[str, JsonValue] | None = None,
        now: int,
    ) -> ToolCallRecord:
        return self._do(
            lambda u: tool_call_ops.record_tool_outcome(
                u, user_id, run_id, tool_call_id, claim_token=claim_token, output=output, error=error, now=now
            )
        )

    def start_tool_call(
        self, user_id: str, run_id: str, tool_call_id: str, *, claim_token: str, now: int
    ) -> ToolCallRecord:
        return self._do(
            lambda u: tool_call_ops.start_tool_call(u, user_id, run_id, tool_call_id, claim_token=claim_token, now=now)
        )

    def answer_tool_call(
        self,
        user_id: str,
        run_id: str,
        tool_call_id: str,
        *,
        output: JsonValue = None,
        error: dict[str, JsonValue] | None = None,
        now: int,
    ) -> ToolCallRecord:
        return self._do(
            lambda u: tool_call_ops.answer_tool_call(
                u, user_id, run_id, tool_call_id, output=output, error=error, now=now
            )
        )

    def save_checkpoint(
        self, user_id: str, run_id: str, *, state: dict[str, Any], reason: CheckpointReason, now: int
    ) -> CheckpointRecord:
        return self._do(lambda u: run_ops.save_checkpoint(u, user_id, run_id, state=state, reason=reason, now=now))

    def attach_run_token(self, user_id: str, run_id: str, task_token: str) -> RunRecord:
        return self._do(lambda u: run_ops.attach_run_token(u, user_id, run_id, task_token))

    def append_events(self, user_id: str, run_id: str, events: Sequence[NewEvent], *, now: int) -> list[EventRecord]:
        return self._do(
            lambda u: run_ops.append_events(u, user_id, run_id, events, now=now, retention=self.delta_retention_ms)
        )

    def put_artifact(self, record: ArtifactRecord) -> ArtifactRecord:
        """Record an artifact once: a second put of the same id returns the first record."""

        def put(unit: Unit) -> ArtifactRecord:
            existing = unit.artifact(record.user_id, record.artifact_id)
            if existing is not None:
                return existing
            unit.put(record, new=True)
            return record

        return self._do(put)
