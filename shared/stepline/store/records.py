"""The records the store keeps: nine kinds of record, with their state sets and transitions.

Plain pydantic models (snake_case); each backend maps them to its own items. Times are epoch
milliseconds. A status moves only along `TRANSITIONS`; a terminal status is never left.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from ..protocol._request_rules import ID_PATTERN

__all__ = [
    "TERMINAL",
    "TRANSITIONS",
    "WAITING_RUN",
    "ApprovalRecord",
    "ApprovalStatus",
    "ArtifactRecord",
    "CheckpointReason",
    "LIVE_MESSAGE_STATUS",
    "CheckpointRecord",
    "ConversationRecord",
    "ConversationStatus",
    "EventRecord",
    "InboxEntry",
    "Interrupt",
    "MessageRecord",
    "MessageStatus",
    "NewEvent",
    "RunRecord",
    "RunStatus",
    "StagedSteers",
    "SteerBuilder",
    "StepRecordRow",
    "StepStatus",
    "ToolCallRecord",
    "ToolCallStatus",
    "check_id",
]

ConversationStatus = Literal["idle", "running", "waiting_approval", "waiting_user", "failed"]
MessageStatus = Literal["streaming", "waiting", "completed", "failed", "aborted", "interrupted"]
RunStatus = Literal[
    "queued", "running", "waiting_approval", "waiting_user", "completed", "failed", "aborted", "interrupted"
]
StepStatus = Literal["running", "completed", "failed", "interrupted"]
ToolCallStatus = Literal["pending", "running", "awaiting_approval", "success", "denied", "expired", "error"]
ApprovalStatus = Literal["requested", "processing", "approved", "denied", "expired"]
Interrupt = tuple[str, str]
"""`(run id, stop reason)`: the run an interrupting message stops (`Store.enqueue_message`)."""
CheckpointReason = Literal["step_end", "approval_wait", "tool_end", "interrupted", "compaction"]

TERMINAL: Final[dict[str, frozenset[str]]] = {
    "message": frozenset({"completed", "failed", "aborted"}),
    "run": frozenset({"completed", "failed", "aborted"}),
    "step": frozenset({"completed", "failed"}),
    "tool_call": frozenset({"success", "denied", "expired", "error"}),
    "approval": frozenset({"approved", "denied", "expired"}),
}

WAITING_RUN: Final[frozenset[str]] = frozenset({"waiting_approval", "waiting_user"})
"""A run's statuses while it waits for a person (an approval, an answer)."""

LIVE_MESSAGE_STATUS: Final[dict[str, MessageStatus]] = {
    "queued": "streaming",
    "running": "streaming",
    "waiting_approval": "waiting",
    "waiting_user": "waiting",
}
"""The assistant message's status while its run lives, by the run's status: one vocabulary.

The conversation says which wait (`waiting_approval`, `waiting_user`); the message says `waiting`
for either. A run that waits
for an approval or for the user's answer moves its message to `waiting` in the same transaction,
and back to `streaming` when it runs again; the run's end makes the message terminal."""

TRANSITIONS: Final[dict[str, dict[str, frozenset[str]]]] = {
    "run": {
        "queued": frozenset({"running", "failed", "aborted"}),
        "running": frozenset(
            {"running", "waiting_approval", "waiting_user", "completed", "failed", "aborted", "interrupted"}
        ),
        "waiting_approval": frozenset({"running", "waiting_approval", "completed", "failed", "aborted"}),
        "waiting_user": frozenset({"running", "waiting_user", "completed", "failed", "aborted"}),
        "interrupted": frozenset({"running", "failed", "aborted"}),
    },
    "approval": {
        "requested": frozenset({"processing", "expired"}),
        "processing": frozenset({"approved", "denied"}),
    },
    "tool_call": {
        "pending": frozenset({"running", "awaiting_approval", "denied", "error", "expired"}),
        "awaiting_approval": frozenset({"pending", "running", "denied", "expired", "error"}),
        "running": frozenset({"success", "error"}),
    },
}
"""Allowed moves; a status missing from a table's keys has no way out."""

_ID = ID_PATTERN


def check_id(value: str, what: str) -> str:
    """Ids become key material: no `#`, no whitespace, bounded length."""
    if not _ID.match(value):
        raise ValueError(f"invalid {what}: use 1-200 characters from A-Z a-z 0-9 . _ : @ + = -")
    return value


