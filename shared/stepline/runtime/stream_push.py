"""Stream push: the writer of a run's log tells the streams that follow it that there is more.

The event log stays the truth. A notification carries no events, only "the run's log has grown to
`seq`, or its status changed": a stream that gets one reads the log (`stepline.api.tail`), and
one that gets none still reads it after its fallback poll interval. So a lost or late notification
costs at most one poll interval, never an event, and a duplicated one costs a read that finds
nothing new (the stream dedupes by seq).

`RunNotifier` is the port. `InProcessNotifier` is the adapter for a process that both writes and
streams (`stepline dev`: the worker handlers run in the server's process, on their own threads);
on AWS the writer (the model step function) and the streams (the stream function) are different
processes, and the channel between them is a managed pub/sub service (docs/architecture.md,
"Pushing to the stream").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

__all__ = [
    "PUSH_WINDOW",
    "CoalescingNotifier",
    "InProcessNotifier",
    "RunNotifier",
    "RunSubscription",
    "coalescing_window",
    "notifier",
    "notify",
    "wait_consumed",
]

_LOG = logging.getLogger("stepline.runtime")


async def wait_consumed(event: asyncio.Event, seconds: float) -> bool:
    """Wait up to `seconds` for `event`; True when it was set, and it is cleared (consumed) either way.

    What a subscription's `wait` does: wakes that came together count once.
    """
    if not event.is_set():
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await event.wait()
    notified = event.is_set()
    event.clear()
    return notified


class RunSubscription(Protocol):
    """One stream's subscription to one run's notifications."""

    async def wait(self, seconds: float) -> bool:
        """Wait until a notification has come since the last `wait`, or `seconds`.

        True when one came (it is consumed: notifications that came together wake once), False
        on timeout.
        """
        ...

    def close(self) -> None:
        """Stop receiving (idempotent)."""
        ...


class RunNotifier(Protocol):
    """Publish and subscribe to "the run has something new"."""

    def notify(self, user_id: str, run_id: str, seq: int) -> None:
        """The run's log has grown to `seq` (or its status changed). Best effort: never raises."""
        ...

    def subscribe(self, user_id: str, run_id: str) -> RunSubscription:
        """Subscribe from the running event loop; subscribe before the first read of the log."""
        ...


class _LoopSubscription:
    """Woken from any thread: the notifying thread schedules the wake on the subscriber's loop."""

    def __init__(self, owner: InProcessNotifier, key: tuple[str, str]) -> None:
        self._owner = owner
        self._key = key
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()
        self.closed = False

    def wake(self) -> None:
        with contextlib.suppress(RuntimeError):  # the subscriber's loop has closed: nobody listens
            self._loop.call_soon_threadsafe(self._event.set)

    async def wait(self, seconds: float) -> bool:
        return await wait_consumed(self._event, seconds)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._owner.unsubscribe(self._key, self)


class InProcessNotifier:
    """Notifications between threads of one process (the worker's and the server's event loops)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subscribers: dict[tuple[str, str], set[_LoopSubscription]] = {}

    def notify(self, user_id: str, run_id: str, seq: int) -> None:
        with self._lock:
            subscribers = list(self._subscribers.get((user_id, run_id), ()))
        for subscriber in subscribers:
            subscriber.wake()

    def subscribe(self, user_id: str, run_id: str) -> RunSubscription:
        key = (user_id, run_id)
        subscription = _LoopSubscription(self, key)
        with self._lock:
            self._subscribers.setdefault(key, set()).add(subscription)
        return subscription

    def unsubscribe(self, key: tuple[str, str], subscription: _LoopSubscription) -> None:
        with self._lock:
            subscribers = self._subscribers.get(key)
            if subscribers is not None:
                subscribers.discard(subscription)
                if not subscribers:
                    del self._subscribers[key]

    def subscribers(self, user_id: str, run_id: str) -> int:
        """How many streams follow the run (for tests and diagnostics)."""
        with self._lock:
            return len(self._subscribers.get((user_id, run_id), ()))


PUSH_WINDOW = 1.0
"""Seconds a publish of a run's notifier covers on AWS (`CoalescingNotifier`): what a stream that was
woken keeps polling for after it last heard or found something."""


class CoalescingNotifier:
    """One notification per burst of a run's appends: the first after `window` seconds without one.

    An append is sent when this notifier saw no append of the run in the `window` before it; the
    others are dropped (each is a billed publish and delivery on AWS). A model streaming deltas
    for a minute is one notification, not sixty.

    What keeps a stream exact and prompt is its side of the rule (`stepline.api.tail`, the linger):
    a stream polls at its fast interval for `window` seconds after its start, after each
    notification it gets and after each read that found events. An append this drops came less
    than `window` after the run's previous append. A stream subscribed since that one was polling
    fast when it landed (it was sent and woke the stream, or was dropped and, by the same rule,
    found by a fast poll), so the read that found it keeps the stream fast past the dropped one; a
    stream subscribed later started less than `window` before the dropped append and polls fast
    from its start. So every append is read within the fast interval, a dropped notification
    never costs the fallback poll, and the first output after a quiet window is pushed at once.
    A notification lost on the way costs one fallback poll, as before. The memory is per process,
    like the notifier: two writers of one run each send their own.
    """

    def __init__(self, inner: RunNotifier, window: float = PUSH_WINDOW, clock: Callable[[], float] = time.monotonic):
        self.inner = inner
        self.window = window
        self._clock = clock
        self._lock = threading.Lock()
        self._last: dict[tuple[str, str], float] = {}
        """When each run's last append came, sent or dropped."""

    def notify(self, user_id: str, run_id: str, seq: int) -> None:
        now = self._clock()
        with self._lock:
            last = self._last.get((user_id, run_id))
            self._last[(user_id, run_id)] = now
            if len(self._last) > 1024:  # forget the runs that have been quiet for a window
                self._last = {k: t for k, t in self._last.items() if now - t < self.window}
            if last is not None and now - last < self.window:
                return
        self.inner.notify(user_id, run_id, seq)

    def subscribe(self, user_id: str, run_id: str) -> RunSubscription:
        return self.inner.subscribe(user_id, run_id)


def coalescing_window(push: RunNotifier | None) -> float:
    """How long a stream woken by `push` polls fast (its writers' window; 0 when each append notifies)."""
    return push.window if isinstance(push, CoalescingNotifier) else 0.0


def notify(push: RunNotifier | None, user_id: str, run_id: str, seq: int) -> None:
    """Tell the run's streams its log has grown to `seq`; a failure is logged, never raised.

    A lost notification costs the stream one poll interval, never the write that came before it.
    """
    if push is None:
        return
    try:
        push.notify(user_id, run_id, seq)
    except Exception:
        _LOG.warning("notifying the streams of run %s failed", run_id, exc_info=True)


def notifier(push: RunNotifier | None, user_id: str, run_id: str) -> Callable[[int], None] | None:
    """What a recorder calls after each append (None without a push channel: streams poll)."""
    if push is None:
        return None
    return lambda seq: notify(push, user_id, run_id, seq)
