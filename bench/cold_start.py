"""Cold start: what importing each Lambda function's `app.py` and building its services costs.

    .venv/bin/python bench/cold_start.py [--runs R] [--model openai:gpt-5.1] [--also DIR]
    .venv/bin/python bench/cold_start.py --built BUILD_DIR [--runs R] [--also OTHER_BUILD_DIR] [--at-memory]
                                                                                      (cold_start_built.py)

Each measurement is a fresh Python process (R of them per function, 5 by default, taken in rounds
that sample every row once; the median is printed), as a Lambda cold start is: `import` =
executing `functions/<name>/app.py` (what Lambda's
init phase runs); `init` = building the services from the environment as the function's handler
does on its first invocation (`services_from_env()`; the model step with its model built,
`model_now`; the reconciler its store and executions; the API functions build theirs during
import, so it is in `import`; ui_deploy builds none). The environment
is the one template.yaml sets (tables, bucket, state machine, the lifecycle event bus, model
`--model`, an API key in the provider's variable, no SSM parameter: nothing here touches the
network). The reference, in the same run: a fresh process that imports boto3 and nothing else, and
one that does nothing. Also printed: modules loaded, and which of the heavy optional packages (the
two provider SDKs, the X-Ray SDK, OpenTelemetry's SDK and OTLP exporter with protobuf and requests,
FastAPI, moto, httpx, websockets) ended up imported. The environment has tracing off
(`STEPLINE_TRACING` unset, as a stack deployed with `Tracing=off`); `--tracing xray` adds the same
rows with traces to X-Ray (the template's default), where each function builds its tracer and OTLP
exporter at init.

`model_step (SnapStart)` models a restore: the process imports the function and runs its
before-snapshot hook (`STEPLINE_SNAPSTART=1`: what the snapshot would hold, not timed), then
times what a restored environment still does before its first model call: the after-restore
hook and building the services. The restore itself (Lambda loading the snapshot) cannot be
measured here; on a deployed stack it is the REPORT line's `Restore Duration`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = (
    "openai",
    "anthropic",
    "aws_xray_sdk",
    "opentelemetry.sdk.trace",
    "opentelemetry.exporter.otlp.proto.http",
    "google.protobuf",
    "requests",
    "fastapi",
    "moto",
    "httpx",
    "websockets",
)

PROBE = r"""
import json, runpy, sys, time
started = time.perf_counter()
target = sys.argv[1]
restored = target.startswith("snapstart:")
if restored:  # the snapshot: import and prime, untimed; then what a restored environment does
    import os
    os.environ["STEPLINE_SNAPSTART"] = "1"
    target = target.removeprefix("snapstart:")
    runpy.run_path(target)
    import snapshot_restore_py
    for function, args, kwargs in snapshot_restore_py.get_before_snapshot():
        function(*args, **kwargs)
    started = time.perf_counter()
    for function, args, kwargs in snapshot_restore_py.get_after_restore():
        function(*args, **kwargs)
elif target == "boto3":
    import boto3
elif target != "nothing":
    runpy.run_path(target)
imported = time.perf_counter()
init = 0.0
function = target.split("/")[-2] if target.endswith(".py") else ""
if function == "reconciler":  # its handler builds the store and the executions, no model
    import os
    from stepline.aws.wiring import Settings, _reconciler
    _reconciler(Settings.from_env(os.environ))
    init = time.perf_counter() - imported
elif function not in ("", "api", "ui_deploy"):  # the API builds during import; ui_deploy builds nothing
    from stepline.aws.wiring import services_from_env
    try:  # what the worker's handler builds
        services_from_env(model_now=function == "model_step")
    except TypeError:  # a checkout from before `model_now` (--also): it built every model at once
        services_from_env()
    init = time.perf_counter() - imported
