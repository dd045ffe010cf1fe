"""The API's threads, taken in turn by tenants, so one tenant's burst never queues another's requests.

A request's blocking work (the store's reads and writes: starting a turn, each poll of a stream)
runs on one of the API's threads (anyio's default limiter; `API_THREADS` on `stepline dev`). Taken
first come first served, a tenant that sends 200 chats at once would hold them all, and another
tenant's next chat would wait behind its 200. Here a freed thread goes to the waiting tenant that
holds the fewest (of those, the one whose turn it is: tenants take turns), each tenant's own
requests in their order: the other tenant's request waits for the next thread freed, not for the
burst. A tenant alone still uses every thread, so nothing is lost to the split.

Hand-written: anyio's `CapacityLimiter` and asyncio's `Semaphore` serve their waiters in one
queue, first come first served, which is what this is not; the step workers share theirs between
tenants the same way (`stepline.local.workers.FairQueue`).

On Lambda a function environment serves one request at a time, so nothing waits here; on
`stepline dev` (and any server that runs the app with many requests at once) this is what keeps
tenants apart.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter, OrderedDict, deque
from collections.abc import AsyncGenerator, Callable, Coroutine
from typing import Any, Protocol, TypeVar

from anyio import to_thread

__all__ = ["FairThreads", "RunSync"]

T = TypeVar("T")


class RunSync(Protocol):
    """Runs blocking work on one of the API's threads, as one tenant's request."""

    def __call__(self, work: Callable[[], T], /) -> Coroutine[Any, Any, T]: ...


class FairThreads:
    """The API's threads, handed to waiting tenants in turn (one app's; every request of it shares it)."""

    def __init__(self, total: int | None = None) -> None:
        self._total = total
        """How many at once; None: anyio's default limiter's tokens when first used (set by then)."""
        self._free: int | None = None
        self._waiting: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()
        """The tenants with requests waiting, in turn order."""
        self._held: Counter[str] = Counter()
        """The threads each tenant holds."""

    def of(self, tenant: str) -> RunSync:
        """What runs one tenant's requests' blocking work."""

        async def run(work: Callable[[], T], /) -> T:
            async with self.turn(tenant):
                return await to_thread.run_sync(work)

        return run

    @contextlib.asynccontextmanager
    async def turn(self, tenant: str) -> AsyncGenerator[None]:
        """Hold one of the threads as `tenant` (waiting for the tenant's turn), given back on exit."""
        await self._acquire(tenant)
        try:
            yield
        finally:
            self._release(tenant)

    @property
    def waiting(self) -> dict[str, int]:
        """The requests waiting for a thread, per tenant (for tests and for a look at a busy server)."""
        return {tenant: len(queue) for tenant, queue in self._waiting.items()}

    async def _acquire(self, tenant: str) -> None:
        if self._free is None:
            self._free = self._total or int(to_thread.current_default_thread_limiter().total_tokens)
        if self._free > 0 and not self._waiting:
            self._free -= 1
            self._held[tenant] += 1
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(tenant, deque()).append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():  # handed a thread as it was cancelled: pass it on
                self._release(tenant)
            else:
                self._forget(tenant, turn)
            raise

    def _release(self, tenant: str) -> None:
        self._held[tenant] -= 1
        if not self._held[tenant]:
            del self._held[tenant]
        while self._waiting:
            fewest = min(self._waiting, key=lambda t: self._held[t])  # ties: the first in turn order
            queue = self._waiting.pop(fewest)
            turn = queue.popleft()
            if queue:
                self._waiting[fewest] = queue  # its next request waits for the others' turns
            if not turn.done():
                self._held[fewest] += 1
                turn.set_result(None)
                return
        assert self._free is not None
        self._free += 1

    def _forget(self, tenant: str, turn: asyncio.Future[None]) -> None:
        queue = self._waiting.get(tenant)
        if queue is None:
            return
        try:
            queue.remove(turn)
        except ValueError:
            return
        if not queue:
            del self._waiting[tenant]
