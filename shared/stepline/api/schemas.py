"""The API's request and response bodies (camelCase on the wire, like the AI SDK)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, cast

from fastapi import Path
from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.alias_generators import to_camel

from ..store.branches import branch_points
from ..store.records import ApprovalRecord, ConversationRecord, MessageRecord

__all__ = [
    "AbortResult",
    "ApprovalDecisionBody",
    "ApprovalView",
    "BranchPointView",
    "BranchSwitchBody",
    "ChatRequestBody",
    "ConversationDetail",
    "ConversationList",
    "ConversationSummary",
    "ErrorBody",
    "Health",
    "Id",
    "WaitingMessage",
    "WebhookDecisionBody",
    "approval_view",
    "conversation_detail",
    "conversation_summary",
]

Id = Annotated[str, Path(pattern=r"^[A-Za-z0-9._:@+=-]{1,200}$")]
"""A path id: the characters the store accepts in keys."""


class _Body(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class ChatRequestBody(_Body):
    """What `DefaultChatTransport` POSTs (documentation; the route validates it as the SDK does)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    id: str = Field(description="The chat id (Chat.id); a new id starts a new conversation")
    messages: list[dict[str, Any]] = Field(description="The client's UIMessages; only the last one is used")
    trigger: Literal["submit-message", "regenerate-message"]
    message_id: str | None = Field(default=None, description="The message to continue, edit or regenerate")


class ErrorDetail(_Body):
    """What was wrong: `messages[0].parts[1].text: required field is missing`."""

    status: int
    message: str


class ErrorBody(_Body):
    """Every error answer (`stepline.api.errors.error_body`)."""

    error: ErrorDetail


class Health(_Body):
    """`GET /api/health`."""

    status: Literal["ok"]
    model: str


class ApprovalDecisionBody(_Body):
    """The approval webhook's body."""

    approved: bool = Field(strict=True)
    reason: str | None = Field(default=None, max_length=2000)


class WebhookDecisionBody(ApprovalDecisionBody):
    """The webhook's body: an admin may name the user whose budget request it decides."""

    user_id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9._:@+=-]{1,200}$")
    """The run's user (an admin deciding another user's budget request); default: the caller."""


class ApprovalView(_Body):
    """An approval as the webhook answers it."""

    approval_id: str
    run_id: str
    tool_call_id: str
    tool_name: str
    status: str
    decision: Literal["approved", "denied"] | None
    reason: str | None
    requested_at: int
    expires_at: int | None
    decided_by: str | None = None
    """The deciding user's id, or `link` (a signed approval link); null while undecided."""
    expired_reason: str | None = None
    """Why an expired approval expired: `timeout`, or its run's stop reason (`new_user_message`)."""
    budget_limit: str | None = None
    """A budget request's limit (`user_day_usd`); null for a tool call's approval."""


def approval_view(record: ApprovalRecord) -> ApprovalView:
    """Only stored fields: deciding the same way again answers a byte-identical body."""
    return ApprovalView.model_validate(record, from_attributes=True)


class AbortResult(_Body):
    """The run's status after an abort (a run that had already ended keeps its status)."""

    run_id: str
    status: str


class ConversationSummary(_Body):
    """A conversation in the list."""

    id: str
    title: str
    status: str
    active_run_id: str | None
    agent: str | None = None
    """The agent answering the conversation (None: one started before agents were recorded)."""
    created_at: int
    updated_at: int


class ConversationList(_Body):
    """One page of conversations, most recently updated first."""

    conversations: list[ConversationSummary]
    next_cursor: str | None


class StoredMessage(_Body):
    """A stored message as a UIMessage (`id`, `role`, `parts`, `metadata`) plus its state."""

    id: str
    role: Literal["user", "assistant"]
    parts: list[dict[str, JsonValue]]
    metadata: dict[str, JsonValue] | None = Field(default=None, exclude_if=lambda value: value is None)
    """Absent when there is none, as in the client's own UIMessage (never null)."""
    status: str
    run_id: str | None = None


class WaitingMessage(_Body):
    """A user message sent while a run worked, not yet answered: `queue` (its own run next) or `steer`."""

    id: str
    mode: Literal["queue", "steer"]
    parts: list[dict[str, JsonValue]]
    run_id: str
    """The run that will answer it (queued) or that it steers."""
    queued_at: int


class BranchPointView(_Body):
    """A branching point of the active branch: the messages that follow `parentId` (null: the first), oldest first."""

    parent_id: str | None
    sibling_ids: list[str]
    active_id: str
    """The sibling on the active branch (one of `messages`)."""


class BranchSwitchBody(_Body):
    """`POST /api/conversations/{id}/branch`: make the branch through `messageId` the active one."""

    message_id: str = Field(pattern=r"^[A-Za-z0-9._:@+=-]{1,200}$")


class ConversationDetail(ConversationSummary):
    """A conversation with the messages of its active branch, oldest first."""

    messages: list[StoredMessage]
    branches: list[BranchPointView] = Field(default_factory=list[BranchPointView])
    """Every branching point on the active branch, in its order (an edit or a regeneration made each)."""
    waiting: list[WaitingMessage] = Field(default_factory=list[WaitingMessage])
    """The messages waiting behind (or steering) the active run, in order."""


def conversation_summary(record: ConversationRecord) -> ConversationSummary:
    """The list entry of a conversation."""
    return ConversationSummary(
        id=record.conversation_id,
        title=record.title,
        status=record.status,
        active_run_id=record.active_run_id,
        agent=record.agent,
        created_at=record.created_at,
        updated_at=record.updated_at,
    )


def conversation_detail(record: ConversationRecord, messages: list[MessageRecord]) -> ConversationDetail:
    """A conversation and its messages."""
    summary = conversation_summary(record)
    return ConversationDetail(
        **summary.model_dump(),
        messages=[
            StoredMessage(
                id=m.message_id, role=m.role, parts=m.parts, metadata=m.metadata, status=m.status, run_id=m.run_id
            )
            for m in messages
            if m.superseded_by is None
        ],
        branches=[
            BranchPointView(parent_id=p.parent_id, sibling_ids=p.sibling_ids, active_id=p.active_id)
            for p in branch_points(messages)
        ],
        waiting=[
            WaitingMessage(
                id=e.message_id,
                mode=e.mode,
                parts=cast(list[dict[str, JsonValue]], e.message.get("parts") or []),
                run_id=e.run_id,
                queued_at=e.queued_at,
            )
            for e in record.inbox
        ],
    )
