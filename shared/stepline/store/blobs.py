"""The blob port: large payloads and workspace files, content-addressed where they can be.

Key layout (docs/data-model.md, "S3"); every key starts from the owning user's scope:

    users/{user}/blobs/sha256/{hex}                              content-addressed payloads (`put`)
    users/{user}/conversations/{conversation}/workspace/{path}   the conversation's files (`put_object`)
    users/{user}/artifacts/…                                     stored artifacts (`put_object`)

`put` is idempotent: the same bytes always land on the same key, so a retried writer, or a
transaction that failed after its blob was written, leaves at most an orphan, never a second copy.
`get` re-hashes what it reads and refuses bytes that do not match the reference.

Backends: `MemoryBlobStore` here (tests, local runs) and `stepline.aws.s3.S3BlobStore`.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Callable
from typing import Protocol
from urllib.parse import quote

from ..protocol._base import WireModel
from .errors import NotFound, StoreError
from .records import check_id

__all__ = [
    "MAX_KEY_BYTES",
    "MAX_PRESIGN_SECONDS",
    "BlobIntegrityError",
    "BlobRef",
    "BlobStore",
    "MemoryBlobStore",
    "blob_key",
    "check_expiry",
    "check_key",
    "check_prefix",
    "content_disposition",
    "sha256_hex",
    "verify",
]

MAX_KEY_BYTES = 1024
"""S3's limit on a key's UTF-8 length."""

MAX_PRESIGN_SECONDS = 7 * 24 * 3600
"""SigV4 presigned URLs live at most seven days."""

_KIND = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


class BlobRef(WireModel):
    """Where a blob lives and what it must hash to. Wire form: `{key, sha256, size, mediaType?}`."""

    key: str
    """The object key (it starts with `users/{user}/`)."""
    sha256: str
    """Lowercase hex SHA-256 of the bytes."""
    size: int
    """Length of the bytes."""
    media_type: str | None = None
    """The Content-Type the object was written with, if one was given."""


class BlobIntegrityError(StoreError):
    """The bytes read do not match the reference (wrong size or hash): the object was altered."""


def sha256_hex(data: bytes) -> str:
    """Lowercase hex SHA-256 of `data`."""
    return hashlib.sha256(data).hexdigest()


def blob_key(user_id: str, digest: str, *, kind: str = "blobs") -> str:
    """The content-addressed key `users/{user}/{kind}/sha256/{digest}`."""
    check_id(user_id, "user id")
    if not _KIND.match(kind):
        raise ValueError("invalid blob kind: use 1-63 characters from a-z 0-9 _ -, starting with a letter or digit")
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise ValueError("invalid sha256 digest: expected 64 lowercase hex characters")
    return f"users/{user_id}/{kind}/sha256/{digest}"


def check_key(key: str) -> str:
    """Refuse keys that are empty, absolute, too long, hold `.`/`..`/empty segments or control characters."""
    if not key or key.startswith("/") or key.endswith("/"):
        raise ValueError("invalid object key: it must be relative and name an object, not a folder")
    if len(key.encode("utf-8")) > MAX_KEY_BYTES:
        raise ValueError(f"invalid object key: longer than {MAX_KEY_BYTES} bytes")
    if any(ord(char) < 0x20 or char == "\x7f" for char in key):
        raise ValueError("invalid object key: control characters are not allowed")
    if any(segment in ("", ".", "..") for segment in key.split("/")):
        raise ValueError("invalid object key: empty, '.' and '..' segments are not allowed")
    return key


def check_prefix(prefix: str) -> str:
    """A listing or deletion prefix must be a folder (end with `/`) inside a user scope."""
    # Without the trailing slash `users/u1` would also match `users/u10/…`; without the scope
    # check an empty prefix would reach every user's objects.
    if not prefix.startswith("users/") or not prefix.endswith("/"):
        raise ValueError("invalid prefix: it must start with 'users/' and end with '/'")
    check_key(prefix[:-1])
    return prefix


def verify(ref: BlobRef, data: bytes) -> bytes:
    """Return `data` if it has the reference's size and hash, else raise `BlobIntegrityError`."""
    if len(data) != ref.size:
        raise BlobIntegrityError(f"blob {ref.key}: expected {ref.size} bytes, read {len(data)}")
    if sha256_hex(data) != ref.sha256:
        raise BlobIntegrityError(f"blob {ref.key}: sha256 mismatch (the object was altered)")
    return data


