"""`S3BlobStore`: the blob port (`stepline.store.blobs.BlobStore`) on one S3 bucket.

This module only maps: keys and checks come from `stepline.store.blobs`, and `ClientError` codes
become Stepline errors (`NoSuchKey`/`404` → `NotFound`, `BadDigest` → `BlobIntegrityError`,
anything else → `StoreError` naming the code). Every write asks for SSE-S3 (`AES256`) and sends a
SHA-256 checksum, so S3 refuses bytes damaged on the way in; every content-addressed read is
re-hashed here, so bytes altered at rest are refused too.

The client is injected (tests pass a moto-backed one). There are no `mypy_boto3_s3` stubs in
the dev environment, so the client is typed `Any` rather than adding a dependency for types only.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from collections.abc import Callable, Iterator
from typing import Any, cast

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from ..store.blobs import (
    BlobIntegrityError,
    BlobRef,
    blob_key,
    check_expiry,
    check_key,
    check_prefix,
    content_disposition,
    verify,
)
from ..store.errors import NotFound, StoreError

__all__ = ["S3BlobStore", "make_s3_client"]

S3Client = Any
"""boto3's S3 client (untyped: see the module docstring)."""

_MISSING = frozenset({"NoSuchKey", "404", "NotFound"})
_DAMAGED = frozenset({"BadDigest", "InvalidDigest", "XAmzContentSHA256Mismatch"})
_DELETE_BATCH = 1000
"""DeleteObjects takes at most 1,000 keys per call."""


def make_s3_client(**kwargs: Any) -> S3Client:
    """An S3 client that signs links with SigV4 (SigV2 links are refused by newer regions)."""
    return cast(Any, boto3.client("s3", config=Config(signature_version="s3v4"), **kwargs))  # pyright: ignore[reportUnknownMemberType]


def _store_error(error: ClientError, key: str) -> StoreError:
    response = cast(dict[str, Any], error.response)
    code = str(response.get("Error", {}).get("Code", ""))
    if code in _MISSING:
        return NotFound(f"no object {key}")
    if code in _DAMAGED:
        return BlobIntegrityError(f"object {key}: S3 refused the bytes ({code}): they changed on the way")
    return StoreError(f"S3 request for {key} failed ({code or 'unknown error'})")


class S3BlobStore:
    """`BlobStore` on the bucket `bucket`.

    Example:
        ```python
        blobs = S3BlobStore(os.environ["BLOB_BUCKET"], client=make_s3_client())
        ref = blobs.put(user_id, payload, media_type="application/json")
        ```
    """

    def __init__(
        self, bucket: str, *, client: S3Client | None = None, client_factory: Callable[[], S3Client] | None = None
    ) -> None:
        # `client_factory` instead of `client`: the client is made at the first S3 request, not here
        # (a function's cold start pays for an S3 client only if it touches a blob).
        self.bucket = bucket
        self._given: S3Client | None = client
        self._factory: Callable[[], S3Client] = client_factory or make_s3_client

    @functools.cached_property
    def _client(self) -> S3Client:
        return self._given if self._given is not None else self._factory()

    def put(self, user_id: str, data: bytes, *, media_type: str | None = None, kind: str = "blobs") -> BlobRef:
        raw = hashlib.sha256(data).digest()
        digest = raw.hex()
        ref = BlobRef(key=blob_key(user_id, digest, kind=kind), sha256=digest, size=len(data), media_type=media_type)
        # The key is the content's hash: a PUT of bytes already there writes the same bytes again.
        # One request, where a HEAD first to skip a repeat would add a round trip (and 1/12 of a
        # PUT's price) to every write: bench/cost.py's runs never found the object there.
        self._put(ref.key, data, media_type, raw)
        return ref

    def get(self, ref: BlobRef) -> bytes:
        return verify(ref, self.get_object(ref.key))

    def put_object(self, key: str, data: bytes, media_type: str | None = None) -> BlobRef:
        check_key(key)
        raw = hashlib.sha256(data).digest()
        self._put(key, data, media_type, raw)
        return BlobRef(key=key, sha256=raw.hex(), size=len(data), media_type=media_type)

    def get_object(self, key: str) -> bytes:
        try:
            response = self._client.get_object(Bucket=self.bucket, Key=key)
        except ClientError as error:
            raise _store_error(error, key) from error
        body: bytes = response["Body"].read()
        return body

    def list_keys(self, prefix: str) -> list[str]:
        check_prefix(prefix)
        return sorted(self._iter_keys(prefix))

    def presign_get(self, key: str, *, expires_in: int = 300, filename: str | None = None) -> str:
        check_key(key)
        check_expiry(expires_in)
        params: dict[str, str] = {"Bucket": self.bucket, "Key": key}
        if filename is not None:
            params["ResponseContentDisposition"] = content_disposition(filename)
        url: str = self._client.generate_presigned_url("get_object", Params=params, ExpiresIn=expires_in)
        return url

    def delete_prefix(self, prefix: str) -> int:
        check_prefix(prefix)
        keys = list(self._iter_keys(prefix))
        for start in range(0, len(keys), _DELETE_BATCH):
            batch = keys[start : start + _DELETE_BATCH]
            try:
                response = self._client.delete_objects(
                    Bucket=self.bucket, Delete={"Objects": [{"Key": key} for key in batch], "Quiet": True}
                )
            except ClientError as error:
                raise _store_error(error, prefix) from error
            failed: list[dict[str, Any]] = response.get("Errors", [])
            if failed:
                raise StoreError(f"S3 could not delete {len(failed)} objects under {prefix} ({failed[0].get('Code')})")
        return len(keys)

    def _put(self, key: str, data: bytes, media_type: str | None, digest: bytes) -> None:
        extra: dict[str, str] = {"ContentType": media_type} if media_type else {}
        # S3 recomputes the checksum and refuses the upload (BadDigest) if the bytes changed in transit.
        checksum = base64.b64encode(digest).decode("ascii")
        try:
            self._client.put_object(
                Bucket=self.bucket,
                Key=key,
                Body=data,
                ChecksumSHA256=checksum,
                ServerSideEncryption="AES256",
                Metadata={"sha256": digest.hex()},
                **extra,
            )
        except ClientError as error:
            raise _store_error(error, key) from error

    def _iter_keys(self, prefix: str) -> Iterator[str]:
        paginator = self._client.get_paginator("list_objects_v2")
        try:
            for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
                for entry in page.get("Contents", []):
                    yield str(entry["Key"])
        except ClientError as error:
            raise _store_error(error, prefix) from error
