"""Artifact ids deduplicate by (type, token/path/URL) within a conversation; links are presigned or external."""

from __future__ import annotations

from typing import get_args
from urllib.parse import parse_qs, urlsplit

import pytest

from stepline.store.artifacts import ArtifactType, artifact_id, artifact_link, make_artifact
from stepline.store.blobs import MemoryBlobStore
from stepline.store.records import ArtifactRecord, check_id


def test_the_artifact_types_are_the_records_types() -> None:
    assert set(get_args(ArtifactType)) == set(get_args(ArtifactRecord.model_fields["type"].annotation))


def test_the_same_target_in_a_conversation_has_the_same_id() -> None:
    first = artifact_id("c1", "feishu_document", token="doxcnABC")
    assert first == artifact_id("c1", "feishu_document", token="doxcnABC")
    assert first.startswith("art_")
    assert check_id(first, "artifact id") == first  # usable as key material


def test_paths_are_normalised_before_hashing() -> None:
    assert artifact_id("c1", "file", path="./out//report.md") == artifact_id("c1", "file", path="out/report.md")


@pytest.mark.parametrize(
    "other",
    [
        artifact_id("c2", "feishu_document", token="doxcnABC"),  # another conversation
        artifact_id("c1", "task", token="doxcnABC"),  # another type
        artifact_id("c1", "feishu_document", token="doxcnABD"),  # another token
        artifact_id("c1", "feishu_document", url="doxcnABC"),  # the same text as a URL
    ],
)
def test_anything_else_gives_another_id(other: str) -> None:
    assert artifact_id("c1", "feishu_document", token="doxcnABC") != other


def test_exactly_one_identity_and_a_known_type_are_required() -> None:
    with pytest.raises(ValueError, match="exactly one of token, path or url"):
        artifact_id("c1", "file")
    with pytest.raises(ValueError, match="exactly one of token, path or url"):
        artifact_id("c1", "file", path="a", url="https://x")
    with pytest.raises(ValueError, match="must not be empty"):
        artifact_id("c1", "url", url="")
    with pytest.raises(ValueError, match="unknown artifact type 'image'"):
        artifact_id("c1", "image", url="https://x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'..'"):
        artifact_id("c1", "file", path="../secret")


def test_make_artifact_for_a_workspace_file() -> None:
    record = make_artifact(
        user_id="u1",
        conversation_id="c1",
        message_id="m1",
        run_id="r1",
        type="file",
        path="out/report.md",
        media_type="text/markdown",
        size=12,
        created_at=1_787_630_000_000,
    )
    assert record.artifact_id == artifact_id("c1", "file", path="out/report.md")
    assert record.storage_key == "users/u1/conversations/c1/workspace/out/report.md"
    assert record.name == "report.md"
    assert record.uri is None
    assert (record.media_type, record.size, record.created_at) == ("text/markdown", 12, 1_787_630_000_000)


def test_make_artifact_for_an_external_document_defaults_created_at_to_now() -> None:
    record = make_artifact(
        user_id="u1",
        conversation_id="c1",
        message_id="m1",
        run_id="r1",
        type="url",
        url="https://example.com/doc",
        name="Spec",
        tool_call_id="call_1",
    )
    assert (record.uri, record.storage_key, record.name, record.tool_call_id) == (
        "https://example.com/doc",
        None,
        "Spec",
        "call_1",
    )
    assert record.created_at > 1_700_000_000_000


def test_a_stored_artifact_links_through_a_presigned_get_named_after_it() -> None:
    blobs = MemoryBlobStore(clock=lambda: 1_000.0)
    record = make_artifact(
        user_id="u1", conversation_id="c1", message_id="m1", run_id="r1", type="prototype", path="proto/index.html"
    )
    link = urlsplit(artifact_link(blobs, record, expires_in=60))
    assert (link.scheme, link.netloc + link.path) == ("memory", "users/u1/conversations/c1/workspace/proto/index.html")
    assert parse_qs(link.query) == {"expires": ["1060"], "filename": ["index.html"]}


def test_an_external_artifact_links_to_its_uri_but_only_over_http() -> None:
    blobs = MemoryBlobStore()
    record = make_artifact(
        user_id="u1", conversation_id="c1", message_id="m1", run_id="r1", type="url", url="https://example.com/a"
    )
    assert artifact_link(blobs, record) == "https://example.com/a"
    unsafe = record.model_copy(update={"uri": "javascript:alert(1)"})
    with pytest.raises(ValueError, match="only http"):
        artifact_link(blobs, unsafe)


def test_links_are_refused_for_records_pointing_outside_their_user_or_nowhere() -> None:
    blobs = MemoryBlobStore()
    record = make_artifact(user_id="u1", conversation_id="c1", message_id="m1", run_id="r1", type="task", token="t1")
    with pytest.raises(ValueError, match="neither a storage key nor a URI"):
        artifact_link(blobs, record)
    foreign = record.model_copy(update={"storage_key": "users/u2/conversations/c9/workspace/x"})
    with pytest.raises(ValueError, match="outside its user's scope"):
        artifact_link(blobs, foreign)
