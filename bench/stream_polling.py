"""Stream polling: the DynamoDB requests of a stream that follows a run, waiting or streaming, per minute.

    .venv/bin/python bench/stream_polling.py [--seconds S]

A resume stream (`GET /api/chat/{id}/stream`) stays open while its run waits for an approval or an
answer, and a chat stream while its run streams; on AWS either can last 14 minutes. This counts the
DynamoDB requests of `stepline.api.tail.follow_run` following such a run for S seconds (10), on the
local backend (the `DynamoStore` on moto, as `stepline dev` runs it), by a botocore hook on the
client, and the writer's appends (`PutItem`) apart. In the same run:

- waiting: without back-off (`wait_poll_seconds` equal to `poll_seconds`, 100 ms: the reference),
  the polling defaults (the poll doubles up to one a second while the run waits), and notified
  (a subscription to `InProcessNotifier`: nothing is notified while a run waits; the fallback poll);
- streaming, a fast model (a delta batch is written every delta window): polled, with the 150 ms
  window of before (the reference) and a 50 ms one, notified with the 50 ms window (each append
  notifies the stream), and notified as on AWS: AWS's window (`DEFAULT_WINDOW`, 100 ms), the
  writer's notifications coalesced to one a burst (`CoalescingNotifier`: an append with none in
  the second before it) and the stream polling fast for the second after each notification and
  each read that found events (`push_linger_seconds`), which docs/scale.md's read model counts.

Figures only.
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
from stepline.runtime.stream_push import PUSH_WINDOW, CoalescingNotifier, InProcessNotifier, RunNotifier
from stepline.store.event_batcher import DEFAULT_WINDOW
from stepline.store.ports import SnapshotUpdate, TurnStart
from stepline.store.records import NewEvent

USER = "bench-user"


WRITERS: set[int] = set()
"""Threads whose requests are not the stream's (the thread that appends events)."""


def count_requests(client: Any) -> tuple[Counter[str], Counter[str]]:
    """The stream's and the writer's DynamoDB requests by operation, counted as the client sends them."""
    seen: Counter[str] = Counter()
    written: Counter[str] = Counter()

    def before(**kwargs: Any) -> None:
        (written if threading.get_ident() in WRITERS else seen)[kwargs["model"].name] += 1

    client.meta.events.register("before-call.dynamodb.*", before)
    return seen, written


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


def follow(services: Services, run_id: str, options: TailOptions, notifier: RunNotifier | None) -> int:
    """Follow the run until `max_seconds`; the number of SSE frames received."""

    async def consume() -> int:
        frames = 0
        wake = notifier.subscribe(USER, run_id) if notifier is not None else None
        tail = follow_run(services.store, USER, run_id, options=options, clock=services.clock, wake=wake)
        async for _ in tail:
            frames += 1
        return frames

    return asyncio.run(consume())


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    seconds: float = args.seconds

    def make_services(**backend: Any) -> Services:
        return Services(model=None, tools=[], **backend)  # type: ignore[arg-type]  # no model step runs here

    with local_backend(make_services) as backend:
        services = backend.services
        seen, written = count_requests(backend.dynamodb)
        print(f"a stream following a run for {seconds:g} s on the local backend (DynamoStore on moto)")
        print(f"{'run / configuration':50} {'GetItem':>8} {'Query':>7} {'reads/min':>10} {'writes/min':>11}")
        held = TailOptions(stop_at_input=False, max_seconds=seconds)
        lingering = TailOptions(stop_at_input=False, max_seconds=seconds, push_linger_seconds=PUSH_WINDOW)
        configs: list[tuple[str, float | None, TailOptions, bool | str]] = [
            (
                "waiting, no back-off (reference)",
                None,
                TailOptions(wait_poll_seconds=0.1, stop_at_input=False, max_seconds=seconds),
                False,
            ),
            ("waiting, polled (defaults)", None, held, False),
            ("waiting, notified (fallback poll 1 s)", None, held, True),
            ("streaming, polled 100 ms, a batch every 150 ms (before)", 0.15, held, False),
            ("streaming, polled 100 ms, a batch every 50 ms", 0.05, held, False),
            ("streaming, notified, a batch every 50 ms", 0.05, held, True),
            ("streaming, AWS: its window, coalesced per burst, fast polls", DEFAULT_WINDOW, lingering, "coalesced"),
        ]
        rows: dict[str, float] = {}
        cycles: dict[str, tuple[float, float]] = {}
        for index, (label, every, options, notified) in enumerate(configs):
            run_id = f"run-bench-{index}"
            start_run(services, run_id, waiting=every is None)
            notifier: RunNotifier | None = InProcessNotifier() if notified else None
            if notified == "coalesced" and notifier is not None:
                notifier = CoalescingNotifier(notifier)
            stop = threading.Event()
            writer = None
            if every is not None:

                def write(
                    run_id: str = run_id,
                    stop: threading.Event = stop,
                    every: float = every,
                    notifier: RunNotifier | None = notifier,
                ) -> None:
                    WRITERS.add(threading.get_ident())
                    try:
                        due = time.monotonic()
                        while True:  # on a fixed schedule: a slow append does not slow the next ones down
                            due += every
                            if stop.wait(max(due - time.monotonic(), 0.0)):
                                break
                            stored = services.store.append_events(
                                USER,
                                run_id,
                                [NewEvent(type="delta", chunks=[{"type": "x"}], durable=False)],
                                now=services.clock(),
                            )
                            if notifier is not None:
                                notifier.notify(USER, run_id, stored[-1].seq)
                    finally:
                        # A thread's id is reused by later threads (the stream's worker threads of the
                        # next configuration): left here, their reads were counted as the writer's.
                        WRITERS.discard(threading.get_ident())

                writer = threading.Thread(target=write, daemon=True)
            seen.clear()
            written.clear()
            started = time.monotonic()
            if writer is not None:
                writer.start()
            follow(services, run_id, options, notifier)
            elapsed = time.monotonic() - started
            stop.set()
            if writer is not None:
                writer.join()
            gets, queries = seen["GetItem"], seen["Query"]
            cycles[label] = (gets / elapsed, queries / elapsed)
            per_minute = (gets + queries) / elapsed * 60
            writes = written["PutItem"] / elapsed * 60
            rows[label] = per_minute
            print(f"{label:50} {gets:>8} {queries:>7} {per_minute:>10,.0f} {writes:>11,.0f}")
        gets_s, queries_s = cycles[configs[-1][0]]
        print(f"as on AWS: {gets_s:.1f} GetItem (AgentTable) and {queries_s:.1f} Query (EventsTable) a second")
        reference, default = rows[configs[0][0]], rows[configs[1][0]]
        print(f"waiting: the polling defaults make {reference / default:.1f}x fewer requests than no back-off")
        print("(a read is one small item or page: 1 read request unit, consistent; an append is one")
        print(" conditional PutItem of the event: 1 write request unit for an item under 1 KB)")


if __name__ == "__main__":
    main()
