"""How the issuer's keys are fetched, kept and fetched again (`stepline.api.oidc_keys.IssuerKeys`).

Against a local key endpoint over HTTP whose key set the tests change (a rotation, a revocation)
or stop serving (an outage). Time is the keys' own injected clock, moved by hand: nothing waits.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import jwt
import pytest

from stepline.api.oidc import JwtIdentity
from stepline.api.oidc_keys import IssuerKeys, algorithms_of
from tests.support.jwks import PrivateKey, jwks, private_key, public_jwk, serving, status_of

CLIENT = "stepline-web"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def _token(issuer: str, key: PrivateKey, kid: str | None, algorithm: str = "RS256", **claims: Any) -> str:
    now = int(time.time())
    body = {"iss": issuer, "aud": CLIENT, "sub": "alice-sub", "iat": now, "exp": now + 600, **claims}
    return jwt.encode(body, key, algorithm=algorithm, headers={"kid": kid} if kid else {})


def _issuer(published: list[dict[str, Any]]) -> dict[str, Callable[[str], bytes]]:
    return {"/.well-known/jwks.json": lambda _: jwks(*published)}


def test_a_new_signing_key_is_fetched_on_its_first_use_at_most_once_per_refetch_interval() -> None:
    old, new = private_key("rsa"), private_key("rsa")
    published = [public_jwk(old, "old")]
    clock = Clock()
    with serving(_issuer(published)) as base:
        keys = IssuerKeys(base, clock=clock, refetch_after=5)
        identity = JwtIdentity(base, CLIENT, keys=keys)
        assert (status_of(identity, _token(base, old, "old")), keys.fetches) == (200, 1)
        published.append(public_jwk(new, "new"))  # the issuer rotates
        clock.now += 1  # within the refetch interval of the last fetch: not asked again yet
        assert (status_of(identity, _token(base, new, "new")), keys.fetches) == (401, 1)
        clock.now += 5
        assert (status_of(identity, _token(base, new, "new")), keys.fetches) == (200, 2)
        for n in range(20):  # unknown kids do not make the issuer be asked on every request
            assert status_of(identity, _token(base, new, f"random-{n}")) == 401
        assert keys.fetches == 2  # the set was read for "new" a moment ago
        clock.now += 5
        for n in range(20):
            assert status_of(identity, _token(base, new, f"other-{n}")) == 401
        assert keys.fetches == 3  # one refetch for the first unknown kid, none for the rest


def test_a_key_the_issuer_no_longer_publishes_is_refused_once_the_set_is_fetched_again() -> None:
    revoked, kept = private_key("rsa"), private_key("rsa")
    published = [public_jwk(revoked, "revoked"), public_jwk(kept, "kept")]
    clock = Clock()
    with serving(_issuer(published)) as base:
        keys = IssuerKeys(base, clock=clock, max_age=300)
        identity = JwtIdentity(base, CLIENT, keys=keys)
        assert status_of(identity, _token(base, revoked, "revoked")) == 200
        del published[0]
        clock.now += 301  # the set is older than max_age: read again
        assert status_of(identity, _token(base, revoked, "revoked")) == 401
        assert status_of(identity, _token(base, kept, "kept")) == 200


def test_while_the_issuer_is_unreachable_the_keys_fetched_last_go_on_for_a_while(
    caplog: pytest.LogCaptureFixture,
) -> None:
    key = private_key("rsa")
    clock = Clock()
    with serving(_issuer([public_jwk(key, "k1")])) as base:
        keys = IssuerKeys(base, jwks_url=f"{base}/.well-known/jwks.json", clock=clock, stale_for=3600)
        identity = JwtIdentity(base, CLIENT, keys=keys)
        assert status_of(identity, _token(base, key, "k1")) == 200
    port = int(base.rsplit(":", 1)[1])
    caplog.set_level(logging.WARNING, "stepline.api")
    clock.now += 600  # expired, and the issuer is down
    assert (status_of(identity, _token(base, key, "k1")), keys.fetches) == (200, 2)
    assert "the keys fetched before stay" in caplog.text
    clock.now += 1
    assert (status_of(identity, _token(base, key, "k1")), keys.fetches) == (200, 2), "not asked on every request"
    clock.now += 3600  # more than stale_for since the last fetch that worked: no keys left to trust
    assert status_of(identity, _token(base, key, "k1")) == 503
    with serving(_issuer([public_jwk(key, "k1")]), port=port):
        assert status_of(identity, _token(base, key, "k1")) == 200  # back: read again at once


def test_a_key_without_alg_verifies_its_types_algorithms_and_one_with_alg_only_that() -> None:
    free, pinned = private_key("rsa"), private_key("rsa")
    published = [public_jwk(free, "free"), public_jwk(pinned, "pinned", alg="RS256")]
    assert algorithms_of(published[0]) == ("PS256", "PS384", "PS512", "RS256", "RS384", "RS512")
    assert algorithms_of(published[1]) == ("RS256",)
    assert algorithms_of({**published[1], "alg": "ES256"}) == (), "an alg its type cannot verify: unusable"
    with serving(_issuer(published)) as base:
        identity = JwtIdentity(base, CLIENT)
        assert status_of(identity, _token(base, free, "free", "PS256")) == 200
        assert status_of(identity, _token(base, pinned, "pinned", "RS256")) == 200
        assert status_of(identity, _token(base, pinned, "pinned", "PS256")) == 401


def test_duplicate_kids_are_each_tried_under_their_own_algorithms() -> None:
    rsa_one, rsa_two, ec_key, stranger = (private_key(k) for k in ("rsa", "rsa", "ec-p256", "ec-p256"))
    published = [public_jwk(k, "dup") for k in (rsa_one, rsa_two, ec_key)]
    with serving(_issuer(published)) as base:
        identity = JwtIdentity(base, CLIENT)
        assert status_of(identity, _token(base, rsa_one, "dup")) == 200
        assert status_of(identity, _token(base, rsa_two, "dup")) == 200  # a rotation that reused the id
        assert status_of(identity, _token(base, ec_key, "dup", "ES256")) == 200
        assert status_of(identity, _token(base, stranger, "dup", "ES256")) == 401


def test_a_token_without_kid_is_checked_against_the_only_key() -> None:
    only = private_key("ed25519")
    with serving(_issuer([public_jwk(only, None)])) as base:
        identity = JwtIdentity(base, CLIENT)
        assert status_of(identity, _token(base, only, None, "EdDSA")) == 200
        assert status_of(identity, _token(base, private_key("ed25519"), None, "EdDSA")) == 401


def test_an_issuer_whose_key_set_is_not_json_or_too_large_is_503() -> None:
    with serving({"/.well-known/jwks.json": lambda _: b"{not json"}) as base:
        assert status_of(JwtIdentity(base, CLIENT), _token(base, private_key("rsa"), "k1")) == 503
    with serving({"/.well-known/jwks.json": lambda _: b" " * (2 << 20)}) as base:
        assert status_of(JwtIdentity(base, CLIENT), _token(base, private_key("rsa"), "k1")) == 503
