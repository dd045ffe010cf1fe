"""10,000 concurrent streaming runs and 1,000,000 runs a day, simulated against AWS's limits.

    .venv/bin/python bench/scale_sim.py [--scenario day,peak,burst] [--seconds S] [--seed N] [--limits]

A discrete-event replay (bench/scale/sim.py) of a seeded workload (bench/scale/workload.py, every
input sourced) against token-bucket and concurrency models of the quotas (bench/scale/limits.py),
once with a fresh account's defaults and once with the increases docs/scale.md recommends (and,
for the standing start, with provisioned concurrency as well: `launch`), in the same run. First a
calibration: bench/cost.py's `watched10` shape simulated and priced, beside what bench/cost.py
measured for it. Scenarios:

- `day`: 1,000,000 runs a day at their average rate (11.6/s);
- `peak`: the arrival rate at which, by Little's law, 10,000 runs stream at once (the workload's
  mean working time per run), reached over a 2-minute ramp;
- `burst`: the same rate from a standing start (no ramp): Lambda's scaling rate at work.

Printed per configuration: runs completed / failed / refused, throttles by limit, the queueing
added to time to first token (the run's first step: POST to the model call; later steps: the end of
the previous step, or the decision, to the model call), concurrency peaks, each per-second meter's
peak against its capacity, and the AWS bill per run and per 1,000,000 runs (model tokens excluded;
bench/cost_prices.py's list prices). `--limits` prints the quota table with its sources.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.cost_prices import PRICES_DATE
from bench.scale.limits import DEFAULT_QUOTAS, LAUNCH_QUOTAS, LIMITS, RECOMMENDED_QUOTAS, Quotas
from bench.scale.models import little
from bench.scale.report import bill, capacity_rows, percentile
from bench.scale.sim import MODEL_STEP, STREAM, Result, simulate
from bench.scale.workload import SOURCES, Design, Workload

CONCURRENT_TARGET = 10_000
RUNS_PER_DAY = 1_000_000


def peak_rate(work: Workload) -> float:
    """Arrivals per second at which `CONCURRENT_TARGET` runs work at once (Little's law, L = λW)."""
    working = work.mean_steps() * work.mean_step_s()
    return CONCURRENT_TARGET / working


def scenarios(seconds: float) -> dict[str, Workload]:
    base = Workload(duration_s=seconds)
    rate = peak_rate(base)
    return {
        "day": replace(base, arrival_rate=RUNS_PER_DAY / 86_400),
        "peak": replace(base, arrival_rate=rate, ramp_s=120.0),
        "burst": replace(base, arrival_rate=rate, ramp_s=0.0),
    }


CONFIGS: dict[str, tuple[Quotas, Design]] = {
    "defaults": (DEFAULT_QUOTAS, Design()),
    "recommended": (RECOMMENDED_QUOTAS, Design()),
    "launch": (LAUNCH_QUOTAS, Design()),
}
SCENARIO_CONFIGS = {"day": ("defaults", "recommended"), "peak": ("defaults", "recommended"), "burst": tuple(CONFIGS)}
"""`launch` (provisioned concurrency) only where it changes something: a standing start."""

CALIBRATION = Workload(
    arrival_rate=0.5, duration_s=120.0, steps=((10, 1.0),), watchers=((1, 1.0),), approval_fraction=1.0,
    approval_wait_median_s=600.0, approval_wait_sigma=0.0, tool_step_fraction=0.9, model_ttft_sigma=0.0,
    stream_sigma=0.0, model_ttft_median_s=0.5,
)  # fmt: skip
"""bench/cost.py's `watched10` shape (10 steps, 9 tool calls, one watcher, an approval waiting 10 minutes, 4 s a
step): the simulation's bill for it, beside what bench/cost.py measured for that shape on moto."""
COST_PY_WATCHED10 = 0.001972
"""docs/architecture.md 'Cost of one run': bench/cost.py's watched10 of 2026-12-08 (CPU stretched to its share)."""


def show(name: str, work: Workload, result: Result, quotas: Quotas, design: Design, took: float) -> None:
    lam = result.lam
    assert lam is not None and result.meters is not None
    print(f"\n  [{name}] {result.runs:,} runs: {result.completed:,} completed, {result.failed:,} failed, "
          f"{result.refused:,} refused, {result.watchers_refused:,} watchers refused "
          f"({took:.1f} s to simulate)")  # fmt: skip
    for limit, count in sorted(result.throttles.items()):
        print(f"    throttled  {limit:<34} {count:>10,}")
    if not result.throttles:
        print("    throttled  nothing")
    first, later = result.first_ttft_added, result.step_ttft_added
    print(f"    added TTFT first step  p50 {percentile(first, 50):6.2f} s  p99 {percentile(first, 99):6.2f} s  "
          f"max {max(first, default=0):6.2f} s")  # fmt: skip
    print(f"    added TTFT later steps p50 {percentile(later, 50):6.2f} s  p99 {percentile(later, 99):6.2f} s  "
          f"max {max(later, default=0):6.2f} s")  # fmt: skip
    fns = lam.functions
    print(f"    Lambda peak concurrency: account {lam.peak:,} of {quotas.lambda_concurrency:,}; "
          f"provisioned {quotas.provisioned_model_step:,} + {quotas.provisioned_stream:,}; "
          f"{MODEL_STEP} {fns[MODEL_STEP].peak:,}, {STREAM} {fns[STREAM].peak if STREAM in fns else 0:,}; "
          f"streaming runs peak {max(result.meters.streaming):,.0f}; "
          f"open SSE streams peak {result.open_streams_peak:,}")  # fmt: skip
    for row in capacity_rows(result.meters, quotas):
        flag = "OVER" if row.over > 0 else "ok"
        if row.reference:
            flag = "reference: one key would not hold" if row.over > 0 else "reference"
        print(f"    {row.meter:<44} peak {row.peak:>10,.0f}  capacity {row.capacity:>9,.0f}  "
              f"over {row.over:>12,.0f} unit·s  {flag}")  # fmt: skip
    dollars = bill(result, design)
    runs = max(result.completed + result.failed, 1)
    total = sum(dollars.values())
    parts = ", ".join(f"{k} {v / runs * RUNS_PER_DAY:,.0f}" for k, v in dollars.items() if v > 0)
    print(f"    cost: ${total / runs:.5f} per run, ${total / runs * RUNS_PER_DAY:,.0f} per 1,000,000 runs ({parts})")


def print_limits() -> None:
    print("Quotas modelled (default, adjustable, checked, source):")
    for limit in LIMITS:
        print(f"  {limit.name}: {limit.default} | adjustable: {limit.adjustable} | {limit.checked} | {limit.source}")
    print("\nWorkload inputs:")
    for key, source in SOURCES.items():
        print(f"  {key}: {source}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--scenario", default="day,peak,burst")
    parser.add_argument("--seconds", type=float, default=600.0, help="how long runs arrive (default 600)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--limits", action="store_true", help="print the quota table and the inputs' sources")
    args = parser.parse_args()
    if args.limits:
        print_limits()
        return
    table = scenarios(args.seconds)
    base = table["day"]
    working = base.mean_steps() * base.mean_step_s()
    print(f"Workload: {base.mean_steps():.1f} steps a run, {base.mean_step_s():.2f} s a step, "
          f"{base.mean_watchers():.2f} watchers a run, {base.approval_fraction:.0%} of runs wait once "
          f"(median {base.approval_wait_median_s:.0f} s); prices of {PRICES_DATE} (us-east-1 list)")  # fmt: skip
    print(f"Little's law: {RUNS_PER_DAY:,} runs a day = {RUNS_PER_DAY / 86_400:.1f}/s x {working:.1f} s working = "
          f"{little(RUNS_PER_DAY / 86_400, working):,.0f} runs at once on average; "
          f"{CONCURRENT_TARGET:,} at once needs {peak_rate(base):.0f} runs/s")  # fmt: skip
    calibration = simulate(CALIBRATION, Design(), RECOMMENDED_QUOTAS, seed=args.seed)
    runs = max(calibration.completed, 1)
    parts = bill(calibration, Design())
    split = ", ".join(f"{k} {v / runs:.6f}" for k, v in parts.items() if v > 0)
    print(f"Calibration: bench/cost.py's watched10 shape simulated ${sum(parts.values()) / runs:.5f} a run "
          f"({calibration.completed} runs: {split}); bench/cost.py measured ${COST_PY_WATCHED10:.6f}")  # fmt: skip
    for scenario in args.scenario.split(","):
        work = table[scenario]
        print(f"\n== {scenario}: {work.arrival_rate:.1f} runs/s for {work.duration_s:.0f} s (ramp {work.ramp_s:.0f} s)")
        for name in SCENARIO_CONFIGS[scenario]:
            quotas, design = CONFIGS[name]
            started = time.perf_counter()
            result = simulate(work, design, quotas, seed=args.seed)
            show(name, work, result, quotas, design, time.perf_counter() - started)


if __name__ == "__main__":
    main()
