"""Working-run slots per user and per tenant: the port, its pure rules and its in-memory backend.

A run that works (a step runs, or it is between two steps) holds one slot of its user and one of
its tenant; a run that waits for a person, or has ended, holds none. A slot is a **lease**: the run
id with an expiry (`lease_ms` after it was taken or last renewed). Every step renews its run's
lease, and the end of a run and its parking on an approval or a question release it, so a run that
crashed without either gives its slot back when the lease expires, with no one to clean up after it.

`take` on one owner's slots is one atomic step (a lock here, one SQLite transaction, one
conditional `UpdateItem` on DynamoDB): a run that holds a live lease is renewed whatever the cap;
any other is refused when the owner's live leases reach the cap (`cap=None`: never refused, the
lease counted all the same). Expired leases do not count and are dropped by the next `take` that
would be refused because of them. Taking on several owners (the user, then the tenant) goes owner
by owner; a refusal releases what this call took on the owners before it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

__all__ = ["LEASE_MS", "MemorySlots", "RunSlots", "SlotCap", "SlotKey", "live", "take_all", "refuses"]

LEASE_MS = 960_000
"""A lease lasts the longest step (the model step's Lambda timeout, 900 s) plus a minute: every step
renews it, so only a run that stopped stepping without releasing it (a crash) lets it expire."""

SlotScope = Literal["user", "tenant"]


@dataclass(frozen=True, slots=True)
class SlotKey:
    """One owner's slots: a user's or a tenant's."""

    scope: SlotScope
    owner: str


@dataclass(frozen=True, slots=True)
class SlotCap:
    """An owner's slots with their cap (None: counted, never refused) and the limit's name."""

    key: SlotKey
    name: str
    cap: int | None = None


def live(leases: Mapping[str, int], now_ms: int) -> dict[str, int]:
    """The leases that have not expired."""
    return {run: expiry for run, expiry in leases.items() if expiry > now_ms}


def refuses(cap: SlotCap, leases: Mapping[str, int], run_id: str, now_ms: int) -> bool:
    """Whether taking a slot for `run_id` is refused: not a holder, and the live leases at the cap."""
    if cap.cap is None:
        return False
    held = live(leases, now_ms)
    return run_id not in held and len(held) >= cap.cap


class RunSlots(Protocol):
    """Working-run slots per owner (memory, SQLite, DynamoDB)."""

    def take_one(self, cap: SlotCap, run_id: str, *, now_ms: int, lease_ms: int) -> bool:
        """Take or renew `run_id`'s lease on one owner's slots; False: refused (nothing written)."""
        ...

    def release(self, keys: Sequence[SlotKey], run_id: str) -> None:
        """Drop `run_id`'s lease on each owner (a lease it does not hold: nothing happens)."""
        ...

    def holders(self, key: SlotKey, *, now_ms: int) -> dict[str, int]:
        """The owner's live leases: run id -> expiry (ms)."""
        ...


def take_all(slots: RunSlots, caps: Sequence[SlotCap], run_id: str, *, now_ms: int, lease_ms: int) -> SlotCap | None:
    """Take `run_id`'s lease on every owner, or on none: the refusing cap (None: all taken)."""
    taken: list[SlotKey] = []
    for cap in caps:
        if not slots.take_one(cap, run_id, now_ms=now_ms, lease_ms=lease_ms):
            if taken:
                slots.release(taken, run_id)
            return cap
        taken.append(cap.key)
    return None


class MemorySlots:
    """The leases in a dict, behind one lock (the tests' and `MemoryStore`'s)."""

    def __init__(self) -> None:
        self._leases: dict[SlotKey, dict[str, int]] = {}
        self._lock = threading.Lock()

    def take_one(self, cap: SlotCap, run_id: str, *, now_ms: int, lease_ms: int) -> bool:
        with self._lock:
            leases = live(self._leases.get(cap.key, {}), now_ms)
            if refuses(cap, leases, run_id, now_ms):
                return False
            leases[run_id] = now_ms + lease_ms
            self._leases[cap.key] = leases
            return True

    def release(self, keys: Sequence[SlotKey], run_id: str) -> None:
        with self._lock:
            for key in keys:
                self._leases.get(key, {}).pop(run_id, None)

    def holders(self, key: SlotKey, *, now_ms: int) -> dict[str, int]:
        with self._lock:
            return live(self._leases.get(key, {}), now_ms)
