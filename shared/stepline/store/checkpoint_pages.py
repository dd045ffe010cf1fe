"""A checkpoint's step records in content-addressed pages: each checkpoint stops rewriting the run's past.

A checkpoint is the whole `LoopState`, and its `steps` keep a record of every finished step (each
earlier step's tool outputs as previews, `stepline.context.offload`): a few KB more at every step,
so the checkpoint written at step k held k step records. Stored in pages (`message_pages`), the
state keeps `stepPages` and an empty `steps`; an earlier step's record no longer changes once its
outputs are previews, so the pages holding it are the same bytes, under the same digest, in every
later checkpoint, and a write stores only the pages whose digest is not known stored (the pages of
the checkpoint before it, or ones this process wrote). The pages of the run's last checkpoint this
process wrote or read (`PageCache.note`) are compared with the records instead of serialized: a
full page whose records are unchanged is kept as it is, so a checkpoint serializes and hashes only
its last page's records and the new ones, not the run's whole past. The open last page (under
`PAGE_BYTES`, so changed by every step) is not a page of its own: its records stay in the state's
`steps`, after the records of `stepPages`, and are stored with the rest of the state (the messages
the next request sends, the pending approvals, the usage). A step end so writes one object, not
two: on DynamoDB the checkpoint, over 8 KB a blob in S3 anyway, carries its newest records, and
only a page that a step closes is PUT besides it (an S3 PUT costs what 8 write units do).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from ..protocol._json import dumps
from .message_pages import STEP_PAGES_KEY, PageCache, StoredPage, decode_pages, page_bytes, plan_pages
from .records import CheckpointRecord

__all__ = ["checkpoint_json", "load_checkpoint", "step_page_digests"]


def checkpoint_json(
    record: CheckpointRecord,
    write: Callable[[StoredPage, bytes], None],
    known: frozenset[str],
    cache: PageCache,
) -> str:
    """The checkpoint's JSON, its step records in pages once they are long (`write` called for each new page first)."""
    steps: object = record.state.get("steps")
    listed = cast(list[object], steps) if isinstance(steps, list) else []
    # only a non-empty list of records is paged: any other state is stored exactly as given
    records = [cast(dict[str, Any], step) for step in listed if isinstance(step, dict)]
    if not records or len(records) != len(listed):
        return dumps(record.model_dump(mode="json"))
    # the run's previous checkpoint's full pages that this one begins with are kept, not serialized again
    plan = plan_pages(records, cache.noted(record.user_id, record.run_id), known, full_only=True)
    if plan is None:
        return dumps(record.model_dump(mode="json"))
    written = known | {page.digest for page, _ in plan.new}
    # a remembered page is stored unless its checkpoint's write failed: one not known stored is written too
    again = [(page, page_bytes(page.parts)) for page in plan.pages if page.digest not in written]
    for page, data in [*plan.new, *again]:
        write(page, data)
    for page in plan.pages:
        cache.add(record.user_id, page)
    cache.note(record.user_id, record.run_id, plan.pages)
    fields = record.model_dump(mode="json", exclude={"state"})
    tail = records[sum(len(page.parts) for page in plan.pages) :]  # the open page's records, kept with the state
    state = {**record.state, "steps": tail, STEP_PAGES_KEY: [page.ref() for page in plan.pages]}
    return dumps({**fields, "state": state})


def step_page_digests(data: object) -> frozenset[str]:
    """The digests of a stored checkpoint's step pages (none when its steps are inline)."""
    state = cast(dict[str, Any], data).get("state") if isinstance(data, dict) else None
    refs = cast(dict[str, Any], state).get(STEP_PAGES_KEY) if isinstance(state, dict) else None
    if not isinstance(refs, list):
        return frozenset()
    return frozenset(str(cast(dict[str, Any], ref)["sha256"]) for ref in cast(list[Any], refs))


def load_checkpoint(data: dict[str, Any], cache: PageCache, load: Callable[[str, int], bytes]) -> CheckpointRecord:
    """The checkpoint from its stored JSON, its step records read from their pages (cache first)."""
    state = data.get("state")
    if not isinstance(state, dict) or STEP_PAGES_KEY not in state:
        return CheckpointRecord.model_validate(data)
    restored = dict(cast(dict[str, Any], state))
    user_id = str(data["user_id"])
    paged, pages = decode_pages(user_id, restored.pop(STEP_PAGES_KEY), cache, load)
    tail: object = restored.get("steps")
    restored["steps"] = paged + (cast(list[Any], tail) if isinstance(tail, list) else [])
    cache.note(user_id, str(data["run_id"]), pages)
    return CheckpointRecord.model_validate({**data, "state": restored})
