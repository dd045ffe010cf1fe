"""The store port: every durable operation, one method each (docs/data-model.md, "Transaction boundaries").

Every method takes the owning user first; an id of another user's item is simply not found.
Each method is one atomic unit (one DynamoDB transaction, or one critical section in memory):
it either happens whole or not at all, and it refuses to move a terminal state.

Backends: `stepline.store.memory.MemoryStore` (tests), `stepline.store.sqlite.SqliteStore` (the local
runtime's data folder) and `stepline.aws.dynamodb.DynamoStore`; `tests/contract/` runs against all three.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

from pydantic import JsonValue

from .branches import BranchFrom
from .records import (
    ApprovalRecord,
    ArtifactRecord,
    CheckpointReason,
    CheckpointRecord,
    ConversationRecord,
    EventRecord,
    InboxEntry,
    Interrupt,
    MessageRecord,
    NewEvent,
    RunRecord,
    RunStatus,
    StagedSteers,
    SteerBuilder,
    StepRecordRow,
    ToolCallRecord,
)
from .results import ClaimResult, DecisionResult
from .run_slots import RunSlots
from .seed import RunSeed
from .usage_counters import UsageCounters

__all__ = [
    "FinishRun",
    "Page",
    "SnapshotUpdate",
    "Store",
    "TurnStart",
    "TurnStarted",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a listing; `cursor` continues it (None at the end)."""

    items: list[T]
    cursor: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnStart:
    """What starting a turn writes (spec: user message, assistant placeholder, run, active run)."""

    conversation_id: str
    run_id: str
    assistant_message_id: str
    user_message: dict[str, JsonValue] | None
    """The new user message (UIMessage wire form), or None when continuing without one."""
    trigger: Literal["web", "extension", "feishu", "automation", "continuation"] = "web"
    provider: str = ""
    model: str = ""
    agent: str | None = None
    """The conversation's agent: set on a new conversation, and must match an existing one's."""
    agent_fingerprint: str | None = None
    context: dict[str, JsonValue] | None = None
    title: str | None = None
    assistant_metadata: dict[str, JsonValue] | None = None
    branch: BranchFrom | None = None
    """A turn that starts a branch (an edit, a regeneration): what it follows (`store.branches`)."""
    trace: str | None = None
    """The run's trace context (a W3C `traceparent`), stored on the run (`RunRecord.trace`)."""
    dequeue: str | None = None
    """The inbox entry (its message id) this turn answers: removed in the same write (`Conflict` if gone)."""
    seed: RunSeed | None = None
    """A fork's: the state, log and decisions it starts from, written in the same unit (`store.seed`)."""
    now: int


@dataclass(frozen=True, slots=True)
class TurnStarted:
    """What `start_turn` wrote."""

    conversation: ConversationRecord
    run: RunRecord
    user_message: MessageRecord | None
    assistant_message: MessageRecord


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotUpdate:
    """The assistant message's parts snapshot and the event seq it includes."""

    parts: list[dict[str, JsonValue]]
    metadata: dict[str, JsonValue] | None
    snapshot_seq: int


@dataclass(frozen=True, slots=True, kw_only=True)
class FinishRun:
    """A run's end: completed, failed or aborted (terminal; never undone)."""

    status: Literal["completed", "failed", "aborted"]
    snapshot: SnapshotUpdate
    finish_reason: str | None = None
    usage: dict[str, JsonValue] | None = None
    error: dict[str, JsonValue] | None = None
    cancel_reason: str | None = None
    event: NewEvent | None = None
    now: int
    expire_approvals: tuple[str, ...] = ()
    """Approvals the final snapshot shows denied by the end (its run's or a sub-agent's): each must
    still be requested, else `ConcurrentUpdate` (decided meanwhile: build the end again), and expires
    in the same write."""


