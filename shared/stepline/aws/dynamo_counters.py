"""`DynamoCounters`: the usage counters as items of the agent table, counted with `ADD`.

An owner's counters share a partition (`pk = U#{user}#USAGE` or `T#{tenant}#USAGE`); the sort key
is the period (`day:2026-12-02`, a run tree's `run:2026-12-02:{rootRunId}`), followed by
`#A#{agent}` for one agent's share. Attributes: `tokens`, `nanoUsd`, `calls`, `unpricedCalls`
(spent), `committedTokens`, `committedNanoUsd` (spent plus the calls under way), and `expires_at`,
the item's TTL (epoch seconds, set on every write: `usage_counters.expiry_seconds`, the period's
end plus an hour for a minute, five weeks for a day and a run tree's day, 400 days for a month),
so the counters of past periods, the rate limits' minutes above all, do not pile up.

A reservation is one `TransactWriteItems`: per counter an `ADD` of the worst case with the
condition that the committed amount before it is at most the ceiling minus the worst case
(DynamoDB conditions cannot add, so the subtraction is done here). Either every counter takes the
reservation or none does, and two runs racing the last of a budget cannot both pass: DynamoDB
serialises the conditional writes of an item.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..store.usage_counters import Ceiling, CounterKey, CounterValue, expiry_seconds, settlements

__all__ = ["DynamoCounters"]


def _pk(key: CounterKey) -> str:
    return f"U#{key.owner}#USAGE" if key.scope == "user" else f"T#{key.owner}#USAGE"


def _sk(key: CounterKey) -> str:
    return key.period if key.agent is None else f"{key.period}#A#{key.agent}"


def _key(key: CounterKey) -> dict[str, Any]:
    return {"pk": {"S": _pk(key)}, "sk": {"S": _sk(key)}}


def _n(value: int) -> dict[str, str]:
    return {"N": str(value)}


def _value(item: dict[str, Any] | None) -> CounterValue:
    if not item:
        return CounterValue()
    number = {name: int(item[name]["N"]) if name in item else 0 for name in _ATTRIBUTES}
    return CounterValue(
        tokens=number["tokens"],
        nano_usd=number["nanoUsd"],
        calls=number["calls"],
        unpriced_calls=number["unpricedCalls"],
        committed_tokens=number["committedTokens"],
        committed_nano_usd=number["committedNanoUsd"],
    )


_ATTRIBUTES = ("tokens", "nanoUsd", "calls", "unpricedCalls", "committedTokens", "committedNanoUsd")


class DynamoCounters:
    """Usage counters in the agent table (`client` is a boto3 DynamoDB client)."""

    def __init__(self, client: Any, *, table: str) -> None:
        self.client = client
        self.table = table

    def _reservation(self, ceiling: Ceiling, tokens: int, nano_usd: int) -> dict[str, Any]:
        values: dict[str, Any] = {":t": _n(tokens), ":u": _n(nano_usd), ":x": _n(expiry_seconds(ceiling.key.period))}
        conditions: list[str] = []
        # committed + worst <= ceiling, written as committed <= ceiling - worst (no arithmetic in conditions)
        if ceiling.tokens is not None:
            conditions.append("(attribute_not_exists(committedTokens) OR committedTokens <= :mt)")
            values[":mt"] = _n(ceiling.tokens - tokens)
        if ceiling.nano_usd is not None:
            conditions.append("(attribute_not_exists(committedNanoUsd) OR committedNanoUsd <= :mu)")
            values[":mu"] = _n(ceiling.nano_usd - nano_usd)
        update: dict[str, Any] = {
            "TableName": self.table,
            "Key": _key(ceiling.key),
            "UpdateExpression": "SET expires_at = :x ADD committedTokens :t, committedNanoUsd :u",
            "ExpressionAttributeValues": values,
        }
        if conditions:
            update["ConditionExpression"] = " AND ".join(conditions)
        return {"Update": update}

    def reserve(self, ceilings: Sequence[Ceiling], tokens: int, nano_usd: int) -> Ceiling | None:
        if not ceilings:
            return None
        for ceiling in ceilings:  # a ceiling the worst case alone passes refuses without a write
            if ceiling.refuses(CounterValue(), tokens, nano_usd):
                return ceiling
        items = [self._reservation(c, tokens, nano_usd) for c in ceilings]
        try:
            self.client.transact_write_items(TransactItems=items)
        except self.client.exceptions.TransactionCanceledException as error:
            reasons = [r.get("Code") for r in error.response.get("CancellationReasons", [])]
            refused = [c for c, code in zip(ceilings, reasons, strict=False) if code == "ConditionalCheckFailed"]
            if not refused:
                raise
            return refused[0]
        return None

    def settle(
        self,
        keys: Sequence[CounterKey],
        *,
        reserved: tuple[int, int],
        used: tuple[int, int],
        agent: str | None = None,
        priced: bool = True,
    ) -> None:
        deltas = settlements(keys, reserved=reserved, used=used, agent=agent, priced=priced)
        for key, delta in deltas:  # unconditional ADDs: each is atomic on its own, and their order is free
            self.client.update_item(
                TableName=self.table,
                Key=_key(key),
                UpdateExpression=(
                    "SET expires_at = :x ADD tokens :t, nanoUsd :u, calls :one, unpricedCalls :np, "
                    "committedTokens :dt, committedNanoUsd :du"
                ),
                ExpressionAttributeValues={
                    ":t": _n(delta.tokens),
                    ":u": _n(delta.nano_usd),
                    ":one": _n(delta.calls),
                    ":np": _n(delta.unpriced_calls),
                    ":dt": _n(delta.committed_tokens),
                    ":du": _n(delta.committed_nano_usd),
                    ":x": _n(expiry_seconds(key.period)),
                },
            )

    def read(self, key: CounterKey) -> CounterValue:
        response = self.client.get_item(TableName=self.table, Key=_key(key), ConsistentRead=True)
        return _value(response.get("Item"))

    def agents(self, key: CounterKey) -> dict[str, CounterValue]:
        prefix = f"{key.period}#A#"
        response = self.client.query(
            TableName=self.table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues={":pk": {"S": _pk(key)}, ":prefix": {"S": prefix}},
            ConsistentRead=True,
        )
        return {str(item["sk"]["S"])[len(prefix) :]: _value(item) for item in response.get("Items", [])}
