"""`SqliteStore`: the store port in one SQLite file, for `stepline dev`'s data folder.

Records are kept as on DynamoDB and in memory: one row per record, keyed by `unit.record_key`
(partition, sort key), its body the record's JSON. A few index columns serve the listings and
sweeps the keys alone cannot (a message by id, approvals by run, runs by heartbeat).

Each operation runs its unit of work inside one `BEGIN IMMEDIATE` transaction: the reads see the
committed state and the staged writes are applied at the end, all or nothing (a `new` record that
already exists rolls the whole unit back as a `Conflict`). Writers are serialised by a lock in the
process (SQLite has one writer at a time anyway; the lock spares its busy-wait) and by SQLite's
own lock across processes. The file is in WAL mode, so readers never wait for the writer; every
thread has its own connection. `synchronous=NORMAL`: a committed write survives the process being
killed (kill -9); only a power cut can lose the last transactions.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Callable, Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

from pydantic import BaseModel

from .errors import Conflict, NotFound, StoreError
from .message_pages import PageCache
from .operations.common import DELTA_RETENTION_MS
from .ports import Page
from .records import (
    TERMINAL,
    ApprovalRecord,
    ArtifactRecord,
    ConversationRecord,
    EventRecord,
    MessageRecord,
    RunRecord,
)
from .redacting_unit import RedactingUnit
from .redaction import ReasoningPolicy, Redactor
from .run_slots import RunSlots
from .sqlite_counters import SqliteCounters
from .sqlite_slots import SqliteSlots
from .sqlite_unit import SCHEMA, SqliteUnit, load_message, part_key, sort_key
from .transactional import TransactionalStore
from .unit import Unit
from .unit_reads import UnitReads, offset_cursor
from .usage_counters import UsageCounters

__all__ = ["SqliteStore"]

T = TypeVar("T")
R = TypeVar("R", bound=BaseModel)


class _Connection(sqlite3.Connection):
    """A connection that can be referenced weakly (the store's set of them must not keep a dead thread's)."""


class SqliteStore(TransactionalStore, UnitReads):
    """The store in a SQLite file (WAL; a connection per thread; one writer at a time)."""

    def __init__(
        self,
        path: str | Path,
        *,
        delta_retention_ms: int = DELTA_RETENTION_MS,
        redactor: Redactor | None = None,
        reasoning: ReasoningPolicy = "keep",
    ) -> None:
        self.path = str(path)
        self._redactor = redactor or Redactor()
        self._reasoning: ReasoningPolicy = reasoning
        self.delta_retention_ms = delta_retention_ms
        self._pages = PageCache()
        self._write_lock = threading.Lock()
        self._local = threading.local()
        # Weak: a thread's connection is owned by its `threading.local` slot and closed when the
        # thread ends (moto runs every execution on threads of its own; they must not pile up).
        self._connections: weakref.WeakSet[_Connection] = weakref.WeakSet()
        self._connections_lock = threading.Lock()
        # Reads outside a transaction in flight: `close` waits for them, as closing a connection
        # while another thread runs a statement on it crashes the process (sqlite3 is not safe there).
        self._reads = threading.Condition()
        self._reading = 0
        self._closed = False
        with self._write_lock:
            self._connection().executescript(SCHEMA)
        self.counters: UsageCounters = SqliteCounters(self.path)
        self.slots: RunSlots = SqliteSlots(self.path)

    # -- plumbing ----------------------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if self._closed:
            raise StoreError("the store is closed")
        if connection is None:
            # isolation_level=None: no implicit transactions; `_do` opens its own.
            connection = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=30, factory=_Connection
            )
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            self._local.connection = connection
            with self._connections_lock:
                self._connections.add(connection)
        return connection

    def close(self, *, timeout: float = 5.0) -> None:
        """Close every thread's connection; later calls raise `StoreError`.

        A transaction in progress is let finish first (for at most `timeout` seconds; one cut
        after that is rolled back by SQLite, and its step is redone on the next start).
        """
        acquired = self._write_lock.acquire(timeout=timeout)
        try:
            with self._reads:
                self._closed = True
                self._reads.wait_for(lambda: self._reading == 0, timeout=timeout)
            with self._connections_lock:
                for connection in list(self._connections):
                    connection.close()
                self._connections.clear()
        finally:
            if acquired:
                self._write_lock.release()

    @contextmanager
    def _transaction(self) -> Generator[sqlite3.Connection]:
        with self._write_lock:
            db = self._connection()
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def _do(self, operation: Callable[[SqliteUnit], T]) -> T:
        with self._transaction() as db:
            unit = SqliteUnit(db, self._pages)
            result = operation(cast(SqliteUnit, RedactingUnit(unit, self._redactor, self._reasoning)))
            unit.commit()
            return result

    def _peek(self, read: Callable[[Unit], T]) -> T:
        """`read` outside a transaction: each statement sees the latest commit."""
        with self._read():
            return read(SqliteUnit(self._connection(), self._pages))

    @contextmanager
    def _read(self) -> Generator[None]:
        with self._reads:
            if self._closed:
                raise StoreError("the store is closed")
            self._reading += 1
        try:
            yield
        finally:
            with self._reads:
                self._reading -= 1
                self._reads.notify_all()

    def _rows(self, sql: str, *args: Any) -> list[Any]:
        with self._read():
            return [row[0] for row in self._connection().execute(sql, args).fetchall()]

    # -- conversations and messages ------------------------------------------------------------

    def list_conversations(
        self, user_id: str, *, limit: int = 20, cursor: str | None = None
    ) -> Page[ConversationRecord]:
        start = offset_cursor(cursor)
        bodies = self._rows(
            "SELECT body FROM records WHERE part = ? ORDER BY at DESC, sk DESC LIMIT ? OFFSET ?",
            part_key("conv", user_id),
            limit + 1,
            start,
        )
        page = [ConversationRecord.model_validate_json(b) for b in bodies[:limit]]
        return Page(page, str(start + limit) if len(bodies) > limit else None)

    def list_messages(
        self, user_id: str, conversation_id: str, *, after_seq: int = 0, limit: int = 100
    ) -> Page[MessageRecord]:
        self.get_conversation(user_id, conversation_id)
        bodies = self._rows(
            "SELECT body FROM records WHERE part = ? AND sk > ? ORDER BY sk LIMIT ?",
            part_key("msg", user_id, conversation_id),
            sort_key(after_seq),
            limit + 1,
        )
        page = [self._message(b) for b in bodies[:limit]]
        return Page(page, str(page[-1].seq) if len(bodies) > limit and page else None)

    def get_message(self, user_id: str, conversation_id: str, message_id: str) -> MessageRecord:
        bodies = self._rows(
            "SELECT body FROM records WHERE part = ? AND ref = ?", part_key("msg", user_id, conversation_id), message_id
        )
        if not bodies:
            raise NotFound(f"message {message_id} not found")
        return self._message(bodies[0])

    def _message(self, body: str) -> MessageRecord:
        with self._read():
            return load_message(self._connection(), body, self._pages)[0]

    def delete_conversation(self, user_id: str, conversation_id: str) -> None:
        with self._transaction() as db:
            conversation = SqliteUnit(db).conversation(user_id, conversation_id)
            if conversation is None:
                raise NotFound(f"conversation {conversation_id} not found")
            if conversation.active_run_id is not None:
                raise Conflict(f"conversation {conversation_id} has an active run; abort it first")
            db.execute("DELETE FROM records WHERE part = ? AND sk = ?", (part_key("conv", user_id), conversation_id))
            db.execute("DELETE FROM records WHERE part = ?", (part_key("msg", user_id, conversation_id),))
            db.execute("DELETE FROM records WHERE part = ?", (part_key("page", user_id, conversation_id),))

    # -- approvals ----------------------------------------------------------------------------------

    def pending_approvals(self, user_id: str) -> list[ApprovalRecord]:
        bodies = self._rows(
            "SELECT body FROM records WHERE part = ? AND status = 'requested'", part_key("approval", user_id)
        )
        pending = [ApprovalRecord.model_validate_json(b) for b in bodies]
        return sorted(pending, key=lambda a: (a.expires_at or 0, a.approval_id))

    # -- events -------------------------------------------------------------------------------------

    def events_after(
        self, user_id: str, run_id: str, after_seq: int, *, limit: int | None = None, now: int
    ) -> list[EventRecord]:
        self.get_run(user_id, run_id)
        bodies = self._rows(
            "SELECT body FROM records WHERE part = ? AND sk > ? AND (at IS NULL OR at > ?) ORDER BY sk LIMIT ?",
            part_key("event", user_id, run_id),
            sort_key(after_seq),
            now,
            -1 if limit is None else limit,
        )
        return [EventRecord.model_validate_json(b) for b in bodies]

    # -- artifacts ------------------------------------------------------------------------------------

    def list_message_artifacts(self, user_id: str, message_id: str) -> list[ArtifactRecord]:
        bodies = self._rows(
            "SELECT body FROM records WHERE part = ? AND ref = ?", part_key("artifact", user_id), message_id
        )
        found = [ArtifactRecord.model_validate_json(b) for b in bodies]
        return sorted(found, key=lambda a: (a.created_at, a.artifact_id))

    # -- system sweeps ----------------------------------------------------------------------------

    def stale_runs(self, *, heartbeat_before: int, limit: int = 100) -> list[tuple[str, str]]:
        terminal = sorted(TERMINAL["run"])
        bodies = self._rows(
            f"SELECT body FROM records WHERE kind = 'run' AND status NOT IN ({', '.join('?' * len(terminal))})"
            " AND at < ? ORDER BY at, part, sk LIMIT ?",
            *terminal,
            heartbeat_before,
            limit,
        )
        runs = [RunRecord.model_validate_json(b) for b in bodies]
        return [(r.user_id, r.run_id) for r in runs]

    def all_runs(self) -> list[RunRecord]:
        """Every user's runs, newest first: the local data folder's inspector (`stepline runs`)."""
        runs = [RunRecord.model_validate_json(b) for b in self._rows("SELECT body FROM records WHERE kind = 'run'")]
        return sorted(runs, key=lambda r: (r.started_at, r.run_id), reverse=True)

    def expiring_approvals(self, *, before: int, limit: int = 100) -> list[tuple[str, str]]:
        bodies = self._rows(
            "SELECT body FROM records WHERE kind = 'approval' AND status = 'requested' AND at < ?"
            " ORDER BY at, part, sk LIMIT ?",
            before,
            limit,
        )
        approvals = [ApprovalRecord.model_validate_json(b) for b in bodies]
        return [(a.user_id, a.approval_id) for a in approvals]

    def open_connections(self) -> int:
        """How many connections are open (one per thread that used the store and still lives)."""
        with self._connections_lock:
            return len(self._connections)

    def purge_expired(self, *, now: int) -> int:
        """Delete the delta batches past their retention (DynamoDB's TTL does this on AWS); returns how many."""
        with self._transaction() as db:
            return db.execute(
                "DELETE FROM records WHERE kind = 'event' AND at IS NOT NULL AND at <= ?", (now,)
            ).rowcount

    def dump(self) -> list[tuple[str, str, str]]:
        """Every row, for tests that prove a refused write changed nothing."""
        with self._read():
            rows = self._connection().execute("SELECT part, sk, body FROM records ORDER BY part, sk").fetchall()
        return [(str(p), str(s), str(b)) for p, s, b in rows]
