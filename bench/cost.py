"""What one run costs on AWS, excluding the model's tokens: every billable request counted, per shape.

    .venv/bin/python bench/cost.py [--deltas N] [--delta-ms MS] [--wait-sample S] [--shapes a,b] [--also DIR]

Each shape runs through the local backend as `stepline dev --memory` builds it (DynamoDB and S3 of
template.yaml on moto, the real ASL on moto's Step Functions interpreter, the worker handlers in
process) with the FastAPI app under uvicorn, driven over HTTP the way its client drives it. The
model is scripted (`ScriptedModel`): each step streams N text deltas (160 words of English prose,
the Python reference's), one every MS ms (25: a model at 40 tokens a second, 4 s a step), and a
tool call streamed in 10 input deltas. The ids are a deployment's size (a UUID user). Counted:

- DynamoDB: every call of the store's client through `bench/cost_meter.DynamoMeter` (write and read
  request units from the item sizes by AWS's rules, transactions at twice the units, global
  secondary index writes);
- state transitions: the `*StateEntered` events of the run's execution histories (ContinueAsNew
  generations included), nothing retried;
- Lambda: one request per worker invocation (each handler call timed: its duration, at the
  template's MemorySize of its function, plus the CPU it spent outside DynamoDB calls stretched
  to that memory's CPU share, 1,769 MB a vCPU: `cost_run.stretched`) and per HTTP request (POST
  /api/chat and the resume stream on StreamFunction, the buffered routes on ApiFunction, each
  lasting as long as the client saw its response take);
- API Gateway: one request per HTTP request;
- Event API (stream push, the template's default): one publish per notification of the run's
  writer, one delivery per stream subscribed at that moment, and each stream's connection time;
- S3: the requests of the blob store's client (by a botocore hook);
- a model step's CPU before its model call (outside DynamoDB calls: what Lambda's CPU share would
  add to its time to first token) and the process's peak RSS (everything in one process).

The shapes:

- `watched10`: 10 model steps, 2 tools (read_file 8 times, write_file once), 1 approval waiting
  10 minutes, one client watching the whole run: POST /api/chat streams until the approval, the
  page stays open without a stream (as the stock `useChat` does), then the continuation POST
  streams to the end;
- `headless10`: the same run started by POST /api/runs, the approval decided by POST
  /api/approvals/{id}, the result read once by GET /api/runs/{id}; nobody streams;
- `reply1`: a 1-step text reply, watched;
- `left10`: `watched10` whose page is closed at the approval: the decision comes from POST
  /api/approvals ten minutes on (the services' clock moved on by the wait, so the stream's last
  note has expired, as it would have), and nobody streams the rest of the run.

The delta window is the configured one: the batcher's widening under slow appends is turned off
(moto's appends take longer than DynamoDB's few milliseconds and would widen it, fewer events than
on AWS). A wait is billed by what happens during it: the meters are read over S seconds (2) of the real
wait and scaled to its 10 minutes. Prices: `bench/cost_prices.py` (dated). `--also DIR` measures
the same shapes on another checkout's `stepline` first (its `shared/` on the path, in a subprocess;
the meters are this checkout's), so a change's before and after are printed from one run. Figures
only.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import threading
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.cost_drive import SHAPES, USER_ID, WAIT_SECONDS, Shape, drive
from bench.cost_meter import DynamoMeter, Index
from bench.cost_prices import PRICES, PRICES_DATE, Bill
from bench.cost_run import CountingNotifier, CpuTimedClient, Observed, serving, wrap_timed
from bench.template_memory import memory_mb
from stepline.api.app import create_app
from stepline.api.deps import ApiOptions
from stepline.api.identity import DevTokens
from stepline.llm.scripted import ScriptedModel
from stepline.local.backend import TABLES, local_backend
from stepline.local.dev import DEFAULT_TOOLS
from stepline.local.resources import resources
from stepline.runtime.services import Services
from stepline.store.event_batcher import EventBatcher
from stepline.tools import load_toolset

USAGE = {"inputTokens": {"total": 1850}, "outputTokens": {"total": 160}}
NOTE = "notes/plan.md"


# --- the script -------------------------------------------------------------------------------------


def _tool_call(step: int, tool: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    call = f"call_{step}_{tool}"
    text = json.dumps(arguments)
    cut = [text[i * len(text) // 10 : (i + 1) * len(text) // 10] for i in range(10)]
    return [
        {"type": "tool-input-start", "id": call, "toolName": tool},
        *({"type": "tool-input-delta", "id": call, "delta": piece} for piece in cut),
        {"type": "tool-input-end", "id": call},
        {"type": "tool-call", "toolCallId": call, "toolName": tool, "input": text},
    ]


def _prose() -> list[str]:
    """English prose, word by word: the Python reference's topics (`pydoc_data`, in every CPython).

    The model's text and the note it writes are real text, not a repeated phrase: items are
    stored compressed from 800 bytes, and a phrase said 16 times a step compressed 88 to 1 where
    prose does about 3 (the records' write units would read far too low)."""
    from pydoc_data.topics import topics

    return " ".join(topics[name] for name in sorted(topics)).split()


def script(shape: Shape, deltas: int, delta_ms: float) -> list[dict[str, Any]]:
    """The model's steps: text, then write_file (approval) at step 0 and read_file until the last."""
    words = _prose()
    steps: list[dict[str, Any]] = []
    for index in range(shape.steps):
        parts: list[dict[str, Any]] = [
            {"type": "stream-start", "warnings": []},
            {"type": "text-start", "id": f"t{index}"},
        ]
        said = words[index * deltas : (index + 1) * deltas]
        parts += [{"type": "text-delta", "id": f"t{index}", "delta": f" {word}"} for word in said]
        parts.append({"type": "text-end", "id": f"t{index}"})
        last = index == shape.steps - 1
        if not last:
            if index == 0 and shape.approval:
                lines = words[-30 * 12 :]
                content = "\n".join(f"- {' '.join(lines[n * 12 : (n + 1) * 12])}" for n in range(30))
                parts += _tool_call(index, "write_file", {"path": NOTE, "content": content})
            else:
                parts += _tool_call(index, "read_file", {"path": NOTE})
        reason = "stop" if last else "tool-calls"
        parts.append({"type": "finish", "finishReason": {"unified": reason, "raw": reason}, "usage": USAGE})
        steps.append({"parts": parts, "delayMs": delta_ms})
    return steps


# --- one shape ----------------------------------------------------------------------------------------


def memory_gb() -> dict[str, float]:
    """Each function's MemorySize in GB (the template's Globals otherwise; a parameter's default)."""
    return {name: mb / 1024 for name, mb in memory_mb().items()}


def watchers_on_dynamo(services: Services, client: Any) -> None:
    """The streams' notes on the agent table, as a deployed stack has them (metered with the rest)."""
    try:
        from stepline.aws.dynamo_watchers import DynamoWatchers
    except ImportError:  # a checkout from before the notes (--also): its windows follow the trigger only
        return
    services.watchers = DynamoWatchers(client, TABLES["AgentTable"])


def table_layout() -> tuple[dict[str, tuple[str, ...]], dict[str, list[Index]]]:
    keys: dict[str, tuple[str, ...]] = {}
    indexes: dict[str, list[Index]] = {}
    for logical_id, props in resources("AWS::DynamoDB::Table").items():
        table = TABLES[logical_id]
        keys[table] = tuple(k["AttributeName"] for k in props["KeySchema"])
        indexes[table] = [
            Index(g["IndexName"], tuple(k["AttributeName"] for k in g["KeySchema"]), g["Projection"]["ProjectionType"])
            for g in props.get("GlobalSecondaryIndexes", [])
        ]
    return keys, indexes


def _appends_take_no_time(self: EventBatcher, seconds: float) -> None:
    """The batcher's widening off: on DynamoDB an append takes a few ms, under a quarter of the
    window, so the window stays the configured one; moto's take longer and would widen it."""


def measure(shape: Shape, args: argparse.Namespace) -> Bill:
    setattr(EventBatcher, "wrote", _appends_take_no_time)  # noqa: B010 - the bench's stand-in for DynamoDB's speed
    model = ScriptedModel.from_script(script(shape, args.deltas, args.delta_ms), model_id="scripted-cost")
    tools, approval = load_toolset(DEFAULT_TOOLS)
    observed = Observed()
    play = model.stream

    def stream(options: Any) -> Any:
        observed.model_called()
        return play(options)

    setattr(model, "stream", stream)  # noqa: B010 - marks where a step's work before its first token ends

    def make_services(**backend: Any) -> Services:
        return Services(
            model=model, tools=list(tools), tool_approval=approval or None, client="stepline-bench", **backend
        )

    with observed.api_hook(), local_backend(make_services, wrap=lambda routes: wrap_timed(routes, observed)) as backend:
        services = backend.services
        keys, indexes = table_layout()
        store: Any = services.store
        # local_backend's `SerializedCalls`: the one client every part of the store was built with
        # (its usage counters and run slots hold it too), so the meter goes inside it.
        serialized = store.client
        meter = DynamoMeter(serialized._client, keys=keys, indexes=indexes)
        meter.unmetered.add(threading.get_ident())  # the bench's own reads (waiting for a state)
        serialized._client = CpuTimedClient(meter, observed)
        services.stream_push = push_of(observed.notifier)
        watchers_on_dynamo(services, store.client)
        app = create_app(services, DevTokens(default_user=USER_ID), ApiOptions())
        server_cpu: list[float] = []
        with serving(app, server_cpu) as url, httpx.Client(base_url=url, timeout=120) as client:
            run_id = drive(shape, client, services, observed, meter, args.wait_sample)
            assert backend.workflow is not None
            observed.wait_finished(backend.workflow, run_id)
        if observed.unmetered_dynamodb:  # a figure without them would be too low, and look sound
            raise SystemExit(f"DynamoDB requests around the meter: {dict(observed.unmetered_dynamodb)}")
        usage = meter.reset()
        usage.add(observed.wait_usage)
        bill = observed.bill(usage, backend.workflow, run_id, memory_gb())
        # The app's event loop ran every HTTP request; its thread's CPU is the API and stream functions' own work.
        bill.cpu_by["app (uvicorn loop)"] = [observed.stream_seconds, sum(server_cpu), 0.0]
        bill.before_model = sorted(observed.before_model)
        bill.peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return bill


def push_of(counting: CountingNotifier) -> Any:
    """The writers' notifier as template.yaml's default deploys it (`StreamPush=appsync-events`):
    coalesced per run when the code has `CoalescingNotifier` (a checkout from before has not)."""
    try:
        from stepline.runtime.stream_push import CoalescingNotifier
    except ImportError:
        return counting
    return CoalescingNotifier(counting)


# --- the report ---------------------------------------------------------------------------------------


@contextmanager
def section(title: str) -> Generator[None]:
    print(title)
    yield
    print()


def report(shape: Shape, label: str, bill: dict[str, Any], wait_sample: float) -> None:
    with section(f"{shape.name} ({label}): {bill['total']:.6f} $ per run"):
        for meter, quantity, dollars in bill["lines"]:
            print(f"  {meter:<32} {quantity:>44}  ${dollars:.6f}")
        by = ", ".join(f"{k} {v:,}" for k, v in bill["by"])
        print(f"  table write units by item: {by}")
        print(f"  DynamoDB requests: {', '.join(f'{k} {v:,}' for k, v in bill['requests'])}")
        if shape.approval:
            print(
                f"  of which the {WAIT_SECONDS / 60:.0f}-minute wait ({wait_sample:g} s sampled, scaled): "
                f"{bill['wait'][0]:,} write units, {bill['wait'][1]:,.1f} read units"
            )
        for function, (wall, cpu, in_store) in sorted(bill.get("cpu", {}).items()):
            own = cpu - in_store
            print(
                f"  CPU {function}: {cpu:.2f} s in {wall:.1f} s wall ({own:.2f} s outside DynamoDB calls, "
                f"{own / wall if wall else 0:.1%} of the wall time)"
            )
        if before := bill.get("before_model"):
            print(
                f"  CPU ModelStepFunction before the model call (outside DynamoDB calls): median "
                f"{1000 * before[len(before) // 2]:.0f} ms, max {1000 * before[-1]:.0f} ms over {len(before)} steps"
            )
        if rss := bill.get("peak_rss_mb"):
            print(f"  peak RSS of the whole process (moto, the app and every function in it): {rss:.0f} MB")


def as_json(bill: Bill) -> dict[str, Any]:
    return {
        "total": bill.total(),
        "lines": bill.lines(),
        "by": bill.write_units_by.most_common(),
        "requests": sorted(bill.dynamodb_requests.items()),
        "wait": [bill.wait.write_units, bill.wait.read_units],
        "cpu": bill.cpu_by,
        "before_model": bill.before_model,
        "peak_rss_mb": bill.peak_rss_mb,
    }


def measured_elsewhere(checkout: Path, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The same shapes on another checkout's `stepline` (its shared/ first on the path), in a subprocess."""
    command = [sys.executable, __file__, "--json", "--shapes", args.shapes, "--deltas", str(args.deltas)]
    command += ["--delta-ms", str(args.delta_ms), "--wait-sample", str(args.wait_sample)]
    env = {**os.environ, "PYTHONPATH": str(checkout.resolve() / "shared")}
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--deltas", type=int, default=160)
    parser.add_argument("--delta-ms", type=float, default=25.0)
    parser.add_argument("--wait-sample", type=float, default=2.0)
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--also", metavar="DIR", help="also the same shapes on another checkout (before a change)")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    shapes = [SHAPES[name] for name in args.shapes.split(",")]
    if args.json:
        print(json.dumps({shape.name: as_json(measure(shape, args)) for shape in shapes}))
        return
    with section(f"Prices (us-east-1 list prices as of {PRICES_DATE}; model tokens excluded):"):
        for service, price in PRICES.rows():
            print(f"  {service:<24} {price}")
    columns: dict[str, dict[str, dict[str, Any]]] = {}
    if args.also:
        columns[f"before ({args.also})"] = measured_elsewhere(Path(args.also), args)
    columns["now"] = {shape.name: as_json(measure(shape, args)) for shape in shapes}
    for shape in shapes:
        for label, bills in columns.items():
            report(shape, label, bills[shape.name], args.wait_sample)
    with section("$ per run / per 1,000 runs:"):
        print(f"  {'shape':<12}" + "".join(f"{label:>34}" for label in columns))
        for shape in shapes:
            cells = [bills[shape.name]["total"] for bills in columns.values()]
            print(f"  {shape.name:<12}" + "".join(f"{c:>18.6f} / {c * 1000:>11.4f}" for c in cells))


if __name__ == "__main__":
    main()
