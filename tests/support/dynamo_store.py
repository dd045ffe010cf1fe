"""A `DynamoStore` on moto, its tables created from template.yaml (call inside `mock_aws()`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import boto3

from stepline.aws.dynamodb import DynamoStore
from tests.support.aws_resources import create_tables

TABLES = {"AgentTable": "stepline-agent", "EventsTable": "stepline-events"}
_WRITES = frozenset({"transact_write_items", "put_item", "update_item", "delete_item"})


class SerializedWrites:
    """moto checks a transaction's conditions and applies its writes without a lock, so two threads
    can both pass `rev = :rev` (seen: duplicated event seqs). Real DynamoDB serialises conflicting
    writes per item. This proxy restores that guarantee in tests by running moto's writes one at a
    time; the store's own logic is exercised unchanged (its reads stay concurrent)."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if name not in _WRITES:
            return attribute

        def locked(**kwargs: Any) -> Any:
            with self._lock:
                return attribute(**kwargs)

        return locked


def make_dynamo_store(**options: Any) -> tuple[DynamoStore, Callable[[], Any]]:
    client = boto3.client("dynamodb", region_name="us-east-1")
    create_tables(client, TABLES)
    store = DynamoStore(
        SerializedWrites(client), agent_table=TABLES["AgentTable"], events_table=TABLES["EventsTable"], **options
    )

    def dump() -> Any:
        tables = {}
        for name in TABLES.values():
            items = client.scan(TableName=name, ConsistentRead=True)["Items"]
            tables[name] = sorted(repr(sorted(item.items())) for item in items)
        return tables

    return store, dump
