"""The approval webhook for other systems: decide with a signed link's token, no user token.

`POST /api/approval-links/{approval_id}` is the one route that resolves no user: the token is the
permission (`stepline.runtime.approval_links`). Past the token check it is the user-token
webhook exactly: the same compare-and-set (`waits.decide`), the same answers (200; the same
decision again: a byte-identical 200; another one: 409; unknown: 404; expired: 410) and the same
approval view, with `decidedBy: "link"` recorded on the approval.
"""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import Field

from ..runtime.approval_links import InvalidLinkError, link_path
from ..runtime.waits import decide
from ..store.errors import NotFound
from .bodies import CheckedRoute
from .deps import ServicesDep
from .errors import ApiError
from .schemas import ApprovalDecisionBody, ApprovalView, Id, approval_view

__all__ = ["LINK_DECIDER", "ApprovalLinkBody", "router"]

router = APIRouter(route_class=CheckedRoute)
LINK_DECIDER = "link"
"""`decidedBy` of an approval decided with a link."""


class ApprovalLinkBody(ApprovalDecisionBody):
    """The decision, with the link's token (in the body: a URL would carry it into access logs)."""

    token: str = Field(min_length=1, max_length=2000)


@router.post(link_path("{approval_id}"), tags=["approvals"])
def decide_with_link(approval_id: Id, body: ApprovalLinkBody, services: ServicesDep) -> ApprovalView:
    """Decide an approval with its signed link (an approval request's `decision` in the events)."""
    links = services.approval_links
    if links is None:
        raise NotFound("approval links are not configured")
    try:
        claims, mac = links.claims(body.token)
    except InvalidLinkError as error:
        raise ApiError(400, str(error)) from None
    if claims.approval_id != approval_id:
        raise NotFound(approval_id)
    approval = services.store.get_approval(claims.user_id, approval_id)
    links.check(approval, claims, mac, now=services.clock())
    decided = decide(
        services, claims.user_id, approval_id, approved=body.approved, reason=body.reason, decided_by=LINK_DECIDER
    )
    return approval_view(decided)
