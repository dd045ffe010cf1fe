"""A `DynamoStore` on moto, its tables created from template.yaml (call inside `mock_aws()`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3

from stepline.aws.dynamodb import DynamoStore
from stepline.local.backend import TABLES, SerializedCalls
from stepline.local.resources import create_tables

__all__ = ["TABLES", "make_dynamo_store"]


def make_dynamo_store(**options: Any) -> tuple[DynamoStore, Callable[[], Any]]:
    client = boto3.client("dynamodb", region_name="us-east-1")
    create_tables(client, TABLES)
    store = DynamoStore(
        SerializedCalls(client), agent_table=TABLES["AgentTable"], events_table=TABLES["EventsTable"], **options
    )

    def dump() -> Any:
        tables = {}
        for name in TABLES.values():
            items = client.scan(TableName=name, ConsistentRead=True)["Items"]
            tables[name] = sorted(repr(sorted(item.items())) for item in items)
        return tables

    return store, dump
