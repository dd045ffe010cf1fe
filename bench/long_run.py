"""Does a step's cost grow with the run's length? The long task on SQLite and on DynamoDB+S3 (moto).

    .venv/bin/python bench/long_run.py [--steps 50,100,200] [--size 100000] [--stores sqlite,dynamo] [--also DIR]

The run is the long task of tests/support/long_task.py (a model fake with a 32k-token window that
reads parts 1..N with the `read` tool, one call a step, then answers) under the compaction policy
of tests/unit/runtime/test_compaction_step.py (`context_window=32_000, output_reserve=2_000,
keep_recent=3`), each tool output `--size` bytes, driven in process by `stepline.testing.Harness`
(each step a ModelStep invocation over the same store, as Step Functions drives the Lambdas).

Per store and length it prints the run's total seconds, the mean ms a step in the first and the
last quarter of the steps (a step: from one model call to the next, the store's work between them
included), the same in the process's CPU time (what a busy machine's wait for a core leaves out),
and the bytes written per step, mean over the first and last quarter, counted at the
store's boundary:

- `sqlite`: `SqliteStore` in a temporary file; the bytes of every text or blob parameter of each
  INSERT/REPLACE/UPDATE statement the store's connections execute (the rows as written);
- `dynamo`: `DynamoStore` over moto's DynamoDB with a blob store in memory standing for S3 (the
  offload above 64 KB); the JSON size of every item put (`TransactWriteItems`, `PutItem`) plus the
  bytes of every blob PUT; also the bytes read back (items got or queried plus blobs got).

A step whose cost does not grow with the run has about the same ms and bytes in the last quarter
as in the first. `--also DIR` runs the same on another checkout's `stepline` first (its `shared/`
first on the path, in a subprocess; this file's counters), so before and after print from one
run. Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parents[1]
if __name__ == "__main__":
    # the stepline measured: another checkout's (--shared) or this one's, never the one installed
    shared = sys.argv[sys.argv.index("--shared") + 1] if "--shared" in sys.argv else str(ROOT / "shared")
    sys.path[:0] = [shared, str(ROOT)]


@dataclass
class Meter:
    written: int = 0
    read: int = 0
    marks: list[tuple[float, int, int, float]] = field(default_factory=list[tuple[float, int, int, float]])

    def mark(self) -> None:
        self.marks.append((time.perf_counter(), self.written, self.read, time.process_time()))


def _size(value: Any) -> int:
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, bytes | bytearray):
        return len(value)
    return 0


def _count_sqlite(meter: Meter) -> None:
    import stepline.store.sqlite as sqlite_module

    connection_class: Any = sqlite_module._Connection  # pyright: ignore[reportPrivateUsage]
    original = connection_class.__mro__[1].execute

    def execute(self: Any, sql: str, parameters: Any = ()) -> Any:
        verb = sql.lstrip().split(" ", 1)[0].upper()
        if verb in ("INSERT", "REPLACE", "UPDATE"):
            meter.written += sum(_size(p) for p in parameters)
        return original(self, sql, parameters)

    connection_class.execute = execute


class _CountingBlobs:
    """The in-memory blob store standing for S3, counting the bytes put and got."""

    def __init__(self, meter: Meter) -> None:
        from stepline.store.blobs import MemoryBlobStore

        self._inner = MemoryBlobStore()
        self._meter = meter

    def put(self, user_id: str, data: bytes, **options: Any) -> Any:
        self._meter.written += len(data)
        return self._inner.put(user_id, data, **options)

    def put_object(self, key: str, data: bytes, media_type: str | None = None) -> Any:
        self._meter.written += len(data)
        return self._inner.put_object(key, data, media_type)

    def get(self, ref: Any) -> bytes:
        data = self._inner.get(ref)
        self._meter.read += len(data)
        return data

    def get_object(self, key: str) -> bytes:
        data = self._inner.get_object(key)
        self._meter.read += len(data)
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _CountingClient:
    """DynamoDB's client, counting the JSON size of the items put and of the items read."""

    def __init__(self, client: Any, meter: Meter) -> None:
        self._client = client
        self._meter = meter

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if not callable(attribute) or name == "exceptions":
            return attribute

        def counted(**kwargs: Any) -> Any:
            if name == "transact_write_items":
                for action in kwargs["TransactItems"]:
                    for verb in ("Put", "Update"):
                        if verb in action:
                            self._meter.written += len(json.dumps(action[verb].get("Item", action[verb])))
            elif name in ("put_item", "update_item"):
                self._meter.written += len(json.dumps(kwargs.get("Item", kwargs)))
            result = cast(dict[str, Any], attribute(**kwargs))
            if name == "get_item" and "Item" in result:
                self._meter.read += len(json.dumps(result["Item"]))
            elif name == "query":
                items = cast(list[Any], result.get("Items", []))
                self._meter.read += sum(len(json.dumps(i)) for i in items)
            return result

        return counted


