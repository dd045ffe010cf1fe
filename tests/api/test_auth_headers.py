"""Who the caller is must not be a guess: two `Authorization` headers are a 400, in every auth mode;
and an ID token is checked with a clock leeway, so an issuer a little ahead or behind is no 401.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import jwt
import pytest
from fastapi import HTTPException, Request

from stepline.api.identity import ApiGatewayIdentity, DevTokens
from stepline.api.oidc import DEFAULT_LEEWAY_SECONDS, JwtIdentity
from stepline.local.dev import DevConfigError
from tests.support.jwks import jwks, private_key, public_jwk, serving
from tests.support.server import config, running

CLIENT = "stepline-web"
KEY = private_key("rsa")


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    with serving({"/.well-known/jwks.json": lambda _: jwks(public_jwk(KEY, "k1"))}) as base:
        yield base


def _token(issuer: str, **claims: Any) -> str:
    now = int(time.time())
    body = {"iss": issuer, "aud": CLIENT, "sub": "alice-sub", "iat": now, "exp": now + 600, **claims}
    return jwt.encode(body, KEY, algorithm="RS256", headers={"kid": "k1"})


def _request(*authorizations: str, event: dict[str, Any] | None = None) -> Request:
    headers = [(b"authorization", a.encode()) for a in authorizations]
    return Request({"type": "http", "headers": headers, **({"aws.event": event} if event else {})})


def _status(identity: Any, request: Request) -> int:
    try:
        identity.user_of(request)
    except HTTPException as refused:
        return refused.status_code
    return 200


def test_two_authorization_headers_are_a_400_in_every_mode(issuer: str) -> None:
    token = _token(issuer)
    claims_event = {"requestContext": {"authorizer": {"claims": {"sub": "alice-sub"}}}}
    cases = [
        (DevTokens({"t1": "alice", "t2": "bob"}), ("Bearer t1", "Bearer t2"), ("Bearer t1",)),
        (JwtIdentity(issuer, CLIENT), (f"Bearer {token}", f"Bearer {token}"), (f"Bearer {token}",)),
        (ApiGatewayIdentity(), ("Bearer a", "Bearer b"), ("Bearer a",)),
    ]
    for identity, two, one in cases:
        assert _status(identity, _request(*two, event=claims_event)) == 400, identity
        assert _status(identity, _request(*one, event=claims_event)) == 200, identity


def test_two_authorization_headers_are_a_400_over_http() -> None:
    with running(config(tokens={"t1": "alice", "t2": "bob"})) as server, server.client() as client:
        answer = client.get(
            "/api/conversations", headers=[("authorization", "Bearer t1"), ("authorization", "Bearer t2")]
        )
        assert answer.status_code == 400 and "one Authorization header" in json.dumps(answer.json())
        assert client.get("/api/conversations", headers={"authorization": "Bearer t1"}).status_code == 200


@pytest.mark.parametrize(
    "claims",
    [{"iat": 20}, {"nbf": 20}, {"exp": -20}],
    ids=["issued-in-the-future", "not-before-in-the-future", "expired-a-moment-ago"],
)
def test_a_clock_twenty_seconds_off_is_within_the_default_leeway_and_outside_none(
    issuer: str, claims: dict[str, int]
) -> None:
    now = int(time.time())
    token = _token(issuer, **{name: now + offset for name, offset in claims.items()})
    assert DEFAULT_LEEWAY_SECONDS >= 30
    assert _status(JwtIdentity(issuer, CLIENT), _request(f"Bearer {token}")) == 200
    with pytest.raises(HTTPException) as refused:
        JwtIdentity(issuer, CLIENT, leeway_seconds=0).user_of(_request(f"Bearer {token}"))
    assert refused.value.status_code == 401
    assert any(word in str(refused.value.detail) for word in ("not valid yet", "expired"))


def test_the_leeway_is_configured_by_stepline_oidc_leeway_seconds(issuer: str) -> None:
    oidc = {"STEPLINE_OIDC_ISSUER": issuer, "STEPLINE_OIDC_CLIENT_ID": CLIENT}
    assert config(**oidc).oidc_leeway_seconds == DEFAULT_LEEWAY_SECONDS
    assert config(**oidc, STEPLINE_OIDC_LEEWAY_SECONDS="0").oidc_leeway_seconds == 0
    assert config(**oidc, STEPLINE_OIDC_LEEWAY_SECONDS=" 120 ").oidc_leeway_seconds == 120
    for wrong in ("-1", "301", "1.5", "abc", "٣"):
        with pytest.raises(DevConfigError, match="STEPLINE_OIDC_LEEWAY_SECONDS"):
            config(**oidc, STEPLINE_OIDC_LEEWAY_SECONDS=wrong)
