"""The local runtime's store under concurrent runs: moto's DynamoDB (`--memory`) against SQLite (the data folder).

    PYTHONPATH=shared .venv/bin/python bench/local_store.py [RUNS] [APPENDS] [BIG_RUNS]

What it measures: the store alone, no model, no Step Functions, no HTTP — the part of
`stepline dev` that issue 16 saw grow to 3.5 GB at 100 concurrent runs. RUNS threads (default
20) each play one run's store traffic as the worker writes it: `start_turn`, `mark_running`,
APPENDS (default 30) event appends of one delta batch each with a snapshot every tenth, then
`finish_run`; a reader thread per run polls `events_after` every 50 ms as a following stream does.
Both backends run in this process, one after the other, with the same traffic (moto needs minutes
for the default; it is the reference), then SQLite alone with BIG_RUNS (default 200) runs:

- `moto DynamoDB`: `DynamoStore` over moto's DynamoDB with the `SerializedCalls` proxy, exactly
  what `stepline dev --memory` builds (moto deep-copies a table for every TransactWriteItems);
- `SQLite (WAL)`: `SqliteStore` in a temporary file, what `stepline dev` builds by default.

Printed per backend: wall time, write operations per second, p50 / p99 latency of one append,
runs that failed (an exception in the store), and the process's resident memory before and after
(VmRSS, so a backend starts from what the one before left; gc is run between them). Figures only;
no assertions.
"""

from __future__ import annotations

import gc
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from stepline.store.ports import FinishRun, SnapshotUpdate, Store, TurnStart
from stepline.store.records import NewEvent
from stepline.store.sqlite import SqliteStore


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


@contextmanager
def moto_store() -> Iterator[Store]:
    import os

    import boto3
    from moto import mock_aws

    from stepline.aws.dynamodb import DynamoStore
    from stepline.local.backend import TABLES, SerializedCalls
    from stepline.local.resources import create_tables

    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(key, "bench")
    with mock_aws():
        client: Any = boto3.client("dynamodb", region_name="us-east-1")  # pyright: ignore[reportUnknownMemberType]
        create_tables(client, TABLES)
        yield DynamoStore(SerializedCalls(client), agent_table=TABLES["AgentTable"], events_table=TABLES["EventsTable"])


@contextmanager
def sqlite_store() -> Iterator[Store]:
    with tempfile.TemporaryDirectory() as folder:
        store = SqliteStore(Path(folder) / "stepline.db")
        yield store
        store.close()


def one_run(
    store: Store, n: int, appends: int, latencies: list[float], errors: list[str], lock: threading.Lock
) -> None:
    try:
        _one_run(store, n, appends, latencies, lock)
    except Exception as error:
        with lock:
            errors.append(type(error).__name__)


def _one_run(store: Store, n: int, appends: int, latencies: list[float], lock: threading.Lock) -> None:
    user, run = "bench-user", f"run-{n}"
    store.start_turn(
        user,
        TurnStart(
            conversation_id=f"c-{n}",
            run_id=run,
            assistant_message_id=f"a-{n}",
            user_message={"id": f"u-{n}", "role": "user", "parts": [{"type": "text", "text": "hello"}]},
            now=1_000,
        ),
    )
    store.mark_running(user, run, now=1_000)
    done = threading.Event()

    def follow() -> None:  # a stream following the run
        after = 0
        while not done.wait(0.05):
            events = store.events_after(user, run, after, now=2_000)
            after = events[-1].seq if events else after

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    mine: list[float] = []
    text = ""
    for i in range(appends):
        delta = f"word{i} " * 8
        text += delta
        began = time.perf_counter()
        store.append_events(
            user, run, [NewEvent(type="delta", chunks=[{"type": "text-delta", "id": "t", "delta": delta}])], now=2_000
        )
        mine.append(time.perf_counter() - began)
        if i % 10 == 9:
            parts: list[dict[str, Any]] = [{"type": "text", "text": text, "state": "streaming"}]
            store.save_snapshot(user, run, SnapshotUpdate(parts=parts, metadata=None, snapshot_seq=i + 1), now=2_000)
    final = SnapshotUpdate(parts=[{"type": "text", "text": text, "state": "done"}], metadata=None, snapshot_seq=appends)
    store.finish_run(user, run, FinishRun(status="completed", snapshot=final, now=3_000))
    done.set()
    reader.join()
    with lock:
        latencies.extend(mine)


def measure(name: str, make: Callable[[], Any], runs: int, appends: int) -> None:
    gc.collect()
    before = rss_mb()
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    with make() as store:
        began = time.perf_counter()
        threads = [
            threading.Thread(target=one_run, args=(store, n, appends, latencies, errors, lock)) for n in range(runs)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - began
        after = rss_mb()
    writes = (runs - len(errors)) * (3 + appends + appends // 10)
    ordered = sorted(latencies)
    p99 = ordered[int(len(ordered) * 0.99) - 1]
    p50 = statistics.median(ordered)
    failed = f"{len(errors)} {sorted(set(errors))}" if errors else "0"
    print(
        f"{name:<18} {wall:7.1f} s  {writes / wall:8.0f} writes/s  append p50 {p50 * 1000:7.1f} ms"
        f"  p99 {p99 * 1000:8.1f} ms  failed runs {failed}  RSS {before:6.0f} -> {after:6.0f} MB"
    )


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    appends = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    big = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    print(f"concurrent runs x {appends} appends (+ turn, mark, 1 snapshot per 10 appends, finish), 1 reader each")
    measure(f"moto DynamoDB {runs}", moto_store, runs, appends)
    measure(f"SQLite (WAL) {runs}", sqlite_store, runs, appends)
    measure(f"SQLite (WAL) {big}", sqlite_store, big, appends)


if __name__ == "__main__":
    main()
