"""Every JOSE algorithm against every key type an issuer can publish: the algorithm is the key's.

The issuer publishes one key of each type (RSA, EC P-256/384/521, Ed25519, and an `oct` secret,
which must never be trusted); each token names one of them by `kid`. A token whose header claims
an algorithm its key does not verify is a 401 however it is signed (it was a 500: PyJWT's
`prepare_key` raised `TypeError` for an EC algorithm on an RSA key), and so is `alg: none` in
every spelling. A properly signed token is accepted exactly when its algorithm is its key's.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import time
from collections.abc import Iterator
from typing import Any

import jwt
import pytest

from stepline.api.oidc import JwtIdentity
from stepline.api.oidc_keys import ALGORITHMS
from tests.support.jwks import JOSE_ALGORITHMS, KEY_TYPES, PrivateKey, jwks, private_key, public_jwk, serving, status_of
from tests.support.server import Running, config, running

CLIENT = "stepline-web"
ACCEPTED = {
    "rsa": {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"},
    "ec-p256": {"ES256"},
    "ec-p384": {"ES384"},
    "ec-p521": {"ES512"},
    "ed25519": {"EdDSA"},
    "oct": set[str](),
}
KEYS = {kind: private_key(kind) for kind in KEY_TYPES}


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    published = [public_jwk(key, kind) for kind, key in KEYS.items()]
    with serving({"/.well-known/jwks.json": lambda _: jwks(*published)}) as base:
        yield base


@pytest.fixture(scope="module")
def identity(issuer: str) -> JwtIdentity:
    return JwtIdentity(issuer, CLIENT)


def _claims(issuer: str) -> dict[str, Any]:
    now = int(time.time())
    return {"iss": issuer, "aud": CLIENT, "sub": "alice-sub", "iat": now, "exp": now + 600}


def _b64(value: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def _forged(header: dict[str, Any], claims: dict[str, Any], signature: str = "AAAA") -> str:
    return f"{_b64(header)}.{_b64(claims)}.{signature}"


def _signed(key: PrivateKey, kind: str, algorithm: str, claims: dict[str, Any]) -> str | None:
    """The token signed with `key` under `algorithm`, or None where PyJWT cannot sign that way."""
    try:
        return jwt.encode(claims, key, algorithm=algorithm, headers={"kid": kind})
    except Exception:  # the algorithm does not fit the key (or PyJWT has no such algorithm)
        return None


def test_the_accepted_algorithms_are_those_the_docs_list() -> None:
    assert set(ALGORITHMS) == set().union(*ACCEPTED.values())


@pytest.mark.parametrize("kind", KEY_TYPES)
def test_a_header_naming_any_algorithm_with_a_bad_signature_is_401(
    identity: JwtIdentity, issuer: str, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    statuses = {
        alg: status_of(identity, _forged({"alg": alg, "kid": kind}, _claims(issuer))) for alg in JOSE_ALGORITHMS
    }
    assert statuses == dict.fromkeys(JOSE_ALGORITHMS, 401)
    assert not [r for r in caplog.records if r.exc_info], "no traceback is logged"


@pytest.mark.parametrize("kind", KEY_TYPES)
def test_a_properly_signed_token_is_accepted_only_under_its_keys_algorithms(
    identity: JwtIdentity, issuer: str, kind: str
) -> None:
    signed = {alg: _signed(KEYS[kind], kind, alg, _claims(issuer)) for alg in JOSE_ALGORITHMS if alg != "none"}
    statuses = {alg: status_of(identity, token) for alg, token in signed.items() if token is not None}
    assert {alg for alg, status in statuses.items() if status == 200} == ACCEPTED[kind]
    assert set(statuses.values()) <= {200, 401}
    assert ACCEPTED[kind] <= set(statuses), "each accepted algorithm was tried"


def test_an_rsa_public_key_used_as_an_hmac_secret_is_401(identity: JwtIdentity, issuer: str) -> None:
    """The classic confusion: HS256 'signed' with the published RSA key's bytes."""
    header = _b64({"alg": "HS256", "kid": "rsa", "typ": "JWT"})
    body = _b64(_claims(issuer))
    secret = json.dumps(public_jwk(KEYS["rsa"], "rsa")).encode()
    mac = hmac.new(secret, f"{header}.{body}".encode(), hashlib.sha256).digest()
    token = f"{header}.{body}.{base64.urlsafe_b64encode(mac).rstrip(b'=').decode()}"
    assert status_of(identity, token) == 401


@pytest.mark.parametrize("alg", ["none", "None", "NONE", None])
def test_an_unsigned_token_is_401_in_every_spelling(identity: JwtIdentity, issuer: str, alg: str | None) -> None:
    header: dict[str, Any] = {"kid": "rsa", **({"alg": alg} if alg is not None else {})}
    for signature in ("", "AAAA"):
        assert status_of(identity, _forged(header, _claims(issuer), signature)) == 401


def test_headers_that_are_not_what_a_jwt_header_is_are_401(identity: JwtIdentity, issuer: str) -> None:
    claims = _claims(issuer)
    tokens = [
        _forged({"alg": "RS256", "kid": 7}, claims),
        _forged({"alg": ["RS256"], "kid": "rsa"}, claims),
        _forged({"alg": "RS256", "kid": "no-such-key"}, claims),
        _forged({"alg": "RS256"}, claims),  # no kid, and the issuer publishes several keys
        "not.a.jwt",
        "e30.e30",
    ]
    assert [status_of(identity, t) for t in tokens] == [401] * len(tokens)


@pytest.fixture(scope="module")
def server(issuer: str) -> Iterator[Running]:
    with running(config(STEPLINE_OIDC_ISSUER=issuer, STEPLINE_OIDC_CLIENT_ID=CLIENT)) as live:
        yield live


@pytest.mark.parametrize(
    ("method", "path"), [("GET", "/api/conversations"), ("GET", "/api/agents"), ("POST", "/api/runs/r1/abort")]
)
def test_an_ec_algorithm_on_the_rsa_key_is_a_401_on_authenticated_routes(
    server: Running, method: str, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    token = _forged({"alg": "ES256", "kid": "rsa"}, {}, "AAAA")
    with server.client() as client:
        answer = client.request(method, path, headers={"authorization": f"Bearer {token}"})
    assert answer.status_code == 401, answer.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
