"""The notes of the streams that follow a run (`stepline.runtime.watchers`), on DynamoDB.

One item per run beside its other items in the agent table (`pk` the run's, `sk` `W#`, `kind`
`watch`), holding until when the last note counts (`until`, epoch ms) and a TTL (`expires_at`, a
day after it). A note is one conditional `UpdateItem` (one write unit) that moves `until` only
forward, so a stream on a function whose clock lags cannot cut another's note short (a refused
condition is that case: nothing to do). The model step reads it with an eventually consistent
`GetItem` (half a read unit) once a second: a note a few hundred milliseconds old at worst, which
the 30 s a note counts absorbs.
"""

from __future__ import annotations

from typing import Any

from .dynamo_items import move_forward, num_attr, str_attr

__all__ = ["DynamoWatchers"]

_EXPIRY_SECONDS = 24 * 3600
"""A note's item is deleted by DynamoDB's TTL a day after it stopped counting (it is read only by key)."""


class DynamoWatchers:
    """`Watchers` over the agent table."""

    def __init__(self, client: Any, table: str) -> None:
        self._client = client
        self._table = table

    @staticmethod
    def _key(user_id: str, run_id: str) -> dict[str, Any]:
        return {"pk": str_attr(f"U#{user_id}#R#{run_id}"), "sk": str_attr("W#")}

    def note(self, user_id: str, run_id: str, *, until_ms: int) -> None:
        expires = num_attr(until_ms // 1000 + _EXPIRY_SECONDS)
        key = self._key(user_id, run_id)
        move_forward(self._client, self._table, key, "until", until_ms, kind=str_attr("watch"), expires_at=expires)

    def watched_until(self, user_id: str, run_id: str) -> int | None:
        item = self._client.get_item(TableName=self._table, Key=self._key(user_id, run_id)).get("Item")
        return None if item is None else int(item["until"]["N"])