class _Record(BaseModel):
    # Built on first use, not at import (cold start): most functions touch a few record types.
    model_config = ConfigDict(extra="forbid", frozen=False, defer_build=True)


class InboxEntry(_Record):
    """A user message that arrived while a run worked, not yet in the conversation (`runtime.inbox`).

    `queue`: answered by run `run_id` (its ids fixed when it was queued) once the active run ends.
    `steer`: delivered to the running run `run_id` at its next step boundary; if that run ends first,
    it is answered like a queued one, by run `next_run_id`.
    """

    message_id: str
    mode: Literal["queue", "steer"]
    message: dict[str, JsonValue]
    """The user message (UIMessage wire form)."""
    run_id: str
    assistant_message_id: str
    next_run_id: str | None = None
    context: dict[str, JsonValue] = Field(default_factory=dict[str, JsonValue])
    """The request's `{"claims", "body"}`, the context of the run that answers a queued message."""
    queued_at: int
    branch: bool = False
    """An edit: the message starts a branch after `branch_after` (None: as the new first message)."""
    branch_after: str | None = None


class ConversationRecord(_Record):
    """A conversation."""

    user_id: str
    conversation_id: str
    title: str = ""
    status: ConversationStatus = "idle"
    active_run_id: str | None = None
    agent: str | None = None
    """The agent that answers this conversation, fixed by its first turn (None: the default)."""
    last_message_seq: int = 0
    inbox: list[InboxEntry] = Field(default_factory=list[InboxEntry])
    """Messages queued behind, or steering, the active run, in the order they came."""
    version: int = 0
    created_at: int
    updated_at: int


class MessageRecord(_Record):
    """A user or assistant message; `parts` are the rendering truth."""

    user_id: str
    conversation_id: str
    message_id: str
    seq: int
    role: Literal["user", "assistant"]
    status: MessageStatus = "completed"
    run_id: str | None = None
    parent_message_id: str | None = None
    parent_recorded: bool = False
    """Written with branches: `parent_message_id` is its parent (False: an older record, whose
    missing parent is read from the order, `store.branches.parents`)."""
    parts: list[dict[str, JsonValue]] = Field(default_factory=list[dict[str, JsonValue]])
    metadata: dict[str, JsonValue] | None = None
    content: str = ""
    """The visible text, for search, summaries and old clients (parts are the rendering truth)."""
    error: dict[str, JsonValue] | None = None
    snapshot_seq: int = 0
    """The last event seq this parts snapshot includes (a reconnecting client replays after it)."""
    created_at: int
    completed_at: int | None = None
    superseded_by: str | None = None
    """The run that regenerated this answer: kept, but no longer part of the conversation."""


class RunRecord(_Record):
    """One agent loop run."""

    user_id: str
    run_id: str
    conversation_id: str
    request_message_id: str
    assistant_message_id: str
    assistant_message_seq: int
    trigger: Literal["web", "extension", "feishu", "automation", "continuation"] = "web"
    provider: str = ""
    model: str = ""
    agent: str | None = None
    agent_fingerprint: str | None = None
    """`Agent.fingerprint()` when the run started (a later step may run a redeployed definition)."""
    context: dict[str, JsonValue] | None = None
    """The run context fixed at its start: `{"claims": {...}, "body": {...}}` (see `RunContext`)."""
    status: RunStatus = "queued"
    active_step_index: int = 0
    last_event_seq: int = 0
    checkpoint_seq: int = 0
    finish_reason: str | None = None
    usage: dict[str, JsonValue] | None = None
    error: dict[str, JsonValue] | None = None
    cancel_reason: str | None = None
    started_at: int
    ended_at: int | None = None
    heartbeat_at: int | None = None
    task_token: str | None = None
    """Stepline extension: the Step Functions token of a wait for client input (questions)."""
    version: int = 0
    trace: str | None = None
    """Stepline extension: the run's trace context, a W3C `traceparent` naming its root span
    (`stepline.tracing.context`); every function invocation and API request of the run joins it."""
    notified: list[str] = Field(default_factory=list[str])
    """Stepline extension: the lifecycle notifications already published for this run (their keys,
    e.g. `approval:<id>`, `end`), so a retried worker never publishes one twice."""


