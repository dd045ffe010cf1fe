"""Stream polling: the DynamoDB requests a stream makes while it follows a run that waits for a person.

    .venv/bin/python bench/stream_polling.py [--seconds S]

A resume stream (`GET /api/chat/{id}/stream`) stays open while its run waits for an approval or an
answer, and polls the run the whole time; on AWS it can do so for 14 minutes. This counts the
DynamoDB requests of `stepline.api.tail.follow_run` following such a run for S seconds (10), on the
local backend (the `DynamoStore` on moto, as `stepline dev` runs it), by a botocore hook on the
client. Two configurations in the same run: without back-off (`wait_poll_seconds` equal to
`poll_seconds`, 100 ms: the reference) and the defaults (the poll doubles up to one a second while
the run waits). Then a run that streams: one event appended every 150 ms (the default delta
window) for S seconds, to show what a stream reads per event it delivers. Figures only.
"""

from __future__ import annotations

import argparse
import asyncio
import threading
import time
from collections import Counter
from typing import Any

from stepline.api.tail import TailOptions, follow_run
from stepline.local.backend import local_backend
from stepline.runtime.services import Services
from stepline.store.ports import SnapshotUpdate, TurnStart
from stepline.store.records import NewEvent

USER = "bench-user"


WRITERS: set[int] = set()
"""Threads whose requests are not the stream's (the thread that appends events)."""


def count_requests(client: Any) -> Counter[str]:
    """The stream's DynamoDB requests by operation, counted as the client sends them."""
    seen: Counter[str] = Counter()

    def before(**kwargs: Any) -> None:
        if threading.get_ident() not in WRITERS:
            seen[kwargs["model"].name] += 1

    client.meta.events.register("before-call.dynamodb.*", before)
    return seen


def start_run(services: Services, run_id: str, *, waiting: bool) -> None:
    store, now = services.store, services.clock()
    turn = TurnStart(
        conversation_id=f"c-{run_id}", run_id=run_id, assistant_message_id=f"a-{run_id}", user_message=None, now=now
    )
    store.start_turn(USER, turn)
    store.mark_running(USER, run_id, now=now)
    store.append_events(USER, run_id, [NewEvent(type="x", chunks=[{"type": "start"}])], now=now)
    if waiting:
        store.request_approval(
            USER,
            run_id,
            approvals=[],
            tool_calls=[],
            snapshot=SnapshotUpdate(parts=[], metadata=None, snapshot_seq=1),
            checkpoint_state={},
            event=None,
            now=now,
        )


def follow(services: Services, run_id: str, options: TailOptions) -> int:
    """Follow the run until `max_seconds`; the number of SSE frames received."""

    async def consume() -> int:
        frames = 0
        async for _ in follow_run(services.store, USER, run_id, options=options, clock=services.clock):
            frames += 1
        return frames

    return asyncio.run(consume())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    seconds: float = args.seconds

    def make_services(**backend: Any) -> Services:
        return Services(model=None, tools=[], **backend)  # type: ignore[arg-type]  # no model step runs here

    with local_backend(make_services) as backend:
        services = backend.services
        seen = count_requests(backend.dynamodb)
        print(
            f"a stream following a run for {seconds:g} s on the local backend (DynamoStore on moto); DynamoDB requests"
        )
        print(f"{'run / configuration':44} {'GetItem':>8} {'Query':>7} {'per minute':>11} {'frames':>7}")
        rows: dict[str, float] = {}
        configs = [
            (
                "waiting, no back-off (reference)",
                True,
                TailOptions(wait_poll_seconds=0.1, stop_at_input=False, max_seconds=seconds),
            ),
            ("waiting, defaults", True, TailOptions(stop_at_input=False, max_seconds=seconds)),
            (
                "streaming, an event every 150 ms, defaults",
                False,
                TailOptions(stop_at_input=False, max_seconds=seconds),
            ),
        ]
        for index, (label, waiting, options) in enumerate(configs):
            run_id = f"run-bench-{index}"
            start_run(services, run_id, waiting=waiting)
            stop = threading.Event()
            writer = None
            if not waiting:

                def write(run_id: str = run_id, stop: threading.Event = stop) -> None:
                    WRITERS.add(threading.get_ident())
                    while not stop.wait(0.15):
                        services.store.append_events(
                            USER,
                            run_id,
                            [NewEvent(type="delta", chunks=[{"type": "x"}], durable=False)],
                            now=services.clock(),
                        )

                writer = threading.Thread(target=write, daemon=True)
            seen.clear()
            started = time.monotonic()
            if writer is not None:
                writer.start()
            frames = follow(services, run_id, options)
            elapsed = time.monotonic() - started
            stop.set()
            if writer is not None:
                writer.join()
            gets, queries = seen["GetItem"], seen["Query"]
            per_minute = (gets + queries) / elapsed * 60
            rows[label] = per_minute
            print(f"{label:44} {gets:>8} {queries:>7} {per_minute:>11,.0f} {frames:>7}")
        reference, default = rows[configs[0][0]], rows[configs[1][0]]
        print(f"waiting: the defaults make {reference / default:.1f}x fewer requests than no back-off")
        print("(each request reads one small item or page: 1 read request unit with consistent reads)")


if __name__ == "__main__":
    main()
