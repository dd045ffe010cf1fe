"""The workload the scale simulation replays and the design knobs it runs with, each input sourced.

`Workload` is what users do (arrivals, steps, model latency, watchers, approvals); `Design` is how
Stepline answers (delta window, who publishes, memory sizes, what one write and one read cost).
Every default names where it comes from in `SOURCES`: a figure measured by a benchmark of this
repository (docs/architecture.md records them), the template, or an assumption (said so).
`draw_run` turns a seeded `random.Random` into one run's shape, so a seed fixes a whole replay.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

__all__ = ["SOURCES", "Design", "RunShape", "Workload", "draw_run"]


@dataclass(frozen=True)
class Workload:
    arrival_rate: float = 11.6
    """Runs started per second at full rate (1,000,000 a day is 11.6/s on average)."""
    duration_s: float = 600.0
    """How long runs keep arriving."""
    ramp_s: float = 0.0
    """Seconds over which the arrival rate rises linearly from 0 to `arrival_rate` (0: a step)."""
    steps: tuple[tuple[int, float], ...] = ((1, 0.3), (4, 0.3), (10, 0.4))
    """Model steps per run, as (steps, weight)."""
    model_ttft_median_s: float = 0.8
    model_ttft_sigma: float = 0.5
    stream_median_s: float = 4.0
    """Seconds a step streams its output (lognormal median)."""
    stream_sigma: float = 0.5
    tool_step_fraction: float = 0.5
    tool_s: float = 0.5
    watchers: tuple[tuple[int, float], ...] = ((0, 0.2), (1, 0.75), (3, 0.05))
    """Open SSE connections following a run, as (watchers, weight); 0 is a headless run."""
    approval_fraction: float = 0.2
    """Runs that wait once for an approval (after a step chosen at random, not the last)."""
    approval_wait_median_s: float = 60.0
    approval_wait_sigma: float = 1.0

    def mean_steps(self) -> float:
        total = sum(w for _, w in self.steps)
        return sum(s * w for s, w in self.steps) / total

    def mean_watchers(self) -> float:
        total = sum(w for _, w in self.watchers)
        return sum(n * w for n, w in self.watchers) / total

    def mean_step_s(self) -> float:
        """A step's mean wall time (lognormal means) without queueing: the model's TTFT, its stream, tools."""
        ttft = self.model_ttft_median_s * _lognormal_mean_factor(self.model_ttft_sigma)
        stream = self.stream_median_s * _lognormal_mean_factor(self.stream_sigma)
        return ttft + stream + self.tool_step_fraction * self.tool_s

    def mean_stream_s(self) -> float:
        return self.stream_median_s * _lognormal_mean_factor(self.stream_sigma)


def _lognormal_mean_factor(sigma: float) -> float:
    return math.exp(sigma * sigma / 2)


@dataclass(frozen=True)
class Design:
    delta_window_s: float = 0.1
    """Event-log append interval while a chat's step streams (`Services.delta_window`, 100 ms)."""
    unattended_window_s: float = 1.0
    """The same for a run no chat started (`Services.unattended_delta_window`, 1 s): the headless runs."""
    push_window_s: float = 1.0
    """`CoalescingNotifier`'s window (`PUSH_WINDOW`): an append publishes when the run had none in the window before it."""
    boundary_wcu_per_step: float = 7.0
    """Event-log write units a step spends outside its delta batches (boundaries, leading edges)."""
    boundary_publishes_per_step: float = 1.0
    """Publishes a step sends outside its streaming interval (the step end after a tool), at most."""
    poll_seconds: float = 0.1
    """A following stream's fast poll (`TailOptions.poll_seconds`), kept up while its reads find events."""
    wcu_per_append: float = 1.0
    step_end_wcu: float = 20.7
    """A step's record writes (step, message, run, checkpoint) and its model call's usage counters."""
    tool_wcu: float = 5.6
    """Write units of a tool call's claim, start and outcome (tool-call items, conditional puts)."""
    gsi2_units_per_write: float = 2.0
    """GSI2 units when a run item write moves its heartbeat (the sort key of its `RUNS#active#nn` shard)."""
    turn_start_wcu: float = 30.0
    end_wcu: float = 30.0
    step_start_rcu: float = 52.0
    """AgentTable read units of a step's handlers (run, checkpoint, message, steps, tool calls, the API's)."""
    s3_puts_per_step: float = 2.3
    s3_gets_per_step: float = 3.1
    model_step_gb: float = 0.5
    unwatched_model_step_gb: float = 0.25
    """A headless run's steps after its first (ModelStepUnwatchedFunction)."""
    stream_gb: float = 0.5
    small_gb: float = 0.25
    small_s: float = 0.5
    api_s: float = 0.2
    cold_model_step_s: float = 1.5
    cold_stream_s: float = 1.4
    cold_small_s: float = 0.7

    def window_s(self, watched: bool) -> float:
        """The run's delta window: a chat's (watched runs) or the unattended one (headless runs)."""
        return self.delta_window_s if watched else self.unattended_window_s

    def appends_per_s(self, watched: bool = True) -> float:
        """Delta-batch appends a second while a step streams (a model faster than one delta per window)."""
        return 1.0 / self.window_s(watched)


