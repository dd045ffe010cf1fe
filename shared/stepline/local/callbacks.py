"""`stepline dev`'s callback sender: an outbox of deliveries and the thread that tries them.

A lifecycle event of a run started with a `callbackUrl` is written to the outbox (`enqueue`, one
SQLite insert: the worker that announced it goes on at once); a thread tries each due delivery
(`attempt_delivery`; with tracing on, in a span of the run's trace), records the attempt and
plans the next one with back-off. The outbox is a file of the data folder (`callbacks.db`), so
deliveries still pending when the server stops go on after the restart; with `--memory` it
lives in memory.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..runtime.callback_delivery import attempt_delivery, new_delivery
from ..runtime.callback_traces import run_of, traced_attempt
from ..runtime.callback_urls import UrlPolicy
from ..runtime.deliveries import Delivery
from ..runtime.notifications import RunEvent
from ..runtime.services import Services

__all__ = ["Outbox"]

_LOG = logging.getLogger("stepline.local")
_SCHEMA = """
create table if not exists deliveries (
  delivery_id text not null, url text not null, user_id text not null, run_id text not null,
  state text not null, next_at integer not null, record text not null,
  primary key (delivery_id, url)
)
"""


@dataclass
class Outbox:
    """Pending and past deliveries, and the sender thread (`start`, `stop`)."""

    path: Path | None
    secret: str | None
    policy: UrlPolicy
    clock: Callable[[], int]
    backoff_base: float = 2.0
    poll_seconds: float = 0.2
    services: Services | None = None
    """The server's services, for the attempts' spans (tracing on); None: the attempts alone."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _wake: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __post_init__(self) -> None:
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        target = ":memory:" if self.path is None else str(self.path)
        self._db = sqlite3.connect(target, check_same_thread=False, isolation_level=None)
        self._db.execute("pragma journal_mode=wal" if self.path is not None else "pragma journal_mode=memory")
        self._db.execute(_SCHEMA)

    def enqueue(self, event: RunEvent, url: str) -> None:
        """Add the delivery of `event` to `url` (once: a repeated event is the same delivery)."""
        if self.secret is None:
            _LOG.warning("run %s has a callbackUrl but no STEPLINE_CALLBACK_SECRET is set", event.detail.get("runId"))
            return
        delivery = new_delivery(event, url, now=self.clock())
        with self._lock:
            self._db.execute(
                "insert or ignore into deliveries values (?, ?, ?, ?, ?, ?, ?)",
                (
                    delivery.delivery_id,
                    url,
                    delivery.user_id,
                    delivery.run_id,
                    delivery.state,
                    delivery.next_at,
                    delivery.model_dump_json(),
                ),
            )
        self._wake.set()

    def deliveries(self, user_id: str, run_id: str) -> list[Delivery]:
        with self._lock:
            rows = self._db.execute(
                "select record from deliveries where user_id = ? and run_id = ? order by rowid", (user_id, run_id)
            ).fetchall()
        return [Delivery.model_validate_json(row[0]) for row in rows]

    def _save(self, delivery: Delivery) -> None:
        with self._lock:
            self._db.execute(
                "update deliveries set state = ?, next_at = ?, record = ? where delivery_id = ? and url = ?",
                (delivery.state, delivery.next_at, delivery.model_dump_json(), delivery.delivery_id, delivery.url),
            )

    def _due(self) -> list[Delivery]:
        with self._lock:
            rows = self._db.execute(
                "select record from deliveries where state = 'pending' and next_at <= ? order by next_at limit 20",
                (self.clock(),),
            ).fetchall()
        return [Delivery.model_validate_json(row[0]) for row in rows]

    def run_due(self) -> int:
        """Try every due delivery once; returns how many were tried."""
        due = self._due()
        for delivery in due:
            if self._stop.is_set() or self.secret is None:
                break
            tried = self._attempt(delivery)
            self._save(tried)
            last = tried.attempts[-1]
            _LOG.info("callback %s to %s: %s", tried.delivery_id, tried.url, last.status or last.error)
        return len(due)

    def _attempt(self, delivery: Delivery) -> Delivery:
        """One attempt; a span of the run's trace when the server traces (`services` set by `install`)."""
        assert self.secret is not None
        secret, policy, now, base = self.secret, self.policy, self.clock(), self.backoff_base
        if self.services is None:
            return attempt_delivery(delivery, secret=secret, policy=policy, now=now, backoff_base=base)
        run = run_of(self.services, delivery)
        return traced_attempt(self.services, run, delivery, secret=secret, policy=policy, now=now, backoff_base=base)

    def start(self) -> Outbox:
        def loop() -> None:
            while not self._stop.is_set():
                try:
                    self.run_due()
                except Exception:  # the sender never stops for one bad delivery
                    _LOG.exception("callback sender")
                self._wake.wait(self.poll_seconds)
                self._wake.clear()

        self._thread = threading.Thread(target=loop, name="stepline-callbacks", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(TIMEOUT_JOIN)
        with self._lock:
            self._db.close()


TIMEOUT_JOIN = 15.0
"""How long a stop waits for an attempt under way (its timeout is 10 s)."""
