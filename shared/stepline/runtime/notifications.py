"""Run lifecycle notifications: what a team routes to Slack, email or a ticket (EventBridge on AWS).

One event per transition: an approval requested (with its signed decision link when links are
configured), a question asked (a client-side tool waits for an answer), a run completed, failed or
aborted. Each is published by the code that committed the transition, right after the commit, and
then recorded on the run (`Store.mark_notified`); a retried worker that finds the transition
already committed publishes it only if that record is missing. So a crash between the commit and
the publish delays the event to the retry instead of losing it; a crash between the publish and
its record, or two announcers of one transition at once (check, publish, record is not atomic),
can repeat it — with the same `eventId`, for a consumer to drop.

Events hold ids, statuses and times — never a tool's input or output, a message's text, an error
message (it may quote the user) or a secret. The decision link is a capability meant for the
event's consumer: whoever can read the bus can decide the approval until it expires.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, JsonValue

from ..store.errors import NotFound
from ..store.ports import Store
from ..store.records import ApprovalRecord, RunRecord
from .approval_links import ApprovalLinks, link_path

__all__ = [
    "SOURCE",
    "DetailType",
    "MemoryNotifier",
    "NoNotifier",
    "Notifier",
    "RunEvent",
    "announce",
    "approval_requested",
    "question_asked",
    "run_ended",
]

_LOG = logging.getLogger("stepline.runtime")
SOURCE = "stepline"
"""The EventBridge `source` of every event (a rule matches on it)."""
DetailType = Literal["Approval Requested", "Question Asked", "Run Completed", "Run Failed", "Run Aborted"]
_END_TYPES: dict[str, DetailType] = {"completed": "Run Completed", "failed": "Run Failed", "aborted": "Run Aborted"}


class RunEvent(BaseModel):
    """One lifecycle event: EventBridge's `detail-type` and `detail` (camelCase, ids only)."""

    model_config = ConfigDict(frozen=True)

    detail_type: DetailType
    detail: dict[str, JsonValue]


class Notifier(Protocol):
    """Publishes lifecycle events (raises when the publish failed, so the caller's retry repeats it)."""

    def publish(self, event: RunEvent) -> None: ...


class NoNotifier:
    """Publishes nothing (no bus configured)."""

    def publish(self, event: RunEvent) -> None:
        del event


@dataclass
class MemoryNotifier:
    """Keeps the events in memory (`stepline dev` without a bus, and tests)."""

    events: list[RunEvent] = field(default_factory=list[RunEvent])

    def publish(self, event: RunEvent) -> None:
        self.events.append(event)


def _base(run: RunRecord, key: str) -> dict[str, JsonValue]:
    return {
        "eventId": f"{run.run_id}/{key}",
        "userId": run.user_id,
        "conversationId": run.conversation_id,
        "runId": run.run_id,
        "messageId": run.assistant_message_id,
    }


def approval_requested(run: RunRecord, approval: ApprovalRecord, links: ApprovalLinks | None) -> tuple[str, RunEvent]:
    """The key and event of one requested approval (the tool's name, never its input)."""
    key = f"approval:{approval.approval_id}"
    detail = _base(run, key) | {
        "approvalId": approval.approval_id,
        "toolCallId": approval.tool_call_id,
        "toolName": approval.tool_name,
        "requestedAt": approval.requested_at,
        "expiresAt": approval.expires_at,
    }
    if links is not None and approval.expires_at is not None:
        detail["decision"] = {
            "method": "POST",
            "path": link_path(approval.approval_id),
            "token": links.token_for(approval),
            "expiresAt": approval.expires_at,
        }
    return key, RunEvent(detail_type="Approval Requested", detail=detail)


def question_asked(run: RunRecord, tool_calls: Sequence[tuple[str, str]]) -> tuple[str, RunEvent]:
    """The key and event of a wait for client-side tool results (`(tool call id, tool name)` pairs)."""
    key = f"question:{tool_calls[0][0]}"
    calls: list[JsonValue] = [{"toolCallId": call_id, "toolName": name} for call_id, name in tool_calls]
    detail = _base(run, key)
    detail["toolCalls"] = calls
    return key, RunEvent(detail_type="Question Asked", detail=detail)


def run_ended(run: RunRecord) -> tuple[str, RunEvent] | None:
    """The key and event of an ended run (None while it has not ended)."""
    detail_type = _END_TYPES.get(run.status)
    if detail_type is None:
        return None
    detail = _base(run, "end") | {"status": run.status, "endedAt": run.ended_at}
    if run.finish_reason is not None:
        detail["finishReason"] = run.finish_reason
    if run.status == "aborted" and run.cancel_reason is not None:
        detail["reason"] = run.cancel_reason
    if run.status == "failed" and run.error is not None and isinstance(run.error.get("code"), str):
        detail["errorCode"] = run.error["code"]  # the code only: a message may quote the user
    return "end", RunEvent(detail_type=detail_type, detail=detail)


def announce(store: Store, notifier: Notifier, run: RunRecord, keyed: tuple[str, RunEvent]) -> bool:
    """Publish `keyed` unless the run records it as published, then record it; True when published."""
    key, event = keyed
    try:
        if key in store.get_run(run.user_id, run.run_id).notified:
            return False
    except NotFound:
        return False
    notifier.publish(event)
    if not store.mark_notified(run.user_id, run.run_id, key):
        _LOG.info("notification %s of run %s was published twice", key, run.run_id)
    return True
