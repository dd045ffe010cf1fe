"""Stream push through the AppSync Events adapter on loopback: what the adapter itself adds.

    PYTHONPATH=shared .venv/bin/python bench/appsync_push.py [--notifications N]

Measures, from `notify(user, run, seq)` on a writer thread to the subscribed stream's `wait()`
returning on its event loop, N notifications one at a time (each waits for the previous to
arrive): through `AppSyncEventsNotifier` against the local Event API of the tests
(tests/support/fake_appsync_events.py: SigV4 signing, an HTTP POST, a WebSocket `data` frame,
the fake verifying every signature), and, the reference in the same run, through the in-process
notifier `stepline dev` uses. Loopback only: the service's own publish-to-delivery time on AWS is
not in it (AWS publishes none; measure it on a deployed stack).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stepline.aws.appsync_events import AppSyncEventsNotifier
from stepline.runtime.stream_push import InProcessNotifier, RunNotifier
from tests.support.fake_appsync_events import FakeEventApi, signer_for

USER, RUN = "bench-user", "bench-run"


async def _latencies(notifier: RunNotifier, count: int) -> list[float]:
    subscription = notifier.subscribe(USER, RUN)
    await subscription.wait(10)  # subscribed (the adapter wakes the stream on subscribe_success)
    await asyncio.sleep(0.2)
    await subscription.wait(0)  # nothing pending
    samples: list[float] = []
    for seq in range(1, count + 1):
        sent: list[float] = []

        def write(seq: int = seq, sent: list[float] = sent) -> None:
            sent.append(time.perf_counter())
            notifier.notify(USER, RUN, seq)

        threading.Thread(target=write).start()
        if not await subscription.wait(10):
            raise RuntimeError(f"notification {seq} never arrived")
        samples.append((time.perf_counter() - sent[0]) * 1000)
    subscription.close()
    return samples


def _row(label: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return f"{label:<34} {statistics.median(ordered):>8.2f} {p99:>8.2f} {ordered[-1]:>8.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--notifications", type=int, default=200)
    args = parser.parse_args()
    in_process = asyncio.run(_latencies(InProcessNotifier(), args.notifications))
    with FakeEventApi() as fake:
        adapter = AppSyncEventsNotifier(fake.api, signer=signer_for(fake.api))
        appsync = asyncio.run(_latencies(adapter, args.notifications))
        published, delivered = len(fake.published), fake.delivered
    print(f"{args.notifications} notifications, one at a time; notify() → the stream's wait() returns, ms")
    print(f"{'path':<34} {'p50':>8} {'p99':>8} {'max':>8}")
    print(_row("in process (stepline dev)", in_process))
    print(_row("AppSync Events adapter, loopback", appsync))
    print(f"the fake Event API: {published} publishes, {delivered} deliveries, every signature verified")


if __name__ == "__main__":
    main()
