"""An OIDC issuer's signing keys (its JWKS), as `JwtIdentity` checks ID tokens against them.

Which algorithms a key verifies is decided by the key, never by the token: a key's type (and
curve) allows the algorithms below, narrowed to its own `alg` when the JWK names one. A token's
`alg` only picks among the keys its `kid` names; one whose `alg` is not its key's is refused.

    RSA          RS256 RS384 RS512 PS256 PS384 PS512
    EC P-256     ES256          EC P-384   ES384          EC P-521   ES512
    OKP Ed25519  EdDSA
    oct          nothing (a shared secret published in a key set would let anyone sign)

`none` is never accepted. Other key types and curves (secp256k1, Ed448) are left out.

The key set is fetched at first use and again when it is older than `max_age` (5 minutes). A
token whose `kid` the set does not know fetches it again at once, at most once per
`refetch_after` (5 s), so a new signing key is accepted on its first use (within 5 s of the
last fetch at the latest) and random kids cannot make us hammer the issuer. While the issuer
cannot be reached, the keys fetched last go on verifying tokens for up to `stale_for` (1 hour
after the last successful fetch), asked again at most every `refetch_after`; with no keys at all
(never fetched, or older than that) a request is answered 503.

The keys are parsed by PyJWT (`PyJWK`); fetching and caching are ours, because PyJWT's client
keeps a key it once found for ever (a revoked key stays accepted) and drops its whole set the
moment it expires while the issuer is down.
"""

from __future__ import annotations

import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from jwt import PyJWK
from jwt.exceptions import PyJWKError

from ..protocol._json import loads_strict

__all__ = ["ALGORITHMS", "IssuerKeys", "KeysUnavailable", "SigningKey", "algorithms_of"]

_LOG = logging.getLogger("stepline.api")

_RSA = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"})
_BY_CURVE = {("EC", "P-256"): "ES256", ("EC", "P-384"): "ES384", ("EC", "P-521"): "ES512", ("OKP", "Ed25519"): "EdDSA"}
ALGORITHMS = tuple(sorted(_RSA | set(_BY_CURVE.values())))
"""Every algorithm an ID token may be signed with."""

MAX_DOCUMENT_BYTES = 1 << 20


class KeysUnavailable(Exception):
    """The issuer's keys cannot be read and none fetched before may still be used."""


@dataclass(frozen=True, slots=True)
class SigningKey:
    """A published key and the algorithms it verifies."""

    kid: str | None
    key: Any
    """The key object (`cryptography`'s), as `jwt.decode` takes it."""
    algorithms: tuple[str, ...]


def algorithms_of(jwk: dict[str, Any]) -> tuple[str, ...]:
    """The algorithms a JWK may verify: its type's (and curve's), narrowed to its own `alg` if it has one."""
    kind = (str(jwk.get("kty")), str(jwk.get("crv")))
    allowed = _RSA if kind[0] == "RSA" else frozenset({_BY_CURVE[kind]} if kind in _BY_CURVE else ())
    named = jwk.get("alg")
    if named is not None:
        allowed = allowed & {named}
    return tuple(sorted(allowed))


def _signing_key(jwk: Any) -> SigningKey | None:
    if not isinstance(jwk, dict) or cast(dict[str, Any], jwk).get("use", "sig") != "sig":
        return None
    entry = cast(dict[str, Any], jwk)
    algorithms = algorithms_of(entry)
    kid = entry.get("kid")
    if not algorithms or not (kid is None or isinstance(kid, str)):
        return None
    try:
        parsed = PyJWK(entry, algorithm=algorithms[0])
    except PyJWKError:
        return None
    return SigningKey(kid, parsed.key, algorithms)


def _get_json(url: str) -> Any:
    """The JSON document at `url`; OSError when it cannot be had, ValueError when it is not JSON."""
    with urllib.request.urlopen(url, timeout=10) as response:
        body = cast(bytes, response.read(MAX_DOCUMENT_BYTES + 1))
    if len(body) > MAX_DOCUMENT_BYTES:
        raise ValueError(f"{url} is larger than {MAX_DOCUMENT_BYTES} bytes")
    return loads_strict(body.decode("utf-8"))


def discovered_jwks_uri(issuer: str, get_json: Callable[[str], Any] = _get_json) -> str | None:
    """`jwks_uri` of the issuer's discovery document (None: it serves none, 404, or names none)."""
    try:
        document = get_json(f"{issuer}/.well-known/openid-configuration")
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise
    except ValueError:
        return None
    uri = cast(dict[str, Any], document).get("jwks_uri") if isinstance(document, dict) else None
    return uri if isinstance(uri, str) and uri.startswith(("https://", "http://")) else None


class IssuerKeys:
    """The issuer's signing keys, fetched, kept and fetched again as the module docstring says."""

    def __init__(
        self,
        issuer: str,
        *,
        jwks_url: str | None = None,
        max_age: float = 300.0,
        refetch_after: float = 5.0,
        stale_for: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
        get_json: Callable[[str], Any] = _get_json,
    ) -> None:
        self._issuer = issuer
        self._url = jwks_url
        self._max_age, self._refetch_after, self._stale_for = max_age, refetch_after, stale_for
        self._clock = clock
        self._get_json = get_json
        self._keys: list[SigningKey] | None = None
        self._fetched_at = 0.0
        self._tried_at: float | None = None
        self._lock = threading.Lock()
        self.fetches = 0
        """How many times the key set was asked for (for tests and the log)."""

    def candidates(self, kid: str | None) -> list[SigningKey]:
        """The keys a token with this `kid` may be signed with (without a kid: the only key, if one)."""
        with self._lock:
            now = self._clock()
            if self._keys is None or now - self._fetched_at >= self._max_age:
                self._refresh(now)
            found = self._match(kid)
            if not found and self._may_try(now):
                self._refresh(now)
                found = self._match(kid)
            return found

    def _match(self, kid: str | None) -> list[SigningKey]:
        keys = self._keys or []
        if kid is None:
            return keys if len(keys) == 1 else []
        return [k for k in keys if k.kid == kid]

    def _may_try(self, now: float) -> bool:
        return self._tried_at is None or now - self._tried_at >= self._refetch_after

    def _refresh(self, now: float) -> None:
        usable = self._keys is not None and now - self._fetched_at < self._stale_for
        if usable and not self._may_try(now):
            return
        self._tried_at = now
        self.fetches += 1
        try:
            document = self._get_json(self._locate())
            listed: Any = cast(dict[str, Any], document).get("keys") if isinstance(document, dict) else None
            if not isinstance(listed, list):
                raise ValueError("the key set has no list of keys")
        except (OSError, ValueError) as error:
            if not usable:
                raise KeysUnavailable(f"the issuer's keys cannot be read ({type(error).__name__})") from None
            _LOG.warning("the issuer's keys cannot be read (%s); the keys fetched before stay", type(error).__name__)
            return
        self._keys = [k for k in map(_signing_key, cast(list[Any], listed)) if k is not None]
        self._fetched_at = now

    def _locate(self) -> str:
        """The key set's URL: the one given, or the discovery document's `jwks_uri`, or Cognito's path.

        Providers publish their keys at different paths (Cognito `/.well-known/jwks.json`, Keycloak
        `/protocol/openid-connect/certs`, Okta `/v1/keys`). Once found, the URL is kept.
        """
        if self._url is None:
            discovered = discovered_jwks_uri(self._issuer, self._get_json)
            self._url = discovered or f"{self._issuer}/.well-known/jwks.json"
        return self._url
