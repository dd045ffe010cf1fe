"""The buffered routes: the approval webhook, abort, conversations and artifacts."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import RedirectResponse

from ..runtime.budget_wait import is_admin
from ..runtime.child_results import is_child_conversation, shown_status
from ..runtime.ending import abort_run
from ..runtime.inbox import start_after
from ..runtime.waits import decide
from ..store.artifacts import artifact_link
from ..store.errors import ActiveRunExists, InvalidCursor, NotFound
from ..store.workspace import workspace_prefix
from .bodies import CheckedRoute
from .deps import Options, ServicesDep, User
from .errors import ApiError
from .identity import request_claims
from .schemas import (
    AbortResult,
    ApprovalView,
    BranchSwitchBody,
    ConversationDetail,
    ConversationList,
    Id,
    WebhookDecisionBody,
    approval_view,
    conversation_detail,
    conversation_summary,
)

__all__ = ["router"]

router = APIRouter(route_class=CheckedRoute)


@router.post("/api/approvals/{approval_id}", tags=["approvals"])
def decide_approval(
    approval_id: Id, body: WebhookDecisionBody, user_id: User, request: Request, services: ServicesDep
) -> ApprovalView:
    """The approval webhook: decided once; the same decision again returns the same body.

    A budget request of a user or tenant limit needs an admin (403 otherwise); an admin may decide
    another user's budget request by naming its `userId` (for anyone else, or a tool approval: 404).
    """
    admin = is_admin(request_claims(request.app.state.identity, request, user_id), services.admin_claim)
    owner = body.user_id or user_id
    if owner != user_id and (not admin or services.store.get_approval(owner, approval_id).budget_limit is None):
        raise NotFound(approval_id)
    decided_by = user_id if owner != user_id else None
    approval = decide(
        services, owner, approval_id, approved=body.approved, reason=body.reason, decided_by=decided_by, admin=admin
    )
    return approval_view(approval)


@router.post("/api/runs/{run_id}/abort", tags=["runs"])
def abort(run_id: Id, user_id: User, services: ServicesDep) -> AbortResult:
    """Stop a run on purpose (a dropped connection never stops one)."""
    services.store.get_run(user_id, run_id)
    result = abort_run(services, user_id, run_id)
    start_after(services, user_id, run_id)  # a message queued behind the run is answered now
    return AbortResult(run_id=run_id, status=result["status"])


@router.get("/api/conversations", tags=["conversations"])
def conversations(
    user_id: User,
    services: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(max_length=2048, description="`nextCursor` of the page before")] = None,
) -> ConversationList:
    """The user's conversations, most recently updated first; a cursor that is not one given out is a 400."""
    try:
        page = services.store.list_conversations(user_id, limit=limit, cursor=cursor)
    except InvalidCursor as error:
        raise ApiError(400, f"cursor: {error} (pass nextCursor back as it came)") from None
    mine = [c for c in page.items if not is_child_conversation(c.conversation_id)]
    shown = [conversation_summary(shown_status(services, c)) for c in mine]
    return ConversationList(conversations=shown, next_cursor=page.cursor)


@router.get("/api/conversations/{conversation_id}", tags=["conversations"])
def conversation(conversation_id: Id, user_id: User, services: ServicesDep) -> ConversationDetail:
    record = services.store.get_conversation(user_id, conversation_id)
    messages = services.store.list_messages(user_id, conversation_id, limit=10_000).items
    return conversation_detail(shown_status(services, record), messages)


@router.post("/api/conversations/{conversation_id}/branch", tags=["conversations"])
def switch_branch(
    conversation_id: Id, body: BranchSwitchBody, user_id: User, services: ServicesDep
) -> ConversationDetail:
    """Make the branch through `messageId` the active one (409 while a run is active); answers the conversation."""
    try:
        services.store.switch_branch(user_id, conversation_id, body.message_id, now=services.clock())
    except ActiveRunExists as error:
        raise ApiError(409, f"run {error.run_id} is active in this chat: wait for it or abort it first") from None
    return conversation(conversation_id, user_id, services)


@router.delete("/api/conversations/{conversation_id}", tags=["conversations"], status_code=204)
def delete_conversation(conversation_id: Id, user_id: User, services: ServicesDep) -> Response:
    services.store.delete_conversation(user_id, conversation_id)
    if services.blobs is not None:
        services.blobs.delete_prefix(workspace_prefix(user_id, conversation_id))
    return Response(status_code=204)


@router.delete("/api/conversations/{conversation_id}/queue/{message_id}", tags=["conversations"], status_code=204)
def cancel_queued(conversation_id: Id, message_id: Id, user_id: User, services: ServicesDep) -> Response:
    """Cancel a message that still waits for its run (404 once its run has started, or if never queued)."""
    services.store.cancel_queued(user_id, conversation_id, message_id, now=services.clock())
    return Response(status_code=204)


@router.get("/api/artifacts/{artifact_id}", tags=["artifacts"], response_class=RedirectResponse, status_code=307)
def artifact(artifact_id: Id, user_id: User, services: ServicesDep, options: Options) -> RedirectResponse:
    """A short-lived link to the artifact (presigned S3 GET)."""
    record = services.store.get_artifact(user_id, artifact_id)
    if services.blobs is None:
        raise ApiError(503, "no artifact storage is configured")
    try:
        link = artifact_link(services.blobs, record, expires_in=options.artifact_link_seconds)
    except ValueError:
        raise NotFound(artifact_id) from None
    return RedirectResponse(link, status_code=307, headers={"cache-control": "no-store"})
