"""A long message's parts stored in content-addressed pages: a step writes only the pages it changed.

An assistant message keeps every part of its run (whole tool outputs included), so after a few
hundred steps its parts are tens of megabytes, and each step rewrites them. Stored in pages, the
message's body keeps `partPages` — `[{"sha256", "size", "count"}, …]`, the digest and length of
each page's JSON and how many parts it holds — and an empty `parts`; a page is the JSON array of
consecutive parts. How a backend keeps a page is its own (SQLite: a row in the conversation's
partition; DynamoDB: a content-addressed blob in S3, written before the transaction that points
to it, as every offload).

`plan_pages` splits the parts a write stores, given the pages the message had when this unit read
it: each *full* page (at least `PAGE_BYTES` of JSON) whose parts are still the first parts not yet
placed is kept as it is — not serialized, hashed or written again (the read proved it stored) —
and the rest become new pages. So a step writes its own parts plus at most one page's worth of the
parts before them (the open last page), whatever the message's length. A message under
`PAGE_BYTES` stays inline, or under a smaller `inline_bytes` where a write's cost grows with its
bytes and a page's does not (DynamoDB's write units against one S3 PUT per page).

Pages are immutable (their name is their digest), so `PageCache` can keep parsed pages across
reads for as long as the process lives: reading a long message at each step start costs the
pages changed since, not the message.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

from ..protocol._json import dumps, json_copy, loads_strict
from .blobs import sha256_hex, verify
from .errors import StoreError

__all__ = [
    "PAGES_KEY",
    "STEP_PAGES_KEY",
    "PAGE_BYTES",
    "PageCache",
    "PagePlan",
    "StoredDigests",
    "StoredPage",
    "copy_parts",
    "decode_pages",
    "page_bytes",
    "plan_pages",
]

PAGE_BYTES: Final = 64 * 1024
"""A page is closed once its JSON reaches this size; a message's parts under it stay inline."""

PAGES_KEY: Final = "partPages"
"""The message body's key for its page references (its `parts` is then empty)."""


STEP_PAGES_KEY: Final = "stepPages"
"""A checkpoint state's key for the page references of its `steps` (then empty)."""


@dataclass(frozen=True)
class StoredPage:
    """One page: the digest and length of its JSON and its parts (as stored, secrets masked)."""

    digest: str
    size: int
    parts: tuple[dict[str, Any], ...]

    def ref(self) -> dict[str, Any]:
        return {"sha256": self.digest, "size": self.size, "count": len(self.parts)}


@dataclass(frozen=True)
class PagePlan:
    """What a write stores: the message's pages, and which of them to write."""

    pages: list[StoredPage]
    """Every page of the message, in order."""
    new: list[tuple[StoredPage, bytes]]
    """The pages to write (not among the pages read), with their bytes."""


