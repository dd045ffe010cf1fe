"""A local OIDC issuer's key endpoint: an HTTP server on a free port, and keys of every JOSE type.

The documents it serves are functions of the base URL, read on each request, so a test can rotate
the keys, or stop the server and serve again on the same port (an issuer that was unreachable).
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Callable, Generator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from fastapi import HTTPException, Request

PrivateKey = Any
"""A `cryptography` private key (RSA, EC, Ed25519) or, for `oct`, the HMAC secret's bytes."""

KEY_TYPES = ("rsa", "ec-p256", "ec-p384", "ec-p521", "ed25519", "oct")

JOSE_ALGORITHMS = (
    *("HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "ES256", "ES384", "ES512"),
    *("PS256", "PS384", "PS512", "EdDSA", "ES256K", "Ed25519", "Ed448", "none"),
)
"""The JWS algorithms of IANA's JOSE registry (RFC 7518, RFC 8037, RFC 8812, RFC 9864)."""


def private_key(kind: str) -> PrivateKey:
    match kind:
        case "rsa":
            return rsa.generate_private_key(public_exponent=65537, key_size=2048)
        case "ec-p256":
            return ec.generate_private_key(ec.SECP256R1())
        case "ec-p384":
            return ec.generate_private_key(ec.SECP384R1())
        case "ec-p521":
            return ec.generate_private_key(ec.SECP521R1())
        case "ed25519":
            return ed25519.Ed25519PrivateKey.generate()
        case "oct":
            return secrets.token_bytes(32)
        case _:
            raise ValueError(kind)


def public_jwk(key: PrivateKey, kid: str | None, **extra: Any) -> dict[str, Any]:
    """The JWK an issuer publishes for `key` (an `oct` key's JWK is the secret itself)."""
    if isinstance(key, bytes):
        jwk = json.loads(jwt.algorithms.HMACAlgorithm.to_jwk(key))
    elif isinstance(key, rsa.RSAPrivateKey):
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    elif isinstance(key, ec.EllipticCurvePrivateKey):
        jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key()))
    else:
        jwk = json.loads(jwt.algorithms.OKPAlgorithm.to_jwk(key.public_key()))
    return {**jwk, **({"kid": kid} if kid is not None else {}), "use": "sig", **extra}


def status_of(identity: Any, token: str) -> int:
    """What an identity answers a request with this bearer token: 200, or the refusal's status."""
    request = Request({"type": "http", "headers": [(b"authorization", f"Bearer {token}".encode())]})
    try:
        identity.user_of(request)
    except HTTPException as refused:
        return refused.status_code
    return 200


def jwks(*keys: dict[str, Any]) -> bytes:
    return json.dumps({"keys": list(keys)}).encode()


@contextmanager
def serving(documents: dict[str, Callable[[str], bytes]], *, port: int = 0) -> Generator[str]:
    """An HTTP server on a free port answering `documents` (path → body from the base URL), else 404."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            document = documents.get(self.path)
            self.send_response(200 if document else 404)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(document(base) if document else b"{}")

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", port), Handler)
    base = f"http://127.0.0.1:{server.server_port}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield base
    finally:
        server.shutdown()
        server.server_close()
