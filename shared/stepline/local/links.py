"""Short-lived download links that work on the local runtime.

On AWS an artifact link is an S3 presigned GET. Locally the objects live in moto's S3 inside the
server process, or in the data folder's files, and a browser can follow neither; locally the link
points at the app itself instead, with the same properties: an HMAC-signed capability naming one
object, valid until it expires.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from typing import Any, cast

from fastapi import FastAPI, Response

from ..protocol._json import dumps, loads_strict
from ..store.blobs import BlobRef, BlobStore, check_expiry, check_key, content_disposition
from ..store.errors import NotFound

__all__ = ["LINK_PATH", "LocalLinkBlobStore", "mount_links"]

LINK_PATH = "/api/local/blobs"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class LocalLinkBlobStore:
    """A blob store (moto's S3, or files) whose presigned links are served by the local app (`mount_links`)."""

    def __init__(self, inner: BlobStore, *, clock: Callable[[], float] = time.time) -> None:
        self.inner = inner
        self._secret = secrets.token_bytes(32)
        self._clock = clock

    def put(self, user_id: str, data: bytes, *, media_type: str | None = None, kind: str = "blobs") -> BlobRef:
        return self.inner.put(user_id, data, media_type=media_type, kind=kind)

    def get(self, ref: BlobRef) -> bytes:
        return self.inner.get(ref)

    def put_object(self, key: str, data: bytes, media_type: str | None = None) -> BlobRef:
        return self.inner.put_object(key, data, media_type)

    def get_object(self, key: str) -> bytes:
        return self.inner.get_object(key)

    def list_keys(self, prefix: str) -> list[str]:
        return self.inner.list_keys(prefix)

    def delete_prefix(self, prefix: str) -> int:
        return self.inner.delete_prefix(prefix)

    def presign_get(self, key: str, *, expires_in: int = 300, filename: str | None = None) -> str:
        check_key(key)
        claims = {"k": key, "e": int(self._clock()) + check_expiry(expires_in), "f": filename}
        payload = _b64(dumps(claims).encode())
        return f"{LINK_PATH}/{payload}.{self._sign(payload)}"

    def open_link(self, token: str) -> tuple[bytes, str | None]:
        """The object a link names and its download name; NotFound for a bad or expired link."""
        payload, _, signature = token.partition(".")
        if not hmac.compare_digest(signature, self._sign(payload)):
            raise NotFound("link")
        claims = cast(dict[str, Any], loads_strict(_unb64(payload)))  # signed by us: our own shape
        if int(claims["e"]) < self._clock():
            raise NotFound("link")
        filename = claims["f"]
        return self.get_object(str(claims["k"])), filename if isinstance(filename, str) else None

    def _sign(self, payload: str) -> str:
        return _b64(hmac.new(self._secret, payload.encode(), hashlib.sha256).digest())


def mount_links(app: FastAPI, blobs: LocalLinkBlobStore) -> None:
    """Serve the local links (a capability: whoever holds an unexpired link may download it)."""

    @app.get(f"{LINK_PATH}/{{token}}", include_in_schema=False)
    def download(token: str) -> Response:
        data, filename = blobs.open_link(token)
        headers = {"cache-control": "private, no-store"}
        if filename:
            headers["content-disposition"] = content_disposition(filename)
        return Response(data, media_type="application/octet-stream", headers=headers)
