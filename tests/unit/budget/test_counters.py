"""The usage counters' contract, on each backend (memory, SQLite, DynamoDB on moto), and under races.

GIVEN counters with ceilings, WHEN calls reserve their worst case and settle what they used, THEN
a reservation either lands on every counter or on none, a ceiling refuses exactly when the
committed amount plus the worst case would pass it, and many threads racing one budget never take
the spending past it (each call using at most its worst case: no overshoot at all).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

from stepline.store.sqlite_counters import SqliteCounters
from stepline.store.usage_counters import (
    NANO,
    Ceiling,
    CounterKey,
    CounterValue,
    MemoryCounters,
    UsageCounters,
    period_keys,
    periods,
)
from tests.support.dynamo_store import make_dynamo_store

DAY = CounterKey("user", "ann", "day:2025-12-02")
MONTH = CounterKey("user", "ann", "month:2025-12")
TENANT = CounterKey("tenant", "acme", "day:2025-12-02")


@pytest.fixture(params=["memory", "sqlite", "dynamodb"])
def counters(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[UsageCounters]:
    if request.param == "memory":
        yield MemoryCounters()
    elif request.param == "sqlite":
        yield SqliteCounters(tmp_path / "stepline.db")
    else:
        with mock_aws():
            store, _ = make_dynamo_store()
            yield store.counters


def test_reserve_and_settle_count_spent_and_committed(counters: UsageCounters) -> None:
    ceilings = [Ceiling(DAY, "user_day", tokens=1000), Ceiling(MONTH, "user_month", nano_usd=NANO)]
    assert counters.reserve(ceilings, 300, 40_000) is None
    assert counters.read(DAY) == CounterValue(committed_tokens=300, committed_nano_usd=40_000)
    counters.settle([DAY, MONTH], reserved=(300, 40_000), used=(120, 9_000), agent="desk")
    assert counters.read(DAY) == CounterValue(
        tokens=120, nano_usd=9_000, calls=1, committed_tokens=120, committed_nano_usd=9_000
    )
    assert counters.read(MONTH).tokens == 120
    assert counters.agents(DAY) == {"desk": CounterValue(tokens=120, nano_usd=9_000, calls=1)}
    assert counters.agents(TENANT) == {}
    assert counters.read(TENANT) == CounterValue()


def test_a_ceiling_refuses_exactly_past_its_limit(counters: UsageCounters) -> None:
    ceiling = Ceiling(DAY, "user_day", tokens=1000)
    assert counters.reserve([ceiling], 600, 0) is None
    assert counters.reserve([ceiling], 401, 0) == ceiling  # 600 + 401 > 1000
    assert counters.reserve([ceiling], 400, 0) is None  # 600 + 400 = 1000: within
    assert counters.read(DAY).committed_tokens == 1000
    assert counters.reserve([ceiling], 1, 0) == ceiling
    assert counters.reserve([Ceiling(DAY, "user_day", nano_usd=5)], 1, 6) is not None


def test_a_refusal_reserves_on_no_counter(counters: UsageCounters) -> None:
    counters.reserve([Ceiling(TENANT, "tenant_day", tokens=100)], 90, 0)
    refused = counters.reserve(
        [Ceiling(DAY, "user_day", tokens=1000), Ceiling(TENANT, "tenant_day", tokens=100)], 50, 0
    )
    assert refused is not None and refused.name == "tenant_day"
    assert counters.read(DAY).committed_tokens == 0  # the user's counter took nothing either
    assert counters.read(TENANT).committed_tokens == 90


def test_racing_calls_never_take_spending_past_the_budget(counters: UsageCounters) -> None:
    limit, worst, threads = 10_000, 700, 12
    ceilings = [Ceiling(DAY, "user_day", tokens=limit), Ceiling(MONTH, "user_month", tokens=limit * 10)]
    admitted: list[int] = []
    start = threading.Barrier(threads)

    def run(index: int) -> None:
        start.wait()
        call = 0
        while counters.reserve(ceilings, worst, 0) is None:  # each thread calls until it is refused
            used = worst - (index + call) % 3 * 100  # calls use up to their worst case
            counters.settle([DAY, MONTH], reserved=(worst, 0), used=(used, 0))
            admitted.append(used)
            call += 1

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    spent = counters.read(DAY)
    assert spent.tokens == sum(admitted) <= limit
    assert spent.calls == len(admitted)
    assert spent.committed_tokens == spent.tokens  # every reservation was settled
    # The last refusal came when no reservation was held (a holder calls again): the budget was
    # used up to within one call.
    assert limit - spent.tokens < worst


def test_a_run_trees_counter_is_one_of_its_users_on_every_backend(counters: UsageCounters) -> None:
    """`run:{day}:{rootRunId}`: reserved and settled with the user's day, its agents' shares apart."""
    tree = CounterKey("user", "ann", "run:2025-12-02:run-1")
    other = CounterKey("user", "ann", "run:2025-12-02:run-2")
    ceilings = [Ceiling(DAY, "user_day"), Ceiling(tree, "run_tree", tokens=500)]
    assert counters.reserve(ceilings, 300, 0) is None
    refused = counters.reserve(ceilings, 300, 0)  # 600 committed would pass the tree's 500
    assert refused is not None and refused.key == tree
    assert counters.read(DAY).committed_tokens == 300  # a refusal reserves on none
    counters.settle([DAY, tree], reserved=(300, 0), used=(120, 0), agent="researcher")
    assert counters.read(tree) == CounterValue(tokens=120, calls=1, committed_tokens=120)
    assert counters.agents(tree) == {"researcher": CounterValue(tokens=120, calls=1)}
    assert counters.read(DAY).tokens == 120 and counters.agents(DAY) == {
        "researcher": CounterValue(tokens=120, calls=1)
    }
    assert counters.read(other) == CounterValue() and counters.agents(other) == {}


def test_periods_are_utc_days_and_months() -> None:
    assert periods(1_764_633_599_999) == ("day:2025-12-01", "month:2025-12")
    assert periods(1_764_633_600_000) == ("day:2025-12-02", "month:2025-12")
    assert period_keys("tenant", "acme", 1_764_633_600_000)[0] == CounterKey("tenant", "acme", "day:2025-12-02")


def test_counter_items_carry_a_ttl_past_their_period_on_dynamodb() -> None:
    """The rate limits' minute counters and the usage counters expire (the agent table's TTL on `expires_at`)."""
    from datetime import UTC, datetime

    from stepline.api.rate_limits import _minute  # pyright: ignore[reportPrivateUsage]
    from stepline.store.run_slots import SlotCap, SlotKey
    from stepline.store.usage_counters import expiry_seconds

    with mock_aws():
        store, _ = make_dynamo_store()
        client: Any = getattr(store.counters, "client")  # noqa: B009
        table: str = getattr(store.counters, "table")  # noqa: B009
        ttl: dict[str, Any] = client.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
        assert ttl["AttributeName"] == "expires_at" and ttl["TimeToLiveStatus"] == "ENABLED"
        minute = CounterKey("user", "ann", _minute(1_764_633_600_000))  # 2025-12-02T00:00
        assert store.counters.reserve([Ceiling(minute, "user_requests_per_minute", tokens=5)], 1, 0) is None
        store.counters.settle([DAY, MONTH], reserved=(0, 0), used=(10, 0))
        store.slots.take_one(SlotCap(SlotKey("user", "ann"), "user_working_runs", 1), "r1", now_ms=0, lease_ms=1000)

        def expires(pk: str, sk: str) -> int:
            item: dict[str, Any] = client.get_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"S": sk}})["Item"]
            return int(item["expires_at"]["N"])

        def at(text: str) -> int:
            return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp())

        assert expires("U#ann#USAGE", minute.period) == at("2025-12-02T00:01") + 3_600
        assert expires("U#ann#USAGE", DAY.period) == at("2025-12-03T00:00") + 35 * 86_400
        assert expires("U#ann#USAGE", MONTH.period) == at("2026-01-01T00:00") + 400 * 86_400
        assert expires("U#ann#SLOTS", "slots") == 1 + 86_400
        assert expiry_seconds("month:2025-12") == expires("U#ann#USAGE", MONTH.period)
        tree = CounterKey("user", "ann", "run:2025-12-02:run-1")  # a run tree's: five weeks after its root's day
        store.counters.settle([tree], reserved=(0, 0), used=(10, 0))
        assert expires("U#ann#USAGE", tree.period) == at("2025-12-03T00:00") + 35 * 86_400
