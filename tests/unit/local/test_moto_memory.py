"""moto's DynamoDB in `stepline dev --memory` does not keep a copy of its tables per transaction."""

from __future__ import annotations

import gc
from typing import Any

import boto3
from moto import mock_aws
from moto.dynamodb.models.dynamo_type import Item

from stepline.local.moto_memory import untrack_dynamodb_models

WRITES = 200


def _live_items() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, Item))


def _transactions(untrack: bool) -> int:
    with mock_aws():
        client: Any = boto3.client("dynamodb", region_name="us-east-1")  # pyright: ignore[reportUnknownMemberType]
        if untrack:
            untrack_dynamodb_models()
        client.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        for i in range(WRITES):
            client.transact_write_items(TransactItems=[{"Put": {"TableName": "t", "Item": {"pk": {"S": f"item-{i}"}}}}])
        return _live_items()


def test_a_transaction_leaves_no_copy_of_the_table_behind() -> None:
    # Each transaction copies the table (for its rollback); untracked, the copies are freed.
    assert _transactions(untrack=True) <= 2 * WRITES


def test_moto_alone_keeps_them_which_is_what_the_fix_is_for() -> None:
    # The class of problem: n transactions on a table growing to n items keep ~n²/2 copies.
    assert _transactions(untrack=False) > WRITES * WRITES // 4
