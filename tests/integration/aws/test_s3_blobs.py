"""The blob port on S3 (moto, bucket from template.yaml), run as one contract with the memory and file backends."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
import requests
from moto import mock_aws

from stepline.aws.s3 import S3BlobStore, make_s3_client
from stepline.local.resources import create_bucket
from stepline.store.blobs import BlobIntegrityError, BlobRef, BlobStore, MemoryBlobStore
from stepline.store.errors import NotFound, StoreError
from stepline.store.files import FileBlobStore
from stepline.store.payloads import Offloader, item_size, shrink_to_fit

BUCKET = "stepline-blobs-test"


@pytest.fixture
def aws() -> Iterator[Any]:
    """A moto S3 client, with the template's bucket created (fake credentials: conftest.py)."""
    with mock_aws():
        client = make_s3_client()
        create_bucket(client, BUCKET)
        yield client


@pytest.fixture(params=["memory", "file", "s3"])
def blobs(request: pytest.FixtureRequest, tmp_path: Path) -> BlobStore:
    if request.param == "memory":
        return MemoryBlobStore()
    if request.param == "file":
        return FileBlobStore(tmp_path / "blobs")
    return S3BlobStore(BUCKET, client=request.getfixturevalue("aws"))


@pytest.fixture
def s3(aws: Any) -> S3BlobStore:
    return S3BlobStore(BUCKET, client=aws)


# --- the contract: every backend ------------------------------------------------------------------


def test_put_is_content_addressed_and_idempotent(blobs: BlobStore) -> None:
    data = b'{"hello":"world"}'
    digest = hashlib.sha256(data).hexdigest()
    ref = blobs.put("u1", data, media_type="application/json")
    assert ref == BlobRef(
        key=f"users/u1/blobs/sha256/{digest}", sha256=digest, size=len(data), media_type="application/json"
    )
    assert blobs.put("u1", data, media_type="application/json") == ref
    assert blobs.list_keys("users/u1/") == [ref.key]
    assert blobs.get(ref) == data
    assert blobs.put("u2", data).key == f"users/u2/blobs/sha256/{digest}"  # every key is user-scoped
    assert blobs.put("u1", data, kind="checkpoints").key == f"users/u1/checkpoints/sha256/{digest}"


def test_get_refuses_a_tampered_object(blobs: BlobStore) -> None:
    ref = blobs.put("u1", b"original bytes")
    blobs.put_object(ref.key, b"tampered bytes")  # same length, other content
    with pytest.raises(BlobIntegrityError, match="sha256 mismatch"):
        blobs.get(ref)
    blobs.put_object(ref.key, b"short")
    with pytest.raises(BlobIntegrityError, match="expected 14 bytes, read 5"):
        blobs.get(ref)


def test_putting_the_true_bytes_again_repairs_a_tampered_blob(blobs: BlobStore) -> None:
    ref = blobs.put("u1", b"original bytes")
    blobs.put_object(ref.key, b"tampered bytes")
    assert blobs.put("u1", b"original bytes") == ref
    assert blobs.get(ref) == b"original bytes"


def test_missing_objects_are_not_found(blobs: BlobStore) -> None:
    with pytest.raises(NotFound, match="no object users/u1/workspace/none"):
        blobs.get_object("users/u1/workspace/none")
    digest = hashlib.sha256(b"never stored").hexdigest()
    with pytest.raises(NotFound):
        blobs.get(BlobRef(key=f"users/u1/blobs/sha256/{digest}", sha256=digest, size=12))


def test_list_keys_and_delete_prefix_stay_inside_the_folder(blobs: BlobStore) -> None:
    for key in ("users/u1/a/1", "users/u1/a/2/x", "users/u1/b/1", "users/u10/a/1"):
        blobs.put_object(key, key.encode())
    assert blobs.list_keys("users/u1/a/") == ["users/u1/a/1", "users/u1/a/2/x"]
    assert blobs.list_keys("users/u1/") == ["users/u1/a/1", "users/u1/a/2/x", "users/u1/b/1"]
    assert blobs.list_keys("users/u1/zzz/") == []
    assert blobs.delete_prefix("users/u1/a/") == 2
    assert blobs.list_keys("users/u1/") == ["users/u1/b/1"]
    assert blobs.list_keys("users/u10/") == ["users/u10/a/1"]
    for prefix in ("", "users/u1", "other/", "users/u1/../u2/"):
        with pytest.raises(ValueError, match="invalid"):
            blobs.list_keys(prefix)
        with pytest.raises(ValueError, match="invalid"):
            blobs.delete_prefix(prefix)


def test_keys_that_could_escape_are_refused(blobs: BlobStore) -> None:
    for key in ("/users/u1/x", "users/u1/../u2/x", "users/u1//x", "users/u1/x\x00", "users/u1/x/", "u/" + "k" * 1024):
        with pytest.raises(ValueError, match="invalid object key"):
            blobs.put_object(key, b"x")