SOURCES: dict[str, str] = {
    "arrival_rate": "1,000,000 runs a day / 86,400 s = 11.6/s; the 10,000-concurrent peak is derived by Little's law (bench/scale_sim.py)",
    "steps": "assumed mix: a third one-step replies, a third short tool runs, 40% the issue's 10-step shape",
    "model_ttft": "assumed: a hosted model's first token after 0.8 s (median), lognormal",
    "stream": "bench/cost.py's scripted model: 160 deltas at 40 tokens/s, 4 s a step",
    "tools": "assumed: half the steps call a tool taking 0.5 s",
    "watchers": "assumed: 20% headless (scheduled, hooks), 75% one tab, 5% three tabs",
    "approvals": "assumed: one run in five waits once, median 60 s (lognormal, sigma 1)",
    "delta_window_s": "Services.delta_window 100 ms for a chat; Services.unattended_delta_window 1 s for a run no chat started (the headless fifth: scheduled, hooks, POST /api/runs)",
    "publish": "stepline.runtime.stream_push.CoalescingNotifier (stepline.aws.wiring): an append publishes when the run had no append in the PUSH_WINDOW (1 s) before it, the others are dropped (one publish per burst); a run nobody follows notifies at its step ends only (RunRecorder.quiet); each publish is delivered to every subscribed stream",
    "wcu": "bench/event_writes.py and bench/cost.py of 2026-12-08 (every write metered, a deployment's ids, English prose, record JSON compressed from 800 bytes): one conditional put per append (1 WCU under 1 KB); a step's boundaries ≈ 7.0 WRU (headless10's log, 110 WRU at 1 s: 40 of them 4 s of deltas a step); step end ≈ 20.7 WRU (steps 52 + message 50 + run 41 + checkpoints 24 over 10 steps, and the model call's 4 usage counters); a tool call ≈ 5.6 WRU (50 for its 9 calls, each write one conditional put); turn start and end ≈ 30 each",
    "gsi2": "docs/data-model.md: GSI2 `RUNS#active#00..15` (stepline.aws.dynamo_items.active_run_key, a hash of the run id) keyed by heartbeat_at, rewritten at every step end and run start/end (2 units: the old index entry out, the new in)",
    "reads": "stepline.api.tail.follow_run with a coalescing notifier: a fast poll every 0.1 s for a second after each notification and each read that found events; while deltas come a cycle reads the log alone (one Query on EventsTable), the run only when the log has nothing new or something else: 0 AgentTable and 10 EventsTable RRU a second per watcher (bench/stream_polling.py at the 100 ms window: 0.2 GetItem and 9.3 Query a second)",
    "handler reads": "bench/cost.py headless10 of 2026-12-08: 523 RRU in 10 steps with nobody watching, the handlers' own reads: 52 a step",
    "s3": "bench/cost.py watched10 of 2026-12-08 (English prose in its text): 23 S3 PUT (message pages, checkpoints over 8 KB) and 32 GET in 10 steps; an upper bound for short runs, whose records stay inline",
    "memory": "template.yaml: ModelStep 512 MB (ModelStepUnwatched 256 MB: a headless run's steps after its first), StreamFunction 512 MB, small workers 256 MB",
    "cold": "bench/cold_start.py: model_step 1.5 s, api/stream 1.4 s, small workers 0.7 s (loaded 2-core machine: an upper bound)",
}


@dataclass(frozen=True)
class RunShape:
    steps: int
    watchers: int
    approval_after: int | None
    """The step after which the run waits for an approval (None: no wait)."""
    approval_wait_s: float
    ttft_s: tuple[float, ...]
    stream_s: tuple[float, ...]
    tool_s: tuple[float, ...]


def _pick(rng: random.Random, table: tuple[tuple[int, float], ...]) -> int:
    values = [v for v, _ in table]
    weights = [w for _, w in table]
    return rng.choices(values, weights)[0]


def draw_run(rng: random.Random, work: Workload) -> RunShape:
    steps = _pick(rng, work.steps)
    watchers = _pick(rng, work.watchers)
    approval_after = None
    if steps > 1 and rng.random() < work.approval_fraction:
        approval_after = rng.randrange(1, steps)
    wait = rng.lognormvariate(0.0, work.approval_wait_sigma) * work.approval_wait_median_s
    ttft = tuple(rng.lognormvariate(0.0, work.model_ttft_sigma) * work.model_ttft_median_s for _ in range(steps))
    stream = tuple(rng.lognormvariate(0.0, work.stream_sigma) * work.stream_median_s for _ in range(steps))
    tool = tuple(work.tool_s if rng.random() < work.tool_step_fraction else 0.0 for _ in range(steps))
    return RunShape(steps, watchers, approval_after, wait, ttft, stream, tool)
