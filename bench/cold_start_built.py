"""Cold start on the built artifact: each function of a `sam build` output imported as Lambda would.

    .venv/bin/python bench/cold_start.py --built .aws-sam/build [--runs R]

Each sample is a fresh `python3.13 -I -S -B` process (no site-packages, no environment but the
function's; `-B`: it writes no .pyc, as nothing can on Lambda's read-only folders) whose `sys.path`
is what Lambda's has: the function's folder (/var/task), the shared
layer's `python/` (/opt/python) and the runtime folder (`.lambda-runtime`: boto3 as the Lambda
runtime has it). `import` = importing the function's `app` (Lambda's init phase); `init` = what
the state machine's workers build on their first invocation (`services_from_env`, the reconciler
its store; the API functions build theirs during import). ScheduleDispatchFunction and
CallbackSenderFunction are left out: their app.py imports `stepline.api` (FastAPI), which their
built folders do not carry, so they fail to import on the artifact (a defect of its own). The
reference, in the same rounds: a process that imports boto3 alone from the runtime folder. Median
of R samples (5 by default), taken in rounds that sample every row once, so load drift weighs on
every row alike. The ratio is total / boto3's; the issue's target is ≤ 2.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
from pathlib import Path

RUNTIME_FUNCTIONS = {
    "ModelStepFunction": "model_step",
    "AwaitInputFunction": "await_input",
    "ExpireInputFunction": "expire_input",
    "FinalizeRunFunction": "finalize_run",
    "FailRunFunction": "fail_run",
    "ReconcilerFunction": "reconciler",
    "ApiFunction": "api",
    "StreamFunction": "api",
}
PROBE = r"""
import json, sys, time
started = time.perf_counter()
kind = sys.argv[1]
sys.path[:0] = sys.argv[2:]
if kind == "boto3":
    import boto3
else:
    import app
imported = time.perf_counter()
if kind == "reconciler":
    import os
    from stepline.aws.wiring import Settings, _reconciler
    _reconciler(Settings.from_env(os.environ))
elif kind in ("model_step", "await_input", "expire_input", "finalize_run", "fail_run"):
    from stepline.aws.wiring import services_from_env
    services_from_env(model_now=kind == "model_step")
done = time.perf_counter()
print(json.dumps({"import": imported - started, "init": done - imported, "modules": len(sys.modules)}))
"""


def _sample(python: str, kind: str, paths: list[str], env: dict[str, str]) -> dict[str, float]:
    out = subprocess.run(
        [python, "-I", "-S", "-B", "-c", PROBE, kind, *paths], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_built(build: Path, runtime: Path, python: str, runs: int, env: dict[str, str]) -> None:
    """Print the table for the functions of `build` (a `sam build --build-dir`)."""
    layer = str(build / "SharedLayer" / "python")
    rows: list[tuple[str, str, list[str]]] = [("(import boto3)", "boto3", [str(runtime)])]
    rows += [
        (name, kind, [str(build / name), layer, str(runtime)])
        for name, kind in RUNTIME_FUNCTIONS.items()
        if (build / name / "app.py").is_file()
    ]
    bytecode = sum(1 for _ in Path(layer).rglob("*.cpython-313.pyc"))
    clean = {"PATH": os.environ.get("PATH", ""), **env}
    samples: list[list[dict[str, float]]] = [[] for _ in rows]
    for _ in range(runs):
        for index, (_, kind, paths) in enumerate(rows):
            samples[index].append(_sample(python, kind, paths, clean))
    medians = [
        {key: statistics.median(s[key] for s in row) for key in ("import", "init", "modules")} for row in samples
    ]
    reference = medians[0]["import"] + medians[0]["init"]
    print(f"built artifact {build}; layer .pyc files: {bytecode}; median of {runs} fresh `python3.13 -I -S`; seconds")
    print(f"{'function':<26} {'import':>7} {'init':>7} {'total':>7} {'× boto3':>8} {'modules':>8}")
    for (label, _, _), m in zip(rows, medians, strict=True):
        total = m["import"] + m["init"]
        ratio = total / reference
        print(f"{label:<26} {m['import']:>7.3f} {m['init']:>7.3f} {total:>7.3f} {ratio:>8.2f} {m['modules']:>8.0f}")