def test_a_5_mb_payload_is_offloaded_and_read_back(blobs: BlobStore) -> None:
    offloader = Offloader(blobs, "u1")
    output = {"stdout": "".join(f"line {i:07d} {'x' * 40}\n" for i in range(100_000))}
    assert len(json.dumps(output)) > 5_000_000
    stored = offloader.dump(output)
    assert set(stored) == {"blob"}
    assert stored["blob"]["size"] == len(json.dumps(output, separators=(",", ":")).encode())
    assert offloader.load(stored) == output


def test_shrink_to_fit_keeps_a_large_tool_output_and_a_2000_part_message_under_400_kb(blobs: BlobStore) -> None:
    # A threshold above both values, so they start inline and only shrink_to_fit moves them.
    offloader = Offloader(blobs, "u1", threshold=64 * 1024 * 1024)
    tool_output = {"content": "o" * 5_000_000}
    parts = [{"type": "text", "text": f"paragraph {i}: " + "lorem ipsum " * 20} for i in range(2_000)]
    item = {
        "pk": "U#u1#R#r1",
        "sk": "S#000001",
        "status": "completed",
        "output": offloader.dump(tool_output),
        "parts": offloader.dump(parts),
        "usage": offloader.dump({"inputTokens": 10, "outputTokens": 20}),
    }
    assert item_size(item) > 5_000_000
    assert 400_000 < item_size({"parts": item["parts"]}) < 5_000_000

    shrunk = shrink_to_fit(item, offloader, candidates=["output", "parts", "usage"])

    assert item_size(shrunk) < 400_000
    assert set(shrunk["output"]) == {"blob"}
    assert set(shrunk["parts"]) == {"blob"}
    assert shrunk["usage"] == {"inline": {"inputTokens": 10, "outputTokens": 20}}  # small: stays
    assert (shrunk["pk"], shrunk["sk"], shrunk["status"]) == ("U#u1#R#r1", "S#000001", "completed")
    assert offloader.load(shrunk["output"]) == tool_output
    assert offloader.load(shrunk["parts"]) == parts


# --- S3 specifics ---------------------------------------------------------------------------------


def test_objects_are_written_encrypted_with_their_hash_and_media_type(aws: Any, s3: S3BlobStore) -> None:
    ref = s3.put("u1", b"payload", media_type="application/json")
    head = aws.head_object(Bucket=BUCKET, Key=ref.key)
    assert head["ServerSideEncryption"] == "AES256"
    assert head["ContentType"] == "application/json"
    assert head["Metadata"] == {"sha256": ref.sha256}
    assert head["ContentLength"] == 7


def test_a_put_is_one_request_and_a_repeat_keeps_the_same_bytes(aws: Any, s3: S3BlobStore) -> None:
    calls: list[str] = []

    def count(event_name: str, **_: Any) -> None:
        calls.append(event_name.split(".")[-1])

    aws.meta.events.register("before-call.s3.PutObject", count)
    aws.meta.events.register("before-call.s3.HeadObject", count)
    first = s3.put("u1", b"same")
    second = s3.put("u1", b"same")
    # no HEAD before a PUT: the key is the content's hash, so a repeat rewrites the same bytes
    assert calls == ["PutObject", "PutObject"]
    assert first == second and s3.get(second) == b"same"


def test_a_presigned_link_names_the_key_and_expiry_and_serves_the_object(s3: S3BlobStore) -> None:
    ref = s3.put_object("users/u1/conversations/c1/workspace/out/報告 1.pdf", b"%PDF-1.7", "application/pdf")
    url = s3.presign_get(ref.key, expires_in=120, filename="報告 1.pdf")
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    assert parts.scheme == "https"
    assert BUCKET in parts.netloc + parts.path
    assert unquote(parts.path).endswith("users/u1/conversations/c1/workspace/out/報告 1.pdf")
    assert query["X-Amz-Expires"] == ["120"]
    assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"]
    assert "X-Amz-Signature" in query
    disposition = "attachment; filename=\"__ 1.pdf\"; filename*=UTF-8''%E5%A0%B1%E5%91%8A%201.pdf"
    assert query["response-content-disposition"] == [disposition]

    response = requests.get(url, timeout=5)  # moto serves the signed URL in-process
    assert response.status_code == 200
    assert response.content == b"%PDF-1.7"
    assert response.headers["Content-Disposition"] == disposition


def test_a_presigned_link_without_a_filename_has_no_disposition(s3: S3BlobStore) -> None:
    url = s3.presign_get("users/u1/blobs/sha256/" + "0" * 64)
    assert "response-content-disposition" not in parse_qs(urlsplit(url).query)
    assert parse_qs(urlsplit(url).query)["X-Amz-Expires"] == ["300"]
    with pytest.raises(ValueError, match="expires_in"):
        s3.presign_get("users/u1/x", expires_in=0)


def test_other_s3_errors_become_store_errors_naming_the_code(aws: Any) -> None:
    missing = S3BlobStore("stepline-no-such-bucket", client=aws)
    with pytest.raises(StoreError, match="NoSuchBucket") as raised:
        missing.get_object("users/u1/x")
    assert not isinstance(raised.value, NotFound)
    with pytest.raises(StoreError, match="NoSuchBucket"):
        missing.list_keys("users/u1/")
    with pytest.raises(StoreError, match="NoSuchBucket"):
        missing.put("u1", b"x")
