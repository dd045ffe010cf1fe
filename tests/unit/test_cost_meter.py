"""bench/cost_meter.py: DynamoDB's billing rules on closed-form cases, and the meter on moto's tables.

Item sizes are AWS's examples and hand sums; the meter's units are checked against what each call
must cost by the rules (a put replacing a bigger item bills the bigger one, a transaction bills
twice, an index write per index the item is in, a moved index key two), on real calls to moto.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest

from bench.cost_meter import DynamoMeter, Index, item_size, read_units, value_size, write_units
from tests.support.aws_env import use_fake_aws


def test_item_sizes_follow_the_published_rules() -> None:
    # names plus values, UTF-8 bytes: "pk" (2) + "U#1" (3) + "sk" (2) + "META" (4)
    assert item_size({"pk": {"S": "U#1"}, "sk": {"S": "META"}}) == 11
    assert value_size({"S": "é"}) == 2  # UTF-8, not characters
    # numbers: about ceil(significant digits / 2) + 1 bytes, sign and zeros not significant
    assert [value_size({"N": n}) for n in ("1", "12", "123", "-1000", "0.0125", "1234567890123")] == [2, 2, 3, 2, 3, 8]
    assert value_size({"BOOL": True}) == value_size({"NULL": True}) == 1
    # a list or map: 3 bytes, plus each element and 1 byte per element (a map's keys as names)
    assert value_size({"L": [{"S": "ab"}, {"N": "1"}]}) == 3 + (2 + 1) + (2 + 1)
    assert value_size({"M": {"a": {"S": "xyz"}}}) == 3 + 1 + 3 + 1
    assert value_size({"SS": ["a", "bc"]}) == 3
    with pytest.raises(ValueError, match="not an attribute value type"):
        value_size({"Q": "x"})


@pytest.mark.parametrize(
    ("size", "units", "transactional"),
    [(0, 1, 2), (1, 1, 2), (1024, 1, 2), (1025, 2, 4), (3 * 1024 + 1, 4, 8), (400 * 1024, 400, 800)],
)
def test_write_units_round_each_item_up_to_a_kb_and_transactions_double(
    size: int, units: int, transactional: int
) -> None:
    assert write_units(size) == units
    assert write_units(size, transactional=True) == transactional


@pytest.mark.parametrize(("size", "consistent"), [(0, 1.0), (4096, 1.0), (4097, 2.0), (10 * 1024, 3.0)])
def test_read_units_round_up_to_4_kb_and_eventual_reads_cost_half(size: int, consistent: float) -> None:
    assert read_units(size, consistent=True) == consistent
    assert read_units(size, consistent=False) == consistent / 2


TABLE = "t"
INDEXES = [Index("ALLIDX", ("g1",), "ALL"), Index("KEYS", ("g2",), "KEYS_ONLY")]


@pytest.fixture
def meter(monkeypatch: pytest.MonkeyPatch) -> Iterator[DynamoMeter]:
    use_fake_aws(monkeypatch)
    import boto3
    from moto import mock_aws

    with mock_aws():
        client = cast(Any, boto3.client("dynamodb", region_name="us-east-1"))  # pyright: ignore[reportUnknownMemberType]
        client.create_table(
            TableName=TABLE,
            AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "g1", "g2")],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            BillingMode="PAY_PER_REQUEST",
            GlobalSecondaryIndexes=[
                {
                    "IndexName": i.name,
                    "KeySchema": [{"AttributeName": i.keys[0], "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": i.projection},
                }
                for i in INDEXES
            ],
        )
        yield DynamoMeter(client, keys={TABLE: ("pk",)}, indexes={TABLE: INDEXES})


def item(pk: str, payload: int, **extra: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "data": {"S": "x" * payload}, **{k: {"S": v} for k, v in extra.items()}}


def test_a_put_bills_the_larger_of_the_item_before_and_after(meter: DynamoMeter) -> None:
    meter.put_item(TableName=TABLE, Item=item("a", 3000))
    assert meter.reset().write_units == 3
    meter.put_item(TableName=TABLE, Item=item("a", 10))  # replaces a 3 KB item: billed as 3 KB
    assert meter.reset().write_units == 3
    meter.put_item(TableName=TABLE, Item=item("a", 10))
    assert meter.reset().write_units == 1
    meter.delete_item(TableName=TABLE, Key={"pk": {"S": "a"}})
    assert meter.reset().write_units == 1


def test_a_failed_condition_still_bills_and_a_transaction_bills_twice(meter: DynamoMeter) -> None:
    meter.put_item(TableName=TABLE, Item=item("a", 1500))
    meter.reset()
    with pytest.raises(meter.exceptions.ConditionalCheckFailedException):
        meter.put_item(TableName=TABLE, Item=item("a", 10), ConditionExpression="attribute_not_exists(pk)")
    assert meter.reset().write_units == 2
    meter.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": TABLE, "Item": item("b", 1500)}},
            {"Put": {"TableName": TABLE, "Item": item("c", 10)}},
        ]
    )
    usage = meter.reset()
    assert (usage.write_units, usage.requests["TransactWriteItems"]) == (2 * 2 + 2 * 1, 1)


def test_index_writes_follow_the_item_in_and_out_of_each_index(meter: DynamoMeter) -> None:
    meter.put_item(TableName=TABLE, Item=item("a", 2000, g1="x", g2="y"))  # into both: 2 KB ALL + keys only
    assert meter.reset().index_write_units == 2 + 1
    meter.put_item(TableName=TABLE, Item=item("a", 2100, g1="x", g2="y"))  # same keys: ALL changes, keys do not
    assert meter.reset().index_write_units == 3
    meter.put_item(TableName=TABLE, Item=item("a", 2100, g1="z"))  # g1 moves (delete + put), out of KEYS
    assert meter.reset().index_write_units == 3 + 3 + 1
    meter.put_item(TableName=TABLE, Item=item("a", 10))  # out of ALLIDX
    assert meter.reset().index_write_units == 3


def test_reads_sum_the_items_returned_and_unmetered_threads_cost_nothing(meter: DynamoMeter) -> None:
    for pk in ("a", "b"):
        meter.put_item(TableName=TABLE, Item=item(pk, 3000, g1="same"))
    meter.reset()
    meter.get_item(TableName=TABLE, Key={"pk": {"S": "a"}}, ConsistentRead=True)
    meter.get_item(TableName=TABLE, Key={"pk": {"S": "missing"}})
    assert meter.reset().read_units == 1.0 + 0.5
    meter.query(
        TableName=TABLE,
        IndexName="ALLIDX",
        KeyConditionExpression="g1 = :g",
        ExpressionAttributeValues={":g": {"S": "same"}},
    )
    assert meter.reset().read_units == 1.0  # 2 × 3 KB = 6 KB: 2 blocks of 4 KB, eventually consistent
    import threading

    meter.unmetered.add(threading.get_ident())
    meter.get_item(TableName=TABLE, Key={"pk": {"S": "a"}}, ConsistentRead=True)
    assert meter.reset().read_units == 0.0


def test_a_sampled_interval_scales_every_meter() -> None:
    from bench.cost_meter import Usage

    usage = Usage(write_units=3, read_units=1.5, index_write_units=1)
    usage.requests["GetItem"] = 2
    scaled = usage.scaled(10)
    assert (scaled.write_units, scaled.read_units, scaled.index_write_units, scaled.requests["GetItem"]) == (
        30,
        15.0,
        10,
        20,
    )


def test_the_hook_counts_every_billed_request_that_went_around_the_meter(meter: DynamoMeter) -> None:
    # How 80 counter updates a run once went unbilled: a part of the store kept the client it was
    # built with when the bench wrapped another. The bench now fails on any such request.
    from bench.cost_run import Observed

    observed = Observed()
    raw: Any = getattr(meter, "_client")  # noqa: B009 - the client the meter wraps, used around it on purpose
    with observed.api_hook():
        meter.put_item(TableName=TABLE, Item=item("a", 10))
        meter.update_item(
            TableName=TABLE,
            Key={"pk": {"S": "a"}},
            UpdateExpression="SET n = :n",
            ExpressionAttributeValues={":n": {"N": "1"}},
        )  # its own read of the item after the update (not billed) is the meter's too
        assert not observed.unmetered_dynamodb
        raw.update_item(
            TableName=TABLE,
            Key={"pk": {"S": "a"}},
            UpdateExpression="SET n = :n",
            ExpressionAttributeValues={":n": {"N": "2"}},
        )
        list(
            meter.get_paginator("query").paginate(  # a paginator is the client's own: around the meter
                TableName=TABLE, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "a"}}
            )
        )
        raw.describe_table(TableName=TABLE)  # not billed in request units: not counted
    assert observed.unmetered_dynamodb == {"UpdateItem": 1, "Query": 1}


def test_cpu_is_stretched_to_the_memorys_share_and_each_function_is_billed_at_its_own() -> None:
    from bench.cost_run import Observed, stretched, wrap_timed

    assert stretched(1.0, 1769 / 1024) == 0.0  # one vCPU: a core's second is a second
    assert stretched(1.0, 4.0) == 0.0  # more than one vCPU does not make one thread faster
    assert stretched(1.0, 0.5) == pytest.approx(1769 / 512 - 1)  # 512 MB: 0.29 vCPU
    assert stretched(1.0, 0.25) == pytest.approx(2 * stretched(1.0, 0.5) + 1)
    observed = Observed()
    routes = wrap_timed({"stepline-model-step": lambda event, context: {"next": "finished"}}, observed)
    # the unwatched model step runs the model step's handler under its own name (its own memory)
    assert routes["stepline-model-step-unwatched"]({}, None) == {"next": "finished"}
    assert [function for function, _ in observed.invocations] == ["ModelStepUnwatchedFunction"]