class StepRecordRow(_Record):
    """One model step of a run."""

    user_id: str
    run_id: str
    step_index: int
    status: StepStatus = "completed"
    finish_reason: str | None = None
    usage: dict[str, JsonValue] | None = None
    request_digest: str | None = None
    response_messages: list[dict[str, JsonValue]] = Field(default_factory=list[dict[str, JsonValue]])
    """The step's response messages, when nothing else records them: empty on a record with a
    `response` (the inspector's summary, the tool-call rows and the next step's request `plus`
    hold the same; the checkpoint keeps them for replay and resume)."""
    provider_metadata: dict[str, JsonValue] | None = None
    started_at: int
    ended_at: int | None = None
    request: dict[str, JsonValue] | None = None
    """Stepline extension, for the run inspector: the model request as sent (instructions,
    messages, tools with their schemas, settings, provider options), masked and sized
    (`loop.request_view`); what step n sent too is stored as a reference to it (`{"sameAs": n,
    ...}`, `runtime.inspection`). None when the deployment records none."""
    response: dict[str, JsonValue] | None = None
    """The answer summarised: text, reasoning, tool calls, finish reason, tokens (masked)."""
    attempts: list[dict[str, JsonValue]] = Field(default_factory=list[dict[str, JsonValue]])
    """Each model call attempt: `startedAt`, `firstOutputAt`, `endedAt` (ms), `error`, `retryReason`."""
    queued_at: int | None = None
    """When the step became due (the previous step's end, or the decision that resumed the run)."""


class ToolCallRecord(_Record):
    """One tool call and its outcome."""

    user_id: str
    run_id: str
    tool_call_id: str
    tool_name: str
    step_index: int = 0
    status: ToolCallStatus = "pending"
    input: JsonValue = None
    output: JsonValue = None
    output_text: str | None = None
    error: dict[str, JsonValue] | None = None
    claim_token: str | None = None
    started_at: int | None = None
    ended_at: int | None = None


class ApprovalRecord(_Record):
    """One approval request and its decision."""

    user_id: str
    approval_id: str
    run_id: str
    tool_call_id: str
    tool_name: str
    input: JsonValue = None
    signature: str | None = None
    status: ApprovalStatus = "requested"
    decision: Literal["approved", "denied"] | None = None
    reason: str | None = None
    claim_token: str | None = None
    task_token: str | None = None
    requested_at: int
    decided_at: int | None = None
    decided_by: str | None = None
    """Who decided: the deciding user's id, or `link` for a signed approval link."""
    decision_trace: str | None = None
    """Stepline extension: the deciding request's span (a `traceparent`); the resumed step links to it."""
    expires_at: int | None = None
    expired_reason: str | None = None
    """Why an expired approval expired: its timeout, or the reason its run was ended (`new_user_message`)."""
    budget_limit: str | None = None
    """Stepline extension: a budget request's limit (`user_day_usd`); None for a tool call's approval."""
    checkpoint_seq: int = 0


class CheckpointRecord(_Record):
    """A resumable snapshot of the loop state."""

    user_id: str
    run_id: str
    seq: int
    step_index: int
    reason: CheckpointReason = "step_end"
    state: dict[str, Any]
    """The loop's `LoopState` in wire form."""
    last_event_seq: int = 0
    created_at: int


class NewEvent(_Record):
    """An event to append; the store gives it its seq."""

    type: str
    chunks: list[dict[str, JsonValue]]
    durable: bool = True
    """Boundary events are durable; delta batches are not (they expire after the run)."""


class EventRecord(_Record):
    """One stored event of a run's log."""

    user_id: str
    run_id: str
    seq: int
    type: str
    chunks: list[dict[str, JsonValue]]
    durable: bool = True
    created_at: int
    expires_at: int | None = None


class ArtifactRecord(_Record):
    """A file, document, prototype, URL or task a run produced."""

    user_id: str
    artifact_id: str
    conversation_id: str
    message_id: str
    run_id: str
    tool_call_id: str | None = None
    type: Literal["file", "feishu_document", "prototype", "url", "task"] = "file"
    name: str = ""
    uri: str | None = None
    storage_key: str | None = None
    token: str | None = None
    media_type: str | None = None
    size: int | None = None
    metadata: dict[str, JsonValue] | None = None
    created_at: int


SteerBuilder = Callable[[Sequence[InboxEntry]], tuple[dict[str, object], list[NewEvent]]]
"""`(entries) -> (checkpoint state, events)`: a run's state with the steering messages in it, and how they show."""


@dataclass(frozen=True, slots=True)
class StagedSteers:
    """What `take_steers` moved into a run: the messages, the checkpoint holding them, their events."""

    entries: list[InboxEntry]
    checkpoint: CheckpointRecord
    events: list[EventRecord]
