"""The local engine's threads: a pool that takes steps fairly across tenants and users, and one timer.

A step is a job owned by its run's tenant and user (`Owner`). The pool runs at most `size` jobs at
once and, when more are queued, takes the next one **round-robin**: a turn per tenant with work
queued, and within a tenant a turn per user, each user's jobs in the order they came. So a tenant
that queues 200 steps delays another tenant's next step by at most one step per tenant ahead of it,
not by 200 (first come, first served did: `bench/fairness.py` measures it). A run goes back into
the queue after each step, so its steps interleave with everyone's.

`FairQueue` is the ordering alone (no threads, tested on its own); `Workers` the threads;
`Timers` the one thread that hands a due callback (a retry's delay, a token's timeout) to the pool.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import NamedTuple

__all__ = ["FairQueue", "Owner", "Timers", "Workers"]

_LOG = logging.getLogger("stepline.local")
Job = Callable[[], None]


class Owner(NamedTuple):
    """Whose work a job is: the fairness key (a tenant, then a user within it)."""

    tenant: str
    user: str


class FairQueue:
    """Jobs taken round-robin across tenants, then across each tenant's users, FIFO per user.

    Not thread-safe: `Workers` holds its lock around every call.
    """

    def __init__(self) -> None:
        self._tenants: deque[str] = deque()
        """Tenants with a job queued, in turn order."""
        self._users: dict[str, deque[str]] = {}
        """Per tenant: its users with a job queued, in turn order."""
        self._jobs: dict[Owner, deque[Job]] = {}
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def put(self, owner: Owner, job: Job) -> None:
        jobs = self._jobs.get(owner)
        if jobs is None:
            jobs = self._jobs[owner] = deque()
            users = self._users.get(owner.tenant)
            if users is None:
                users = self._users[owner.tenant] = deque()
                self._tenants.append(owner.tenant)
            users.append(owner.user)
        jobs.append(job)
        self._count += 1

    def take(self) -> Job:
        """The next job (raises IndexError when empty); its tenant and user go to the back of their turns."""
        tenant = self._tenants.popleft()
        users = self._users[tenant]
        owner = Owner(tenant, users.popleft())
        jobs = self._jobs[owner]
        job = jobs.popleft()
        self._count -= 1
        if jobs:
            users.append(owner.user)
        else:
            del self._jobs[owner]
        if users:
            self._tenants.append(tenant)
        else:
            del self._users[tenant]
        return job


class Workers:
    """Up to `size` daemon threads taking jobs from a `FairQueue`, started as the work needs them.

    A thread is started when more jobs are queued than threads are idle (as
    `concurrent.futures.ThreadPoolExecutor` does); the threads are daemons, so a stop waits for a
    step that still streams only as long as it is told to (a cut step is redone on the next start,
    as a crashed Lambda's is).
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._queue = FairQueue()
        self._changed = threading.Condition()
        self._started = 0
        self._idle = 0
        self._busy = 0
        self._closed = False

    def submit(self, job: Job, owner: Owner) -> None:
        with self._changed:
            if self._closed:
                return
            self._queue.put(owner, job)
            if self._idle < len(self._queue) and self._started < self._size:
                self._started += 1
                threading.Thread(target=self._work, name=f"stepline-step-{self._started}", daemon=True).start()
            self._changed.notify()

    def close(self, wait: float = 0.0) -> None:
        """Take no more jobs (what is queued is redone on the next start); wait up to `wait` s for those running."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
            self._changed.wait_for(lambda: self._busy == 0, wait)

    def _next(self) -> Job | None:
        with self._changed:
            while not self._closed and not len(self._queue):
                self._idle += 1
                self._changed.wait()
                self._idle -= 1
            if self._closed:
                return None
            self._busy += 1
            return self._queue.take()

    def _work(self) -> None:
        while (job := self._next()) is not None:
            try:
                job()
            except Exception:  # a bug of the engine: logged, the worker goes on
                _LOG.exception("the local state machine failed")
            finally:
                with self._changed:
                    self._busy -= 1
                    self._changed.notify_all()


class Timers:
    """One thread that submits each callback to the pool when its time comes."""

    def __init__(self, workers: Workers) -> None:
        self._workers = workers
        self._due: list[tuple[float, int, Job, Owner]] = []
        self._order = itertools.count()
        self._changed = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name="stepline-timers", daemon=True)
        self._thread.start()

    def after(self, seconds: float, callback: Job, owner: Owner) -> None:
        with self._changed:
            heapq.heappush(self._due, (time.monotonic() + seconds, next(self._order), callback, owner))
            self._changed.notify()

    def stop(self) -> None:
        with self._changed:
            self._stopped = True
            self._changed.notify()
        self._thread.join(5)

    def _loop(self) -> None:
        while True:
            with self._changed:
                while not self._stopped and (not self._due or self._due[0][0] > time.monotonic()):
                    self._changed.wait(self._due[0][0] - time.monotonic() if self._due else None)
                if self._stopped:
                    return
                _, _, callback, owner = heapq.heappop(self._due)
            self._workers.submit(callback, owner)