heavy = [m for m in json.loads(sys.argv[2]) if m in sys.modules]
print(json.dumps({"import": imported - started, "init": init, "modules": len(sys.modules), "heavy": heavy}))
"""


def sample(target: str, env: dict[str, str]) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, target, json.dumps(HEAVY)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def summary(samples: list[dict[str, object]]) -> dict[str, object]:
    return {
        "import": statistics.median(float(s["import"]) for s in samples),  # type: ignore[arg-type]
        "init": statistics.median(float(s["init"]) for s in samples),  # type: ignore[arg-type]
        "modules": samples[-1]["modules"],
        "heavy": samples[-1]["heavy"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--model", default="openai:gpt-5.1")
    parser.add_argument(
        "--also", metavar="DIR", help="also measure another checkout's shared/ (with --built: another build)"
    )
    parser.add_argument("--tracing", choices=["off", "xray", "otlp"], default="off", help="also rows with this mode")
    parser.add_argument("--built", metavar="DIR", help="measure a `sam build` output (cold_start_built.py)")
    parser.add_argument("--runtime", default=str(ROOT / ".lambda-runtime"), help="with --built: the runtime's boto3")
    parser.add_argument("--python", default="python3.13", help="with --built: the runtime's Python 3.13")
    parser.add_argument(
        "--at-memory",
        action="store_true",
        help="with --built: also each function at Lambda's CPU share of its template MemorySize (root needed)",
    )
    args = parser.parse_args()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "shared"),
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "cold-start-bench",
        "AWS_SECRET_ACCESS_KEY": "cold-start-bench",
        "STEPLINE_AGENT_TABLE": "stepline-agent",
        "STEPLINE_EVENTS_TABLE": "stepline-events",
        "STEPLINE_BUCKET": "stepline-bucket",
        "STEPLINE_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:stepline-agent-run",
        "STEPLINE_MODEL": args.model,
        "OPENAI_API_KEY": "sk-cold-start-bench",
        "ANTHROPIC_API_KEY": "sk-ant-cold-start-bench",
        "POWERTOOLS_METRICS_NAMESPACE": "Stepline",
        "STEPLINE_EVENT_BUS": "stepline-lifecycle",  # every function has the stack's bus (no call is made)
    }
    if args.built:
        sys.path.insert(0, str(Path(__file__).parent))
        from cold_start_built import run_built

        keep = ("AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY")
        built_env = {k: v for k, v in env.items() if k.startswith(("STEPLINE_", "POWERTOOLS_")) or k in keep}
        other = Path(args.also).resolve() if args.also else None
        from template_memory import memory_mb

        memory = memory_mb() if args.at_memory else None
        built = Path(args.built).resolve()
        run_built(built, Path(args.runtime).resolve(), args.python, args.runs, built_env, other, memory)
        return
    targets = {"(python, nothing)": "nothing", "(import boto3)": "boto3"}
    functions = ROOT / "shared" / "stepline" / "stack" / "functions"
    targets |= {path.parent.name: str(path) for path in sorted(functions.glob("*/app.py"))}
    targets["model_step (SnapStart)"] = f"snapstart:{functions / 'model_step' / 'app.py'}"
    print(f"Python {sys.version.split()[0]}; model {args.model}; median of {args.runs} fresh processes; seconds")
    print(f"{'function':<24} {'import':>7} {'init':>7} {'total':>7} {'modules':>8}  heavy packages imported")
    also = {**env, "PYTHONPATH": str(Path(args.also).resolve() / "shared")} if args.also else None
    rows = [(label, target, env) for label, target in targets.items()]
    if args.tracing != "off":
        traced = {**env, "STEPLINE_TRACING": args.tracing, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
        rows += [
            (f"{label} ({args.tracing})", target, traced)
            for label, target in targets.items()
            if target.endswith(".py") and not target.startswith("snapstart:")
        ]
    if also is not None:
        rows += [
            (f"{label} (--also)", target, also)
            for label, target in targets.items()
            if target.endswith(".py") and not target.startswith("snapstart:")
        ]
    # Rounds, each sampling every row once: a machine whose load drifts over minutes weighs on
    # every row alike, so rows measured in the same run compare (before/after, SnapStart).
    samples: list[list[dict[str, object]]] = [[] for _ in rows]
    for _ in range(args.runs):
        for index, (_, target, row_env) in enumerate(rows):
            samples[index].append(sample(target, row_env))
    for (label, _, _), row_samples in zip(rows, samples, strict=True):
        m = summary(row_samples)
        total = float(m["import"]) + float(m["init"])  # type: ignore[arg-type]
        heavy = ", ".join(m["heavy"]) or "-"  # type: ignore[arg-type]
        print(f"{label:<24} {m['import']:>7.3f} {m['init']:>7.3f} {total:>7.3f} {m['modules']:>8}  {heavy}")


if __name__ == "__main__":
    main()
