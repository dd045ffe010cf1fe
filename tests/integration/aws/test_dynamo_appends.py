"""Event-log appends on DynamoDB are single-item conditional puts, and keep the log's guarantees.

Two `DynamoStore`s on the same tables stand for two Lambda environments writing the same run (a
retried step beside a late one, a step beside the function that ends the run). Each store
remembers the last seq it appended, so it writes its next append without reading anything; what
it remembers can be stale, and then the put of a taken seq fails and the store reads the log again.
Checked: what one append costs in requests (counted on the client), no gap and no duplicate
between writers, and that the log stays closed after the end for a writer that did not see it,
whether or not the end brought an event of its own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from stepline.aws.dynamodb import DynamoStore
from stepline.store.errors import TerminalState
from stepline.store.ports import FinishRun, SnapshotUpdate
from stepline.store.records import NewEvent
from tests.contract.test_store_contract import USER, start
from tests.support.dynamo_store import TABLES, make_dynamo_store


@pytest.fixture
def stores() -> Iterator[tuple[DynamoStore, DynamoStore, Counter[str]]]:
    from moto import mock_aws

    with mock_aws():
        first, _ = make_dynamo_store()
        second = DynamoStore(first.client, agent_table=TABLES["AgentTable"], events_table=TABLES["EventsTable"])
        calls: Counter[str] = Counter()

        def count(model: Any, **_: Any) -> None:
            calls[model.name] += 1

        first.client.meta.events.register("before-call.dynamodb.*", count)
        start(first)
        yield first, second, calls


def text(n: int) -> NewEvent:
    return NewEvent(type="text", chunks=[{"type": "data-n", "data": n}])


def seqs(store: DynamoStore) -> list[int]:
    return [e.seq for e in store.events_after(USER, "r1", 0, now=2_000)]


def test_an_append_is_one_put_per_event_and_reads_nothing_once_the_store_knows_the_tail(
    stores: tuple[DynamoStore, DynamoStore, Counter[str]],
) -> None:
    first, _, calls = stores
    calls.clear()
    first.append_events(USER, "r1", [text(1)], now=1_100)  # the first: the run and the tail are read
    assert calls == Counter({"GetItem": 1, "Query": 1, "PutItem": 1})
    calls.clear()
    stored = first.append_events(USER, "r1", [text(2), text(3)], now=1_200)
    assert calls == Counter({"PutItem": 2}), "no transaction, no read of the run"
    assert [e.seq for e in stored] == [2, 3] == seqs(first)[1:]
    run = first.get_run(USER, "r1")
    assert run.last_event_seq == 3, "the run's last_event_seq is the log's"


def test_a_writer_that_knows_a_stale_tail_appends_after_the_other_writer(
    stores: tuple[DynamoStore, DynamoStore, Counter[str]],
) -> None:
    first, second, _ = stores
    first.append_events(USER, "r1", [text(1)], now=1_100)
    second.append_events(USER, "r1", [text(2), text(3)], now=1_100)
    again = first.append_events(USER, "r1", [text(4), text(5)], now=1_200)  # it knew seq 1
    assert [e.seq for e in again] == [4, 5]
    events = first.events_after(USER, "r1", 0, now=2_000)
    assert [e.seq for e in events] == [1, 2, 3, 4, 5]
    assert [e.chunks[0]["data"] for e in events] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("with_event", [True, False])
def test_the_log_is_closed_for_a_writer_that_did_not_see_the_end(
    stores: tuple[DynamoStore, DynamoStore, Counter[str]], with_event: bool
) -> None:
    first, second, _ = stores
    first.append_events(USER, "r1", [text(1)], now=1_100)  # the step's store knows seq 1
    end = NewEvent(type="finish", chunks=[{"type": "finish"}]) if with_event else None
    second.finish_run(
        USER,
        "r1",
        FinishRun(
            status="aborted",
            snapshot=SnapshotUpdate(parts=[], metadata=None, snapshot_seq=1),
            event=end,
            now=1_200,
        ),
    )
    before = seqs(first)
    assert before == [1, 2], "the end took the log's next seq"
    with pytest.raises(TerminalState):
        first.append_events(USER, "r1", [text(2)], now=1_300)
    assert seqs(first) == before, "nothing was written after the end"
