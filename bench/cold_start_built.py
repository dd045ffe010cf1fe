"""Cold start on the built artifact: each function of a `sam build` output imported as Lambda would.

    .venv/bin/python bench/cold_start.py --built .aws-sam/build [--runs R] [--also OTHER_BUILD]

Each sample is a fresh `python3.13 -I -S -B` process (no site-packages, no environment but the
function's; `-B`: it writes no .pyc, as nothing can on Lambda's read-only folders) whose `sys.path`
is what Lambda's has: the function's folder (/var/task), the shared
layer's `python/` (/opt/python) and the runtime folder (`.lambda-runtime`: boto3 as the Lambda
runtime has it). `import` = importing the function's `app` (Lambda's init phase; for the stream
function, the module its `run.sh` serves under uvicorn: `stream` since it has its own app); `init` = what
each function builds on its first invocation before it does any work (`services_from_env`, the
reconciler its store; the schedule dispatcher and the callback sender their services and boto3
clients, but not the callback secret's read, which is a network call; the API functions build
theirs during import). The reference, in the same rounds: a process that imports boto3 alone
from the runtime folder. Median of R samples (5 by default), taken in rounds that sample every row
once, so load drift weighs on every row alike; `cpu` is the median of the process's user + system
time (less sensitive than wall time to a busy machine). The ratio is total / boto3's; the target
is ≤ 2. `--also OTHER_BUILD` adds the same rows for another build (before a change) to the rounds.
The `(floor …)` rows import and build only what a function of that kind cannot do without
(boto3 and its DynamoDB client, pydantic, the provider's SDK, FastAPI), nothing of Stepline's: what
is left of the 2× target for Stepline's own code is 2 × boto3 minus the floor. `--at-memory`
also samples each function, in the same rounds, in a cgroup limited to Lambda's CPU share of its
template MemorySize (`cpu_share.py`, root needed): an upper bound, since how Lambda meters CPU
during init is not documented.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import statistics
import subprocess
from pathlib import Path

from cpu_share import cpu_quota

RUNTIME_FUNCTIONS = {
    "ModelStepFunction": "model_step",
    "ModelStepUnwatchedFunction": "model_step",
    "AwaitInputFunction": "await_input",
    "ExpireInputFunction": "expire_input",
    "FinalizeRunFunction": "finalize_run",
    "FailRunFunction": "fail_run",
    "ReconcilerFunction": "reconciler",
    "ApiFunction": "api",
    "StreamFunction": "stream",
    "ScheduleDispatchFunction": "schedule_dispatch",
    "CallbackSenderFunction": "callback_sender",
}
PROBE = r"""
import json, os, sys, time
started = time.perf_counter()
kind, entry = sys.argv[1:3]
sys.path[:0] = sys.argv[3:]
if kind == "boto3":
    import boto3
elif kind.startswith("floor"):  # what every function of its kind must import and build, nothing of Stepline's
    import boto3
    boto3.client("dynamodb")
    import pydantic
    class Floor(pydantic.BaseModel):
        value: int
    Floor(value=1)
    if kind == "floor_openai":
        import openai
        openai.OpenAI(api_key="floor")
    elif kind == "floor_fastapi":
        import fastapi
        fastapi.FastAPI()
else:
    __import__(entry)
imported = time.perf_counter()
if kind == "reconciler":
    from stepline.aws.wiring import Settings, _reconciler
    _reconciler(Settings.from_env(os.environ))
elif kind in ("model_step", "await_input", "expire_input", "finalize_run", "fail_run"):
    from stepline.aws.wiring import services_from_env
    services_from_env(model_now=kind == "model_step")
elif kind in ("schedule_dispatch", "callback_sender"):
    from stepline.aws.unattended import DynamoScheduleState
    from stepline.aws.unattended_wiring import UnattendedSettings, _client
    from stepline.aws.wiring import Settings, services_from_env
    services_from_env()
    if kind == "schedule_dispatch":
        DynamoScheduleState(_client("dynamodb"), Settings.from_env(os.environ).agent_table)
    else:
        UnattendedSettings.from_env(os.environ)
        _client("secretsmanager"), _client("dynamodb"), _client("sqs")
done = time.perf_counter()
cpu = time.process_time()  # the whole process: user + system (os.times() counts in 10 ms ticks)
print(json.dumps({"import": imported - started, "init": done - imported, "cpu": cpu, "modules": len(sys.modules)}))
"""


def _entry(folder: Path, kind: str) -> str:
    """The module a function's runtime imports: `app`, or for the stream function what its `run.sh` serves."""
    if kind != "stream":
        return "app"
    served = re.search(r"uvicorn .* (\w+):app\s*$", (folder / "run.sh").read_text(), re.MULTILINE)
    if served is None:  # measuring another module than the one Lambda serves would be a wrong row
        raise SystemExit(f"{folder / 'run.sh'}: no `uvicorn ... MODULE:app` line to measure")
    return served.group(1)


