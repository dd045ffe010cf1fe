"""`stepline dev` with a real OIDC issuer: ID tokens checked against the issuer's keys (PyJWT).

The issuer is a local HTTP server publishing a JWKS (bound to port 0); tokens are signed with its
RSA key, or with another one. Every algorithm against every key type: test_jwt_algorithms.py; how
the keys are fetched again: test_oidc_keys.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import HTTPException, Request

from stepline.api.oidc import JwtIdentity
from stepline.local.dev import DevConfigError, ui_config
from tests.support.jwks import serving
from tests.support.server import Running, config, running

CLIENT = "stepline-web"


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _jwks(key: rsa.RSAPrivateKey) -> bytes:
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    return json.dumps({"keys": [{**public, "kid": "k1", "use": "sig", "alg": "RS256"}]}).encode()


@pytest.fixture(scope="module")
def issuer() -> Iterator[tuple[str, rsa.RSAPrivateKey]]:
    """An issuer with no discovery document, its keys where Cognito publishes them."""
    key = _key()
    with serving({"/.well-known/jwks.json": lambda _: _jwks(key)}) as base:
        yield base, key


@pytest.fixture(scope="module")
def server(issuer: tuple[str, rsa.RSAPrivateKey]) -> Iterator[Running]:
    with running(config(STEPLINE_OIDC_ISSUER=issuer[0], STEPLINE_OIDC_CLIENT_ID=CLIENT)) as live:
        yield live


def _token(issuer: tuple[str, rsa.RSAPrivateKey], key: rsa.RSAPrivateKey | None = None, **claims: Any) -> str:
    now = int(time.time())
    body = {"iss": issuer[0], "aud": CLIENT, "sub": "alice-sub", "iat": now, "exp": now + 600, **claims}
    return jwt.encode(body, key or issuer[1], algorithm="RS256", headers={"kid": "k1"})


def _conversations(server: Running, token: str | None) -> Any:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    with server.client() as client:
        return client.get("/api/conversations", headers=headers)


def test_a_valid_id_token_is_its_user(server: Running, issuer: tuple[str, rsa.RSAPrivateKey]) -> None:
    answer = _conversations(server, _token(issuer))
    assert answer.status_code == 200, answer.text
    # The user is the token's subject: a conversation started with it belongs to alice-sub only.
    store = server.server.backend.services.store
    assert store.list_conversations("alice-sub", limit=10).items == []


@pytest.mark.parametrize(
    ("claims", "message"),
    [
        ({"exp": int(time.time()) - 120}, "expired"),
        ({"aud": "another-client"}, "not valid"),
        ({"iss": "https://elsewhere.example.com"}, "not valid"),
    ],
)
def test_a_token_for_something_else_is_401(
    server: Running, issuer: tuple[str, rsa.RSAPrivateKey], claims: dict[str, Any], message: str
) -> None:
    answer = _conversations(server, _token(issuer, **claims))
    assert answer.status_code == 401 and message in answer.json()["error"]["message"]


def test_a_token_signed_by_another_key_or_none_is_401(server: Running, issuer: tuple[str, rsa.RSAPrivateKey]) -> None:
    forged = _conversations(server, _token(issuer, key=_key()))
    unsigned = _conversations(server, jwt.encode({"sub": "alice-sub", "aud": CLIENT}, key=None, algorithm="none"))
    missing = _conversations(server, None)
    assert [a.status_code for a in (forged, unsigned, missing)] == [401, 401, 401]


def test_the_ui_reads_where_to_sign_in(server: Running, issuer: tuple[str, rsa.RSAPrivateKey]) -> None:
    with server.client() as client:
        configured = client.get("/config.json")
    assert configured.json() == {
        "apiBase": "",
        "auth": {"authority": issuer[0], "clientId": CLIENT, "scope": "openid email profile"},
    }
    assert ui_config(config()) == {"apiBase": "", "auth": None}  # dev tokens: the UI signs nobody in
    with pytest.raises(DevConfigError, match="go together"):
        config(STEPLINE_OIDC_ISSUER=issuer[0])


def _user_of(identity: JwtIdentity, token: str) -> str:
    return identity.user_of(Request({"type": "http", "headers": [(b"authorization", f"Bearer {token}".encode())]}))


def test_the_keys_are_where_the_issuers_discovery_document_says() -> None:
    """Providers publish their keys at different paths (Keycloak, Okta, oidc-provider): `jwks_uri`."""
    key = _key()
    documents: dict[str, Callable[[str], bytes]] = {
        "/.well-known/openid-configuration": lambda base: json.dumps(
            {"issuer": base, "jwks_uri": f"{base}/keys"}
        ).encode(),
        "/keys": lambda _: _jwks(key),
    }
    with serving(documents) as base:
        identity = JwtIdentity(base, CLIENT)
        assert _user_of(identity, _token((base, key))) == "alice-sub"
        with pytest.raises(HTTPException) as refused:
            _user_of(identity, _token((base, key), key=_key()))
    assert refused.value.status_code == 401


def test_an_issuer_that_cannot_be_reached_is_503_and_asked_again_next_time() -> None:
    key = _key()
    with serving({}) as base:
        pass  # its port is free again: nothing answers there
    identity = JwtIdentity(base, CLIENT)
    with pytest.raises(HTTPException) as unreachable:
        _user_of(identity, _token((base, key)))
    assert unreachable.value.status_code == 503 and "keys cannot be read" in str(unreachable.value.detail)
    port = int(base.rsplit(":", 1)[1])
    with serving({"/.well-known/jwks.json": lambda _: _jwks(key)}, port=port):
        assert _user_of(identity, _token((base, key))) == "alice-sub"  # nothing wrong was remembered
