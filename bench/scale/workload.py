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
    delta_window_s: float = 0.05
    """Event-log append interval while a step streams (`Services.delta_window`, default 50 ms)."""
    publish_unwatched: bool = True
    """Whether a run nobody watches still publishes one Event API message per append (today: yes)."""
    publish_interval_s: float = 0.05
    """Seconds between Event API publishes of one streaming run (today: one per append)."""
    wcu_per_append: float = 1.0
    step_end_wcu: float = 60.0
    tool_wcu: float = 6.0
    gsi2_units_per_write: float = 2.0
    """GSI2 units when the run item's heartbeat moves its `RUNS#active` key (one partition key for all runs)."""
    turn_start_wcu: float = 40.0
    end_wcu: float = 30.0
    reads_per_stream_s: float = 20.0
    """Read units a following stream spends per second while its run streams (push on)."""
    model_step_gb: float = 1.0
    stream_gb: float = 0.5
    small_gb: float = 0.25
    small_s: float = 0.5
    api_s: float = 0.2
    cold_model_step_s: float = 1.5
    cold_stream_s: float = 1.4
    cold_small_s: float = 0.7

    def appends_per_s(self) -> float:
        return 1.0 / self.delta_window_s


SOURCES: dict[str, str] = {
    "arrival_rate": "1,000,000 runs a day / 86,400 s = 11.6/s; the 10,000-concurrent peak is derived by Little's law (bench/scale_sim.py)",
    "steps": "assumed mix: a third one-step replies, a third short tool runs, 40% the issue's 10-step shape",
    "model_ttft": "assumed: a hosted model's first token after 0.8 s (median), lognormal",
    "stream": "bench/cost.py's scripted model: 160 deltas at 40 tokens/s, 4 s a step",
    "tools": "assumed: half the steps call a tool taking 0.5 s",
    "watchers": "assumed: 20% headless (scheduled, hooks), 75% one tab, 5% three tabs",
    "approvals": "assumed: one run in five waits once, median 60 s (lognormal, sigma 1)",
    "delta_window_s": "Services.delta_window (stepline.runtime.services), 50 ms",
    "publish": "docs/architecture.md 'Pushing to the stream': one publish per append, whether or not anyone listens",
    "wcu": "bench/event_writes.py: one conditional put per append (1 WCU under 1 KB), 60 WCU step end, 6 tool claim + outcome",
    "gsi2": "docs/data-model.md: GSI2 `RUNS#active` keyed by heartbeat_at, rewritten at every step end and run start/end",
    "reads": "bench/stream_polling.py: 1,200 reads a minute for a notified stream of a streaming run",
    "memory": "template.yaml: ModelStep 1,024 MB, StreamFunction 512 MB, small workers 256 MB",
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
