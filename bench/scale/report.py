"""What a simulated replay shows: the fluid meters against capacity, time-to-first-token queueing, cost.

- `capacity_rows`: for each per-second meter (the events table's writes and reads, the agent
  table's writes with its indexes' and reads, GSI2's hottest `RUNS#active#nn` shard, the Event
  API's inbound publishes), its peak demand, the capacity it runs against, and the units over
  capacity summed over the replay. Beside them, for reference, GSI2's shards summed: what one key
  for every working run (the design before the sharding) would take on one partition.
- `percentile`: nearest-rank, on the added-TTFT samples.
- `bill`: the replay's billable quantities priced with bench/cost_prices.py's dated list prices
  (one table for bench/cost.py and this), per run and per 1,000,000 runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bench.cost_prices import PRICES, Prices
from bench.scale.limits import Quotas
from bench.scale.meters import Meters
from bench.scale.sim import Result
from bench.scale.workload import Design

__all__ = ["CapacityRow", "bill", "capacity_rows", "over_capacity", "percentile"]

EVENTBRIDGE_EVENT = 1.00 / 1_000_000
PROVISIONED_GB_SECOND = 0.0000033334
"""Lambda provisioned concurrency, arm64, us-east-1 (recalled: confirm on aws.amazon.com/lambda/pricing)."""
SECRETS_CALL = 0.05 / 10_000


@dataclass(frozen=True)
class CapacityRow:
    meter: str
    peak: float
    capacity: float
    over: float
    """Units over capacity, summed over every second of the replay (what DynamoDB or AppSync would throttle)."""
    reference: bool = False
    """A figure for comparison, not a limit the design meets (GSI2's shards summed: one key's load)."""


def over_capacity(series: list[float], capacity: float) -> float:
    return sum(max(0.0, demand - capacity) for demand in series)


def capacity_rows(meters: Meters, quotas: Quotas) -> list[CapacityRow]:
    agent_writes = [a + g for a, g in zip(meters.agent_wcu, meters.gsi2_wcu, strict=True)]
    hottest = max(meters.gsi2_shards, key=max)
    rows = [
        ("EventsTable writes (WRU/s)", meters.events_wcu, quotas.table_writes()),
        ("EventsTable reads (RRU/s)", meters.events_rcu, quotas.table_reads()),
        ("AgentTable writes + GSIs (WRU/s)", agent_writes, quotas.table_writes()),
        ("AgentTable reads (RRU/s)", meters.agent_rcu, quotas.table_reads()),
        ("GSI2 hottest RUNS#active#nn shard (WRU/s)", hottest, quotas.ddb_partition_writes),
        ("GSI2 shards summed, one key's load (WRU/s)", meters.gsi2_wcu, quotas.ddb_partition_writes),
        ("Event API publishes (/s)", meters.publishes, quotas.appsync_publish_rate),
    ]
    return [
        CapacityRow(name, max(series), cap, over_capacity(series, cap), reference=name.startswith("GSI2 shards summed"))
        for name, series, cap in rows
    ]


def percentile(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def _cold_starts(result: Result) -> int:
    return sum(f.cold for f in result.lam.functions.values()) if result.lam is not None else 0


def bill(result: Result, design: Design, prices: Prices = PRICES) -> dict[str, float]:
    """Dollars per meter for the whole replay (model tokens excluded)."""
    m = result.meters
    assert m is not None
    requests = sum(result.lambda_requests.values())
    gb_s = sum(result.gb_seconds.values())
    write_units = sum(m.events_wcu) + sum(m.agent_wcu) + sum(m.gsi2_wcu)
    read_units = sum(m.events_rcu) + sum(m.agent_rcu)
    operations = sum(m.publishes) + sum(m.deliveries)
    return {
        "state transitions": result.transitions * prices.transition,
        "Lambda requests": requests * prices.lambda_request,
        "Lambda GB-s": gb_s * prices.lambda_gb_second,
        "Lambda provisioned": result.provisioned_gb_s * PROVISIONED_GB_SECOND,
        "DynamoDB writes": write_units * prices.write_unit,
        "DynamoDB reads": read_units * prices.read_unit,
        "API Gateway": result.api_requests * prices.api_request,
        "Event API": operations * prices.event_operation + result.stream_seconds / 60 * prices.event_connection_minute,
        "S3": m.s3_puts * prices.s3_put + m.s3_gets * prices.s3_get,
        "EventBridge": result.eventbridge_events * EVENTBRIDGE_EVENT,
        "Secrets Manager + SSM reads": _cold_starts(result) * SECRETS_CALL,
    }
