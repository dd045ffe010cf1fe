"""A long message's parts on DynamoDB: content-addressed page blobs in S3, the item pointing to them.

The message item keeps its record's JSON with `partPages` and an empty `parts` (see
`stepline.store.message_pages`); each page is a blob `users/{user}/blobs/sha256/{digest}`, written
before the transaction that points to it (a failed transaction leaves an orphan, never a dangling
pointer). A write PUTs only the pages that are not among the ones the unit read: those the read
proved stored. A read GETs only the pages not in the process's `PageCache` (a warm function reads
a long message's new pages, not the message).
"""

from __future__ import annotations

from typing import Any

from ..protocol._json import dumps
from ..store.blobs import BlobRef, BlobStore, blob_key
from ..store.message_pages import PAGES_KEY, PageCache, StoredPage, decode_pages, plan_pages
from ..store.records import MessageRecord

__all__ = ["load_message", "message_json"]

_MEDIA_TYPE = "application/json"


def message_json(record: MessageRecord, blobs: BlobStore, read: list[StoredPage], cache: PageCache) -> str:
    """The message's JSON for its item: its parts in pages once they are long (new pages PUT first)."""
    plan = plan_pages(record.parts, read)
    if plan is None:
        return dumps(record.model_dump(mode="json"))
    for page, data in plan.new:
        blobs.put(record.user_id, data, media_type=_MEDIA_TYPE)
        cache.add(record.user_id, page)
    fields = record.model_dump(mode="json", exclude={"parts"})
    return dumps({**fields, "parts": [], PAGES_KEY: [page.ref() for page in plan.pages]})


def load_message(data: dict[str, Any], blobs: BlobStore, cache: PageCache) -> tuple[MessageRecord, list[StoredPage]]:
    """The message from its item's JSON (its pages read from the cache, else from the blobs), and its pages."""
    if PAGES_KEY not in data:
        return MessageRecord.model_validate(data), []
    fields = dict(data)
    user_id = str(fields["user_id"])

    def load(digest: str, size: int) -> bytes:
        return blobs.get(BlobRef(key=blob_key(user_id, digest), sha256=digest, size=size, media_type=_MEDIA_TYPE))

    fields["parts"], pages = decode_pages(user_id, fields.pop(PAGES_KEY), cache, load)
    return MessageRecord.model_validate(fields), pages
