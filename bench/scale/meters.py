"""The fluid meters of the scale simulation, and the closed forms of what one streaming step spends.

What happens many times a second per run (event-log appends, Event API publishes and deliveries,
a following stream's polls) is not an event on the simulation's heap: each step's streaming
interval is spread over 1-second ticks (`Meters.spread`), and the tick series are compared with
the tables', partitions' and Event API's capacity afterwards (bench/scale/report.py).

The per-step quantities are closed forms of today's code, each unit-tested against that code
(tests/unit/test_scale_sim.py):

- `coalesced_publishes`: what `stepline.runtime.stream_push.CoalescingNotifier` sends for a run
  that appends every `append_interval` seconds: the first append of a burst (one with no append in
  the `window` before it), the others dropped. The replay counts it while someone follows the run;
  a run nobody follows notifies at its step ends only (`RunRecorder.quiet`).
- `poll_reads_per_s`: what one stream following a streaming run reads a second
  (`stepline.api.tail.follow_run` with a subscription to a coalescing notifier): it polls every
  `poll_seconds` for `PUSH_WINDOW` after each notification and each read that found events, so
  while the run streams it polls fast the whole time. While deltas come, a poll
  reads the log alone (`events_after`: one consistent `Query` on EventsTable), not the run (a delta
  batch never ends or parks a run; the run is read once the log has nothing new or something
  else): 0 AgentTable and 1 EventsTable read unit a cycle (every item read is under 4 KB).
- GSI2's working-runs key is sharded (`stepline.aws.dynamo_items.active_run_key`: 16 keys by a
  hash of the run id); `Meters.gsi2` meters each shard, `shard_peak` is the hottest one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from stepline.aws.dynamo_items import ACTIVE_RUN_SHARDS, active_run_key

__all__ = ["Meters", "coalesced_publishes", "poll_reads_per_s", "shard_of"]

_EPSILON = 1e-9


def coalesced_publishes(seconds: float, append_interval: float, window: float) -> int:
    """Publishes a coalescing notifier sends for appends at 0, d, 2d, … (< `seconds`), d = `append_interval`.

    n = ⌈T/d⌉ appends; an append is sent when none came in the `window` before it: the first only
    when appends come faster than the window (d < w), every one when they come no faster.
    """
    if seconds <= 0:
        return 0
    appends = math.ceil(seconds / append_interval - _EPSILON)
    return 1 if append_interval < window - _EPSILON else appends


def poll_reads_per_s(poll_seconds: float) -> tuple[float, float]:
    """(AgentTable, EventsTable) read units a second of one stream polling fast: 0 and 1 a cycle."""
    cycles = 1.0 / poll_seconds
    return 0.0, cycles


def shard_of(run_id: str) -> int:
    """The GSI2 shard a run's heartbeat is written to (the store's own hash of the run id)."""
    key = active_run_key(run_id)
    return int(key.rsplit("#", 1)[1])


@dataclass
class Meters:
    """Per-second demand of the fluid meters (index: the second)."""

    horizon: int
    events_wcu: list[float] = field(init=False)
    events_rcu: list[float] = field(init=False)
    agent_wcu: list[float] = field(init=False)
    agent_rcu: list[float] = field(init=False)
    gsi2_wcu: list[float] = field(init=False)
    """All GSI2 `RUNS#active#…` shards together."""
    gsi2_shards: list[list[float]] = field(init=False)
    publishes: list[float] = field(init=False)
    deliveries: list[float] = field(init=False)
    streaming: list[float] = field(init=False)
    s3_puts: float = 0.0
    s3_gets: float = 0.0

    def __post_init__(self) -> None:
        for name in ("events_wcu", "events_rcu", "agent_wcu", "agent_rcu", "gsi2_wcu", "publishes", "deliveries"):
            setattr(self, name, [0.0] * (self.horizon + 1))
        self.streaming = [0.0] * (self.horizon + 1)
        self.gsi2_shards = [[0.0] * (self.horizon + 1) for _ in range(ACTIVE_RUN_SHARDS)]

    def spread(self, series: list[float], start: float, end: float, per_second: float) -> None:
        """Add `per_second` over [start, end) to the ticks it covers."""
        t = start
        while t < end:
            tick = min(int(t), self.horizon)
            upto = min(end, math.floor(t) + 1.0)
            series[tick] += per_second * (upto - t)
            t = upto

    def at(self, series: list[float], when: float, amount: float) -> None:
        series[min(int(when), self.horizon)] += amount

    def gsi2(self, when: float, shard: int, units: float) -> None:
        """A write that moves a run's heartbeat in GSI2: `units` on its shard's partition key."""
        self.at(self.gsi2_wcu, when, units)
        self.at(self.gsi2_shards[shard], when, units)

    def shard_peak(self) -> float:
        """The hottest GSI2 shard's peak write units in one second."""
        return max(max(series) for series in self.gsi2_shards)
