"""Signed approval links: a capability that decides one approval without a user token.

A Slack button, an email link or a ticketing tool cannot hold the chatting user's token, so each
approval request can yield a token that is itself the permission: it names the approval's user and
id and an expiry, and carries an HMAC-SHA256 over those, the tool call id and the SHA-256 of the
canonical JSON of the exact stored tool input. The server recomputes the MAC from the stored
approval, so a token minted for other arguments (or edited in any byte) does not verify; the input
and its hash never appear in the token.

Verification answers like the user-token webhook does for the same facts: a token that does not
verify for this approval is `NotFound` (404, indistinguishable from an approval that does not
exist), a token past its expiry is `Gone` (410). Single use comes from the decision itself: the
compare-and-set decides once, the same decision again answers the stored approval, another one is
a conflict (409).

The key is the server's alone (Secrets Manager on AWS, generated per process locally); it never
leaves the process, and tokens never reach logs or stored records.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import StepLineError
from ..loop.approval import canonical_json
from ..protocol._json import dumps, loads_strict
from ..store.errors import Gone, NotFound
from ..store.records import ApprovalRecord

__all__ = ["LINK_PATH", "ApprovalLinks", "InvalidLinkError", "LinkClaims", "link_path"]

LINK_PATH = "/api/approval-links/{approval_id}"
"""The route that decides an approval with a link's token (no user token; template.yaml)."""
_VERSION = "v1"
_DOMAIN = "stepline-approval-link-v1"
MIN_KEY_BYTES = 32


class InvalidLinkError(StepLineError):
    """The token is not a Stepline approval-link token at all (a 400 naming what is wrong)."""


class LinkClaims(BaseModel):
    """What a token says about itself (nothing of it is trusted before the MAC is checked)."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    user_id: str = Field(alias="u", min_length=1, max_length=200)
    approval_id: str = Field(alias="a", min_length=1, max_length=200)
    expires_at: int = Field(alias="e", ge=0)


def link_path(approval_id: str) -> str:
    """The path an external system POSTs the decision to."""
    return LINK_PATH.format(approval_id=approval_id)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True, slots=True)
class ApprovalLinks:
    """Mints and checks approval-link tokens with one server-side key."""

    key: bytes

    def __post_init__(self) -> None:
        if len(self.key) < MIN_KEY_BYTES:
            raise ValueError(f"an approval-link key needs at least {MIN_KEY_BYTES} bytes")

    def token_for(self, approval: ApprovalRecord) -> str:
        """The token of `approval` (as stored); it expires when the approval does."""
        if approval.expires_at is None:
            raise ValueError(f"approval {approval.approval_id} has no expiry; a link must expire")
        claims = {"u": approval.user_id, "a": approval.approval_id, "e": approval.expires_at}
        payload = _b64(dumps(claims).encode())
        return f"{_VERSION}.{payload}.{_b64(self._mac(approval, approval.expires_at))}"

    def claims(self, token: str) -> tuple[LinkClaims, bytes]:
        """The token's claims and MAC, unverified; `InvalidLinkError` when it is not a token."""
        version, payload, mac = (token.split(".") + ["", ""])[:3]
        if version != _VERSION or not payload or not mac or token.count(".") != 2:
            raise InvalidLinkError("token: not an approval-link token")
        try:
            return LinkClaims.model_validate(loads_strict(_unb64(payload).decode())), _unb64(mac)
        except (ValueError, ValidationError, UnicodeDecodeError):
            raise InvalidLinkError("token: not an approval-link token") from None

    def check(self, approval: ApprovalRecord, claims: LinkClaims, mac: bytes, *, now: int) -> None:
        """Raise `NotFound` unless the MAC is this approval's (its ids and exact input), `Gone` once expired."""
        if claims.user_id != approval.user_id or claims.approval_id != approval.approval_id:
            raise NotFound(f"approval {approval.approval_id} not found")
        if not hmac.compare_digest(mac, self._mac(approval, claims.expires_at)):
            raise NotFound(f"approval {approval.approval_id} not found")
        if now >= claims.expires_at:
            raise Gone(f"the link of approval {approval.approval_id} expired")

    def _mac(self, approval: ApprovalRecord, expires_at: int) -> bytes:
        digest = hashlib.sha256(canonical_json(approval.input).encode()).hexdigest()
        message = [_DOMAIN, approval.user_id, approval.approval_id, approval.tool_call_id, digest, expires_at]
        return hmac.new(self.key, dumps(message).encode(), hashlib.sha256).digest()
