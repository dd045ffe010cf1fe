"""A store operation that writes one item commits it as a conditional `PutItem`, not a transaction.

A one-item `TransactWriteItems` costs twice the write units of the same conditional put and buys
nothing: both are atomic for one item. The operations stay exactly-once because the put keeps the
transaction's condition (the revision the unit read): a stale writer is refused and its operation
is run again on fresh reads (the races of tests/contract/test_store_contract.py hold on it too).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from stepline.aws.dynamo_unit import DynamoUnit
from stepline.aws.dynamodb import DynamoStore
from stepline.store.errors import ConcurrentUpdate
from stepline.store.records import ToolCallRecord
from tests.contract.test_store_contract import USER, start
from tests.support.aws_env import use_fake_aws
from tests.support.dynamo_store import make_dynamo_store


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Iterator[DynamoStore]:
    use_fake_aws(monkeypatch)
    with mock_aws():
        store, _ = make_dynamo_store()
        yield store


def _calls(store: DynamoStore) -> list[str]:
    """The DynamoDB operations the store's client makes from now on, by name."""
    names: list[str] = []

    def record(model: Any, **_: Any) -> None:
        names.append(model.name)

    store.client.meta.events.register("before-call.dynamodb", record)
    return names


def _claim(store: DynamoStore, token: str) -> Any:
    return store.claim_tool_call(
        USER, "r1", "c1", tool_name="weather", input={"city": "Paris"}, step_index=0, claim_token=token, now=1_100
    )


def test_one_item_is_a_conditional_put_and_several_a_transaction(store: DynamoStore) -> None:
    calls = _calls(store)
    start(store)  # the turn: conversation, messages, run and their pointers at once
    assert "TransactWriteItems" in calls
    calls.clear()
    assert _claim(store, "w1").kind == "claimed"
    store.start_tool_call(USER, "r1", "c1", claim_token="w1", now=1_150)
    store.record_tool_outcome(USER, "r1", "c1", claim_token="w1", output={"t": 20}, now=1_200)
    assert calls.count("PutItem") == 3 and "TransactWriteItems" not in calls


def test_a_stale_single_write_is_refused_and_writes_nothing(store: DynamoStore) -> None:
    start(store)
    assert _claim(store, "w1").kind == "claimed"
    stale = DynamoUnit(store)
    call = stale.tool_call(USER, "r1", "c1")
    assert isinstance(call, ToolCallRecord)
    store.start_tool_call(USER, "r1", "c1", claim_token="w1", now=1_150)  # another writer moves its revision
    stale.put(call.model_copy(update={"claim_token": "w2"}))
    with pytest.raises(ConcurrentUpdate):
        stale.commit()
    held = store.list_tool_calls(USER, "r1")[0]
    assert (held.claim_token, held.started_at) == ("w1", 1_150)