class Store(Protocol):
    """Durable state of conversations and runs."""

    @property
    def counters(self) -> UsageCounters: ...  # usage per user/tenant/period, atomic (`store.usage_counters`)

    @property
    def slots(self) -> RunSlots: ...  # working-run leases per user and tenant (`store.run_slots`)

    # -- conversations and messages -------------------------------------------------------------

    def start_turn(self, user_id: str, turn: TurnStart) -> TurnStarted:
        """One atomic write; refuses a second active run in the conversation (`ActiveRunExists`)."""
        ...

    def get_conversation(self, user_id: str, conversation_id: str) -> ConversationRecord: ...

    def list_conversations(
        self, user_id: str, *, limit: int = 20, cursor: str | None = None
    ) -> Page[ConversationRecord]:
        """Most recently updated first."""
        ...

    def list_messages(
        self, user_id: str, conversation_id: str, *, after_seq: int = 0, limit: int = 100
    ) -> Page[MessageRecord]:
        """By seq, ascending."""
        ...

    def get_message(self, user_id: str, conversation_id: str, message_id: str) -> MessageRecord: ...

    def delete_conversation(self, user_id: str, conversation_id: str) -> None:
        """Deletes the conversation and its messages; refused while a run is active."""
        ...

    def switch_branch(self, user_id: str, conversation_id: str, message_id: str, *, now: int) -> ConversationRecord:
        """Make the branch through the message the active one (`operations.branches`)."""
        ...

    def enqueue_message(
        self, user_id: str, conversation_id: str, entry: InboxEntry, *, now: int, interrupt: Interrupt | None = None
    ) -> InboxEntry:
        """Queue or steer a message behind the active run; `interrupt`: first, that run marked to stop, in one write."""
        ...

    def cancel_queued(self, user_id: str, conversation_id: str, message_id: str, *, now: int) -> InboxEntry:
        """Remove a message still waiting in the inbox (`NotFound` once answered)."""
        ...

    def take_steers(self, user_id: str, run_id: str, build: SteerBuilder, *, now: int) -> StagedSteers | None:
        """The run's steering messages into its checkpoint and log, out of the inbox, at once."""
        ...

    # -- runs --------------------------------------------------------------------------------------

    def get_run(self, user_id: str, run_id: str) -> RunRecord: ...

    def mark_running(self, user_id: str, run_id: str, *, now: int) -> RunRecord:
        """queued/waiting/interrupted → running, with a heartbeat; refused on a terminal run."""
        ...

    def heartbeat(self, user_id: str, run_id: str, *, now: int) -> None: ...

    def request_abort(self, user_id: str, run_id: str, *, reason: str) -> RunRecord:
        """Mark a live run to be stopped (`cancel_reason`); the run stays live until it is ended.

        A one-item write that always wins quickly, where ending the run (`finish_run`) can lose the
        race to a step that keeps appending: the step sees the mark and stops, then the end goes
        through. A terminal run is returned unchanged.
        """
        ...

    def save_snapshot(self, user_id: str, run_id: str, snapshot: SnapshotUpdate, *, now: int) -> None:
        """Throttled parts snapshot while streaming (never moves a terminal message)."""
        ...

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
        """Step end: step, tool-call upserts, parts snapshot and checkpoint (and a new run status), atomically."""
        ...

    def latest_checkpoint(self, user_id: str, run_id: str) -> CheckpointRecord | None: ...

    def checkpoint_for_step(self, user_id: str, run_id: str, step: int) -> CheckpointRecord | None:
        """The last checkpoint written before the run's step `step` began (None: the run never got there)."""
        ...

    def finish_run(self, user_id: str, run_id: str, finish: FinishRun) -> RunRecord:
        """Completion, failure or abort; clears the conversation's active run.

        Closes only running steps and tool calls (successful tools and decided approvals keep their state).
        """
        ...

    # -- approvals -----------------------------------------------------------------------------------

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
        """Tool calls awaiting approval, approvals, checkpoint, run waiting_approval and the event."""
        ...

    def attach_task_token(self, user_id: str, approval_id: str, task_token: str) -> ApprovalRecord:
        """Store the Step Functions task token (only while `requested`)."""
        ...

    def get_approval(self, user_id: str, approval_id: str) -> ApprovalRecord: ...

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
        """Compare-and-set `requested → processing` with the decision (and who made it).

        `trace` is the deciding request's span (a `traceparent`), which the step it resumes links to.

        The same decision again returns the stored approval (`first=False`); a different one
        raises `DecisionConflict`; an expired approval raises `Gone`.
        """
        ...

    def settle_approval(self, user_id: str, approval_id: str, *, now: int) -> ApprovalRecord:
        """`processing → approved/denied` once the continuation has been started (idempotent)."""
        ...

    def expire_approval(self, user_id: str, approval_id: str, *, now: int) -> ApprovalRecord:
        """`requested → expired` (its tool call too); a decided approval is left as it is."""
        ...

    def pending_approvals(self, user_id: str) -> list[ApprovalRecord]: ...

    def mark_notified(self, user_id: str, run_id: str, key: str) -> bool:
        """Record that the run's notification `key` was published; False when it already was."""
        ...

    # -- tool calls ----------------------------------------------------------------------------------

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
        """Exactly-once execution: only one caller ever gets `claimed` for a tool call.

        The row is created by the claim when the step has not saved it yet.
        """
        ...

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
        """`running → success/error` by the claim holder only."""
        ...

    def list_tool_calls(self, user_id: str, run_id: str) -> list[ToolCallRecord]: ...

    def list_steps(self, user_id: str, run_id: str, *, from_step: int = 0) -> list[StepRecordRow]:
        """The run's step records from `from_step` on, in step order (`NotFound`: not this user's run)."""
        ...

    def start_tool_call(
        self, user_id: str, run_id: str, tool_call_id: str, *, claim_token: str, now: int
    ) -> ToolCallRecord:
        """The claim holder starts the body; until then a dead holder's claim can be taken over."""
        ...

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
        """The client's output for a client-side tool call (idempotent for the same answer)."""
        ...

    def save_checkpoint(
        self, user_id: str, run_id: str, *, state: dict[str, Any], reason: CheckpointReason, now: int
    ) -> CheckpointRecord:
        """A checkpoint without a step (a run's initial state)."""
        ...

    def attach_run_token(self, user_id: str, run_id: str, task_token: str) -> RunRecord:
        """The task token of a run waiting for client input."""
        ...

    # -- events ----------------------------------------------------------------------------------------

    def append_events(self, user_id: str, run_id: str, events: Sequence[NewEvent], *, now: int) -> list[EventRecord]:
        """Give each event the next seq (no gap, no duplicate, even with concurrent writers)."""
        ...

    def events_after(
        self, user_id: str, run_id: str, after_seq: int, *, limit: int | None = None, now: int
    ) -> list[EventRecord]:
        """Events with seq > after_seq, in order; expired delta batches are left out."""
        ...

    # -- artifacts -------------------------------------------------------------------------------------

    def put_artifact(self, record: ArtifactRecord) -> ArtifactRecord:
        """Insert, or return the existing artifact with the same id (dedup)."""
        ...

    def get_artifact(self, user_id: str, artifact_id: str) -> ArtifactRecord: ...

    def list_message_artifacts(self, user_id: str, message_id: str) -> list[ArtifactRecord]: ...

    # -- system sweeps -------------------------------------------------------------------------------

    def stale_runs(self, *, heartbeat_before: int, limit: int = 100) -> list[tuple[str, str]]:
        """`(user_id, run_id)` of non-terminal runs whose heartbeat is older than the cutoff."""
        ...

    def expiring_approvals(self, *, before: int, limit: int = 100) -> list[tuple[str, str]]:
        """`(user_id, approval_id)` of requested approvals expiring before the cutoff."""
        ...
