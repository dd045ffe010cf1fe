"""Who is asking: the user every read and write of a request is scoped to.

- In the cloud, API Gateway's Cognito (JWT) authorizer has already checked the token; its claims
  reach the app in the Lambda event (`requestContext.authorizer.claims`). Under Mangum that event is
  `scope["aws.event"]`; under the Lambda Web Adapter it is the `x-amzn-request-context` header,
  which the adapter sets from the event (replacing any header of that name the caller sent).
- Locally, `STEPLINE_DEV_TOKENS=token:user,token2:user2` maps bearer tokens to users. Unset, every
  request is the one default local user (the startup banner says so).
- Locally with `STEPLINE_OIDC_ISSUER` (and `STEPLINE_OIDC_CLIENT_ID`), bearer tokens are real OIDC
  ID tokens, checked like API Gateway's Cognito authorizer checks them: signature against the
  issuer's published keys (JWKS, PyJWT), issuer, audience (the client id) and expiry. So the UI's
  sign-in path runs without AWS, against any OIDC provider.

A request without a user is refused with 401 before any handler runs.
"""

from __future__ import annotations

import hmac
import threading
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

from fastapi import HTTPException, Request
from pydantic import JsonValue

from ..protocol._json import loads_strict
from ..store.records import check_id

if TYPE_CHECKING:
    from jwt import PyJWKClient

__all__ = ["ApiGatewayIdentity", "DevTokens", "Identity", "JwtIdentity", "parse_dev_tokens", "request_claims"]

DEFAULT_LOCAL_USER = "local-user"


class Identity(Protocol):
    """Resolves the user of a request (raises HTTPException 401 when there is none)."""

    def user_of(self, request: Request) -> str: ...

    def describe(self) -> str:
        """One line for the startup banner."""
        ...


def _unauthorized(detail: str) -> HTTPException:
    return HTTPException(status_code=401, detail=detail, headers={"www-authenticate": "Bearer"})


def _checked(user: str) -> str:
    try:
        return check_id(user, "user id")
    except ValueError:
        raise _unauthorized("the caller's user id is not usable") from None


class ApiGatewayIdentity:
    """The user is the authorizer's `sub` claim (Cognito user pools or a JWT authorizer)."""

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
        user = self.claims_of(request).get(self._claim)
        if not isinstance(user, str) or not user:
            raise _unauthorized("no authenticated user on this request")
        return _checked(user)

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
                raise _unauthorized("malformed request context") from None
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
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise _unauthorized("send Authorization: Bearer <token> (a token of STEPLINE_DEV_TOKENS)")
        for known, user in self._tokens.items():
            if hmac.compare_digest(known.encode(), token.strip().encode()):
                return user
        raise _unauthorized("unknown token")


def _discovered_jwks_uri(issuer: str) -> str | None:
    """`jwks_uri` of the issuer's OpenID discovery document (None: it serves none, 404, or names none).

    OSError when the issuer cannot be asked; nothing is remembered then, so the next request asks again.
    """
    try:
        with urllib.request.urlopen(f"{issuer}/.well-known/openid-configuration", timeout=10) as response:
            document: Any = loads_strict(response.read().decode("utf-8"))
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise
    except ValueError:
        return None
    uri = cast(dict[str, Any], document).get("jwks_uri") if isinstance(document, dict) else None
    return uri if isinstance(uri, str) and uri.startswith(("https://", "http://")) else None


def _bearer(request: Request) -> str:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise _unauthorized("send Authorization: Bearer <ID token>")
    return token.strip()


class JwtIdentity:
    """Users from OIDC ID tokens, verified against the issuer's JWKS; the user is the `sub` claim.

    PyJWT is imported here, not at module level: only `stepline dev` uses this class (on AWS the
    authorizer has checked the token), so the Lambda layer does not carry PyJWT.
    """

    ALGORITHMS = ("RS256", "ES256")

    def __init__(self, issuer: str, audience: str, *, jwks_url: str | None = None, claim: str = "sub") -> None:
        import jwt

        self._jwt = jwt
        self._issuer = issuer.rstrip("/")
        self._audience = audience
        self._claim = claim
        self._jwks_url = jwks_url
        self._keys: PyJWKClient | None = None
        self._lock = threading.Lock()

    def _key_client(self) -> PyJWKClient:
        """The issuer's key set: where its discovery document (`jwks_uri`) says, read at first use.

        Providers publish their keys at different paths (Cognito `/.well-known/jwks.json`, Keycloak
        `/protocol/openid-connect/certs`, Okta `/v1/keys`); without a discovery document, Cognito's.
        """
        with self._lock:
            if self._keys is None:
                try:
                    discovered = None if self._jwks_url else _discovered_jwks_uri(self._issuer)
                except OSError as error:
                    raise self._jwt.PyJWKClientConnectionError(f"the issuer's discovery document: {error}") from None
                url = self._jwks_url or discovered or f"{self._issuer}/.well-known/jwks.json"
                self._keys = self._jwt.PyJWKClient(url, cache_keys=True)
            return self._keys

    def describe(self) -> str:
        return f"users from ID tokens of {self._issuer} (client {self._audience}), checked against its keys"

    def user_of(self, request: Request) -> str:
        jwt = self._jwt
        token = _bearer(request)
        try:
            key = self._key_client().get_signing_key_from_jwt(token)
            claims = jwt.decode(
                token,
                key.key,
                algorithms=list(self.ALGORITHMS),
                audience=self._audience,
                issuer=self._issuer,
                options={"require": ["exp", "iss", "aud", self._claim]},
            )
        except jwt.ExpiredSignatureError:
            raise _unauthorized("the token has expired; sign in again") from None
        except jwt.PyJWKClientConnectionError:
            raise HTTPException(status_code=503, detail="the issuer's keys cannot be read") from None
        except jwt.PyJWTError:
            raise _unauthorized("the token is not valid for this API") from None
        user = claims.get(self._claim)
        if not isinstance(user, str) or not user:
            raise _unauthorized("the token names no user")
        return _checked(user)
