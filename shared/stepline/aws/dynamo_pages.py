"""Long messages and checkpoints on DynamoDB: content-addressed page blobs in S3, the item pointing to them.

A message item keeps its record's JSON with `partPages` and an empty `parts` (and no `content`
when it is the text parts joined, as it is but for older records), a checkpoint item its
state with `stepPages` and empty `steps` (`stepline.store.message_pages`, `checkpoint_pages`); each
page is a blob `users/{user}/blobs/sha256/{digest}`, written before the transaction that points to
it (a failed transaction leaves an orphan, never a dangling pointer). A message write PUTs only the
pages that are not among the ones the unit read (the read proved those stored); a checkpoint write
only the pages this process has not written or read (`StoredDigests`: payload blobs are never
deleted, so once stored a page stays stored; a new process PUTs a run's step pages once more). A
read GETs only the pages not in the process's `PageCache`.
"""

from __future__ import annotations

from typing import Any

from ..protocol._json import dumps
from ..store.blobs import BlobRef, BlobStore, blob_key
from ..store.checkpoint_pages import checkpoint_json, load_checkpoint
from ..store.message_pages import PAGES_KEY, PageCache, StoredDigests, StoredPage, decode_pages, plan_pages
from ..store.records import CheckpointRecord, MessageRecord
from ..store.turns import visible_text

__all__ = ["MESSAGE_INLINE_BYTES", "PagedRecords"]

_MEDIA_TYPE = "application/json"

MESSAGE_INLINE_BYTES = 8 * 1024
"""A message's parts go to pages in S3 from this size on (not only from a page's 64 KB): cheaper from ~5 KB.

The message's parts snapshot is written in the step-end transaction, 2 write units per started KB
($0.625 per million units, us-east-1 on-demand); inline, a step rewrites the whole message, growing
with the run (3.7 KB at step 1 and 30 KB at step 10 of bench/cost.py's run: 428 write units for
the message alone). In pages a step PUTs the open page (and a page it closed), a PUT each
($0.005 per 1,000, whatever its size up to `PAGE_BYTES`: what 8 write units cost), and the item
keeps the page references. A process that has not seen a page (a cold function, another
function's reads) GETs it ($0.0004 per 1,000) on its first read, then keeps it in its page cache."""


class PagedRecords:
    """The paged encoding of messages and checkpoints over one blob store (one per `DynamoStore`)."""

    def __init__(self, blobs: BlobStore, *, message_inline_bytes: int = MESSAGE_INLINE_BYTES) -> None:
        self._blobs = blobs
        self._message_inline_bytes = message_inline_bytes
        self._cache = PageCache()
        self._stored = StoredDigests()

    def _put(self, user_id: str, page: StoredPage, data: bytes) -> None:
        self._blobs.put(user_id, data, media_type=_MEDIA_TYPE)
        self._stored.add(user_id, page.digest)

    def _load(self, user_id: str, digest: str, size: int) -> bytes:
        data = self._blobs.get(BlobRef(key=blob_key(user_id, digest), sha256=digest, size=size, media_type=_MEDIA_TYPE))
        self._stored.add(user_id, digest)
        return data

    def message_json(self, record: MessageRecord, read: list[StoredPage]) -> str:
        """The message's JSON for its item: its parts in pages once they are long (new pages PUT first)."""
        plan = plan_pages(record.parts, read, inline_bytes=self._message_inline_bytes)
        if plan is None:
            return dumps(record.model_dump(mode="json"))
        for page, data in plan.new:
            self._put(record.user_id, page, data)
            self._cache.add(record.user_id, page)
        fields = record.model_dump(mode="json", exclude={"parts"})
        if record.content == visible_text(record.parts):
            del fields["content"]  # the text parts joined: read back from the pages, not written each step
        return dumps({**fields, "parts": [], PAGES_KEY: [page.ref() for page in plan.pages]})

    def load_message(self, data: dict[str, Any]) -> tuple[MessageRecord, list[StoredPage]]:
        """The message from its item's JSON (its pages from the cache, else the blobs), and its pages."""
        if PAGES_KEY not in data:
            return MessageRecord.model_validate(data), []
        fields = dict(data)
        user_id = str(fields["user_id"])
        fields["parts"], pages = decode_pages(
            user_id, fields.pop(PAGES_KEY), self._cache, lambda digest, size: self._load(user_id, digest, size)
        )
        fields.setdefault("content", visible_text(fields["parts"]))
        return MessageRecord.model_validate(fields), pages

    def checkpoint_json(self, record: CheckpointRecord) -> str:
        """The checkpoint's JSON for its item: its step records in pages, the ones not known stored PUT first."""
        user_id = record.user_id
        return checkpoint_json(
            record, lambda page, data: self._put(user_id, page, data), self._stored.known(user_id), self._cache
        )

    def load_checkpoint(self, data: dict[str, Any]) -> CheckpointRecord:
        """The checkpoint from its item's JSON, its step records from their pages."""
        user_id = str(data["user_id"])
        return load_checkpoint(data, self._cache, lambda digest, size: self._load(user_id, digest, size))