def check_expiry(expires_in: int) -> int:
    """A presigned link lives 1 second to 7 days (the SigV4 maximum)."""
    if not 1 <= expires_in <= MAX_PRESIGN_SECONDS:
        raise ValueError(f"expires_in must be between 1 and {MAX_PRESIGN_SECONDS} seconds")
    return expires_in


def content_disposition(filename: str) -> str:
    """An `attachment` Content-Disposition naming `filename` (RFC 6266, with an ASCII fallback)."""
    fallback = "".join(c if (" " <= c < "\x7f" and c not in '"\\') else "_" for c in filename) or "file"
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename, safe='')}"


class BlobStore(Protocol):
    """Object storage for payloads and files. Missing objects raise `NotFound`."""

    def put(self, user_id: str, data: bytes, *, media_type: str | None = None, kind: str = "blobs") -> BlobRef:
        """Store `data` under its content address; storing the same bytes again is a no-op."""
        ...

    def get(self, ref: BlobRef) -> bytes:
        """Read the blob and check it against `ref` (`BlobIntegrityError` on a mismatch)."""
        ...

    def put_object(self, key: str, data: bytes, media_type: str | None = None) -> BlobRef:
        """Write `data` at `key` (overwriting), for workspace files and artifacts."""
        ...

    def get_object(self, key: str) -> bytes:
        """Read the object at `key`."""
        ...

    def list_keys(self, prefix: str) -> list[str]:
        """Every key under the folder `prefix` (which ends with `/`), sorted."""
        ...

    def presign_get(self, key: str, *, expires_in: int = 300, filename: str | None = None) -> str:
        """A short-lived GET link; with `filename`, the download is offered under that name."""
        ...

    def delete_prefix(self, prefix: str) -> int:
        """Delete every object under the folder `prefix`; returns how many were deleted."""
        ...


class MemoryBlobStore:
    """`BlobStore` in a dict, safe to share between threads. Links are `memory://{key}?expires=…`."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._objects: dict[str, tuple[bytes, str | None]] = {}
        self._lock = threading.Lock()
        self._clock = clock

    def put(self, user_id: str, data: bytes, *, media_type: str | None = None, kind: str = "blobs") -> BlobRef:
        digest = sha256_hex(data)
        key = blob_key(user_id, digest, kind=kind)
        with self._lock:
            stored = self._objects.get(key)
            # Same key, same bytes: nothing to do. A stored object that no longer hashes to its key
            # was altered, and writing the true bytes back repairs it.
            if stored is None or sha256_hex(stored[0]) != digest:
                self._objects[key] = (bytes(data), media_type)
        return BlobRef(key=key, sha256=digest, size=len(data), media_type=media_type)

    def get(self, ref: BlobRef) -> bytes:
        return verify(ref, self.get_object(ref.key))

    def put_object(self, key: str, data: bytes, media_type: str | None = None) -> BlobRef:
        check_key(key)
        with self._lock:
            self._objects[key] = (bytes(data), media_type)
        return BlobRef(key=key, sha256=sha256_hex(data), size=len(data), media_type=media_type)

    def get_object(self, key: str) -> bytes:
        with self._lock:
            found = self._objects.get(key)
        if found is None:
            raise NotFound(f"no object {key}")
        return found[0]

    def list_keys(self, prefix: str) -> list[str]:
        check_prefix(prefix)
        with self._lock:
            return sorted(key for key in self._objects if key.startswith(prefix))

    def presign_get(self, key: str, *, expires_in: int = 300, filename: str | None = None) -> str:
        check_key(key)
        check_expiry(expires_in)
        link = f"memory://{quote(key)}?expires={int(self._clock()) + expires_in}"
        if filename is not None:
            link += f"&filename={quote(filename, safe='')}"
        return link

    def delete_prefix(self, prefix: str) -> int:
        check_prefix(prefix)
        with self._lock:
            doomed = [key for key in self._objects if key.startswith(prefix)]
            for key in doomed:
                del self._objects[key]
        return len(doomed)
