"""Artifact identity, deduplication and links.

An artifact is identified by what it points at, within its conversation: its type plus exactly
one of a token (a Feishu document, a task), a workspace path, or a URL. The id is a hash of
those, so the same document or file produced twice in a conversation is one artifact (the
store's conditional put turns the second write into a no-op), and the same document in another
conversation is another one.

Links: a stored artifact (`storage_key`) is served through a short-lived presigned GET; an
external one through its own `http(s)` URI. Nothing else is ever handed out as a link.
"""

from __future__ import annotations

import hashlib
import time
from typing import Final, Literal, get_args

from pydantic import JsonValue

from ..protocol._json import dumps
from .blobs import BlobStore
from .records import ArtifactRecord, check_id
from .workspace import normalise_path, workspace_key

__all__ = ["ArtifactType", "artifact_id", "artifact_link", "make_artifact"]

ArtifactType = Literal["file", "feishu_document", "prototype", "url", "task"]
"""`ArtifactRecord.type`'s values (a test keeps the two equal)."""

_TYPES: Final = frozenset(get_args(ArtifactType))
_LINK_SCHEMES: Final = ("https://", "http://")


def _identity(token: str | None, path: str | None, url: str | None) -> tuple[str, str]:
    given = [(name, value) for name, value in (("token", token), ("path", path), ("url", url)) if value is not None]
    if len(given) != 1:
        raise ValueError("an artifact is identified by exactly one of token, path or url")
    name, value = given[0]
    if not value:
        raise ValueError(f"an artifact {name} must not be empty")
    return name, normalise_path(value) if name == "path" else value


def artifact_id(
    conversation_id: str,
    type: ArtifactType,
    *,
    token: str | None = None,
    path: str | None = None,
    url: str | None = None,
) -> str:
    """A stable id: the same (type, token/path/URL) in one conversation always gives the same id.

    Paths are normalised first (`./a//b` and `a/b` are one file); tokens and URLs are compared as given.
    """
    check_id(conversation_id, "conversation id")
    if type not in _TYPES:
        raise ValueError(f"unknown artifact type {type!r}; expected one of {sorted(_TYPES)}")
    name, value = _identity(token, path, url)
    # JSON-encoding the tuple keeps the fields apart (no separator can be forged inside a value).
    digest = hashlib.sha256(dumps([conversation_id, type, name, value]).encode("utf-8")).hexdigest()
    return f"art_{digest[:32]}"


def make_artifact(
    *,
    user_id: str,
    conversation_id: str,
    message_id: str,
    run_id: str,
    type: ArtifactType,
    token: str | None = None,
    path: str | None = None,
    url: str | None = None,
    name: str = "",
    tool_call_id: str | None = None,
    media_type: str | None = None,
    size: int | None = None,
    metadata: dict[str, JsonValue] | None = None,
    created_at: int | None = None,
) -> ArtifactRecord:
    """An `ArtifactRecord` with its deduplicating id.

    A `path` artifact is stored in the conversation's workspace (`storage_key` is that file's key);
    a `url` artifact keeps the URL as its `uri`; a `token` artifact keeps the token. `created_at`
    defaults to now (epoch milliseconds).
    """
    check_id(user_id, "user id")
    identifier = artifact_id(conversation_id, type, token=token, path=path, url=url)
    return ArtifactRecord(
        user_id=user_id,
        artifact_id=identifier,
        conversation_id=conversation_id,
        message_id=message_id,
        run_id=run_id,
        tool_call_id=tool_call_id,
        type=type,
        name=name or (normalise_path(path).rsplit("/", 1)[-1] if path is not None else ""),
        uri=url,
        storage_key=workspace_key(user_id, conversation_id, path) if path is not None else None,
        token=token,
        media_type=media_type,
        size=size,
        metadata=metadata,
        created_at=created_at if created_at is not None else time.time_ns() // 1_000_000,
    )


def artifact_link(blobs: BlobStore, record: ArtifactRecord, *, expires_in: int = 300) -> str:
    """Where a client can open the artifact: a presigned GET for a stored one, the URI of an external one.

    Raises:
        ValueError: the record points outside its user's scope, its URI is not `http(s)`, or it has
            neither a storage key nor a URI.
    """
    if record.storage_key is not None:
        # Records are server-written; still, never sign a key outside the record owner's scope.
        if not record.storage_key.startswith(f"users/{record.user_id}/"):
            raise ValueError(f"artifact {record.artifact_id}: storage key outside its user's scope")
        return blobs.presign_get(record.storage_key, expires_in=expires_in, filename=record.name or None)
    if record.uri is not None:
        # The link ends up in an href: refuse javascript:, data: and other schemes.
        if not record.uri.lower().startswith(_LINK_SCHEMES):
            raise ValueError(f"artifact {record.artifact_id}: only http(s) URIs are linked")
        return record.uri
    raise ValueError(f"artifact {record.artifact_id} has neither a storage key nor a URI")