def copy_parts(parts: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A JSON-shaped copy (strings shared: they are immutable), so a caller's edits never reach a cached page."""
    return [cast(dict[str, Any], json_copy(part)) for part in parts]


def page_bytes(parts: Sequence[Mapping[str, Any]]) -> bytes:
    """A page's stored bytes: the JSON array of its parts."""
    return ("[" + ",".join(dumps(part) for part in parts) + "]").encode("utf-8")


def plan_pages(
    parts: Sequence[Mapping[str, Any]],
    read: Sequence[StoredPage] = (),
    known: frozenset[str] = frozenset(),
    *,
    inline_bytes: int = PAGE_BYTES,
    full_only: bool = False,
) -> PagePlan | None:
    """The pages for `parts`, keeping the full pages of `read` they begin with; None: keep them inline.

    `known`: digests of pages known stored (not to be written again) besides the ones in `read`.
    `inline_bytes`: below it, parts neither read in pages nor known stay inline (at most `PAGE_BYTES`).
    `full_only`: the parts after the last full page are not made a page (neither hashed nor
    copied): the caller stores them inline, after the pages' parts.
    """
    pages: list[StoredPage] = []
    placed = 0
    for page in read:
        count = len(page.parts)
        if page.size < PAGE_BYTES or list(parts[placed : placed + count]) != list(page.parts):
            break
        pages.append(page)
        placed += count
    known = known | {page.digest for page in read}
    new: list[tuple[StoredPage, bytes]] = []
    group: list[dict[str, Any]] = []
    chunks: list[str] = []
    size = 0

    def close() -> None:
        data = ("[" + ",".join(chunks) + "]").encode("utf-8")
        page = StoredPage(sha256_hex(data), len(data), tuple(copy_parts(group)))
        pages.append(page)
        if page.digest not in known:
            new.append((page, data))

    for part in parts[placed:]:
        chunk = dumps(part)
        group.append(cast(dict[str, Any], part))
        chunks.append(chunk)
        size += len(chunk.encode("utf-8")) + 1
        if size >= PAGE_BYTES:
            close()
            group, chunks, size = [], [], 0
    if group and not full_only:
        close()
    if full_only:
        return PagePlan(pages, new) if pages else None
    if not read and not known and (not pages or (len(pages) == 1 and pages[0].size < inline_bytes)):
        return None
    return PagePlan(pages, new)


class PageCache:
    """Parsed pages by (user, digest), least recently used dropped past `max_bytes`; thread-safe.

    It also remembers, per (user, key), the pages of the last version written or read of a record
    kept in pages (`note`, `noted`): a run's checkpoints, so the next checkpoint of the run keeps
    its unchanged full pages without serializing them again.
    """

    NOTED: Final = 1_024
    """Records whose last pages are remembered (least recently noted forgotten first)."""

    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        self._pages: OrderedDict[tuple[str, str], StoredPage] = OrderedDict()
        self._bytes = 0
        self._max = max_bytes
        self._lock = threading.Lock()
        self._noted: OrderedDict[tuple[str, str], tuple[str, ...]] = OrderedDict()

    def note(self, user_id: str, key: str, pages: Sequence[StoredPage]) -> None:
        """Remember `pages` as the last version of the record `key` (a run's checkpoint)."""
        with self._lock:
            self._noted[(user_id, key)] = tuple(page.digest for page in pages)
            self._noted.move_to_end((user_id, key))
            while len(self._noted) > self.NOTED:
                self._noted.popitem(last=False)

    def noted(self, user_id: str, key: str) -> list[StoredPage]:
        """The pages last noted for `key`, as far as they are still cached (a prefix of them)."""
        found: list[StoredPage] = []
        with self._lock:
            for digest in self._noted.get((user_id, key), ()):
                page = self._pages.get((user_id, digest))
                if page is None:
                    break
                found.append(page)
        return found

    def get(self, user_id: str, digest: str) -> StoredPage | None:
        with self._lock:
            page = self._pages.get((user_id, digest))
            if page is not None:
                self._pages.move_to_end((user_id, digest))
            return page

    def add(self, user_id: str, page: StoredPage) -> None:
        if page.size > self._max:
            return
        with self._lock:
            if (user_id, page.digest) in self._pages:
                return
            self._pages[(user_id, page.digest)] = page
            self._bytes += page.size
            while self._bytes > self._max:
                _, dropped = self._pages.popitem(last=False)
                self._bytes -= dropped.size


class StoredDigests:
    """Digests of pages this process wrote or read, per user: known stored (blobs are never deleted).

    Bounded: past `limit` digests it forgets them all (a page then is PUT once more, same bytes).
    """

    def __init__(self, limit: int = 200_000) -> None:
        self._users: dict[str, set[str]] = {}
        self._count = 0
        self._limit = limit
        self._lock = threading.Lock()

    def add(self, user_id: str, digest: str) -> None:
        with self._lock:
            if self._count >= self._limit:
                self._users.clear()
                self._count = 0
            found = self._users.setdefault(user_id, set())
            if digest not in found:
                found.add(digest)
                self._count += 1

    def known(self, user_id: str) -> frozenset[str]:
        with self._lock:
            return frozenset(self._users.get(user_id, ()))


def decode_pages(
    user_id: str, refs: object, cache: PageCache, load: Callable[[str, int], bytes]
) -> tuple[list[dict[str, Any]], list[StoredPage]]:
    """The parts the references stand for (copies) and the pages read; `load(digest, size)` reads a page's bytes.

    A page not in the cache is read with `load`, checked against its digest and length, and cached.
    """
    if not isinstance(refs, list):
        raise StoreError("a paged message's page references must be a list")
    pages: list[StoredPage] = []
    parts: list[dict[str, Any]] = []
    for ref in cast(list[Any], refs):
        if not isinstance(ref, Mapping):
            raise StoreError("a page reference must be an object")
        entry = cast(Mapping[str, Any], ref)
        digest, size = str(entry["sha256"]), int(entry["size"])
        page = cache.get(user_id, digest)
        if page is None:
            from .blobs import BlobRef

            data = verify(BlobRef(key=digest, sha256=digest, size=size), load(digest, size))
            body = loads_strict(data)
            if not isinstance(body, list):
                raise StoreError(f"page {digest} is not a list of parts")
            found = cast(list[dict[str, Any]], body)
            if len(found) != int(entry["count"]):
                raise StoreError(f"page {digest} does not hold the {entry['count']} parts its reference says")
            page = StoredPage(digest, size, tuple(found))
            cache.add(user_id, page)
        pages.append(page)
        parts.extend(copy_parts(page.parts))
    return parts, pages
