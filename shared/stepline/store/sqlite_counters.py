"""`SqliteCounters`: the usage counters in the data folder's SQLite file (`stepline dev`).

One row per counter in a table of its own. A reservation reads its counters and adds to them in
one `BEGIN IMMEDIATE` transaction: SQLite's single writer makes the check and the add atomic
across threads and processes, as a condition on each counter does on DynamoDB.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import closing
from dataclasses import astuple
from pathlib import Path

from .sqlite_file import SqliteFile
from .usage_counters import Ceiling, CounterKey, CounterValue, settlements

__all__ = ["SqliteCounters"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS usage_counters (
    counter TEXT PRIMARY KEY,
    base TEXT NOT NULL,
    agent TEXT,
    tokens INTEGER NOT NULL DEFAULT 0,
    nano_usd INTEGER NOT NULL DEFAULT 0,
    calls INTEGER NOT NULL DEFAULT 0,
    unpriced_calls INTEGER NOT NULL DEFAULT 0,
    committed_tokens INTEGER NOT NULL DEFAULT 0,
    committed_nano_usd INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS usage_counters_base ON usage_counters (base);
"""
_COLUMNS = "tokens, nano_usd, calls, unpriced_calls, committed_tokens, committed_nano_usd"


def _base(key: CounterKey) -> str:
    return f"{key.scope}\x1f{key.owner}\x1f{key.period}"


def _name(key: CounterKey) -> str:
    return _base(key) if key.agent is None else f"{_base(key)}\x1f{key.agent}"


class SqliteCounters(SqliteFile):
    """Usage counters in a SQLite file (a connection per operation; WAL, as the store's)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path, _SCHEMA)

    def _value(self, connection: sqlite3.Connection, key: CounterKey) -> CounterValue:
        row = connection.execute(f"SELECT {_COLUMNS} FROM usage_counters WHERE counter = ?", (_name(key),)).fetchone()
        return CounterValue(*row) if row is not None else CounterValue()

    def _add(self, connection: sqlite3.Connection, key: CounterKey, deltas: tuple[int, ...]) -> None:
        connection.execute(
            f"INSERT INTO usage_counters (counter, base, agent, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (counter) DO UPDATE SET tokens = tokens + excluded.tokens, "
            "nano_usd = nano_usd + excluded.nano_usd, calls = calls + excluded.calls, "
            "unpriced_calls = unpriced_calls + excluded.unpriced_calls, "
            "committed_tokens = committed_tokens + excluded.committed_tokens, "
            "committed_nano_usd = committed_nano_usd + excluded.committed_nano_usd",
            (_name(key), _base(key), key.agent, *deltas),
        )

    def reserve(self, ceilings: Sequence[Ceiling], tokens: int, nano_usd: int) -> Ceiling | None:
        with self._lock, closing(self._connect()) as connection:
            connection.execute("BEGIN IMMEDIATE")
            try:
                for ceiling in ceilings:
                    if ceiling.refuses(self._value(connection, ceiling.key), tokens, nano_usd):
                        connection.execute("ROLLBACK")
                        return ceiling
                for ceiling in ceilings:
                    self._add(connection, ceiling.key, (0, 0, 0, 0, tokens, nano_usd))
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            return None

    def settle(
        self,
        keys: Sequence[CounterKey],
        *,
        reserved: tuple[int, int],
        used: tuple[int, int],
        agent: str | None = None,
        priced: bool = True,
    ) -> None:
        with self._lock, closing(self._connect()) as connection:
            connection.execute("BEGIN IMMEDIATE")
            try:
                for key, delta in settlements(keys, reserved=reserved, used=used, agent=agent, priced=priced):
                    self._add(connection, key, astuple(delta))
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise

    def read(self, key: CounterKey) -> CounterValue:
        with closing(self._connect()) as connection:
            return self._value(connection, key)

    def agents(self, key: CounterKey) -> dict[str, CounterValue]:
        with closing(self._connect()) as connection:
            rows = connection.execute(
                f"SELECT agent, {_COLUMNS} FROM usage_counters WHERE base = ? AND agent IS NOT NULL", (_base(key),)
            ).fetchall()
        return {str(row[0]): CounterValue(*row[1:]) for row in rows}
