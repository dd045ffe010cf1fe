"""Who is asking: the user every read and write of a request is scoped to.

- In the cloud, API Gateway's Cognito (JWT) authorizer has already checked the token; its claims
  reach the app in the Lambda event (`requestContext.authorizer.claims`). Under Mangum that event is
  `scope["aws.event"]`; under the Lambda Web Adapter it is the `x-amzn-request-context` header,
  which the adapter sets from the event (replacing any header of that name the caller sent).
- Locally, `STEPLINE_DEV_TOKENS=token:user,token2:user2` maps bearer tokens to users. Unset, every
  request is the one default local user (the startup banner says so).
- Locally with `STEPLINE_OIDC_ISSUER` (and `STEPLINE_OIDC_CLIENT_ID`), bearer tokens are real OIDC
  ID tokens, checked like API Gateway's Cognito authorizer checks them (`stepline.api.oidc`). So
  the UI's sign-in path runs without AWS, against any OIDC provider.

A request without a user is refused with 401 before any handler runs; one with two
`Authorization` headers with 400 (which one would be the caller is not for us to guess).
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Any, Protocol, cast

from fastapi import HTTPException, Request
from pydantic import JsonValue

from ..protocol._json import loads_strict
from ..store.records import check_id

__all__ = [
    "ApiGatewayIdentity",
    "DevTokens",
    "Identity",
    "bearer_token",
    "checked_user",
    "parse_dev_tokens",
    "request_claims",
    "single_authorization",
    "unauthorized",
]

DEFAULT_LOCAL_USER = "local-user"


class Identity(Protocol):
    """Resolves the user of a request (raises HTTPException 401 when there is none)."""

    blocking: bool
    """Whether `user_of` may wait on I/O (then it runs on one of the API's threads, else inline)."""

    def user_of(self, request: Request) -> str: ...

    def describe(self) -> str:
        """One line for the startup banner."""
        ...


def unauthorized(detail: str) -> HTTPException:
    """The 401 of a request without a usable user (`detail` says what was wrong, never the token)."""
    return HTTPException(status_code=401, detail=detail, headers={"www-authenticate": "Bearer"})


def checked_user(user: str) -> str:
    """A user id from a token or claims, if it can key the user's records (else 401)."""
    try:
        return check_id(user, "user id")
    except ValueError:
        raise unauthorized("the caller's user id is not usable") from None


def single_authorization(request: Request) -> str | None:
    """The request's one `Authorization` header (None without one); two or more are a 400."""
    values = request.headers.getlist("authorization")
    if len(values) > 1:
        raise HTTPException(status_code=400, detail="send one Authorization header, not several")
    return values[0] if values else None


def bearer_token(request: Request, hint: str) -> str:
    """The bearer token of the request's one `Authorization` header (401 with `hint` without one)."""
    scheme, _, token = (single_authorization(request) or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise unauthorized(hint)
    return token.strip()


class ApiGatewayIdentity:
    """The user is the authorizer's `sub` claim (Cognito user pools or a JWT authorizer)."""

    blocking = False  # read from the request's context

    def __init__(self, claim: str = "sub") -> None:
        self._claim = claim

    def describe(self) -> str:
        return f"users from the API Gateway authorizer (claim {self._claim})"

    def claims_of(self, request: Request) -> dict[str, Any]:
        """The authorizer's claims of the request (empty when there are none)."""
        context = self._request_context(request)
        authorizer = cast(dict[str, Any], context.get("authorizer") or {})
        claims: Any = authorizer.get("claims") or cast(dict[str, Any], authorizer.get("jwt") or {}).get("claims")
        return cast(dict[str, Any], claims) if isinstance(claims, dict) else {}

    def user_of(self, request: Request) -> str:
        single_authorization(request)  # the authorizer checked one of them: which, the app cannot tell
        user = self.claims_of(request).get(self._claim)
        if not isinstance(user, str) or not user:
            raise unauthorized("no authenticated user on this request")
        return checked_user(user)

    @staticmethod
    def _request_context(request: Request) -> dict[str, Any]:
        event = request.scope.get("aws.event")
        if isinstance(event, dict):
            return cast(dict[str, Any], cast(dict[str, Any], event).get("requestContext") or {})
        header = request.headers.get("x-amzn-request-context")
        if header:
            try:
                parsed = loads_strict(header)
            except ValueError:
                raise unauthorized("malformed request context") from None
            if isinstance(parsed, dict):
                return cast(dict[str, Any], parsed)
        return {}


def request_claims(identity: Identity, request: Request, user_id: str) -> dict[str, JsonValue]:
    """The caller's identity claims, for the run context.

    The identity's own (`claims_of`) when it has them, else `{"sub": user}` (a local user has no
    other claims).
    """
    claims_of = getattr(identity, "claims_of", None)
    found: Any = claims_of(request) if callable(claims_of) else None
    if not isinstance(found, dict) or not found:
        return {"sub": user_id}
    return {str(k): v for k, v in cast(dict[Any, Any], found).items() if _is_json(v)}


def _is_json(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool | list | dict)


def parse_dev_tokens(text: str) -> dict[str, str]:
    """`token:user,token2:user2` → `{token: user}`; a malformed entry is a ValueError naming it."""
    tokens: dict[str, str] = {}
    for position, entry in enumerate(filter(None, (e.strip() for e in text.split(","))), start=1):
        token, sep, user = entry.partition(":")
        if not sep or not token or not user:
            raise ValueError(f"STEPLINE_DEV_TOKENS entry {position} is not token:user")
        try:
            tokens[token] = check_id(user, "user id")
        except ValueError as error:
            raise ValueError(f"STEPLINE_DEV_TOKENS entry {position}: {error}") from None
    return tokens


class DevTokens:
    """Local users from bearer tokens; with no tokens configured, everyone is the default user."""

    blocking = False  # a lookup in memory

    def __init__(self, tokens: Mapping[str, str] | None = None, *, default_user: str = DEFAULT_LOCAL_USER) -> None:
        self._tokens = dict(tokens or {})
        self._default = default_user

    def describe(self) -> str:
        if not self._tokens:
            return f"one local user ({self._default}); set STEPLINE_DEV_TOKENS=token:user,... for several"
        users = sorted(set(self._tokens.values()))
        return f"{len(users)} users from STEPLINE_DEV_TOKENS (send Authorization: Bearer <token>)"

    def user_of(self, request: Request) -> str:
        if not self._tokens:
            return self._default
        token = bearer_token(request, "send Authorization: Bearer <token> (a token of STEPLINE_DEV_TOKENS)")
        for known, user in self._tokens.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                return user
        raise unauthorized("unknown token")
