"""`JwtIdentity`: users from OIDC ID tokens, checked as API Gateway's JWT authorizer checks them.

`stepline dev` with `STEPLINE_OIDC_ISSUER` uses it (on AWS the authorizer has checked the token,
so the Lambda layer carries no PyJWT): the signature against the issuer's published keys
(`oidc_keys`: the algorithm is the key's, never the token's choice), then the issuer, the
audience (the client id), the expiry and the user claim. Clocks drift: `exp`, `nbf` and `iat`
are checked with a leeway (`STEPLINE_OIDC_LEEWAY_SECONDS`, 30 s by default), so a provider whose
clock runs a little ahead of the server's does not see its fresh tokens refused.

Every refusal is a 401 naming what was wrong (never the token itself); keys that cannot be read
are a 503; two `Authorization` headers are a 400.
"""

from __future__ import annotations

import logging
from typing import Any

import jwt
from fastapi import HTTPException, Request

from .identity import bearer_token, checked_user, unauthorized
from .oidc_keys import IssuerKeys, KeysUnavailable, SigningKey

__all__ = ["DEFAULT_LEEWAY_SECONDS", "JwtIdentity"]

_LOG = logging.getLogger("stepline.api")

DEFAULT_LEEWAY_SECONDS = 30


class JwtIdentity:
    """Users from OIDC ID tokens, verified against the issuer's JWKS; the user is the `sub` claim."""

    blocking = True  # a key it has not seen is fetched from the issuer

    def __init__(
        self,
        issuer: str,
        audience: str,
        *,
        jwks_url: str | None = None,
        claim: str = "sub",
        leeway_seconds: int = DEFAULT_LEEWAY_SECONDS,
        keys: IssuerKeys | None = None,
    ) -> None:
        self._issuer = issuer.rstrip("/")
        self._audience = audience
        self._claim = claim
        self._leeway = leeway_seconds
        self.keys = keys or IssuerKeys(self._issuer, jwks_url=jwks_url)

    def describe(self) -> str:
        return f"users from ID tokens of {self._issuer} (client {self._audience}), checked against its keys"

    def user_of(self, request: Request) -> str:
        token = bearer_token(request, "send Authorization: Bearer <ID token>")
        keys = self._keys_of(token)
        for index, key in enumerate(keys):
            try:
                claims = self._verified(token, key)
            except jwt.InvalidSignatureError:
                if index + 1 < len(keys):
                    continue  # another key of the same id (a rotation) may have signed it
                raise unauthorized("the token is not valid for this API") from None
            user = claims.get(self._claim)
            if not isinstance(user, str) or not user:
                raise unauthorized("the token names no user")
            return checked_user(user)
        raise unauthorized("the token's algorithm is not its key's")  # `_keys_of` returns at least one

    def _verified(self, token: str, key: SigningKey) -> dict[str, Any]:
        """The token's claims, checked with `key` and the algorithms `key` allows (401 when not valid)."""
        try:
            return jwt.decode(
                token,
                key.key,
                algorithms=list(key.algorithms),
                audience=self._audience,
                issuer=self._issuer,
                leeway=self._leeway,
                options={"require": ["exp", "iss", "aud", self._claim]},
            )
        except jwt.InvalidSignatureError:
            raise
        except jwt.ExpiredSignatureError:
            raise unauthorized("the token has expired; sign in again") from None
        except jwt.ImmatureSignatureError:
            raise unauthorized("the token is not valid yet (check the clocks of the server and the issuer)") from None
        except jwt.PyJWTError:
            raise unauthorized("the token is not valid for this API") from None
        except (TypeError, ValueError) as error:  # never expected (the key's type fits its algorithms): no 500
            _LOG.warning("an ID token could not be checked (%s)", type(error).__name__)
            raise unauthorized("the token is not valid for this API") from None

    def _keys_of(self, token: str) -> list[SigningKey]:
        """The published keys the token names whose algorithms include the token's `alg` (401 if none)."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise unauthorized("the token is not a JWT") from None
        alg, kid = header.get("alg"), header.get("kid")
        if not isinstance(alg, str) or alg.lower() == "none":
            raise unauthorized("the token is not signed")
        if kid is not None and not isinstance(kid, str):
            raise unauthorized("the token's key id is not a string")
        try:
            candidates = self.keys.candidates(kid)
        except KeysUnavailable:
            raise HTTPException(status_code=503, detail="the issuer's keys cannot be read") from None
        if not candidates:
            raise unauthorized("the token is signed with a key the issuer does not publish")
        fitting = [key for key in candidates if alg in key.algorithms]
        if not fitting:
            raise unauthorized("the token's algorithm is not its key's")
        return fitting
