"""`DynamoSlots`: the working-run slots as one item per owner in the agent table.

`pk = U#{user}#SLOTS` or `T#{tenant}#SLOTS`, `sk = slots`; `leases` is a map of run id to expiry
(ms), `expires_at` the item's TTL (epoch seconds, a day after the last lease taken would expire:
an owner with no run for a day leaves no item behind).

Taking a slot is one `UpdateItem` that sets the run's lease under the condition
`attribute_exists(leases.#run) OR size(leases) < :cap`: DynamoDB serialises the conditional writes
of an item, so two runs racing the last slot cannot both pass, and a holder renewing is never
refused. A refusal reads the item once: leases that have expired are removed (each under the
condition that it still holds the expiry read, so a renewal in between is kept) and the update is
tried again; the item's first lease is a `PutItem` under `attribute_not_exists(pk)`. Releasing is
`REMOVE leases.#run`, unconditional and idempotent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..store.run_slots import SlotCap, SlotKey, live, refuses

__all__ = ["DynamoSlots"]

_ATTEMPTS = 8
_DAY_SECONDS = 86_400


def _key(key: SlotKey) -> dict[str, Any]:
    pk = f"U#{key.owner}#SLOTS" if key.scope == "user" else f"T#{key.owner}#SLOTS"
    return {"pk": {"S": pk}, "sk": {"S": "slots"}}


def _leases(item: dict[str, Any] | None) -> dict[str, int] | None:
    if not item or "leases" not in item:
        return None
    return {run: int(value["N"]) for run, value in item["leases"]["M"].items()}


class DynamoSlots:
    """Working-run leases in the agent table (`client` is a boto3 DynamoDB client)."""

    def __init__(self, client: Any, *, table: str) -> None:
        self.client = client
        self.table = table

    def _failed(self, error: Exception) -> bool:
        return isinstance(error, self.client.exceptions.ConditionalCheckFailedException)

    def take_one(self, cap: SlotCap, run_id: str, *, now_ms: int, lease_ms: int) -> bool:
        expiry = now_ms + lease_ms
        ttl = {"N": str(expiry // 1000 + _DAY_SECONDS)}
        condition = "attribute_exists(leases)"
        values: dict[str, Any] = {":e": {"N": str(expiry)}, ":ttl": ttl}
        if cap.cap is not None:
            condition += " AND (attribute_exists(leases.#r) OR size(leases) < :cap)"
            values[":cap"] = {"N": str(cap.cap)}
        for _ in range(_ATTEMPTS):
            try:
                self.client.update_item(
                    TableName=self.table,
                    Key=_key(cap.key),
                    UpdateExpression="SET leases.#r = :e, expires_at = :ttl",
                    ConditionExpression=condition,
                    ExpressionAttributeNames={"#r": run_id},
                    ExpressionAttributeValues=values,
                )
                return True
            except Exception as error:
                if not self._failed(error):
                    raise
            found = self.client.get_item(TableName=self.table, Key=_key(cap.key), ConsistentRead=True).get("Item")
            leases = _leases(found)
            if leases is None:  # the owner's first lease: the item itself
                if self._create(cap.key, run_id, expiry, ttl):
                    return True
                continue
            expired = {run: at for run, at in leases.items() if run not in live(leases, now_ms)}
            if expired:  # they count in size(leases): dropped, then the update again
                self._drop(cap.key, expired)
            elif refuses(cap, leases, run_id, now_ms):
                return False
            # else: a lease was released since the update was refused; try again
        return False

    def _create(self, key: SlotKey, run_id: str, expiry: int, ttl: dict[str, str]) -> bool:
        item = {**_key(key), "leases": {"M": {run_id: {"N": str(expiry)}}}, "expires_at": ttl}
        try:
            self.client.put_item(TableName=self.table, Item=item, ConditionExpression="attribute_not_exists(pk)")
        except Exception as error:
            if not self._failed(error):
                raise
            return False
        return True

    def _drop(self, key: SlotKey, expired: dict[str, int]) -> None:
        names = {f"#x{n}": run for n, run in enumerate(expired)}
        values = {f":x{n}": {"N": str(at)} for n, at in enumerate(expired.values())}
        try:
            self.client.update_item(
                TableName=self.table,
                Key=_key(key),
                UpdateExpression="REMOVE " + ", ".join(f"leases.{name}" for name in names),
                ConditionExpression=" AND ".join(f"leases.#x{n} = :x{n}" for n in range(len(names))),
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except Exception as error:  # one was renewed or released meanwhile: the caller reads again
            if not self._failed(error):
                raise

    def release(self, keys: Sequence[SlotKey], run_id: str) -> None:
        for key in keys:
            try:
                self.client.update_item(
                    TableName=self.table,
                    Key=_key(key),
                    UpdateExpression="REMOVE leases.#r",
                    ConditionExpression="attribute_exists(leases)",
                    ExpressionAttributeNames={"#r": run_id},
                )
            except Exception as error:  # no item: nothing was held
                if not self._failed(error):
                    raise

    def holders(self, key: SlotKey, *, now_ms: int) -> dict[str, int]:
        found = self.client.get_item(TableName=self.table, Key=_key(key), ConsistentRead=True).get("Item")
        return live(_leases(found) or {}, now_ms)