def _sample(python: str, kind: str, paths: list[str], env: dict[str, str], mb: int | None = None) -> dict[str, float]:
    entry = "-" if kind == "boto3" or kind.startswith("floor") else _entry(Path(paths[0]), kind)
    with contextlib.ExitStack() as stack:
        join = None if mb is None else stack.enter_context(cpu_quota(mb))
        out = subprocess.run(
            [python, "-I", "-S", "-B", "-c", PROBE, kind, entry, *paths],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            preexec_fn=join,
        )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _rows(build: Path, runtime: Path, suffix: str) -> list[tuple[str, str, list[str]]]:
    layer = str(build / "SharedLayer" / "python")
    return [
        (name + suffix, kind, [str(build / name), layer, str(runtime)])
        for name, kind in RUNTIME_FUNCTIONS.items()
        if (build / name / "app.py").is_file()
    ]


def _floors(build: Path, runtime: Path) -> list[tuple[str, str, list[str]]]:
    """Reference rows: what a function must import and build before any code of Stepline's runs.

    A worker makes a DynamoDB client and validates with pydantic; the model step also imports and
    builds the provider's SDK (the openai SDK here, the model of the run's environment); the API
    and stream functions import FastAPI (from their own folder, as the template packages it).
    """
    layer, folder = str(build / "SharedLayer" / "python"), str(build / "ApiFunction")
    return [
        ("(floor: boto3, DynamoDB client, pydantic)", "floor", [layer, str(runtime)]),
        ("(floor + the openai SDK and client)", "floor_openai", [layer, str(runtime)]),
        ("(floor + FastAPI)", "floor_fastapi", [folder, layer, str(runtime)]),
    ]


def run_built(
    build: Path,
    runtime: Path,
    python: str,
    runs: int,
    env: dict[str, str],
    also: Path | None = None,
    memory: dict[str, int] | None = None,
) -> None:
    """Print the table for the functions of `build` (a `sam build --build-dir`), and of `also`'s.

    With `memory` (MB by function), each function is also sampled at Lambda's CPU share of its size.
    """
    rows = [("(import boto3)", "boto3", [str(runtime)]), *_floors(build, runtime), *_rows(build, runtime, "")]
    rows += _rows(also, runtime, " (--also)") if also is not None else []
    bytecode = sum(1 for _ in (build / "SharedLayer" / "python").rglob("*.cpython-313.pyc"))
    clean = {"PATH": os.environ.get("PATH", ""), **env}
    samples: list[list[dict[str, float]]] = [[] for _ in rows]
    shared: list[list[float]] = [[] for _ in rows]
    sizes = [None if memory is None else memory.get(label.removesuffix(" (--also)")) for label, _, _ in rows]
    load_before = os.getloadavg()[0]
    for _ in range(runs):
        for index, (_, kind, paths) in enumerate(rows):
            samples[index].append(_sample(python, kind, paths, clean))
            if (mb := sizes[index]) is not None:
                at = _sample(python, kind, paths, clean, mb)
                shared[index].append(at["import"] + at["init"])
    keys = ("import", "init", "cpu", "modules")
    medians = [{key: statistics.median(s[key] for s in row) for key in keys} for row in samples]
    reference = medians[0]["import"] + medians[0]["init"]
    print(f"built artifact {build}; layer .pyc files: {bytecode}; median of {runs} fresh `python3.13 -I -S`; seconds")
    load_after = os.getloadavg()[0]
    print(f"load average (1 min) {load_before:.1f} at the start, {load_after:.1f} at the end; {os.cpu_count()} cores")
    if also is not None:
        print(f"(--also) rows: {also}")
    if memory is not None:
        print("at MB: total seconds with the process at Lambda's CPU share of the function's MemorySize")
        print("(bench/cpu_share.py: a cgroup CPU quota of MB/1769 CPUs in 10 ms periods; the strict reading)")
    print(
        f"{'function':<42} {'import':>7} {'init':>7} {'total':>7} {'× boto3':>8} {'cpu':>6} {'× cpu':>6} {'modules':>8}"
        + (f" {'at MB':>14}" if memory is not None else "")
    )
    for (label, _, _), m, mb, at in zip(rows, medians, sizes, shared, strict=True):
        total = m["import"] + m["init"]
        cpu_ratio = m["cpu"] / medians[0]["cpu"]
        share = f" {statistics.median(at):>7.3f} @{mb:>5}" if mb is not None and at else ""
        print(
            f"{label:<42} {m['import']:>7.3f} {m['init']:>7.3f} {total:>7.3f} {total / reference:>8.2f}"
            f" {m['cpu']:>6.3f} {cpu_ratio:>6.2f} {m['modules']:>8.0f}{share}"
        )