def _run(store: Any, blobs: Any, steps: int, size: int, meter: Meter) -> dict[str, Any]:
    from stepline import Agent
    from stepline.context.policy import ContextPolicy
    from stepline.loop.stop import is_step_count
    from stepline.testing.harness import Harness
    from tests.support.long_task import LongTask, long_task_model, read_tool

    policy = ContextPolicy(context_window=32_000, output_reserve=2_000, keep_recent=3)
    agent = Agent(name="long", tools=[read_tool(size)], context=policy, stop_when=is_step_count(steps + 5))

    def mark(kind: str, _count: int) -> None:
        if kind == "step":
            meter.mark()

    task = LongTask(total=steps, before_answer=mark)
    options: dict[str, Any] = {"store": store}
    if blobs is not None:
        options["blobs"] = blobs
    harness = Harness(agent, model=long_task_model(task), **options)
    started = time.perf_counter()
    result = harness.turn(f"Read all {steps} parts.")
    total = time.perf_counter() - started
    meter.mark()
    if result.status != "completed":
        raise SystemExit(f"the run ended {result.status}: {result.stream_errors}")
    pairs = zip(meter.marks, meter.marks[1:], strict=False)
    intervals = [(b[0] - a[0], b[1] - a[1], b[2] - a[2], b[3] - a[3]) for a, b in pairs][:steps]
    quarter = max(1, len(intervals) // 4)

    def mean(rows: list[tuple[float, int, int, float]], index: int) -> float:
        return sum(r[index] for r in rows) / len(rows)

    first, last = intervals[:quarter], intervals[-quarter:]
    return {
        "steps": steps,
        "total_s": round(total, 2),
        "ms_first": round(1000 * mean(first, 0)),
        "ms_last": round(1000 * mean(last, 0)),
        "cpu_ms_first": round(1000 * mean(first, 3)),
        "cpu_ms_last": round(1000 * mean(last, 3)),
        "kb_written_first": round(mean(first, 1) / 1000),
        "kb_written_last": round(mean(last, 1) / 1000),
        "kb_read_first": round(mean(first, 2) / 1000),
        "kb_read_last": round(mean(last, 2) / 1000),
        "kb_written_total": round(meter.written / 1000),
    }


def measure(store_kind: str, steps: int, size: int) -> dict[str, Any]:
    meter = Meter()
    if store_kind == "sqlite":
        from stepline.store.sqlite import SqliteStore

        _count_sqlite(meter)
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "stepline.db"
            store = SqliteStore(path)
            try:
                row = _run(store, None, steps, size, meter)
            finally:
                store.close()
            row["db_mb"] = round(sum(p.stat().st_size for p in Path(folder).iterdir()) / 1e6, 1)
            return row
    if store_kind == "dynamo":
        import boto3
        from moto import mock_aws

        from stepline.aws.dynamodb import DynamoStore
        from stepline.local.backend import TABLES, SerializedCalls
        from stepline.local.resources import create_tables

        os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            os.environ.setdefault(name, "testing")
        with mock_aws():
            client: Any = boto3.client("dynamodb", region_name="us-east-1")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            create_tables(client, TABLES)
            blobs = _CountingBlobs(meter)
            store = DynamoStore(
                _CountingClient(SerializedCalls(client), meter),
                agent_table=TABLES["AgentTable"],
                events_table=TABLES["EventsTable"],
                blobs=blobs,
            )
            return _run(store, blobs, steps, size, meter)
    raise SystemExit(f"unknown store {store_kind!r}: expected sqlite or dynamo")


def _rows(args: argparse.Namespace, shared: str | None) -> list[dict[str, Any]]:
    """Each (store, length) in a process of its own (a fresh interpreter: no memory of the last run)."""
    rows: list[dict[str, Any]] = []
    for store_kind in args.stores.split(","):
        for steps in [int(s) for s in args.steps.split(",")]:
            command = [sys.executable, __file__, "--one", f"{store_kind}:{steps}", "--size", str(args.size)]
            if shared is not None:
                command += ["--shared", shared]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"{store_kind} {steps} steps failed:\n{done.stderr[-3000:]}")
            rows.append({"store": store_kind, **json.loads(done.stdout.strip().splitlines()[-1])})
    return rows


def _print(title: str, rows: list[dict[str, Any]]) -> None:
    print(f"\n{title}")
    header = "store   steps  total s  ms/step first  last   CPU ms/step first  last"
    header += "   KB written/step first  last   KB read/step first  last"
    print(header)
    for r in rows:
        print(
            f"{r['store']:<7} {r['steps']:>5} {r['total_s']:>8} {r['ms_first']:>14} {r['ms_last']:>5}"
            f" {r['cpu_ms_first']:>18} {r['cpu_ms_last']:>5}"
            f" {r['kb_written_first']:>22} {r['kb_written_last']:>5} {r['kb_read_first']:>19} {r['kb_read_last']:>5}"
            + (f"   db {r['db_mb']} MB" if "db_mb" in r else "")
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", default="50,100,200")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--stores", default="sqlite,dynamo")
    parser.add_argument("--also", help="another checkout, measured first (before)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--shared", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        store_kind, steps = args.one.split(":")
        print(json.dumps(measure(store_kind, int(steps), args.size)))
        return
    print(f"long task, {args.size} B a tool output, compaction at a 32k window; in process (Harness)")
    runs: list[tuple[str, Callable[[], list[dict[str, Any]]]]] = []
    if args.also:
        also = str(Path(args.also).resolve() / "shared")
        runs.append((f"before: {args.also}", lambda: _rows(args, also)))
    runs.append(("this checkout", lambda: _rows(args, None)))
    for title, rows in runs:
        _print(title, rows())


if __name__ == "__main__":
    main()
