"""bench/scale: the limit models against closed forms, and the simulation against Little's law and its own limits.

Seeded and small (a few hundred simulated runs), so fast and deterministic.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import replace

import pytest

from bench.scale.limits import DEFAULT_QUOTAS, LIMITS, RECOMMENDED_QUOTAS
from bench.scale.meters import Meters, coalesced_publishes, poll_reads_per_s, shard_of
from bench.scale.models import Lambda, TokenBucket, bucket_throttles, erlang_c, little
from bench.scale.report import bill, over_capacity, percentile
from bench.scale.sim import MODEL_STEP, simulate
from bench.scale.workload import Design, Workload
from stepline.api.tail import TailOptions, follow_run
from stepline.aws.dynamo_items import ACTIVE_RUN_SHARDS, active_run_key
from stepline.runtime.stream_push import CoalescingNotifier, RunSubscription
from stepline.store.records import NewEvent
from tests.unit.api.test_tail import RUN, USER, CountingStore, delta, finish, store_with_events


def test_a_token_bucket_refuses_what_the_closed_form_says() -> None:
    # demand 1,000 requests evenly over 10 s against rate 50/s, burst 100: 1,000 - 100 - 50·10 = 400 refused
    bucket = TokenBucket(rate=50, burst=100)
    demand, duration = 1_000, 10.0
    for i in range(demand):
        bucket.take(i * duration / demand)
    expected = bucket_throttles(demand, duration, 50, 100)
    assert expected == 400
    assert abs(bucket.refused - expected) <= 2  # the last fraction of a token at the edges
    assert bucket.taken + bucket.refused == demand


def test_a_token_bucket_below_its_rate_refuses_nothing() -> None:
    bucket = TokenBucket(rate=50, burst=1)
    for i in range(500):
        bucket.take(i * 0.025)  # 40/s
    assert bucket.refused == 0
    assert bucket_throttles(400, 10, 50, 1) == 0


def test_a_reserved_token_waits_the_debt_over_the_rate() -> None:
    bucket = TokenBucket(rate=10, burst=5)
    waits = [bucket.reserve(0.0) for _ in range(15)]
    assert waits[:5] == [0.0] * 5
    assert all(math.isclose(w, k / 10) for w, k in zip(waits[5:], range(1, 11), strict=True))


def test_lambda_scales_a_function_by_its_rate_and_stops_at_the_account_limit() -> None:
    lam = Lambda(limit=1_500, per_10s=1_000)
    started = [lam.acquire(0.0, "f") for _ in range(1_200)]
    assert started.count("cold") == 1_000 and started.count(None) == 200  # 1,000 new environments at once
    later = [lam.acquire(5.0, "f") for _ in range(600)]
    assert later.count("cold") == 500  # refilled at 100/s for 5 s, then the account's 1,500 is reached
    assert lam.busy == 1_500 and lam.peak == 1_500
    lam.release("f")
    assert lam.acquire(5.0, "g") == "cold"  # another function scales on its own rate within the account
    assert lam.acquire(5.0, "f") is None
    lam.release("g")
    assert lam.acquire(5.0, "f") == "warm"  # f's idle environment is reused, no scaling token needed


def test_reserved_concurrency_is_the_function_own() -> None:
    lam = Lambda(limit=10)
    lam.function("reserved", reserved=4)
    assert [lam.acquire(0.0, "other") for _ in range(7)].count(None) == 1  # 10 - 4 reserved
    assert [lam.acquire(0.0, "reserved") for _ in range(5)].count(None) == 1


def test_erlang_c_matches_known_values() -> None:
    assert math.isclose(erlang_c(1, 0.5), 0.5)  # M/M/1: P(wait) = ρ
    assert math.isclose(erlang_c(2, 1.0), 1 / 3)
    assert erlang_c(3, 3.0) == 1.0
    assert math.isclose(little(11.6, 30.0), 348.0)


def test_the_simulated_concurrency_follows_littles_law() -> None:
    work = Workload(arrival_rate=5.0, duration_s=400.0, approval_fraction=0.0, watchers=((1, 1.0),))
    result = simulate(work, Design(), DEFAULT_QUOTAS, seed=7)
    assert result.failed == result.refused == 0 and not result.throttles
    meters = result.meters
    assert meters is not None
    # runs streaming at once, in the steady part, against λ · (steps · mean stream seconds)
    steady = meters.streaming[150:400]
    expected = little(work.arrival_rate, work.mean_steps() * work.mean_stream_s())
    assert math.isclose(sum(steady) / len(steady), expected, rel_tol=0.15)
    assert result.completed == result.runs


def test_the_same_seed_replays_the_same_result() -> None:
    work = Workload(arrival_rate=3.0, duration_s=100.0)
    one, two = (simulate(work, Design(), DEFAULT_QUOTAS, seed=3) for _ in range(2))
    assert (one.runs, one.transitions, one.first_ttft_added) == (two.runs, two.transitions, two.first_ttft_added)


def test_a_concurrency_limit_below_the_load_throttles_and_fails_runs_and_a_raised_one_does_not() -> None:
    work = Workload(arrival_rate=20.0, duration_s=200.0, approval_fraction=0.0)
    tight = simulate(work, Design(), replace(DEFAULT_QUOTAS, lambda_concurrency=150), seed=2)
    assert tight.throttles.get(f"Lambda {MODEL_STEP}", 0) > 0
    assert tight.failed > 0 or tight.refused > 0
    assert max(tight.first_ttft_added + tight.step_ttft_added) >= 2.0  # the ASL's first retry waits 2 s
    roomy = simulate(work, Design(), replace(DEFAULT_QUOTAS, lambda_concurrency=5_000), seed=2)
    assert roomy.failed == roomy.refused == 0
    assert f"Lambda {MODEL_STEP}" not in roomy.throttles


def test_state_transitions_over_the_refill_rate_wait_in_line() -> None:
    work = Workload(arrival_rate=20.0, duration_s=100.0, approval_fraction=0.0, watchers=((0, 1.0),))
    slow = replace(DEFAULT_QUOTAS, sfn_transition_bucket=10, sfn_transition_rate=20)
    result = simulate(work, Design(), slow, seed=4)
    assert result.throttles.get("StateTransition (waited)", 0) > 0
    assert percentile(result.step_ttft_added, 50) > 0.5
    assert result.failed == 0  # transitions wait, they do not fail


def test_the_capacity_meters_count_what_is_over_capacity() -> None:
    assert over_capacity([1.0, 5.0, 12.0], 4.0) == 1.0 + 8.0
    assert percentile([3.0, 1.0, 2.0, 4.0], 50) == 2.0 and percentile([], 99) == 0.0


def test_every_limit_names_a_source_and_how_it_was_checked() -> None:
    assert {limit.checked for limit in LIMITS} <= {"doc", "searched", "recalled"}
    assert all(limit.source and limit.default for limit in LIMITS)
    assert RECOMMENDED_QUOTAS.lambda_concurrency > DEFAULT_QUOTAS.lambda_concurrency


def test_a_ramp_thins_the_arrivals_linearly() -> None:
    work = Workload(arrival_rate=20.0, duration_s=200.0, ramp_s=100.0, approval_fraction=0.0)
    result = simulate(work, Design(), DEFAULT_QUOTAS, seed=5)
    # half the rate on average over the ramp, then the full rate: 20 · (50 + 100) = 3,000 expected
    assert math.isclose(result.runs, 3_000, rel_tol=0.08)


def test_coalesced_publishes_are_what_the_coalescing_notifier_sends() -> None:
    cases = ((4.0, 0.05, 1.0), (4.5, 0.0625, 1.0), (3.2, 0.3, 1.0), (5.0, 1.0, 1.0), (2.0, 1.5, 1.0))
    for seconds, interval, window in cases:
        clock = _Clock()
        inner = _Counting()
        notifier = CoalescingNotifier(inner, window=window, clock=clock)
        appends = 0
        while appends * interval < seconds - 1e-9:
            clock.now = appends * interval
            notifier.notify("u", "r", appends)
            appends += 1
        assert inner.sent == coalesced_publishes(seconds, interval, window), (seconds, interval, window)
    assert coalesced_publishes(4.0, 0.05, 1.0) == 1  # 80 appends, one burst
    assert coalesced_publishes(2.0, 1.5, 1.0) == 2  # appends a window apart: each its own burst
    assert coalesced_publishes(0.0, 0.05, 1.0) == 0


def _one_watcher_count(watchers: int, seed: int) -> tuple[Meters, float, int]:
    """A replay where every run has `watchers` (no tools, no waits): its meters, streamed seconds, steps."""
    work = Workload(arrival_rate=4.0, duration_s=100.0, approval_fraction=0.0, watchers=((watchers, 1.0),))
    result = simulate(replace(work, tool_step_fraction=0.0), Design(), RECOMMENDED_QUOTAS, seed=seed)
    assert result.meters is not None and result.completed == result.runs
    return result.meters, sum(result.meters.streaming), result.lambda_requests[MODEL_STEP]


def test_a_run_nobody_watches_appends_at_its_unattended_window_and_publishes_only_at_step_ends() -> None:
    meters, streamed, steps = _one_watcher_count(0, seed=6)
    boundaries = steps * Design().boundary_wcu_per_step
    # one delta batch a second (not ten), plus each step's boundaries
    assert math.isclose(sum(meters.events_wcu), streamed * 1.0 + boundaries, rel_tol=1e-6)
    # nothing per append (nobody follows it), one publish at each step's end
    assert sum(meters.publishes) == steps * Design().boundary_publishes_per_step
    assert sum(meters.deliveries) == 0 and sum(meters.events_rcu) == 0


def test_a_watched_run_publishes_once_a_burst_delivers_to_each_watcher_and_polls_fast() -> None:
    meters, streamed, steps = _one_watcher_count(3, seed=8)
    design = Design()
    # one batch per 100 ms window while it streams
    assert math.isclose(sum(meters.events_wcu), streamed * 10.0 + steps * design.boundary_wcu_per_step, rel_tol=1e-6)
    # one publish as each step's text starts (its deltas are one burst), one at most at its end
    assert steps <= sum(meters.publishes) <= 2 * steps + 1e-6 and 2 * steps < streamed
    assert math.isclose(sum(meters.deliveries), 3 * sum(meters.publishes), rel_tol=1e-6)
    agent, events = poll_reads_per_s(design.poll_seconds)
    assert (agent, events) == (0.0, 10.0)  # a cycle while deltas come: the log alone, one Query
    assert math.isclose(sum(meters.events_rcu), 3 * streamed * events, rel_tol=1e-6)
    assert math.isclose(sum(meters.agent_rcu), 3 * streamed * agent + steps * design.step_start_rcu, rel_tol=1e-6)


def test_gsi2_heartbeats_spread_over_the_store_shards() -> None:
    ids = [f"run_{n:06d}" for n in range(16_000)]
    assert all(active_run_key(i) == f"RUNS#active#{shard_of(i):02d}" for i in ids[:200])
    counts = [0] * ACTIVE_RUN_SHARDS
    for run_id in ids:
        counts[shard_of(run_id)] += 1
    # binomial(16,000, 1/16): mean 1,000, sd ≈ 31; every shard within 5 sd of it
    assert all(abs(c - 1_000) < 5 * math.sqrt(16_000 * (1 / 16) * (15 / 16)) for c in counts)
    work = Workload(arrival_rate=20.0, duration_s=60.0, approval_fraction=0.0)
    result = simulate(work, Design(), RECOMMENDED_QUOTAS, seed=9)
    meters = result.meters
    assert meters is not None
    assert math.isclose(sum(map(sum, meters.gsi2_shards)), sum(meters.gsi2_wcu))
    assert meters.shard_peak() < max(meters.gsi2_wcu) / 4  # one key would take the sum; 16 take about a 16th each


def test_the_bill_prices_s3_and_both_tables_reads() -> None:
    work = Workload(arrival_rate=2.0, duration_s=60.0)
    result = simulate(work, Design(), DEFAULT_QUOTAS, seed=10)
    dollars = bill(result, Design())
    assert dollars["S3"] > 0 and dollars["DynamoDB reads"] > 0
    meters = result.meters
    assert meters is not None
    reads = sum(meters.events_rcu) + sum(meters.agent_rcu)
    assert math.isclose(dollars["DynamoDB reads"], reads * 0.125 / 1_000_000)


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _Counting:
    def __init__(self) -> None:
        self.sent = 0

    def notify(self, user_id: str, run_id: str, seq: int) -> None:
        self.sent += 1

    def subscribe(self, user_id: str, run_id: str) -> RunSubscription:
        raise NotImplementedError


def test_provisioned_environments_serve_a_standing_start_the_scaling_rate_cannot() -> None:
    work = Workload(arrival_rate=20.0, duration_s=30.0, approval_fraction=0.0)
    slow = replace(RECOMMENDED_QUOTAS, lambda_scaling_per_10s=50)
    cold = simulate(work, Design(), slow, seed=11)
    assert cold.throttles.get(f"Lambda {MODEL_STEP}", 0) > 0
    warm = simulate(work, Design(), replace(slow, provisioned_model_step=800, provisioned_stream=800), seed=11)
    assert not warm.throttles and warm.completed == warm.runs
    assert warm.provisioned_gb_s == 30.0 * (800 * 0.5 + 800 * 0.5)
    assert bill(warm, Design())["Lambda provisioned"] > 0


def test_a_following_streams_reads_per_poll_are_what_the_tail_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """`poll_reads_per_s` from the tail itself: a run at work whose every poll finds a delta batch.

    On DynamoDB a read of the run is a `GetItem` on AgentTable and a one-item `Query` of the log's
    tail on EventsTable; a read of the log is one `Query` on EventsTable (every item under 4 KB).
    The first batch's poll read the run (the start before it was no delta); the later ones the log alone.
    """
    store = store_with_events([[{"type": "start"}]])
    counting = CountingStore(store)
    marks: list[dict[str, int]] = []
    real_sleep = asyncio.sleep

    async def sleep(seconds: float) -> None:  # one poll cycle each; the worker writes a batch between them
        marks.append(dict(counting.reads))
        if len(marks) <= 6:
            store.append_events(USER, RUN, [NewEvent(type="delta", chunks=[delta(len(marks))])], now=3)
        else:
            finish(store)
        await real_sleep(0)

    monkeypatch.setattr("stepline.api.tail.asyncio.sleep", sleep)

    async def follow() -> None:
        options = TailOptions(poll_seconds=0.1, stop_at_input=False)
        async for _ in follow_run(counting, USER, RUN, options=options, clock=lambda: 2):  # type: ignore[arg-type]
            pass

    asyncio.run(follow())
    cycles = 5  # the polls between the second pause and the seventh, each finding one batch
    run_reads = (marks[6]["get_run"] - marks[1]["get_run"]) / cycles
    log_reads = (marks[6]["events_after"] - marks[1]["events_after"]) / cycles
    per_second = 1 / 0.1
    assert poll_reads_per_s(0.1) == (run_reads * per_second, (run_reads + log_reads) * per_second)
